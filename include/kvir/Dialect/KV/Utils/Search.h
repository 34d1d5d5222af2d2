//===- Search.h - Binary search over a non-decreasing sequence --*- C++ -*-===//
//
// Ragged rows are located by binary search over offsets (qo_indptr, or a
// quantity derived from them): the CPU loops and the kernels emit this one
// search as scf.while with log2(count) steps.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_DIALECT_KV_UTILS_SEARCH_H
#define KVIR_DIALECT_KV_UTILS_SEARCH_H

#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace kvir::kv {

/// The largest i in [0, count) with keyAt(i) <= target (index values), for
/// keyAt non-decreasing and keyAt(0) <= target; 0 when no i qualifies
/// (callers that cannot promise keyAt(0) <= target check the result).
mlir::Value emitLastAtOrBelow(
    mlir::ImplicitLocOpBuilder &b, mlir::Value count,
    llvm::function_ref<mlir::Value(mlir::ImplicitLocOpBuilder &, mlir::Value)>
        keyAt,
    mlir::Value target);

} // namespace kvir::kv

#endif // KVIR_DIALECT_KV_UTILS_SEARCH_H
