//===- DecodeKernel.h - The batch-decode kernel ----------------*- C++ -*-===//
//
// What a decode kernel is specialized on, its shared memory, and its body
// (DecodeKernel.cpp); Decode.cpp decides when an op gets one, its work
// schedule and how it is launched.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_LIB_CONVERSION_KVTOGPU_DECODEKERNEL_H
#define KVIR_LIB_CONVERSION_KVTOGPU_DECODEKERNEL_H

#include "kvir/Codegen/KernelFunc.h"
#include "kvir/Codegen/Variants.h"
#include "kvir/Dialect/KV/IR/KVOps.h"
#include "kvir/Dialect/KVGPU/IR/KVGPUDialect.h"
#include "kvir/Dialect/KVGPU/Transforms/ConfigSelection.h"

#include "kvir/Dialect/KV/Utils/PagedAddressing.h"

#include <cmath>
#include <optional>
#include <string>

namespace kvir::gpu_lowering {

/// Everything a decode kernel is specialized on.
struct DecodeKernelSpec {
  kv::PagedType kv;
  llvm::SmallVector<mlir::Type> kvTypes; // PagedOperands::flatten() types
  mlir::MemRefType qType, outType, lseType;
  int64_t qHeads = 0;
  /// Partial states: one work item per block (blockIdx.x), its f32 output
  /// and base-2 LSE into rows of [rows, Hq, Dv] and [rows, Hq] workspaces
  /// (outType, lseType), except for items that are a whole request: their
  /// final state goes to the op's outputs (finalOutType, finalLseType), and
  /// the merge leaves those requests alone.
  bool partitioned = false;
  mlir::MemRefType finalOutType, finalLseType;
  kv::LseBase base = kv::LseBase::two;
  double smScale = 1.0;
  std::optional<double> softCap;
  std::optional<int64_t> windowLeft;
  /// On-the-fly RoPE (null without).
  kv::RopeAttr rope;
  /// The op's variants (sinks, ALiBi, score_mod / mask_mod), their
  /// operands the kernel's last arguments.
  codegen::KernelVariants variants;
  /// Top-k sparse selection: i32 [B, K] key lists (null without). The
  /// block's tokens are the entries of its request's list, gathered
  /// (PagedTileLoader's gathering), each key masked on its own.
  mlir::MemRefType topkType;
  bool gathers() const { return bool(topkType); }
  /// Stages of page entries (and keys) in flight: one more than the tile
  /// stages when gathering, so that a tile's keys stay put while it is
  /// scored.
  int64_t idSlots() const { return config.getStages() + (gathers() ? 1 : 0); }
  /// Whether K/V tiles a mask_mod hides from every head of the block are
  /// neither loaded nor scored (not when gathering: the lists chose the
  /// keys).
  bool skipsTiles() const {
    kv::AttentionVariantOpInterface v = variants.op;
    return v && !v.getMaskMod().empty() && !gathers();
  }
  /// Whether the kernel needs each query's position after its setup.
  bool needsQueryPosition() const {
    return rope || queryRows() || bool(variants) || gathers();
  }
  /// A prefill's query rows (f32 KV, which mma.sync does not take): one
  /// block per (query row, KV head), the row's request found in qo_indptr,
  /// its position bottom-right or `positions`, its visible keys bound by
  /// `causal` and the window. Arguments q, qo_indptr, the KV operands,
  /// [positions], out, lse; never partitioned.
  mlir::MemRefType qoIndptrType, positionsType;
  /// Query rows: the variants' frame (kv.prefill frame(indptr, positions)),
  /// or null.
  mlir::MemRefType frameIndptrType, framePositionsType;
  bool causal = false;
  bool queryRows() const { return bool(qoIndptrType); }
  kvgpu::DecodeConfigAttr config;

  int64_t group() const { return qHeads / kv.getKvHeads(); }
  std::array<int64_t, 3> block() const {
    return {config.getThreadsX(), group(), config.getThreadsZ()};
  }
  /// int8 groups: scales per cp.async chunk of a scale row
  /// (int8ScaleChunkElements).
  int64_t scaleChunk = 0;

