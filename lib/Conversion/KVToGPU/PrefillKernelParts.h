//===- PrefillKernelParts.h - The prefill kernel's pieces ------*- C++ -*-===//
//
// What the pieces of the tensor-core prefill kernel share: its shared
// layout and skeleton (PrefillKernel.cpp), step 1 (PrefillWork.cpp: where
// a block's tile, keys and work item are), the K/V stream and tile
// skipping (PrefillKVStream.cpp), the mainloop (PrefillMainloop.cpp), the
// masks (PrefillMask.cpp) and step 4 (PrefillEpilogue.cpp: where its rows'
// states go).
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_LIB_CONVERSION_KVTOGPU_PREFILLKERNELPARTS_H
#define KVIR_LIB_CONVERSION_KVTOGPU_PREFILLKERNELPARTS_H

#include "PrefillKernel.h"

#include "kvir/Codegen/AttentionTile.h"
#include "kvir/Codegen/LiveTileMarks.h"
#include "kvir/Codegen/PagedTileLoader.h"
#include "kvir/Codegen/Pipeline.h"
#include "kvir/Codegen/Rope.h"
#include "kvir/Codegen/SharedSoftmax.h"
#include "kvir/Codegen/TmaCopy.h"
#include "kvir/Codegen/Variants.h"
#include "kvir/Dialect/KV/Utils/Visibility.h"
#include "kvir/Dialect/KVGPU/Transforms/TensorCoreLayout.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include <functional>

namespace kvir::gpu_lowering::prefill {

using mlir::ImplicitLocOpBuilder;
using mlir::Value;

/// Indices of the kernel's shared buffers in its layout.
using Buffers = kvgpu::TensorCoreBuffers;

/// What the kernel's shared memory depends on, from its spec.
kvgpu::TensorCoreLayoutShape layoutShape(const PrefillKernelSpec &s);

/// Adds the kernel's shared buffers to `layout`: the one definition
/// (kvgpu::addTensorCoreBuffers) the config chooser sizes configs by.
Buffers buildLayout(const PrefillKernelSpec &s,
                    codegen::SharedMemoryLayout &layout);

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
static_assert(kMetaSlots == kvgpu::kTensorCoreMetaSlots,
              "the layout's bookkeeping holds every meta slot");

/// The kernel's arguments, named.
struct Arguments {
  Value q, qPe, qoIndptr, mask, positions, frameIndptr, framePositions, topk,
      workItems, out, lse, numPartitions, finalOut, finalLse;
  /// copy = tma: the K and V tensor maps (memref<16xi64>), and the query's
  /// (copiesQueryByTma).
  Value kMap, vMap, qMap;
  kv::PagedOperands paged;
  codegen::RaggedOperands ragged;
};

/// Where an argument binds: one named value, or a member of a group.
enum class ArgumentBinding { single, kvOperand, variantOperand };

/// The kernel's arguments in order, one call of `arg(type, binding,
/// field)` each (`field` for single values): the one list that
/// prefillArgumentTypes and bindArguments read.
void listArguments(
    const PrefillKernelSpec &s,
    llvm::function_ref<void(mlir::Type, ArgumentBinding, Value Arguments::*)>
        arg);

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

/// Packed row `rowInTile` of the block's tile (query row r / stride, head
/// r % stride of KV head `kvHead`'s group, PrefillKernelSpec::rowStride;
/// padding rows are not valid and name the group's last head).
PackedRow unpackRow(ImplicitLocOpBuilder &b, const PrefillKernelSpec &s,
                    const Work &w, Value kvHead, Value rowInTile);
/// The query head of packed row `packedRow` of a request (a padding row's:
/// the group's last).
Value packedRowHead(ImplicitLocOpBuilder &b, const PrefillKernelSpec &s,
                    Value kvHead, Value packedRow);

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
                                    const codegen::WarpAttentionTile &tile, int64_t t,
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
                                          const codegen::WarpAttentionTile &tile);

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
         const Arguments &a, const codegen::WarpAttentionTile &tile,
         llvm::ArrayRef<Value> logits, llvm::ArrayRef<Value> rowPositions,
         Value maskOffset, Value t0, const RowVariants *variants,
         TileKeyOf keyOf);

/// roles = producer: how K/V tiles pass from the producer warpgroup to the
/// consumer warpgroups, and how the consumers take turns. The ring is an
/// MBarrierPipeline over the K/V stream's stages: the producer waits until
/// a stage is empty, copies a tile into it, and each of its threads
/// arrives on the stage's full barrier once its own copies landed and were
/// fenced for the async proxy (wgmma reads them there); each consumer
/// thread waits on full and arrives on empty once its products of the tile
/// retired. The consumer warpgroups issue their products in turn
/// (FlashAttention-3's ping-pong): group g waits at named barrier 2 + g
/// until group g - 1 passed it the turn, so that one group's softmax runs
/// while the next one's products do. Barrier 0 is the block's, 1 the
/// producer's own.
class StageHandoff {
public:
  /// `queryLanding`: the query tile comes by TMA, completing on a barrier
  /// of its own after the ring's.
  StageHandoff(const PrefillKernelSpec &s, Value barriers, bool queryLanding);

