//===- Passes.h - kvgpu configuration passes --------------------*- C++ -*-===//
#ifndef KVIR_DIALECT_KVGPU_TRANSFORMS_PASSES_H
#define KVIR_DIALECT_KVGPU_TRANSFORMS_PASSES_H

#include "kvir/Dialect/KVGPU/IR/KVGPUDialect.h"
#include "mlir/Pass/Pass.h"

namespace kvir::kvgpu {

#define GEN_PASS_DECL
#include "kvir/Dialect/KVGPU/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "kvir/Dialect/KVGPU/Transforms/Passes.h.inc"

} // namespace kvir::kvgpu

#endif // KVIR_DIALECT_KVGPU_TRANSFORMS_PASSES_H
