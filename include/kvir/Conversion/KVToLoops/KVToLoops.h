//===- KVToLoops.h - kv to scf loops (CPU reference) ------------*- C++ -*-===//
#ifndef KVIR_CONVERSION_KVTOLOOPS_KVTOLOOPS_H
#define KVIR_CONVERSION_KVTOLOOPS_KVTOLOOPS_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"

namespace kvir {

#define GEN_PASS_DECL_CONVERTKVTOLOOPS
#include "kvir/Conversion/Passes.h.inc"

} // namespace kvir

#endif // KVIR_CONVERSION_KVTOLOOPS_KVTOLOOPS_H