  /// Whether the block decodes each tile's codes once into f16 tiles that
  /// all the group's heads read (the rule kv-tile sizes shared memory by).
  bool decodesTilesInShared() const {
    return kvgpu::decodeDecodesTilesInShared(kv, group());
  }
  bool int8Groups() const { return kv.getQuant() == kv::Quant::int8_group; }
  /// Whether the block would rotate each K tile once into f32 rows that all
  /// the group's heads read (it does where they fit in shared memory).
  bool rotatesTilesInShared() const {
    return kvgpu::decodeRotatesTilesInShared(bool(rope), group());
  }
  /// Tokens per chunk of V staged transposed (vLLM's V pool), or 0.
  int64_t transposedVChunk() const {
    return kvgpu::transposedVChunk(kv);
  }
  /// What the token range's start is aligned down to with transposed V: a
  /// 32-byte sector of a page's slots when tiles are whole sectors (every
  /// tile then reads whole sectors), else a chunk.
  int64_t transposedVAlignment() const {
    int64_t chunk = transposedVChunk();
    if (!chunk)
      return 0;
    int64_t sector = kvgpu::transposedVSector(kv);
    return config.getTileTokens() % sector == 0 ? sector : chunk;
  }
  /// Columns of a scale tile (0 without int8 groups).
  int64_t scaleColumns() const {
    return kvgpu::decodeScaleColumns(
        kv, config.getThreadsX() * config.getVector());
  }
};


/// The spec parts every op on the decode kernel shares (kv.decode, a
/// prefill's query rows): the view's KV, q, the outputs `outType` /
/// `lseType`, heads, base, scale, soft cap, window, RoPE, variants.
template <typename OpTy>
DecodeKernelSpec describeDecodeKernel(OpTy op, mlir::MemRefType outType,
                                      mlir::MemRefType lseType) {
  auto view = op.getKv().template getDefiningOp<kv::PagedViewOp>();
  kv::PagedOperands kv = kv::PagedOperands::fromView(view);
  DecodeKernelSpec spec;
  spec.kv = kv.type;
  for (mlir::Value v : kv.flatten())
    spec.kvTypes.push_back(v.getType());
  spec.qType = mlir::cast<mlir::MemRefType>(op.getQ().getType());
  spec.outType = outType;
  spec.lseType = lseType;
  spec.qHeads = spec.qType.getDimSize(1);
  spec.base = op.getType().getBase();
  spec.smScale = op.getSmScale()
                     ? op.getSmScale()->convertToDouble()
                     : 1.0 / std::sqrt(double(kv.type.getHeadDim()));
  if (auto cap = op.getLogitsSoftCap())
    spec.softCap = cap->convertToDouble();
  spec.windowLeft = op.getWindowLeft();
  spec.rope = op.getRopeAttr();
  spec.variants = codegen::KernelVariants::of(op);
  return spec;
}

/// The kernel's shared buffers, in KernelFunc::getShared order.
codegen::SharedMemoryLayout decodeSharedLayout(const DecodeKernelSpec &spec);

/// Why the decode kernel cannot run with `spec`'s configuration (not whole
/// warps, over 1024 threads, over 48 KB of static shared memory), or
/// nullopt.
std::optional<std::string> whyNotDecodeConfig(const DecodeKernelSpec &spec);

/// Why the decode kernel cannot read `view`'s pools: an innermost stride
/// that is not 1; or nullopt.
std::optional<std::string> whyNotDecodePools(kv::PagedViewOp view);

/// Why the decode kernel cannot run over `view` as `spec` says (its config,
/// rope, q): vLLM's V staging, RoPE's lane vectors, int8 chunks, the block
/// and its shared memory; or nullopt.
std::optional<std::string> whyNotDecodeKernelSpec(kv::PagedViewOp view,
                                                  const DecodeKernelSpec &spec);

/// Why the decode kernel cannot rotate keys by `rope` with `vector`-element
/// lane vectors over a head dim of `headDim`, or nullopt.
std::optional<std::string> whyNotDecodeRope(kv::RopeAttr rope, int64_t headDim,
                                            int64_t vector);

/// The kernel's arguments: q, [qo_indptr], the KV operands
/// (PagedOperands::flatten), [positions], [frame indptr, frame positions],
/// [topk], [work items], out, lse, [final out, final lse], the variant
/// operands. (One list gives these types and the body's binding.)
llvm::SmallVector<mlir::Type> decodeArgumentTypes(const DecodeKernelSpec &spec);

/// Builds the body of a kernel created with decodeArgumentTypes and
/// decodeSharedLayout, launched on (requests, query rows or work items, KV
/// heads) blocks of spec.block() threads.
void buildDecodeBody(const codegen::KernelFunc &kf,
                     const DecodeKernelSpec &spec);

} // namespace kvir::gpu_lowering

#endif // KVIR_LIB_CONVERSION_KVTOGPU_DECODEKERNEL_H
