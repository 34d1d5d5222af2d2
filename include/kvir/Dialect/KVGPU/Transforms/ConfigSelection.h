//===- ConfigSelection.h - Per-op, per-chip GPU configurations --*- C++ -*-===//
//
// The one place where kvir decides how an op's work is decomposed on a
// chip: kv-tile attaches what these return, and convert-kv-to-gpu uses them
// for ops that reach it without a configuration.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_DIALECT_KVGPU_TRANSFORMS_CONFIGSELECTION_H
#define KVIR_DIALECT_KVGPU_TRANSFORMS_CONFIGSELECTION_H

#include "kvir/Dialect/KV/IR/KVOps.h"
#include "kvir/Dialect/KV/IR/PoolLayout.h"
#include "kvir/Dialect/KVGPU/IR/KVGPUDialect.h"
#include "kvir/Target/GPU/TargetInfo.h"

#include <string>

namespace kvir::kvgpu {

/// The decode configuration for `op` (over a kv.paged_view) on `target`, or
/// failure with the reason in `whyNot`.
mlir::FailureOr<DecodeConfigAttr>
chooseDecodeConfig(kv::DecodeOp op, const target::TargetInfo &target,
                   std::string &whyNot);

/// The decode configuration of the decode kernel over `view` with `qHeads`
/// query heads (kv.decode, or a prefill's query rows), with or without
/// on-the-fly RoPE.
mlir::FailureOr<DecodeConfigAttr>
chooseDecodeConfig(kv::PagedViewOp view, int64_t qHeads, bool rope,
                   const target::TargetInfo &target, std::string &whyNot);

/// `op`'s `kvgpu.config` if it is a #kvgpu.decode, else chooseDecodeConfig.
mlir::FailureOr<DecodeConfigAttr>
getOrChooseDecodeConfig(kv::DecodeOp op, const target::TargetInfo &target,
                        std::string &whyNot);

/// Whether `op` runs on the decode kernel, one block per query row and KV
/// head, instead of the tensor-core prefill: f32 KV (mma.sync takes no
/// f32).
bool prefillTakesQueryRows(kv::PrefillOp op);

/// The decode configuration of `op`'s query rows (prefillTakesQueryRows):
/// its `kvgpu.config` if it is a #kvgpu.decode, else chosen.
mlir::FailureOr<DecodeConfigAttr>
getOrChooseQueryRowsConfig(kv::PrefillOp op, const target::TargetInfo &target,
                           std::string &whyNot);

/// Whether `op` runs on the tensor-core kernel (one query row per request,
/// the group's heads packed into rows) instead of the decode kernel: when
/// head_dim != head_dim_v, or no decode configuration fits (a head-dim row
/// wider than a warp of vectors, head dim 512), or its block would pass
/// 1024 threads (GQA groups of 64 at head dim 256).
bool decodeNeedsTensorCores(kv::DecodeOp op, const target::TargetInfo &target);

/// The smallest GQA group decodePrefersTensorCores sends to the tensor-core
/// kernel.
constexpr int64_t kTensorCoreDecodeMinGroup = 8;

/// Whether `op`, which the decode kernel could run, is faster on the
/// tensor-core kernel: f16/bf16 KV with a GQA group of at least
/// kTensorCoreDecodeMinGroup heads, where the decode kernel's per-token
/// instructions (a dot product per head and token) stop it short of memory
/// bandwidth while mma.sync does the group's rows at once (H100, head dim
/// 128: group 8, 1630 against 2840 GB/s; bench/RESULTS.md). Only where the
/// tensor-core kernel has a configuration for it and the state has the KV
/// type (its P . V runs in that type); quantized KV, on-the-fly RoPE and
/// wider states stay on the decode kernel. (Group 4 measured 2600
/// against 2840 GB/s: not switched yet.)
bool decodePrefersTensorCores(kv::DecodeOp op,
                              const target::TargetInfo &target);

/// Whether the decode kernel decodes each K/V tile once into f16 tiles in
/// shared memory (fp8 or int8 KV with a GQA group: in registers, each of
/// the group's heads would decode every row again), which its shared budget
/// must hold.
bool decodeDecodesTilesInShared(kv::PagedType kv, int64_t group);
/// Whether the decode kernel rotates each K tile once by RoPE into an f32
/// tile that the GQA group's heads read (rather than every head rotating
/// the same keys): with RoPE and a group.
bool decodeRotatesTilesInShared(bool rope, int64_t group);

/// Tokens per cp.async chunk of a kernel's transposed V staging (decode and
/// prefill kernels), for a V pool whose innermost index is the slot
/// (vLLM's layout: its dims are strided): up to 16 bytes of one dim, within
/// a page; 0 when V rows are copied as rows.
int64_t transposedVChunk(kv::PagedType kv);

/// The tokens of a 32-byte sector of one dim's slots within a page, for a
/// transposed V pool: a tile of whole sectors reads no half sector.
int64_t transposedVSector(kv::PagedType kv);

/// Elements past `tileTokens` in each row of a transposed V ring (0 when
/// not transposed, or when a row is an odd number of 16-byte chunks).
int64_t transposedVPad(kv::PagedType kv, int64_t tileTokens);

/// The columns of the decode kernel's int8 scale tiles (one scale per
/// `quant_group` dims of a head-dim row padded to `paddedDims`; 0 unless
/// int8 groups): staged with the codes, one K and one V tile per stage.
int64_t decodeScaleColumns(kv::PagedType kv, int64_t paddedDims);

/// Which tensor-core instruction the chooser may pick: the chip's best
/// one the op's kernel can use (wgmma on sm_90a), or mma.sync only.
enum class MmaChoice { automatic, mmaSync };

/// The tensor-core configuration (#kvgpu.prefill) of a kv.decode: on
/// wgmma where `choice` allows it and whyNoWgmmaDecode is "", else on
/// mma.sync.
mlir::FailureOr<PrefillConfigAttr>
chooseTensorCoreDecodeConfig(kv::DecodeOp op, const target::TargetInfo &target,
                             std::string &whyNot,
                             MmaChoice choice = MmaChoice::automatic);

/// Why `op`'s tensor-core decode does not run on wgmma on `target` (its
/// chip has none, its types or head dims do not fit the warpgroup
/// products, a value dim past two warpgroups of 256 columns), or "".
std::string whyNoWgmmaDecode(kv::DecodeOp op, const target::TargetInfo &target);

/// Why `op`'s prefill kernel does not run on wgmma on `target` (its chip
/// has none, its types or head dims do not fit the warpgroup products, a
/// cascade's shared level takes 256-row mma.sync tiles), or "".
std::string whyNoWgmmaPrefill(kv::PrefillOp op,
                              const target::TargetInfo &target);

/// Why `op`'s wgmma prefill keeps every warp copying and computing (roles
/// = uniform) rather than a producer warpgroup and consumers: its head dims
/// (up to 64 the serial kernel keeps two blocks per SM; above 128 the
/// consumers' accumulators do not fit beside a producer), mask_mod's tile
/// skipping; or "".
std::string whyNoProducerPrefill(kv::PrefillOp op);

/// Why `op`'s mma.sync prefill on `target` keeps a ring of K/V stages
/// rather than FlashAttention-2's one K and one V buffer (stages = 1: 128
/// query rows of 4 warps against 32-key tiles, two blocks per SM at head
/// dim 128): the chip has wgmma, the head dims are up to 64 (two blocks
/// already) or over 128, it is a cascade's shared level (256-row tiles),
/// or its tiles are not plain 16-bit tiles scored where they landed
/// (quantized, transposed or converted KV, RoPE, mask_mod); or "".
std::string whyNoSingleBufferedPrefill(kv::PrefillOp op,
                                       const target::TargetInfo &target);

/// Why a producer cannot copy K/V tiles of `kvTile` keys by TMA from the
/// buffers `kvBuffers` (ragged K and V, `paged` null; or a paged view's
/// pools and tables, in kv.paged_view order): element types other than
/// f16/bf16, head dims that are not whole 64-element (128-byte) swizzle
/// blocks, buffers that are not row-major with static inner dims; for
/// paged views, pages that are not whole boxes (a table form without
/// page entries, quantized or vLLM pools, a layout whose head dim is not
/// innermost or whose slots are not one axis, pages of a size that does
/// not divide the tile or is not a multiple of 8 rows); or "".
/// `rotatesKeys`: RoPE turns each K tile after it landed, which a copy
/// completing on the consumers' barrier would leave no time for.
std::string whyNoTmaCopy(kv::PagedType paged, mlir::TypeRange kvBuffers,
                         int64_t headDim, int64_t headDimV, int64_t kvTile,
                         bool rotatesKeys);
/// whyNoTmaCopy for `op`'s K/V on tiles of `kvTile` keys.
std::string whyNoTmaPrefill(kv::PrefillOp op, int64_t kvTile);

/// The keys one TMA box of a `kvTile`-key tile holds: the whole ragged
/// tile, or one page.
int64_t tmaBoxRows(kv::PagedType paged, int64_t kvTile);

/// The TMA box of a `kvTile`-key tile's column block of `role` (K or V):
/// over ragged K/V [keys, heads, dims] the tile's keys of one head; over a
/// paged pool one page's slots of one head (whyNoTmaCopy is ""). Outermost
/// dim first, as the pool's memref.
llvm::SmallVector<int64_t> tmaTileBox(kv::PagedType paged, kv::PoolRole role,
                                      int64_t rank, int64_t elementBits,
                                      int64_t kvTile);

/// The prefill configuration for `op` on `target`, or failure with the
/// reason in `whyNot`: on wgmma where `choice` allows it and
/// whyNoWgmmaPrefill is "", else on mma.sync.
mlir::FailureOr<PrefillConfigAttr>
choosePrefillConfig(kv::PrefillOp op, const target::TargetInfo &target,
                    std::string &whyNot,
                    MmaChoice choice = MmaChoice::automatic);

/// `op`'s `kvgpu.config` if it is a #kvgpu.prefill, else choosePrefillConfig.
mlir::FailureOr<PrefillConfigAttr>
getOrChoosePrefillConfig(kv::PrefillOp op, const target::TargetInfo &target,
                         std::string &whyNot);

/// The shared memory the tensor-core kernel of `op` with `config` takes,
/// from the kernel's own layout (TensorCoreLayout.h): the largest of its
/// kernels, the direct one.
int64_t prefillSharedBytes(PrefillConfigAttr config, kv::PrefillOp op);

/// The configuration of the tensor-core MLA kernel of `op` on `target`
/// (a #kvgpu.prefill whose value_warps split ckv's value columns), or
/// failure with the reason in `whyNot`.
mlir::FailureOr<PrefillConfigAttr>
chooseMlaConfig(kv::MlaDecodeOp op, const target::TargetInfo &target,
                std::string &whyNot, MmaChoice choice = MmaChoice::automatic);

/// Why the MLA kernel of `op` does not run on wgmma on `target` (the
/// chooser's reason, which kv-tile's explain prints), or "".
std::string whyNoWgmmaMla(kv::MlaDecodeOp op, const target::TargetInfo &target);

/// `op`'s `kvgpu.config` if it is a #kvgpu.prefill, else chooseMlaConfig.
mlir::FailureOr<PrefillConfigAttr>
getOrChooseMlaConfig(kv::MlaDecodeOp op, const target::TargetInfo &target,
                     std::string &whyNot);

/// prefillSharedBytes for the MLA kernel.
int64_t mlaSharedBytes(PrefillConfigAttr config, kv::MlaDecodeOp op);

/// The configuration kv-tile would attach to `op`, or failure (with the
/// reason) when none fits or the op takes none.
mlir::FailureOr<mlir::Attribute>
chooseConfig(mlir::Operation *op, const target::TargetInfo &target,
             std::string &whyNot, MmaChoice choice = MmaChoice::automatic);

/// `op`'s `kvgpu.config`, or null.
mlir::Attribute getConfig(mlir::Operation *op);

/// Builds `AttrT` if its verifier accepts `args`, else fails and leaves the
/// verifier's message in `whyNot` (no diagnostic reaches the context).
template <typename AttrT, typename... Args>
mlir::FailureOr<AttrT> getCheckedQuietly(std::string &whyNot,
                                         mlir::MLIRContext *ctx,
                                         Args &&...args) {
  mlir::ScopedDiagnosticHandler capture(ctx, [&](mlir::Diagnostic &diag) {
    whyNot = diag.str();
    return mlir::success();
  });
  AttrT attr = AttrT::getChecked(
      [&] { return mlir::emitError(mlir::UnknownLoc::get(ctx)); }, ctx,
      std::forward<Args>(args)...);
  if (!attr)
    return mlir::failure();
  return attr;
}

} // namespace kvir::kvgpu

#endif // KVIR_DIALECT_KVGPU_TRANSFORMS_CONFIGSELECTION_H