  /// Thread `leader` initializes the barriers; the caller's block barrier
  /// publishes them.
  void init(ImplicitLocOpBuilder &b, Value leader) const;

  /// The query's barrier (a shared pointer) and the one arrival of its
  /// copier, announcing `bytes` (i32) of them; the consumers' wait for
  /// them (its only phase).
  Value queryBarrier(ImplicitLocOpBuilder &b) const;
  void queryExpecting(ImplicitLocOpBuilder &b, Value bytes) const;
  /// The copier's arrival without bytes: the query came another way
  /// (cp.async, published by the block's barrier).
  void queryArrived(ImplicitLocOpBuilder &b) const;
  void waitQuery(ImplicitLocOpBuilder &b) const;

  /// Producer: waits until K/V tile `index`'s stage is empty.
  void waitEmpty(ImplicitLocOpBuilder &b, Value index) const;
  /// Producer thread: its copies of tile `index` landed and are fenced.
  void filled(ImplicitLocOpBuilder &b, Value index) const;
  /// Producer thread: its arrival for tile `index` announces `bytes` (i32)
  /// of TMA copies that complete on the stage's full barrier.
  void filledExpecting(ImplicitLocOpBuilder &b, Value index, Value bytes) const;
  /// The full barrier of tile `index`'s stage (a shared pointer).
  Value fullBarrier(ImplicitLocOpBuilder &b, Value index) const;
  /// The producer warpgroup's own barrier (staged page entries).
  void producerSync(ImplicitLocOpBuilder &b) const;

  /// Consumer: waits until tile `index` is in its stage.
  void waitFull(ImplicitLocOpBuilder &b, Value index) const;
  /// Consumer thread: done with tile `index`'s stage.
  void release(ImplicitLocOpBuilder &b, Value index) const;
  /// Consumer warpgroup `group` (index): once before the loop, the last
  /// group gives the first its turn; before issuing products, waits for
  /// its turn; after, passes it on. Nothing with one group.
  void beginTurns(ImplicitLocOpBuilder &b, Value group) const;
  void awaitTurn(ImplicitLocOpBuilder &b, Value group) const;
  void passTurn(ImplicitLocOpBuilder &b, Value group) const;

private:
  int64_t consumerGroups;
  codegen::MBarrierPipeline ring;
  Value barriers;
  bool queryLanding;
};

/// A quantized tile's rings and the value tile its codes become.
struct QuantizedTile {
  codegen::SharedTile codes;
  std::optional<codegen::SharedTile> scales;
  codegen::SharedTile values;
};

/// Step 3's producer side: the partition's K/V tiles as they stream
/// through shared memory. PagedTileLoader gives the rows' addresses (page
/// tables, gathers, ragged rows), the pipeline's stages hold the tiles
/// (K and V a commit group each; MLA one K/V tile), and the tiles staged
/// as codes (quantized KV) or transposed (vLLM's V pool) are converted
/// into the one K or V tile the mma reads.
class KVTileStream {
public:
  /// Builds at `b` what the stream computes once (the loader's bases, the
  /// gather's query row, the tile count).
  KVTileStream(ImplicitLocOpBuilder &b, const codegen::KernelFunc &kf,
               const PrefillKernelSpec &s, const Buffers &buf,
               const Arguments &a, const Work &w, Value kvHead, Value thread);

  const codegen::CpAsyncPipeline &getPipeline() const { return pipeline; }
  Value getNumTiles() const { return numTiles; }
  /// The tiles the mma reads: K (MLA: ckv, also the value tile), kpe
  /// (MLA) and V.
  const codegen::SharedTile &kTiles() const { return k; }
  const codegen::SharedTile &vTiles() const { return v; }
  const std::optional<codegen::SharedTile> &kpeTiles() const { return kpe; }

  /// The first key and key count of tile `index` of the partition.
  std::pair<Value, Value> range(ImplicitLocOpBuilder &b, Value index) const;
  /// The slot of tile `index`'s staged page entries (and keys).
  Value idSlot(ImplicitLocOpBuilder &b, Value index) const;
  /// The key of row `e` of the tile whose first key is `t0` (entries in
  /// `idSlot`): t0 + e, or the gathered one (-1: none).
  Value keyOf(ImplicitLocOpBuilder &b, Value idSlot, Value t0,
              Value e) const {
    return loader.keyOf(b, idSlot, t0, e);
  }
  /// Builds `body(t0, count)` where tile `index` exists.
  void ifTile(ImplicitLocOpBuilder &b, Value index,
              llvm::function_ref<void(ImplicitLocOpBuilder &, Value, Value)>
                  body) const;

