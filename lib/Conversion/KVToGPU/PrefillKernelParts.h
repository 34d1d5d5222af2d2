//===- PrefillKernelParts.h - The prefill kernel's pieces ------*- C++ -*-===//
//
// What the pieces of the tensor-core prefill kernel (PrefillKernel.cpp: the
// shared layout and the K/V pipeline) share with PrefillWork.cpp (step 1:
// where a block's tile, keys and work item are) and PrefillEpilogue.cpp
// (step 4: where its rows' states go).
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_LIB_CONVERSION_KVTOGPU_PREFILLKERNELPARTS_H
#define KVIR_LIB_CONVERSION_KVTOGPU_PREFILLKERNELPARTS_H

#include "PrefillKernel.h"

#include "kvir/Codegen/AttentionTile.h"
#include "kvir/Codegen/PagedTileLoader.h"
#include "kvir/Codegen/Variants.h"
#include "kvir/Dialect/KV/Utils/Visibility.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include <functional>

namespace kvir::gpu_lowering::prefill {

using mlir::ImplicitLocOpBuilder;
using mlir::Value;

/// Split-KV never cuts a tile's keys into partitions of fewer keys.
constexpr int64_t kMinPartitionKeys = 256;

/// What thread 0 tells the block, as i64 slots of the `meta` buffer.
enum MetaSlot : int64_t {
  MetaValid,    // 1 if the block's slot holds a tile
  MetaQoStart,  // the request's first query row
  MetaQoLen,    // its query rows
  MetaFirstRow, // the tile's first packed row within the request
  MetaKvLen,    // the request's keys
  MetaBase,     // its table base (CSR / token_offset) or first K/V row
  MetaStart,    // the partition's keys [start, end)
  MetaEnd,
  MetaRequest,
  MetaNumChunks,  // scheduled: the item's chunks of its request
  MetaPartialRow, // and its workspace row
  kMetaSlots
};

/// The kernel's arguments, named.
struct Arguments {
  Value q, qPe, qoIndptr, mask, positions, frameIndptr, framePositions, topk,
      workItems, out, lse, numPartitions, finalOut, finalLse;
  kv::PagedOperands paged;
  codegen::RaggedOperands ragged;
};

Arguments bindArguments(const codegen::KernelFunc &kf,
                        const PrefillKernelSpec &s);

/// Step 1: thread 0 locates the block's tile and keys; the block reads
/// them back after a barrier.
struct Work {
  Value valid, qoStart, qoLen, firstRow, kvLen, base, start, end, request;
  /// Scheduled: the item's chunk count and workspace row.
  Value numChunks, partialRow;
  /// Packed rows of the request, and the positions of the tile's first
  /// and last valid rows.
  Value packedRows, firstPos, lastPos;
};

Work emitBlockWork(ImplicitLocOpBuilder &b, const PrefillKernelSpec &s,
                   const Arguments &a, Value meta, Value thread);

/// Where request `req`'s block of the custom mask starts: the block sums
/// the block sizes of the requests before it (each thread a strided share,
/// then a tree in shared memory).
Value emitMaskOffset(ImplicitLocOpBuilder &b, const PrefillKernelSpec &s,
                     const Arguments &a, Value scratch, Value thread,
                     Value req);

/// A packed row of the tile: its query row within the request and its head.
struct PackedRow {
  Value valid, queryRow, head;
};

/// Packed row `rowInTile` of the block's tile (query row r / G, head
/// r % G of KV head `kvHead`'s group).
PackedRow unpackRow(ImplicitLocOpBuilder &b, const PrefillKernelSpec &s,
                    const Work &w, Value kvHead, Value rowInTile);

/// Whether K/V tile [t0, t0 + kvTile) needs per-element masks: it crosses
/// the partition's end, the diagonal of the tile's first row, the window
/// of its last row, or a custom mask (or a region, or gathered keys)
/// applies.
Value needsMask(ImplicitLocOpBuilder &b, const PrefillKernelSpec &s,
                const Work &w, Value t0);

/// The thread's fragment row (t, h) of the warp: its packed row in the
/// request, and its query row clamped into the request (rows past it read
/// in bounds; their results are never stored).
std::pair<Value, Value> fragmentRow(ImplicitLocOpBuilder &b,
                                    const PrefillKernelSpec &s, const Work &w,
                                    codegen::WarpAttentionTile &tile, int64_t t,
                                    int64_t h);

/// The position of query row `queryRow` of the request (valid rows only):
/// given, or bottom-right.
Value queryPosition(ImplicitLocOpBuilder &b, const PrefillKernelSpec &s,
                    const Work &w, const Arguments &a, Value queryRow);

/// The given positions of the thread's fragment rows, loaded once before
/// the K/V loop (empty without positions).
llvm::SmallVector<Value> loadRowPositions(ImplicitLocOpBuilder &b,
                                          const PrefillKernelSpec &s,
                                          const Work &w, const Arguments &a,
                                          codegen::WarpAttentionTile &tile);

/// The variants of an op as the warp's fragment rows see them: the emitter
/// (bound to the kernel's variant arguments) and each fragment row's query
/// head, request and position in the variants' frame, and the shift of its
/// keys' positions into the frame (null without a frame; indexed like
/// WarpAttentionTile::State::m).
struct RowVariants {
  const codegen::VariantEmitter &emitter;
  llvm::SmallVector<Value> heads, requests, positions, keyShifts;

