//===- TensorCoreLayout.h - Tensor-core kernels' shared memory -*- C++ -*-===//
//
// The one definition of what the tensor-core attention kernel (prefill,
// MLA, decode on tensor cores) keeps in shared memory. The kernel builds
// its buffers from it (convert-kv-to-gpu); the config chooser sizes a
// candidate config by it (kv-tile, and configs chosen during the
// lowering), so the two cannot disagree.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_DIALECT_KVGPU_TRANSFORMS_TENSORCORELAYOUT_H
#define KVIR_DIALECT_KVGPU_TRANSFORMS_TENSORCORELAYOUT_H

#include "kvir/Codegen/KernelFunc.h"
#include "kvir/Codegen/TileLayout.h"
#include "kvir/Dialect/KV/IR/KVOps.h"
#include "kvir/Dialect/KVGPU/IR/KVGPUDialect.h"

#include <optional>

namespace kvir::kvgpu {

/// The i64 slots of the block's bookkeeping buffer (`meta`).
constexpr int64_t kTensorCoreMetaSlots = 11;

/// Whether the kernel stages a final output of element type `outElement`
/// through shared memory, for 16-byte stores: 16-bit outputs (f32 ones are
/// stored from the fragments, a quad writing a whole 32-byte sector).
inline bool stagesOutputInShared(mlir::Type outElement) {
  return outElement && outElement.getIntOrFloatBitWidth() == 16;
}

/// The swizzle of the tiles the mma reads (Q, K, V and MLA's rotary
/// parts): the hardware's 128-byte one that wgmma's descriptors take, else
/// kvir's xor-chunks for ldmatrix.
codegen::Swizzle operandSwizzle(PrefillConfigAttr config);

/// What the kernel's shared memory depends on.
struct TensorCoreLayoutShape {
  PrefillConfigAttr config;
  /// K (MLA: ckv), V and MLA's rotary part.
  int64_t headDim = 0, headDimV = 0, peDim = 0;
  /// q's element type and the activation type the mma reads K/V in.
  mlir::Type qElement, kvElement;
  /// Paged KV (null: ragged K/V rows).
  kv::PagedType paged;
  /// The element type of the page entries the kernel stages (its table's),
  /// unused without a paged table of entries.
  mlir::Type pageEntry;
  /// The element type of the final outputs the kernel writes (16-bit ones
  /// are staged for 16-byte stores), or null: partial states only.
  mlir::Type finalOutElement;
  /// Top-k key lists, a custom mask, mask_mod's tile skipping.
  bool gathers = false, mask = false, skipsTiles = false;

  /// Slots of staged page entries (and keys). With S stages, tile n's
  /// entries arrive with K tile n - S + 1 (or in the prologue) and are
  /// read when tile n is issued, S - 1 tiles later; the prologue stages
  /// those of tiles 0 ... 2S - 3 before the loop's first barrier:
  /// 2 (S - 1) slots. Single-buffered (S = 1), tile i + 1's entries are
  /// staged while tile i's V is issued: 2 slots. A gathering kernel also
  /// reads a tile's keys while it is scored: one slot more.
  int64_t idSlots() const {
    int64_t stages = config.getStages();
    return (stages == 1 ? 2 : 2 * (stages - 1)) + (gathers ? 1 : 0);
  }
  /// mask_mod's live-tile marks: the prologue marks tiles 0 ... S - 2
  /// before one barrier, and the loop's first mark (tile S - 1) may land
  /// while tile 0's is still read: S slots.
  int64_t liveTileSlots() const { return config.getStages(); }
  bool isMla() const { return peDim > 0; }
  bool quantized() const { return paged && paged.isQuantized(); }
  bool int8Groups() const {
    return paged && paged.getQuant() == kv::Quant::int8_group;
  }
  /// vLLM's V pool: slots per chunk of the transposed V ring, else 0.
  int64_t transposedVChunk() const;
  /// Whether V arrives in a ring of its own (codes, or transposed rows),
  /// converted per tile into one V tile.
  bool convertsV() const { return quantized() || transposedVChunk(); }
};

/// Indices of the kernel's shared buffers in its layout.
struct TensorCoreBuffers {
  unsigned q = 0, k = 0, meta = 0;
  /// v without MLA; q_pe and kpe with it.
  std::optional<unsigned> v, qPe, kpe, pageIds, maskScratch, outStage;
  /// Gathering: [idSlots, kvTile] i32 keys of the tiles' entries.
  std::optional<unsigned> keyIds;
  /// mask_mod: the last K/V tile each of liveTileSlots() slots found live
  /// (index + 1).
  std::optional<unsigned> liveTiles;
  /// Quantized KV: the code rings, and int8 groups' scale rings.
  std::optional<unsigned> kCodes, vCodes, kScales, vScales;
  /// roles = producer: the K/V ring's full and empty mbarriers, i64
  /// [2 * stages] (MBarrierPipeline).
  std::optional<unsigned> stageBarriers;
  /// A softmax shared by the value slices (sharesSoftmax): P [q_tile x
  /// SharedSoftmax::pColumns(kv_tile, operand swizzle)] and f32 row stats
  /// [q_tile x SharedSoftmax::statsPerRow()].
  std::optional<unsigned> sharedP, rowStats;
};

/// Adds the kernel's buffers to `layout`, in KernelFunc::getShared order.
TensorCoreBuffers addTensorCoreBuffers(const TensorCoreLayoutShape &shape,
                                       codegen::SharedMemoryLayout &layout);

/// The shared bytes of the kernel of `shape`.
int64_t tensorCoreSharedBytes(const TensorCoreLayoutShape &shape);

} // namespace kvir::kvgpu

#endif // KVIR_DIALECT_KVGPU_TRANSFORMS_TENSORCORELAYOUT_H