  /// The schedule of a ring of S stages (K and V a commit group each; MLA
  /// one K/V tile): tile n's page entries (or gathered keys) ride with an
  /// earlier K group, so that they have landed when tile n is issued. The
  /// prologue's first group (with the query tile) stages those of tiles
  /// 0 ... S - 1 (`stageFirstIds`); `issuePrologue` issues tiles
  /// 0 ... S - 2, K tile m with the entries of tile m + S for m <= S - 3
  /// (those of tile 2S - 2 ride with the loop's first K group); iteration i
  /// refills the stage of tile i - 1 with tile i + S - 1 (`afterKWait`,
  /// with the entries of tile i + 2S - 2, after the wait for K_i;
  /// `afterVWait` after the wait for V_i). `live` (null: every tile) says
  /// whether mask_mod left the tile live: a dead one is not loaded, its
  /// groups are still committed. Single-buffered (S = 1, one K and one V
  /// buffer, two entry slots, `ahead` = i): the prologue issues K_0 (its
  /// entries staged with the query); `afterKWait` issues V_i with the
  /// entries of tile i + 1, `afterVWait` K_{i + 1}.
  void stageFirstIds(ImplicitLocOpBuilder &b) const;
  void issuePrologue(ImplicitLocOpBuilder &b, llvm::ArrayRef<Value> live) const;
  /// The tile iteration `i` refills a stage with: i + S - 1 (`ahead`).
  Value aheadOf(ImplicitLocOpBuilder &b, Value i) const;
  void afterKWait(ImplicitLocOpBuilder &b, Value i, Value ahead,
                  Value live) const;
  void afterVWait(ImplicitLocOpBuilder &b, Value ahead, Value live) const;
  /// roles = producer: the producer warpgroup's loop. Tile n's K and V are
  /// issued into its stage once `handoff` says it is empty, one commit
  /// group; the threads hand tile n - lag over once its group landed (lag
  /// = 1 with three stages or more, so that a tile's copies fly while the
  /// one before lands; 0 with two, where waiting for stage n + 1 while tile
  /// n is not handed over would deadlock). Page entries of tile n + 1 are
  /// loaded while tile n is issued and stored for the producer's threads.
  /// copy = tma: thread 0 issues the boxes of every whole tile (K and V,
  /// their bytes announced on the stage's full barrier, which the other
  /// threads arrive on at once); the tile cut by the end of the keys goes
  /// by cp.async as above, so no row past the keys is read.
  void produce(ImplicitLocOpBuilder &b, const StageHandoff &handoff) const;
  /// Consumer: the stage the mma reads K (V) of the tile in stage `stage`
  /// from: `stage`, or, where the ring holds codes or transposed rows, the
  /// one converted tile, written by the block (barrier after). (With a
  /// producer, the producer converted the tile into `stage`.)
  Value prepareK(ImplicitLocOpBuilder &b, Value stage) const;
  Value prepareV(ImplicitLocOpBuilder &b, Value stage) const;
  /// RoPE: turns tile `index`'s keys in K stage `stage` to their positions,
  /// in place, with `rotation`'s threads (the block's after a barrier, or
  /// a producer's once its copies landed); the caller publishes them.
  void rotateKeys(ImplicitLocOpBuilder &b,
                  const codegen::TileRotation &rotation, Value index,
                  Value stage) const;

private:
  /// Stages tile `index`'s page entries (or gathered keys), when the
  /// tables have them.
  void stageIds(ImplicitLocOpBuilder &b, Value index) const;
  /// Converts V's codes or transposed rows in ring stage `stage` into stage
  /// `valueStage` of the V tiles, over `threads` threads (nothing where V
  /// lands as the mma reads it).
  void convertV(ImplicitLocOpBuilder &b, Value stage, Value valueStage,
                int64_t threads) const;
  /// Issues the `role` part (K: K, with MLA's kpe; V: V) of tile `index`
  /// into its stage, where `live` (null: always) holds.
  void issue(ImplicitLocOpBuilder &b, Value index, kv::PoolRole role,
             Value live) const;
  /// copy = tma: whether the tile of keys [t0, t0 + count) is copied as
  /// boxes (whole, and over pages, starting a page).
  Value copiesByTma(ImplicitLocOpBuilder &b, Value t0, Value count) const;
  /// copy = tma, one thread: announces tile `index`'s bytes on its stage's
  /// full barrier and issues its K and V boxes (one per page, or the whole
  /// ragged tile, and 128-byte column block).
  void issueBoxes(ImplicitLocOpBuilder &b, const StageHandoff &handoff,
                  Value index, Value t0) const;