  /// Key `key` of fragment row `row` as the variants see it.
  Value key(ImplicitLocOpBuilder &b, int64_t row, Value key) const {
    return keyShifts[row]
               ? mlir::arith::AddIOp::create(b, key, keyShifts[row]).getResult()
               : key;
  }
  Value visible(ImplicitLocOpBuilder &b, int64_t row, Value key) const {
    return emitter.visible(b, requests[row], heads[row], positions[row],
                           this->key(b, row, key));
  }
};

/// Query row `queryRow` of the request (at `position`) in the variants'
/// frame: its request, position and key shift (the op's own without a
/// frame).
kv::FrameRow frameRow(ImplicitLocOpBuilder &b, const Work &w,
                      const Arguments &a, Value queryRow, Value position);

/// The key of row `e` of the current K/V tile: t0 + e, or the gathered
/// one (-1: none).
using TileKeyOf = llvm::function_ref<Value(ImplicitLocOpBuilder &, Value)>;

/// The -inf mask of K/V tile [t0, ...) for the warp's fragment rows: keys
/// in [start, end) of the partition, causal (key <= position), the window
/// (key >= position - w) as per-row bounds; the custom mask bit by bit.
/// Positions are `rowPositions` (loadRowPositions) when given, else
/// bottom-right. Gathering, the bounds keep the partition's entries and
/// each gathered key is checked (exists, causal, window) on its own.
llvm::SmallVector<Value>
emitMask(ImplicitLocOpBuilder &b, const PrefillKernelSpec &s, const Work &w,
         const Arguments &a, codegen::WarpAttentionTile &tile,
         llvm::ArrayRef<Value> logits, llvm::ArrayRef<Value> rowPositions,
         Value maskOffset, Value t0, const RowVariants *variants,
         TileKeyOf keyOf);

// Where a block writes its rows' states.
struct Destination {
  Value out, lse;
  /// The indices of a packed row's (row, head) in `out` and `lse`.
  std::function<llvm::SmallVector<Value>(ImplicitLocOpBuilder &,
                                         const PackedRow &)>
      rows;
  /// i1: whether the output is written (null: always). An empty
  /// partition's is not: the merge skips it by its LSE.
  Value writeOutput;
  /// 16-bit outputs go through this tile for 16-byte stores (null: stored
  /// from the fragments).
  const codegen::SharedTile *stage = nullptr;
};

/// Step 4: the normalized output and LSE of the warp's valid rows.
void emitEpilogue(ImplicitLocOpBuilder &b, const PrefillKernelSpec &s,
                  const Work &w, codegen::MmaTile &mma,
                  codegen::WarpAttentionTile &tile,
                  const codegen::WarpAttentionTile::Final &fin, Value warpRow0,
                  Value kvHead, const Destination &dest, Value lane);

/// The LSEs of an empty partition's rows: -inf, one row per thread.
void emitEmptyPartition(ImplicitLocOpBuilder &b, const PrefillKernelSpec &s,
                        const Work &w, Value kvHead, const Destination &dest,
                        Value thread);

} // namespace kvir::gpu_lowering::prefill

#endif // KVIR_LIB_CONVERSION_KVTOGPU_PREFILLKERNELPARTS_H
