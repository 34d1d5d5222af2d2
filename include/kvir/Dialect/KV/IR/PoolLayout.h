//===- PoolLayout.h - Where paged KV elements live --------------*- C++ -*-===//
//
// The single source of truth for how a `!kv.paged` type addresses its pools:
// the expected pool shapes (checked by `kv.paged_view`) and the affine maps
// from logical (page, kv, slot, head, dim) to pool indices (used by every
// lowering). Token-axis layouts (OpenPPL, Llama) see token
// `page * page_size + slot`.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_DIALECT_KV_IR_POOLLAYOUT_H
#define KVIR_DIALECT_KV_IR_POOLLAYOUT_H

#include "kvir/Dialect/KV/IR/KVTypes.h"
#include "llvm/ADT/SmallVector.h"

namespace kvir::kv {

/// Which memref of a paged view.
enum class PoolRole { K, V, KScale, VScale };

/// Number of dims of the logical coordinate: (page, kv, slot, head, dim).
constexpr unsigned kNumLogicalDims = 5;

/// The largest sizes the kv types accept: beyond what any model uses, and
/// small enough that every analysis of a layout stays cheap.
constexpr int64_t kMaxHeadDim = 1024;
constexpr int64_t kMaxPageSize = 65536;
constexpr int64_t kMaxHeads = 1024;

/// The names of a table form's table memrefs, in kv.paged_view order
/// (FlashInfer's / vLLM's / OpenPPL's argument names).
llvm::ArrayRef<llvm::StringRef> getTableNames(TableForm form);

/// Element count of the vLLM K layout's innermost axis: 16 bytes of storage.
int64_t getVllmPackFactor(PagedType type);

/// The expected shape of a pool memref (ShapedType::kDynamic where the size
/// is a run-time choice, e.g. the number of pages). For combined storage the
/// K role describes the single pool. Not meaningful for affine layouts.
llvm::SmallVector<int64_t> getExpectedPoolShape(PagedType type, PoolRole role);

/// The affine map (page, kv, slot, head, dim) -> pool indices for `role`.
/// Scale pools take `dim / quant_group` as their dim coordinate.
mlir::AffineMap getPoolIndexMap(PagedType type, PoolRole role);

/// Whether `role`'s pool index map gives the dim as its last index and uses
/// it nowhere else (not vLLM's K, whose dims are split in packs): moving
/// along a row's dims moves only that index.
bool isDimInnermost(PagedType type, PoolRole role);

/// The index of the pool memref `role` reads within the view's pools and
/// scales (combined storage keeps K and V in pool 0).
unsigned getPoolOperandIndex(PagedType type, PoolRole role);

/// The number of consecutive head-dim elements of `role` that are
/// contiguous and (relative to a 16-byte aligned pool base) aligned in
/// `pool`: the widest power of two w <= maxElements dividing the width such
/// that every run [w*i, w*i + w) of dims maps to consecutive, w-aligned
/// element offsets. Checked exhaustively over the dim axis at sample
/// (page, slot, head) positions; 1 when the pool's strides are dynamic.
int64_t getDimVectorWidth(PagedType type, PoolRole role, mlir::MemRefType pool,
                          int64_t maxElements);

} // namespace kvir::kv

#endif // KVIR_DIALECT_KV_IR_POOLLAYOUT_H
