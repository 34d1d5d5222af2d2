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
