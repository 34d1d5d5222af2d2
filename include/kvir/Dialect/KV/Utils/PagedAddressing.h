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
  /// The operands of a view of `type` from their flatten() order (e.g. a
  /// kernel's arguments).
  static PagedOperands fromFlattened(PagedType type, mlir::ValueRange values);

  mlir::Value pool(PoolRole role) const;
};

/// i32 element of `memref` at `indices`, as an index.
mlir::Value loadIndexValue(mlir::ImplicitLocOpBuilder &b, mlir::Value memref,
                           mlir::ValueRange indices);

/// Where a request's tokens start in its table: CSR `kv_indptr[req]` (its
/// first index into kv_indices) or token_offset `cachestarts[req]`; 0 for
/// the per-request tables (block_table, token_table).
mlir::Value emitTableBase(mlir::ImplicitLocOpBuilder &b, const PagedOperands &kv,
                          mlir::Value req);

/// What every lowering reads once per request.
struct RequestTable {
  mlir::Value kvLen; // index
  mlir::Value base;  // emitTableBase
};
RequestTable emitRequestTable(mlir::ImplicitLocOpBuilder &b,
                              const PagedOperands &kv, mlir::Value req);

/// kv_len of request `req` (an index).
mlir::Value emitKvLen(mlir::ImplicitLocOpBuilder &b, const PagedOperands &kv,
                      mlir::Value req);

/// A new [batch] i32 buffer of `lengthOf(request)` (an index) for every
/// request, filled by a host loop: the lengths a work schedule balances or
/// a table check compares with.
mlir::Value emitLengthsBuffer(
    mlir::ImplicitLocOpBuilder &b, mlir::Value batch,
    llvm::function_ref<mlir::Value(mlir::ImplicitLocOpBuilder &, mlir::Value)>
        lengthOf);

/// The element type (i32, or OpenPPL's i64) of the table holding the page
/// entries of a view whose flattened operand types (PagedOperands::flatten:
/// pools, tables, ...) are `flatTypes` (i32 when they are not given); null
/// for token_offset tables.
mlir::Type getPageEntryType(PagedType type, mlir::TypeRange flatTypes);

/// Where the table entry of logical page `logicalPage` of request `req`
/// (whose table base is `base`) is: a table memref and its indices.
std::pair<mlir::Value, llvm::SmallVector<mlir::Value>>
emitPageEntryAddress(mlir::ImplicitLocOpBuilder &b, const PagedOperands &kv,
                     mlir::Value req, mlir::Value base, mlir::Value logicalPage);

/// The table entry of logical page `logicalPage` of request `req` (whose
/// table base is `base`): a page id (csr, block_table) or the token index
/// the page starts at (token_table). token_offset tables have no entries.
mlir::Value emitPageEntry(mlir::ImplicitLocOpBuilder &b, const PagedOperands &kv,
                          mlir::Value req, mlir::Value base,
                          mlir::Value logicalPage);

/// (page, slot) of token `token` of a request, given the entry of the
/// token's logical page (unused for token_offset) and the request's table
/// base (used by token_offset only). Kernels stage the entries of a tile's
/// pages once and locate every token of the tile through them.
std::pair<mlir::Value, mlir::Value>
emitLocateFromEntry(mlir::ImplicitLocOpBuilder &b, PagedType type,
                    mlir::Value entry, mlir::Value base, mlir::Value token);

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
