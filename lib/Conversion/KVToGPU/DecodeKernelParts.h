//===- DecodeKernelParts.h - The decode kernel's pieces --------*- C++ -*-===//
//
// The decode kernel's pieces: its shared buffers, meta slots and arguments
// (DecodeLayout.cpp), the block's coordinates and token range
// (DecodeWork.cpp), the K/V stream (DecodeKVStream.cpp), the rows the
// scores read (DecodeKeyRows.cpp), the mainloop and epilogue
// (DecodeMainloop.cpp), composed by buildDecodeBody (DecodeKernel.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_LIB_CONVERSION_KVTOGPU_DECODEKERNELPARTS_H
#define KVIR_LIB_CONVERSION_KVTOGPU_DECODEKERNELPARTS_H

#include "DecodeKernel.h"

#include "kvir/Codegen/AttentionState.h"
#include "kvir/Codegen/LiveTileMarks.h"
#include "kvir/Codegen/PagedTileLoader.h"
#include "kvir/Codegen/Pipeline.h"
#include "kvir/Codegen/SharedTile.h"
#include "kvir/Codegen/Variants.h"
#include "kvir/Dialect/KV/Utils/PagedAddressing.h"

#include <optional>

namespace kvir::gpu_lowering::decode {

/// Slots of the meta buffer past the token range and table base.
constexpr int64_t kMetaPosition = 4, kMetaRequest = 5, kMetaKvLen = 6;
/// With a frame: the row's request, position and key shift in it.
constexpr int64_t kMetaFrameRequest = 7, kMetaFramePosition = 8,
                  kMetaKeyShift = 9;

/// Indices of the kernel's shared buffers in its layout.
struct DecodeBuffers {
  /// K rows of the tiles in flight, and V rows ([stages, tile, padded]; V
  /// transposed: [stages, padded, tile + pad]), as stored.
  unsigned kTiles = 0, vTiles = 0;
  /// The group's queries [group, padded], as stored.
  unsigned query = 0;
  /// i32: token range start, end, table base of the request, first
  /// visible token (the start is aligned down for transposed V); with RoPE
  /// or query rows, then the query's position (kv_len - 1 for a decode);
  /// with query rows, then the row's request; gathering, then (after an
  /// unused request slot) the request's kv_len; with a frame, then (after
  /// unused slots) the row's request, position and key shift in it.
  unsigned meta = 0;
  /// [idSlots, idEntriesPerTile] table entries of the tiles' pages (one
  /// per token when gathering).
  unsigned pageIds = 0;
  /// gathers(): [idSlots, tile] i32 keys of the tiles' entries.
  std::optional<unsigned> keyIds;
  /// skipsTiles(): [stages + 1] i32, slot n % (stages + 1) holding n + 1
  /// once some key of tile n is visible to some head.
  std::optional<unsigned> liveTiles;
  /// threads_z > 1: the z-lanes' partial states, [tz * group] f32 m and l,
  /// [tz * group, padded] f32 acc.
  std::optional<unsigned> zMax, zSum, zAcc;
  /// decodesTilesInShared(): [tile, padded] f16 K and V rows of the
  /// current tile, decoded.
  std::optional<unsigned> kDecoded, vDecoded;
  /// int8Groups(): [stages, tile, scaleColumns()] K and V scales of the
  /// tiles in flight, in the activation type.
  std::optional<unsigned> kScales, vScales;
  /// transposedVChunk(): [tile, padded] the current tile's V rows.
  std::optional<unsigned> vRows;
  /// rotatesTilesInShared(): [tile, padded] f32 K rows of the current
  /// tile, rotated.
  std::optional<unsigned> kRotated;
};

/// The kernel's arguments, named (decodeArgumentTypes' order). Without
/// partitions the final state is the state (finalOut = out).
struct DecodeArguments {
  mlir::Value q, qoIndptr, positions, frameIndptr, framePositions, topk,
      workItems, out, lse, finalOut, finalLse;
  kv::PagedOperands kv;
};

DecodeArguments bindDecodeArguments(const codegen::KernelFunc &kf,
                                    const DecodeKernelSpec &s);

/// The kernel's shared buffers, added to `layout` in KernelFunc::getShared
/// order (with a rotated K tile where it fits).
DecodeBuffers buildLayout(const DecodeKernelSpec &s,
                          codegen::SharedMemoryLayout &layout);

/// What every part of a block's body reads: the config as numbers, the
/// thread's coordinates, the block's request and KV head, and the token
/// range thread 0 found (DecodeWork.cpp).
struct DecodeBlock {
  DecodeBlock(const DecodeKernelSpec &spec, const codegen::KernelFunc &kf,
              const DecodeBuffers &buf, const DecodeArguments &args);

