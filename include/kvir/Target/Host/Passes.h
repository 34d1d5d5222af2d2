//===- Passes.h - Passes for the host CPU target ----------------*- C++ -*-===//
#ifndef KVIR_TARGET_HOST_PASSES_H
#define KVIR_TARGET_HOST_PASSES_H

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Pass/Pass.h"

namespace kvir::target {

#define GEN_PASS_DECL
#include "kvir/Target/Host/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "kvir/Target/Host/Passes.h.inc"

} // namespace kvir::target

#endif // KVIR_TARGET_HOST_PASSES_H
