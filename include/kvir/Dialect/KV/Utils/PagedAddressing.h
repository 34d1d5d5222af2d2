//===- PagedAddressing.h - IR for finding a token in a paged cache -*- C++ -*-===//
//
// Builds the index arithmetic every lowering of a `!kv.paged` value needs:
// kv_len of a request from its table form, the (page, slot) of a token, and
// the pool indices of (page, slot, head, dim) through the layout's affine map.
// Works with any builder insertion point (host loops or a gpu.func).
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_DIALECT_KV_UTILS_PAGEDADDRESSING_H
#define KVIR_DIALECT_KV_UTILS_PAGEDADDRESSING_H

#include "kvir/Dialect/KV/IR/KVOps.h"
#include "kvir/Dialect/KV/IR/PoolLayout.h"

#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace kvir::kv {

/// The memrefs and scalars of a paged view, possibly remapped (e.g. to the
/// arguments of a kernel).
struct PagedOperands {
  PagedType type;
  llvm::SmallVector<mlir::Value> pools, tables, scales;
  mlir::Value kScale, vScale;

  static PagedOperands fromView(PagedViewOp view);
  /// All memref/scalar values in a fixed order (pools, tables, scales, fp8
  /// scales), e.g. to pass them to a kernel.
  llvm::SmallVector<mlir::Value> flatten() const;
  /// The inverse of flatten() over `values` (same type, same counts).
  PagedOperands withValues(mlir::ValueRange values) const;

  mlir::Value pool(PoolRole role) const;
};

/// i32 element of `memref` at `indices`, as an index.
mlir::Value loadIndexValue(mlir::ImplicitLocOpBuilder &b, mlir::Value memref,
                           mlir::ValueRange indices);

/// kv_len of request `req` (an index).
mlir::Value emitKvLen(mlir::ImplicitLocOpBuilder &b, const PagedOperands &kv,
                      mlir::Value req);

/// (page, slot) of token `token` of request `req`.
std::pair<mlir::Value, mlir::Value> emitLocate(mlir::ImplicitLocOpBuilder &b,
                                               const PagedOperands &kv,
                                               mlir::Value req,
                                               mlir::Value token);

/// Pool indices of (page, slot, head, dim) for `role`.
llvm::SmallVector<mlir::Value>
emitPoolIndices(mlir::ImplicitLocOpBuilder &b, PagedType type, PoolRole role,
                mlir::Value page, mlir::Value slot, mlir::Value head,
                mlir::Value dim);

} // namespace kvir::kv

#endif // KVIR_DIALECT_KV_UTILS_PAGEDADDRESSING_H