  const DecodeKernelSpec &spec;
  const codegen::KernelFunc &kf;
  const DecodeBuffers &buf;
  const DecodeArguments &args;
  int64_t headDim, group, vec, tx, tz, tile, numThreads;
  /// The lanes' dims: tx * vec, at least the head dim.
  int64_t padded;
  /// K/V as stored (fp8 / int8 codes for quantized caches).
  mlir::Type elt;
  bool fp8, int8;
  int64_t quantGroup;

  /// threadIdx; the thread's linear index in the block (every cooperative
  /// loop's stride); the block's request (a decode) or query row (query
  /// rows: its request comes from thread 0's search), and KV head.
  mlir::Value x, y, z, lane, req, kvHead;
  /// Split-KV: the work item's chunk, its request's chunk count and its
  /// workspace row.
  mlir::Value chunk, numChunks, partialRow;
  /// The row of q and the outputs; the thread's query head, first dim and
  /// whether that is a real dim; index 0.
  mlir::Value qRow, head, dim0, activeX, zero;
  /// From thread 0: the block's tokens [start, end), the request's table
  /// base, the first visible token, the query's position (or null).
  mlir::Value start, end, tableBase, visibleStart, queryPosition;
  /// The variants' request and query position (in the frame, if any), and
  /// the shift of key positions into it (null without a frame).
  mlir::Value variantRequest, variantPosition, keyShift;
  std::optional<codegen::VariantEmitter> variants;
  /// ALiBi and score_mod see the score in natural units.
  bool natural = false;

  /// Meta slot `i` (thread 0's values) as an index.
  mlir::Value metaAt(mlir::ImplicitLocOpBuilder &b, int64_t i) const;
  /// f16 / bf16 vectors extended to f32; f32 as they are.
  mlir::Value toVecF32(mlir::ImplicitLocOpBuilder &b, mlir::Value v) const;
};

/// The block's coordinates: thread ids, the linear index, request and KV
/// head; split-KV: the work item, shuffled to every warp from its lane 0,
/// and `b` moved into the branch of blocks that have one.
void emitBlockCoordinates(mlir::ImplicitLocOpBuilder &b, DecodeBlock &blk);

/// Once per block: thread 0 reads the request's table entries and stores
/// the block's token range (its partition's share of the visible keys) and
/// what the variants see in the meta buffer, and clears the live-tile
/// marks (`marks`, null without); the z == 0 threads stage the group's
/// queries. After a barrier every thread reads them back.
void emitBlockRange(mlir::ImplicitLocOpBuilder &b, DecodeBlock &blk,
                    const codegen::LiveTileMarks *marks);

/// The K/V tiles of the block's range as they stream through a ring of
/// `stages` shared buffers (CpAsyncPipeline): at the top of iteration i,
/// tiles i ... i + stages - 2 are in flight; once everyone is done with
/// tile i - 1, its buffer takes tile i + stages - 1. The page entries of a
/// tile are loaded into registers a whole iteration before they are stored
/// to its page-id slot (slot = stage), so their latency hides behind the
/// scoring of a tile. mask_mod: tiles it hides from every head of the
/// block are neither loaded nor scored (marked `stages` tiles ahead).
class DecodeKVStream {
public:
  DecodeKVStream(mlir::ImplicitLocOpBuilder &b, const DecodeBlock &blk,
                 const codegen::LiveTileMarks *marks);