  const PrefillKernelSpec &s;
  const Work &w;
  Value thread, kvHead;
  codegen::CpAsyncPipeline pipeline;
  codegen::SharedTile k, v;
  std::optional<codegen::SharedTile> kpe, vTransposed;
  std::optional<QuantizedTile> kQuant, vQuant;
  std::optional<codegen::TmaTileCopy> kTma, vTma;
  int64_t idSlots;
  bool hasIds;
  codegen::PagedTileLoader loader;
  Value numTiles;
};

/// mask_mod: K/V tiles it hides from every row of the block's tile are
/// neither loaded nor multiplied. Before tile n is issued, every thread
/// evaluates the region on its share of the tile's (row, key) pairs and
/// those that find a visible pair mark it live (LiveTileMarks, one slot
/// per stage); after a barrier the slot says whether the tile is live.
/// (The prologue marks tiles 0 ... S - 2 before one barrier; iteration i
/// marks tile i + S - 1, whose slot was last read before the barrier of
/// iteration i - 1.)
class TileSkipping {
public:
  /// Clears the marks (thread 0, then a barrier).
  TileSkipping(ImplicitLocOpBuilder &b, const codegen::KernelFunc &kf,
               const PrefillKernelSpec &s, const Buffers &buf,
               const Arguments &a, const Work &w, const KVTileStream &stream,
               const codegen::VariantEmitter &variants, Value kvHead,
               Value thread);
  /// Marks tile `index` live if the region shows any of its keys to any
  /// row of the block's tile.
  void mark(ImplicitLocOpBuilder &b, Value index) const;
  /// Whether tile `index` is live (after `mark` and a barrier).
  Value isLive(ImplicitLocOpBuilder &b, Value index) const;

private:
  const PrefillKernelSpec &s;
  const Arguments &a;
  const Work &w;
  const KVTileStream &stream;
  const codegen::VariantEmitter &variants;
  Value kvHead, thread;
  codegen::LiveTileMarks marks;
};

/// What the mainloop reads besides the K/V stream: the query tile(s), the
/// warp's query fragments (empty: read from the tile per K/V tile), its
/// rows' positions (loadRowPositions), the variants' rows (null without),
/// RoPE (null without), fp8's score scale (null without) and where the
/// request's custom mask starts; with roles = producer, the handoff the
/// tiles arrive by and the warp's consumer warpgroup (else null).
struct MainloopInputs {
  const codegen::SharedTile &qTile;
  const codegen::SharedTile *qPeTile;
  llvm::ArrayRef<Value> qFrags, rowPositions;
  const RowVariants *variants;
  const codegen::TileRotation *rotation;
  Value kValueScale, maskOffset;
  const StageHandoff *handoff = nullptr;
  Value consumerGroup = {};
  /// Value warps sharing one softmax (PrefillConfigAttr::sharesSoftmax):
  /// where it goes, and whether this warp's slice scores the tiles (i1).
  const codegen::SharedSoftmax *sharedSoftmax = nullptr;
  Value scoresTiles = {};
};

/// Step 3: the K/V tiles of the partition, tiles i + 1 ... i + S - 1 in
/// flight while tile i is scored (S = Q K^T, masked only where a tile
/// needs it, the online softmax) and accumulated (O += P V); mask_mod's
/// dead tiles (`skipping`, null without) neither loaded nor multiplied.
/// The pipeline's prologue (tiles 0 ... S - 2) is issued; with skipping,
/// `liveAhead` says which of them are live. Builds at `b`; returns the
/// rows' final running state.
codegen::WarpAttentionTile::State
emitMainloop(ImplicitLocOpBuilder &b, const PrefillKernelSpec &s, const Work &w,
             const Arguments &a, const KVTileStream &stream,
             const TileSkipping *skipping,
             const codegen::WarpAttentionTile &tile, const MainloopInputs &in,
             llvm::ArrayRef<Value> liveAhead);

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
                  const Work &w, const codegen::WarpAttentionTile &tile,
                  const codegen::WarpAttentionTile::Final &fin, Value warpRow0,
                  Value kvHead, const Destination &dest, Value lane);

/// The LSEs of an empty partition's rows: -inf, one row per thread.
void emitEmptyPartition(ImplicitLocOpBuilder &b, const PrefillKernelSpec &s,
                        const Work &w, Value kvHead, const Destination &dest,
                        Value thread);

} // namespace kvir::gpu_lowering::prefill

#endif // KVIR_LIB_CONVERSION_KVTOGPU_PREFILLKERNELPARTS_H
