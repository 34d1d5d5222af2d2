//===- Visibility.h - Which keys a query row sees ----------------*- C++ -*-===//
//
// The visibility rules of docs/Semantics.md ("Logits and visibility"),
// emitted once for every lowering: a query row's position (bottom-right
// alignment), the key range causal attention and a sliding window leave
// it, and the custom mask's bit for (row, key), one byte per bool (i1) or
// bit-packed (i8, little bit order, each request's block starting on a
// byte boundary). Values are index-typed.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_DIALECT_KV_UTILS_VISIBILITY_H
#define KVIR_DIALECT_KV_UTILS_VISIBILITY_H

#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "llvm/ADT/ArrayRef.h"

#include <optional>

namespace kvir::kv {

struct PagedOperands;

/// p_i = kv_len - qo_len + i.
mlir::Value emitQueryPosition(mlir::ImplicitLocOpBuilder &b, mlir::Value kvLen,
                              mlir::Value qoLen, mlir::Value row);

/// The position of query row `row` (an index) in the concatenation of its
/// requests' keys over the cascade levels `levels` (the first one first),
/// each grouping the rows with its `qoIndptrs` entry (i32): the keys of its
/// requests summed, minus the rows of its last-level request from `row`
/// on. A row outside a level's requests adds no keys of it (and sits at
/// -1 after the keys when outside the last level's).
mlir::Value emitCascadeRowPosition(mlir::ImplicitLocOpBuilder &b,
                                   mlir::Value row,
                                   llvm::ArrayRef<mlir::Value> qoIndptrs,
                                   llvm::ArrayRef<PagedOperands> levels);

/// A query row in a prefill's frame (kv.prefill frame(indptr, positions)):
/// the request and position the variants see, and the shift from the op's
/// key positions to the frame's.
struct FrameRow {
  mlir::Value request, position, keyShift;
};
/// Row `row` (an index) at position `position` in the frame of
/// `frameIndptr` / `framePositions`: the last request of frameIndptr
/// starting at or below the row, framePositions[row], and
/// framePositions[row] - position.
FrameRow emitFrameRow(mlir::ImplicitLocOpBuilder &b, mlir::Value frameIndptr,
                      mlir::Value framePositions, mlir::Value row,
                      mlir::Value position);

/// The keys [lo, hi) a row at `position` may see under `causal`
/// (j <= position) and `windowLeft` (j >= position - w), within
/// [0, kvLen). hi may be below lo (no key).
std::pair<mlir::Value, mlir::Value>
emitVisibleKeyRange(mlir::ImplicitLocOpBuilder &b, mlir::Value position,
                    mlir::Value kvLen, bool causal,
                    std::optional<int64_t> windowLeft);

/// Whether the custom mask lets row `row` see key `key`: bit
/// [row][key] of the request's qo_len x kv_len block starting at `offset`
/// (an element index for i1 masks, a byte index for bit-packed i8 ones).
mlir::Value emitMaskBit(mlir::ImplicitLocOpBuilder &b, mlir::Value mask,
                        mlir::Value offset, mlir::Value row, mlir::Value key,
                        mlir::Value kvLen);

/// The elements (i1) or bytes (bit-packed i8) a request's block occupies.
mlir::Value emitMaskBlockSize(mlir::ImplicitLocOpBuilder &b, mlir::Value mask,
                              mlir::Value qoLen, mlir::Value kvLen);

} // namespace kvir::kv

#endif // KVIR_DIALECT_KV_UTILS_VISIBILITY_H