  const codegen::CpAsyncPipeline &getPipeline() const { return pipeline; }
  mlir::Value getNumTiles() const { return numTiles; }
  const codegen::SharedTile &kTiles() const { return keys; }
  /// V as staged: rows, or (transposed V) [padded, tile + pad] columns.
  const codegen::SharedTile &vTiles() const { return values; }
  const std::optional<codegen::SharedTile> &kScales() const { return kScale; }
  const std::optional<codegen::SharedTile> &vScales() const { return vScale; }
  bool skipsTiles() const { return marks; }

  /// The first token and token count of tile `index`.
  std::pair<mlir::Value, mlir::Value> range(mlir::ImplicitLocOpBuilder &b,
                                            mlir::Value index) const;
  /// The key of row `t` of the tile whose entries are in `idSlot`.
  mlir::Value keyOf(mlir::ImplicitLocOpBuilder &b, mlir::Value idSlot,
                    mlir::Value tile0, mlir::Value t) const {
    return loader.keyOf(b, idSlot, tile0, t);
  }
  mlir::Value idSlot(mlir::ImplicitLocOpBuilder &b, mlir::Value index) const;
  /// Tile `index`'s page entries, loaded into registers; stored to its slot.
  llvm::SmallVector<mlir::Value> loadIds(mlir::ImplicitLocOpBuilder &b,
                                         mlir::Value index) const;
  void storeIds(mlir::ImplicitLocOpBuilder &b, mlir::Value index,
                llvm::ArrayRef<mlir::Value> entries) const;
  /// mask_mod: marks tile `index` live if the region shows any of its keys
  /// to any head of the block (no-op without skipping).
  void mark(mlir::ImplicitLocOpBuilder &b, mlir::Value index) const;
  /// Whether tile `index` is live (after its mark and a barrier).
  mlir::Value isLive(mlir::ImplicitLocOpBuilder &b, mlir::Value index) const;
  /// Issues tile `index`'s copies into its stage, where it is live.
  void issueIfLive(mlir::ImplicitLocOpBuilder &b, mlir::Value index) const;
  /// The prologue: the entries of tiles 0 ... stages - 1 (one round trip)
  /// and their marks, then tiles 0 ... stages - 2, one commit group each.
  void emitPrologue(mlir::ImplicitLocOpBuilder &b) const;

private:
  void issue(mlir::ImplicitLocOpBuilder &b, mlir::Value index) const;

  const DecodeBlock &blk;
  const codegen::LiveTileMarks *marks;
  codegen::CpAsyncPipeline pipeline;
  codegen::SharedTile keys, values;
  std::optional<codegen::SharedTile> kScale, vScale;
  codegen::PagedTileLoader loader;
  mlir::Value numTiles;
};

/// The key of tile row t (its position, for RoPE, masks and variants).
using KeyOf =
    llvm::function_ref<mlir::Value(mlir::ImplicitLocOpBuilder &, mlir::Value)>;

/// How the scores read a tile's rows (DecodeKeyRows.cpp): from the stage
/// ring, or from what the block wrote once per tile for every head of the
/// group (V rows transposed back, codes decoded to f16, keys rotated);
/// dequantized, extended to f32; keys rotated by RoPE relative to the
/// query's position.
class DecodeKeyRows {
public:
  DecodeKeyRows(mlir::ImplicitLocOpBuilder &b, const DecodeBlock &blk,
                const DecodeKVStream &stream, mlir::Value zeroVec);

  /// Everyone is done with the previous tile's V rows and decoded tiles (a
  /// barrier before): transposes and decodes stage `stage` for all, each
  /// followed by a barrier.
  void prepare(mlir::ImplicitLocOpBuilder &b, mlir::Value stage) const;
  /// With a rotated tile: rotates stage `stage`'s keys once for the
  /// group, then a barrier (everyone is done with the previous tile's
  /// rotated rows: the barrier before).
  void rotate(mlir::ImplicitLocOpBuilder &b, mlir::Value stage,
              KeyOf keyOf) const;
  /// Key row `t` (of key `key`) as the scores read it.
  mlir::Value keyRow(mlir::ImplicitLocOpBuilder &b, mlir::Value stage,
                     mlir::Value key, mlir::Value t) const;
  /// V row `t` in f32.
  mlir::Value valueRow(mlir::ImplicitLocOpBuilder &b, mlir::Value stage,
                       mlir::Value t) const;
  /// K row `t`'s codes in f32, unscaled, and the scales of its groups (int8
  /// groups).
  std::pair<mlir::Value, mlir::Value>
  keyCodes(mlir::ImplicitLocOpBuilder &b, mlir::Value stage,
           mlir::Value t) const;

private:
  void transposeV(mlir::ImplicitLocOpBuilder &b, mlir::Value stage) const;
  void decodeTile(mlir::ImplicitLocOpBuilder &b, mlir::Value stage) const;
  mlir::Value codesToF16(mlir::ImplicitLocOpBuilder &b,
                         mlir::Value codes) const;
  /// Where V rows are read: the stage ring, or the rows transposed from it.
  const codegen::SharedTile &valueSource() const;
  /// The K (`isKey`) or V row of token `t` in f32, its columns from
  /// `column` (null: the lane's dim0); int8: times its groups' scales
  /// unless `scaled` is false; then the scales come back in
  /// `*groupScales`.
  mlir::Value rowOf(mlir::ImplicitLocOpBuilder &b, bool isKey,
                    mlir::Value stage, mlir::Value t, bool scaled = true,
                    mlir::Value *groupScales = nullptr,
                    mlir::Value column = mlir::Value()) const;
  mlir::Value rotatedKeyRow(mlir::ImplicitLocOpBuilder &b, mlir::Value stage,
                            mlir::Value key, mlir::Value t) const;

  const DecodeBlock &blk;
  const DecodeKVStream &stream;
  mlir::Value zeroVec;
  /// Transposed V: the current tile's rows.
  std::optional<codegen::SharedTile> vRows;
  /// Quantized tiles decoded once per tile for the whole group: [tile,
  /// padded] f16 rows (no stages), or none.
  std::optional<codegen::SharedTile> kDecoded, vDecoded;
  /// RoPE: whether the lane's dims rotate, the partner dims and signs of
  /// rotate-half, the lane's frequencies; the rotated tile (a group).
  bool ropes = false;
  mlir::Value rotates, partnerDim, partnerSign;
  llvm::SmallVector<mlir::Value> freqs;
  std::optional<codegen::SharedTile> kRotated;
};

/// The K/V loop: each z-lane scores tokens z, z + tz, ... of a tile,
/// masked, then one online update (AttentionState); returns the thread's
/// partial state (accumulated V in code units for fp8).
codegen::PartialState
emitDecodeMainloop(mlir::ImplicitLocOpBuilder &b, const DecodeBlock &blk,
                   const DecodeKVStream &stream, const DecodeKeyRows &rows,
                   mlir::Value qVec, mlir::Value zeroVec, mlir::Value negInf);

/// The z-lanes' partial states merged through shared memory, and the state
/// of (request, head) written by z-lane 0's lanes holding real dims:
/// final, or (split-KV) an f32 base-2 partial state unless the item is a
/// whole request.
void emitDecodeEpilogue(mlir::ImplicitLocOpBuilder &b, const DecodeBlock &blk,
                        codegen::PartialState state);

} // namespace kvir::gpu_lowering::decode

#endif // KVIR_LIB_CONVERSION_KVTOGPU_DECODEKERNELPARTS_H
