//===- PrefillKernel.cpp - The tensor-core prefill kernel -----------------===//
//
// FlashAttention-2 over paged or ragged KV, one block per (query tile, KV
// head, KV partition):
//   1. thread 0 finds the block's tile (QueryTiles), reads the request's
//      table, and derives the keys the tile's rows can see (causal, window)
//      and the partition's share of them; with a custom mask the block sums
//      the mask blocks of the requests before its own;
//   2. the query tile (GQA heads packed into rows) and the page-table
//      entries of the first two K/V tiles arrive by cp.async; K/V tile 0 is
//      issued;
//   3. per K/V tile i, in a two-stage pipeline: wait for K_i, issue K_{i+1}
//      (with the page entries of tile i + 2), S = Q K_i^T, mask only where
//      a tile crosses the diagonal, the window, the partition's end or a
//      custom mask, the online softmax on the fragments; wait for V_i, issue
//      V_{i+1}, O += P V_i (WarpAttentionTile);
//      Quantized KV (fp8, int8 groups): the ring holds codes (and scales);
//      after each wait the block converts the tile into one K or V tile of
//      the activation type (convertTile), then a barrier, then the mma;
//   4. O / l: 16-bit outputs are staged through the warp's rows of the
//      query tile for 16-byte stores; f32 outputs (and partial states) are
//      stored from the fragments (a quad writes a whole 32-byte sector).
//
//===----------------------------------------------------------------------===//
#include "PrefillKernelParts.h"

#include "kvir/Codegen/AttentionTile.h"
#include "kvir/Codegen/IRBuilder.h"
#include "kvir/Codegen/LiveTileMarks.h"
#include "kvir/Codegen/PagedTileLoader.h"
#include "kvir/Codegen/QueryTiles.h"
#include "kvir/Codegen/Rope.h"
#include "kvir/Codegen/Variants.h"
#include "kvir/Codegen/WarpOps.h"
#include "kvir/Dialect/KV/Utils/PagedAddressing.h"
#include "kvir/Dialect/KV/Utils/Quantization.h"
#include "kvir/Dialect/KV/Utils/Visibility.h"
#include "kvir/Dialect/KVGPU/Transforms/ConfigSelection.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cmath>

using namespace mlir;
using namespace kvir;
using namespace kvir::codegen;
using namespace kvir::gpu_lowering;
using namespace kvir::gpu_lowering::prefill;

bool PrefillKernelSpec::stagesOutput() const {
  return !partitioned && !scheduled && stagesFinalOutput(outType.getElementType());
}

bool PrefillKernelSpec::stagesFinalOutput(Type outElement) const {
  return outElement.getIntOrFloatBitWidth() == 16;
}

bool PrefillKernelSpec::outputReusesQueryTile() const {
  return headDimV == headDim &&
         outType.getElementType() == qType.getElementType();
}

namespace {

/// Indices of the kernel's shared buffers in its layout.
struct Buffers {
  unsigned q = 0, k = 0, meta = 0;
  /// v without MLA; q_pe and kpe with it.
  std::optional<unsigned> v, qPe, kpe, pageIds, maskScratch, outStage;
  /// gathers(): [idSlots, kvTile] i32 keys of the tiles' entries.
  std::optional<unsigned> keyIds;
  /// mask_mod: the last K/V tile each of two slots found live (index + 1).
  std::optional<unsigned> liveTiles;
  /// Quantized KV: the code rings, and int8 groups' scale rings.
  std::optional<unsigned> kCodes, vCodes, kScales, vScales;
};

Buffers buildLayout(const PrefillKernelSpec &s, SharedMemoryLayout &layout) {
  MLIRContext *ctx = s.qType.getContext();
  Type i64 = IntegerType::get(ctx, 64);
  kvgpu::PrefillConfigAttr c = s.config;
  Buffers buf;
  buf.q = layout.add("q_tile", {c.getQTile(), s.headDim},
                     s.qType.getElementType());
  if (s.isMla())
    buf.qPe = layout.add("q_pe_tile", {c.getQTile(), s.peDim},
                         s.qType.getElementType());
  // Quantized KV: codes (and scales) stream through the stage ring; each
  // tile is converted into one K and one V tile of values. So is a
  // transposed V ring (vLLM's V pool) into one V tile.
  int64_t kStages = s.quantizedKV() ? 1 : c.getStages();
  int64_t vStages = s.convertsV() ? 1 : c.getStages();
  buf.k = layout.add(s.isMla() ? "ckv_tiles" : "k_tiles",
                     {kStages, c.getKvTile(), s.headDim},
                     s.kvElementType);
  if (s.isMla())
    buf.kpe = layout.add("kpe_tiles", {c.getStages(), c.getKvTile(), s.peDim},
                         s.kvElementType);
  else
    buf.v = layout.add("v_tiles", {vStages, c.getKvTile(), s.headDimV},
                       s.kvElementType);
  if (s.quantizedKV())
    buf.kCodes =
        layout.add("k_codes", {c.getStages(), c.getKvTile(), s.headDim},
                   s.paged.getStorageElementType());
  if (s.transposedVChunk())
    buf.vCodes = layout.add(
        "v_transposed",
        {c.getStages(), s.headDimV,
         c.getKvTile() + kvgpu::transposedVPad(s.paged, c.getKvTile())},
        s.paged.getStorageElementType());
  else if (s.quantizedKV())
    buf.vCodes = layout.add("v_codes",
                            {c.getStages(), c.getKvTile(), s.headDimV},
                            s.paged.getStorageElementType());
  if (s.int8Groups()) {
    int64_t g = s.paged.getQuantGroup();
    buf.kScales = layout.add("k_scales",
                             {c.getStages(), c.getKvTile(), s.headDim / g},
                             s.kvElementType);
    buf.vScales = layout.add("v_scales",
                             {c.getStages(), c.getKvTile(), s.headDimV / g},
                             s.kvElementType);
  }
  MemRefType finalOut = s.scheduled ? s.finalOutType : s.outType;
  if (s.stagesFinalOutput(finalOut.getElementType()) &&
      (s.headDimV != s.headDim ||
       finalOut.getElementType() != s.qType.getElementType()))
    buf.outStage = layout.add("o_stage", {c.getQTile(), s.headDimV},
                              finalOut.getElementType());
  if (s.paged && s.paged.getTable() != kv::TableForm::token_offset)
    buf.pageIds =
        layout.add("page_ids",
                   {s.idSlots(), PagedTileLoader::idEntriesPerTile(
                                     s.paged.getPageSize(), c.getKvTile(),
                                     s.gathers())},
                   kv::getPageEntryType(s.paged, s.kvTypes));
  if (s.gathers())
    buf.keyIds = layout.add("key_ids", {s.idSlots(), c.getKvTile()},
                            IntegerType::get(ctx, 32));
  buf.meta = layout.add("meta", {kMetaSlots}, i64);
  if (s.maskType)
    buf.maskScratch = layout.add("mask_scratch", {c.getNumThreads()}, i64);
  if (s.skipsTiles())
    buf.liveTiles = layout.add("live_tiles", {2}, IntegerType::get(ctx, 32));
  return buf;
}

/// The K/V tile `index` of the partition: its first key and key count.
std::pair<Value, Value> kvTileRange(ImplicitLocOpBuilder &b,
                                    const PrefillKernelSpec &s, const Work &w,
                                    Value index) {
  IRBuilder ir{b};
  Value t0 = ir.add(w.start, ir.mul(index, ir.idx(s.config.getKvTile())));
  return {t0, ir.minS(ir.idx(s.config.getKvTile()), ir.sub(w.end, t0))};
}

/// A quantized tile's rings and the value tile its codes become.
struct QuantizedTile {
  SharedTile codes;
  std::optional<SharedTile> scales;
  SharedTile values;
};

/// fp8 codes (a vector) as values of the activation type 1 / fp8HalfScale
/// of theirs: exact in f16, and in bf16 too (3 or 2 mantissa bits).
Value fp8ToValues(ImplicitLocOpBuilder &b, const PrefillKernelSpec &s,
                  Value codes) {
  Value values = kv::fp8ToScaledF16(b, codes);
  if (s.kvElementType.isF16())
    return values;
  auto shape = cast<VectorType>(values.getType()).getShape();
  return arith::TruncFOp::create(
      b, VectorType::get(shape, s.kvElementType),
      arith::ExtFOp::create(b, VectorType::get(shape, b.getF32Type()),
                            values));
}

/// Converts stage `stage` of `t`'s codes into its value tile (the
/// activation type), 8 codes per step (one 16-byte chunk of the tile: a
/// warp's phase writes 8 consecutive chunks, free of bank conflicts), the
/// steps spread over the block: fp8 as f16 values 1 / fp8HalfScale of
/// theirs (exact; the scales apply to logits and output), int8 codes times
/// their group's scale in f32, rounded once.
void convertTile(ImplicitLocOpBuilder &b, const PrefillKernelSpec &s,
                 const QuantizedTile &t, Value stage, Value thread,
                 int64_t threads) {
  constexpr int64_t kStep = 8;
  Type code = s.paged.getStorageElementType(), f32 = b.getF32Type();
  auto vectorOf = [](Type elt) { return VectorType::get({kStep}, elt); };
  int64_t chunksPerRow = t.codes.cols / kStep;
  int64_t total = t.codes.rows * chunksPerRow;
  auto convert = [&](ImplicitLocOpBuilder &jb, Value i) {
    IRBuilder j{jb};
    Value row = j.divU(i, j.idx(chunksPerRow));
    Value col = j.mul(j.remU(i, j.idx(chunksPerRow)), j.idx(kStep));
    auto load = vector::LoadOp::create(
        jb, vectorOf(code), t.codes.memref,
        t.codes.elementIndices(jb, stage, row, col));
    load.setAlignment(kStep);
    Value codes = load, values;
    if (s.int8Groups()) {
      int64_t g = s.paged.getQuantGroup();
      int64_t count = std::max<int64_t>(1, kStep / g);
      Value scales = vector::LoadOp::create(
          jb, VectorType::get({count}, s.kvElementType), t.scales->memref,
          t.scales->elementIndices(jb, stage, row, j.divU(col, j.idx(g))));
      Value dequantized =
          j.mul(arith::ExtFOp::create(jb, vectorOf(f32),
                                      kv::int8ToF16(jb, codes)),
                kv::spreadGroupScales(jb, scales, kStep, g));
      values =
          arith::TruncFOp::create(jb, vectorOf(s.kvElementType), dequantized);
    } else {
      values = fp8ToValues(jb, s, codes);
    }
    vector::StoreOp::create(jb, values, t.values.memref,
                            t.values.elementIndices(jb, j.idx(0), row, col))
        .setAlignment(16);
  };
  emitStrided(b, thread, threads, total, convert);
}

/// vLLM's V pool: writes stage `stage` of the transposed ring `from`
/// ([stages, dims, tokens]) into stage 0 of the value tile `to` ([tokens,
/// dims], swizzled), fp8 codes converted as convertTile does. A thread
/// takes one chunk of one dim (consecutive threads: consecutive dims, so
/// that the ring's padded rows spread over the banks and the tile's row
/// takes consecutive columns).
void transposeTile(ImplicitLocOpBuilder &b, const PrefillKernelSpec &s,
                   const SharedTile &from, Value stage, const SharedTile &to,
                   Value thread, int64_t threads) {
  Type code = s.paged.getStorageElementType();
  int64_t chunk = s.transposedVChunk(), dims = s.headDimV;
  int64_t total = dims * (s.config.getKvTile() / chunk);
  auto convert = [&](ImplicitLocOpBuilder &jb, Value i) {
    IRBuilder j{jb};
    Value dim = j.remU(i, j.idx(dims));
    Value first = j.mul(j.divU(i, j.idx(dims)), j.idx(chunk));
    auto load = vector::LoadOp::create(
        jb, VectorType::get({chunk}, code), from.memref,
        from.elementIndices(jb, stage, dim, first));
    load.setAlignment(from.chunkBytes);
    Value values = load;
    if (s.paged.isFp8())
      values = fp8ToValues(jb, s, values);
    for (int64_t t = 0; t < chunk; ++t)
      memref::StoreOp::create(
          jb, vector::ExtractOp::create(jb, values, t), to.memref,
          to.elementIndices(jb, j.idx(0), j.add(first, j.idx(t)), dim));
  };
  emitStrided(b, thread, threads, total, convert);
}

} // namespace

std::optional<std::string>
gpu_lowering::whyNotPrefillSpec(const PrefillKernelSpec &s,
                                const target::TargetInfo &target) {
  // (Tensor-core decodes and MLA take no transposed V today; prefills take
  // no selection.)
  if (s.gathers() && s.transposedVChunk())
    return std::string("top-k gathers single tokens, and vLLM's transposed V "
                       "pool is read in chunks of consecutive slots");
  if (s.headDim % 16 || s.headDimV % 16 || s.peDim % 16 ||
      s.valueSlice() % 16)
    return "head dims " + std::to_string(s.headDim) + " / " +
           std::to_string(s.headDimV) +
           (s.peDim ? " + " + std::to_string(s.peDim) : std::string()) +
           " split over " + std::to_string(s.config.getValueWarps()) +
           " value warps are not whole mma tiles of 16";
  if (s.rope) {
    std::string why =
        whyNotRotateTiles(s.rope, s.headDim, s.config.getNumThreads());
    if (!why.empty())
      return why;
  }
  int64_t shared = prefillSharedLayout(s).getBytes();
  if (shared > target.maxSharedBytesPerBlock)
    return std::to_string(shared) + " bytes of shared memory, over the " +
           std::to_string(target.maxSharedBytesPerBlock) + " a block of " +
           target.chip.str() + " may use";
  return std::nullopt;
}

codegen::SharedMemoryLayout
gpu_lowering::prefillSharedLayout(const PrefillKernelSpec &spec) {
  SharedMemoryLayout layout;
  buildLayout(spec, layout);
  return layout;
}

SmallVector<Type>
gpu_lowering::prefillArgumentTypes(const PrefillKernelSpec &s) {
  SmallVector<Type> types{s.qType};
  if (s.isMla())
    types.push_back(s.qPeType);
  if (!s.oneRowPerRequest())
    types.push_back(s.qoIndptrType);
  llvm::append_range(types, s.kvTypes);
  if (s.maskType)
    types.push_back(s.maskType);
  if (s.positionsType)
    types.push_back(s.positionsType);
  if (s.framePositionsType)
    types.append({s.frameIndptrType, s.framePositionsType});
  if (s.gathers())
    types.push_back(s.topkType);
  if (s.scheduled)
    types.push_back(MemRefType::get({ShapedType::kDynamic, 4},
                                    IntegerType::get(s.qType.getContext(), 32)));
  types.append({s.outType, s.lseType});
  if (s.partitioned)
    types.push_back(IndexType::get(s.qType.getContext()));
  if (s.scheduled)
    types.append({s.finalOutType, s.finalLseType});
  llvm::append_range(types, s.variants.types);
  return types;
}

void gpu_lowering::buildPrefillBody(const KernelFunc &kf,
                                    const PrefillKernelSpec &s) {
  ImplicitLocOpBuilder b = kf.getBuilder();
  SharedMemoryLayout layout;
  Buffers buf = buildLayout(s, layout);
  Arguments a = bindArguments(kf, s);
  kvgpu::PrefillConfigAttr cfg = s.config;
  int64_t threads = cfg.getNumThreads(), kvTile = cfg.getKvTile();
  int64_t mTiles = cfg.getWarpRowTiles();

  Value thread = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value kvHead = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  Value part = s.partitioned
                   ? gpu::BlockIdOp::create(b, gpu::Dimension::z).getResult()
                   : Value();
  Work w = emitBlockWork(b, s, a, kf.getShared(buf.meta), thread);

  // A row's state goes to (query row, head) of the outputs, behind the
  // partition for partial states of a partition; a scheduled item's
  // partial state to its workspace row.
  auto requestRows = [&](ImplicitLocOpBuilder &ib, const PackedRow &p) {
    SmallVector<Value> idx{IRBuilder{ib}.add(w.qoStart, p.queryRow), p.head};
    if (part)
      idx.insert(idx.begin(), part);
    return idx;
  };
  auto itemRows = [&](ImplicitLocOpBuilder &, const PackedRow &p) {
    return SmallVector<Value>{w.partialRow, p.head};
  };
  Value work = w.valid;
  if (part || s.scheduled) {
    // An empty partition only tells the merge so: an LSE of -inf per row.
    // (A scheduled item that is a whole request writes its final state.)
    IRBuilder ir{b};
    Value empty = ir.cmp(arith::CmpIPredicate::sge, w.start, w.end);
    if (s.scheduled)
      empty = arith::AndIOp::create(b, empty,
                                    ir.cmp(arith::CmpIPredicate::sgt,
                                           w.numChunks, ir.idx(1)));
    Destination partial;
    partial.out = a.out;
    partial.lse = a.lse;
    if (part)
      partial.rows = requestRows;
    else
      partial.rows = itemRows;
    emitIf(b, arith::AndIOp::create(b, w.valid, empty),
           [&](ImplicitLocOpBuilder &ib) {
             emitEmptyPartition(ib, s, w, kvHead, partial, thread);
           });
    work = arith::AndIOp::create(b, w.valid,
                                 arith::XOrIOp::create(
                                     b, empty,
                                     arith::ConstantIntOp::create(b, 1, 1)));
  }

  emitIf(b, work, [&](ImplicitLocOpBuilder &b) {
    IRBuilder ir{b};
    Value maskOffset;
    if (s.maskType)
      maskOffset = emitMaskOffset(b, s, a, kf.getShared(*buf.maskScratch),
                                  thread, w.request);
    SharedTile qTile{kf.getShared(buf.q), cfg.getQTile(), s.headDim};
    SharedTile kTiles{kf.getShared(buf.k), kvTile, s.headDim};
    std::optional<SharedTile> qPeTile, kpeTiles;
    if (s.isMla()) {
      qPeTile = SharedTile{kf.getShared(*buf.qPe), cfg.getQTile(), s.peDim};
      kpeTiles = SharedTile{kf.getShared(*buf.kpe), kvTile, s.peDim};
    }
    // MLA's values are its latent keys: the ckv tile.
    SharedTile vTiles = s.isMla()
                            ? kTiles
                            : SharedTile{kf.getShared(*buf.v), kvTile, s.headDimV};
    // Quantized KV: the rings the copies fill, converted per tile into
    // kTiles / vTiles (one stage each).
    std::optional<QuantizedTile> kQuant, vQuant;
    if (s.quantizedKV()) {
      auto ring = [&](std::optional<unsigned> index, int64_t cols,
                      int64_t chunkBytes) {
        return SharedTile{kf.getShared(*index), kvTile, cols,
                          /*swizzled=*/false, chunkBytes};
      };
      int64_t g = s.paged.getQuantGroup();
      int64_t scaleBytes =
          s.scaleChunk * s.kvElementType.getIntOrFloatBitWidth() / 8;
      kQuant = QuantizedTile{ring(buf.kCodes, s.headDim, 16), std::nullopt,
                             kTiles};
      if (!s.transposedVChunk())
        vQuant = QuantizedTile{ring(buf.vCodes, s.headDimV, 16), std::nullopt,
                               vTiles};
      if (s.int8Groups()) {
        kQuant->scales = ring(buf.kScales, s.headDim / g, scaleBytes);
        vQuant->scales = ring(buf.vScales, s.headDimV / g, scaleBytes);
      }
    }
    // vLLM's V pool: [stages, dims, tokens (+ pad)] by chunks of slots,
    // converted per tile into vTiles (one stage).
    std::optional<SharedTile> vTransposed;
    if (int64_t chunk = s.transposedVChunk()) {
      Type code = s.paged.getStorageElementType();
      vTransposed = SharedTile{
          kf.getShared(*buf.vCodes), s.headDimV,
          kvTile + kvgpu::transposedVPad(s.paged, kvTile), /*swizzled=*/false,
          chunk * code.getIntOrFloatBitWidth() / 8};
    }
    PagedTileLoader loader =
        s.paged ? PagedTileLoader(a.paged, w.request, w.base, kvHead, kvTile,
                                  buf.pageIds ? kf.getShared(*buf.pageIds)
                                              : Value())
                : PagedTileLoader(a.ragged, w.base, kvHead, kvTile);
    // Gathering: the tile's query row (a tile lies within one) lists the
    // keys.
    if (a.topk)
      loader.setGather({a.topk,
                        ir.add(w.qoStart, ir.divU(w.firstRow, ir.idx(s.group()))),
                        w.kvLen, kf.getShared(*buf.keyIds)});
    int64_t idSlots = s.idSlots();
    auto idSlotOf = [&](ImplicitLocOpBuilder &ib, Value index) {
      return IRBuilder{ib}.remU(index, IRBuilder{ib}.idx(idSlots));
    };
    Value numTiles =
        arith::CeilDivUIOp::create(b, ir.sub(w.end, w.start), ir.idx(kvTile));
    auto ifTile = [&](ImplicitLocOpBuilder &ib, Value index,
                      llvm::function_ref<void(ImplicitLocOpBuilder &, Value,
                                              Value)>
                          body) {
      emitIf(ib, IRBuilder{ib}.lt(index, numTiles),
             [&](ImplicitLocOpBuilder &jb) {
               auto [t0, count] = kvTileRange(jb, s, w, index);
               body(jb, t0, count);
             });
    };
    auto stageIds = [&](ImplicitLocOpBuilder &ib, Value index) {
      if (buf.pageIds || buf.keyIds)
        ifTile(ib, index, [&](ImplicitLocOpBuilder &jb, Value t0, Value count) {
          loader.stagePageIdsAsync(jb, idSlotOf(jb, index), t0, count, thread,
                                   threads);
        });
    };
    auto issue = [&](ImplicitLocOpBuilder &ib, Value index, kv::PoolRole role) {
      ifTile(ib, index, [&](ImplicitLocOpBuilder &jb, Value t0, Value count) {
        IRBuilder j{jb};
        Value stage = j.remU(index, j.idx(2));
        // MLA's K tile is ckv (the K pool) and kpe (the V pool).
        SmallVector<TileCopy> copies;
        bool isK = role == kv::PoolRole::K;
        if (!isK && vTransposed) {
          loader.copyTileTransposedAsync(jb, role, *vTransposed, stage, t0,
                                         count, s.headDimV, thread, threads);
          return;
        }
        const std::optional<QuantizedTile> &quant = isK ? kQuant : vQuant;
        if (quant) {
          int64_t width = isK ? s.headDim : s.headDimV;
          copies.push_back({role, quant->codes, width});
          if (quant->scales)
            copies.push_back({isK ? kv::PoolRole::KScale : kv::PoolRole::VScale,
                              *quant->scales, width / s.paged.getQuantGroup()});
        } else {
          copies.push_back({role, isK ? kTiles : vTiles,
                            isK ? s.headDim : s.headDimV});
        }
        if (isK && s.isMla())
          copies.push_back({kv::PoolRole::V, *kpeTiles, s.peDim});
        loader.copyTileAsync(jb, copies, stage, t0, count, thread, threads,
                             idSlotOf(jb, index));
      });
    };

    // mask_mod: K/V tiles it hides from every row of the block's tile are
    // neither loaded nor multiplied. Before tile n is issued, every thread
    // evaluates the region on its share of the tile's (row, key) pairs and
    // those that find a visible pair put n + 1 in slot n % 2 (atomic max);
    // after a barrier the slot says whether the tile is live. (Slot n % 2 is
    // read for tile n before the barrier after which tile n + 2 is marked.)
    std::optional<VariantEmitter> variantCode;
    if (s.variants)
      variantCode.emplace(s.variants.bind(kf.getArguments()));
    bool skipsTiles = s.skipsTiles();
    std::optional<LiveTileMarks> marks;
    if (skipsTiles) {
      marks.emplace(kf.getShared(*buf.liveTiles), 2);
      emitIf(b, ir.eq(thread, ir.idx(0)),
             [&](ImplicitLocOpBuilder &ib) { marks->clear(ib); });
      gpu::BarrierOp::create(b);
    }
    auto markTile = [&](ImplicitLocOpBuilder &ib, Value index) {
      if (!skipsTiles)
        return;
      ifTile(ib, index, [&](ImplicitLocOpBuilder &jb, Value t0, Value count) {
        IRBuilder k{jb};
        // The tile's packed rows, or, when the mask ignores the head, the
        // query rows they cover (G heads share one).
        bool perQueryRow = !variantCode->maskReadsHead() && s.group() > 1;
        Value g = k.idx(s.group());
        Value firstQueryRow = k.divU(w.firstRow, g);
        Value rows = k.idx(cfg.getQTile());
        if (perQueryRow)
          rows = k.add(
              k.sub(k.divU(k.add(w.firstRow, k.idx(cfg.getQTile() - 1)), g),
                    firstQueryRow),
              k.idx(1));
        auto any = scf::ForOp::create(
            jb, thread, k.mul(rows, k.idx(kvTile)), k.idx(threads),
            ValueRange{arith::ConstantIntOp::create(jb, 0, 1)},
            [&](OpBuilder &nb, Location l, Value pair, ValueRange found) {
              ImplicitLocOpBuilder pb(l, nb);
              IRBuilder x{pb};
              Value column = x.remU(pair, x.idx(kvTile));
              Value rowInTile = x.divU(pair, x.idx(kvTile));
              PackedRow row;
              if (perQueryRow) {
                Value queryRow = x.add(firstQueryRow, rowInTile);
                row.valid = x.lt(queryRow, w.qoLen);
                row.queryRow = x.minS(queryRow, x.sub(w.qoLen, x.idx(1)));
                row.head = x.mul(kvHead, g);
              } else {
                row = unpackRow(pb, s, w, kvHead, rowInTile);
              }
              Value inTile =
                  arith::AndIOp::create(pb, row.valid, x.lt(column, count));
              // Past the tile the region sees its last key (in bounds).
              Value key = x.add(t0, x.minS(column, x.sub(count, x.idx(1))));
              kv::FrameRow frame =
                  frameRow(pb, w, a, row.queryRow,
                           queryPosition(pb, s, w, a, row.queryRow));
              if (frame.keyShift)
                key = x.add(key, frame.keyShift);
              Value seen = variantCode->visible(pb, frame.request, row.head,
                                                frame.position, key);
              scf::YieldOp::create(
                  pb,
                  ValueRange{arith::OrIOp::create(
                      pb, found[0], arith::AndIOp::create(pb, inTile, seen))});
            });
        marks->mark(jb, index, any.getResult(0));
      });
    };
    // Whether tile `index` is live (after markTile and a barrier).
    auto readLive = [&](ImplicitLocOpBuilder &ib, Value index) -> Value {
      return marks->isLive(ib, index, numTiles);
    };
    auto issueIfLive = [&](ImplicitLocOpBuilder &ib, Value index,
                           kv::PoolRole role, Value live) {
      if (!skipsTiles)
        return issue(ib, index, role);
      emitIf(ib, live,
             [&](ImplicitLocOpBuilder &jb) { issue(jb, index, role); });
    };

    // Step 2: the query tile and the page entries of tiles 0 and 1, then
    // K_0 and V_0 (one commit group each; MLA: one K/V tile).
    auto copyQuery = [&](const SharedTile &tile, Value source, int64_t width) {
      copyRowsAsync(
          b, tile, Value(), width, thread, threads,
          [&](ImplicitLocOpBuilder &jb, Value r, Value dim) {
            PackedRow p = unpackRow(jb, s, w, kvHead, r);
            Value row = IRBuilder{jb}.add(w.qoStart, p.queryRow);
            return std::make_pair(source, SmallVector<Value>{row, p.head, dim});
          },
          [&](ImplicitLocOpBuilder &jb, Value r) {
            return unpackRow(jb, s, w, kvHead, r).valid;
          });
    };
    copyQuery(qTile, a.q, s.headDim);
    if (s.isMla())
      copyQuery(*qPeTile, a.qPe, s.peDim);
    stageIds(b, ir.idx(0));
    stageIds(b, ir.idx(1));
    commitAsyncCopies(b);
    if (skipsTiles)
      markTile(b, ir.idx(0));
    waitAsyncCopies(b, 0);
    gpu::BarrierOp::create(b);
    Value liveFirst = skipsTiles ? readLive(b, ir.idx(0)) : Value();
    // RoPE: the query rows turn to their positions once, in place.
    std::optional<TileRotation> rotation;
    if (s.rope) {
      rotation.emplace(b, s.rope, s.headDim, thread, threads);
      rotation->apply(
          b, qTile, Value(), [&](ImplicitLocOpBuilder &jb, Value r) {
            PackedRow p = unpackRow(jb, s, w, kvHead, r);
            return RopeRowPosition{p.valid,
                                   queryPosition(jb, s, w, a, p.queryRow)};
          });
      gpu::BarrierOp::create(b);
    }

    // Warp w owns rows of row warp w % rowWarps and the value columns of
    // slice w / rowWarps.
    Value lane = ir.remU(thread, ir.idx(32));
    Value warp = ir.divU(thread, ir.idx(32));
    int64_t rowWarps = cfg.getRowWarps();
    FragmentLayout acc = MmaTile::accLayout();
    Value warpRow0 = ir.mul(ir.remU(warp, ir.idx(rowWarps)),
                            ir.idx(acc.tileRows(mTiles)));
    Value valueOffset;
    if (cfg.getValueWarps() > 1)
      valueOffset =
          ir.mul(ir.divU(warp, ir.idx(rowWarps)), ir.idx(s.valueSlice()));
    MmaTile mma(b, s.kvElementType, lane);
    WarpAttentionTile tile(b, mma,
                           {mTiles, kvTile, s.headDim, s.valueSlice()},
                           warpRow0, valueOffset);
    SmallVector<Value> qFrags;
    if (cfg.getQInRegisters())
      qFrags = tile.loadQuery(qTile);
    SmallVector<Value> rowPositions = loadRowPositions(b, s, w, a, tile);
    // Variants: each fragment row's query head and position, once.
    std::optional<RowVariants> variants;
    if (s.variants) {
      variants.emplace(RowVariants{*variantCode, {}, {}, {}, {}});
      for (int64_t t = 0; t < mTiles; ++t)
        for (int64_t h = 0; h < acc.rowsPerLane; ++h) {
          auto [r, queryRow] = fragmentRow(b, s, w, tile, t, h);
          variants->heads.push_back(ir.add(ir.mul(kvHead, ir.idx(s.group())),
                                           ir.remU(r, ir.idx(s.group()))));
          kv::FrameRow frame = frameRow(
              b, w, a, queryRow,
              rowPositions.empty() ? queryPosition(b, s, w, a, queryRow)
                                   : rowPositions[acc.rowSlot(t, h)]);
          variants->requests.push_back(frame.request);
          variants->positions.push_back(frame.position);
          variants->keyShifts.push_back(frame.keyShift);
        }
    }
    // ALiBi and score_mod on each natural-unit logit of the tile at t0
    // (its keys by `keyOf`).
    auto scoreMods = [&](Value t0,
                         std::function<Value(ImplicitLocOpBuilder &, Value)>
                             keyOf) -> WarpAttentionTile::ElementMod {
      if (!variants || !variants->emitter.modifiesScores())
        return nullptr;
      return [&, t0, keyOf](ImplicitLocOpBuilder &eb, Value logit, int64_t row,
                            int64_t column) {
        IRBuilder k{eb};
        // Keys past the request read the tables at its last key, entries of
        // no key at key 0 (their logits are masked).
        Value e = k.add(tile.getMma().getAccFragment().firstCol(eb),
                        k.idx(column));
        Value key = s.gathers()
                        ? k.maxS(keyOf(eb, e), k.idx(0))
                        : k.minS(k.add(t0, e), k.sub(w.kvLen, k.idx(1)));
        return variants->emitter.modifyScore(
            eb, logit, variants->requests[row], variants->heads[row],
            variants->positions[row], variants->key(eb, row, key));
      };
    };
    // fp8: scores are dot products with values 1 / fp8HalfScale of the
    // codes' (convertTile), read k_scale of theirs; outputs v_scale.
    Value kValueScale, vValueScale;
    if (s.paged && s.paged.isFp8()) {
      Value half = ir.f32(kv::fp8HalfScale(s.paged.getStorageElementType()));
      kValueScale = ir.mul(a.paged.kScale, half);
      vValueScale = ir.mul(a.paged.vScale, half);
    }
    issueIfLive(b, ir.idx(0), kv::PoolRole::K, liveFirst);
    commitAsyncCopies(b);
    if (!s.isMla()) {
      issueIfLive(b, ir.idx(0), kv::PoolRole::V, liveFirst);
      commitAsyncCopies(b);
    }

    // Step 3: the K/V tiles. Groups in flight at the top of iteration i:
    // K_i, V_i (MLA: K/V tile i, whose ckv part is V).
    // The loop carries the rows' state and (mask_mod) whether tile i is
    // live; a dead tile is neither loaded nor multiplied, the pipeline's
    // commit groups and barriers stay the same.
    SmallVector<Value> init = tile.initialState().flatten();
    if (skipsTiles)
      init.push_back(liveFirst);
    auto loop = scf::ForOp::create(
        b, ir.idx(0), numTiles, ir.idx(1), init,
        [&](OpBuilder &nb, Location l, Value i, ValueRange carried) {
          ImplicitLocOpBuilder lb(l, nb);
          IRBuilder j{lb};
          ValueRange stateValues = skipsTiles ? carried.drop_back() : carried;
          WarpAttentionTile::State state =
              WarpAttentionTile::State::unflatten(stateValues, tile.getShape());
          Value live = skipsTiles ? carried.back() : Value();
          Value stage = j.remU(i, j.idx(2));
          Value next = j.add(i, j.idx(1));
          markTile(lb, next);
          waitAsyncCopies(lb, s.isMla() ? 0 : 1);
          gpu::BarrierOp::create(lb);
          Value liveNext = skipsTiles ? readLive(lb, next) : Value();
          // Everyone is done with tile i - 1: its K/V stage and page-entry
          // slot take tile i + 1 and the entries of tile i + 2.
          issueIfLive(lb, next, kv::PoolRole::K, liveNext);
          stageIds(lb, j.add(i, j.idx(2)));
          commitAsyncCopies(lb);

          // Quantized: everyone is done with the value tiles of tile
          // i - 1 (the barrier above); this tile's K codes become them.
          Value kStage = stage;
          if (kQuant) {
            convertTile(lb, s, *kQuant, stage, thread, threads);
            gpu::BarrierOp::create(lb);
            kStage = j.idx(0);
          }
          std::pair<Value, Value> range = kvTileRange(lb, s, w, i);
          Value t0 = range.first, tileCount = range.second;
          Value idSlot = idSlotOf(lb, i);
          std::function<Value(ImplicitLocOpBuilder &, Value)> keyOf =
              [&loader, idSlot, t0](ImplicitLocOpBuilder &kb, Value e) {
                return loader.keyOf(kb, idSlot, t0, e);
              };
          // RoPE: the tile's keys turn to their positions, in place (the
          // barrier above: everyone is done with tile i - 1's scores).
          if (rotation) {
            rotation->apply(
                lb, kTiles, kStage, [&](ImplicitLocOpBuilder &jb, Value t) {
                  IRBuilder k{jb};
                  return RopeRowPosition{k.lt(t, tileCount),
                                         k.maxS(keyOf(jb, t), k.idx(0))};
                });
            gpu::BarrierOp::create(lb);
          }
          // S = Q K^T, masked, and the online softmax: the new state and P.
          auto scoreTile = [&](ImplicitLocOpBuilder &sb) {
            SmallVector<Value> scores =
                tile.scores(qFrags, qTile, kTiles, kStage);
            if (s.isMla())
              scores = tile.scores({}, *qPeTile, *kpeTiles, stage, scores);
            SmallVector<Value> logits = tile.logits(
                scores, s.smScale, s.softCap, kValueScale,
                scoreMods(t0, keyOf));
            SmallVector<Type> types(logits.size(), mma.getAccType());
            auto masked = scf::IfOp::create(
                sb, needsMask(sb, s, w, t0),
                [&](OpBuilder &mb, Location ml) {
                  ImplicitLocOpBuilder ib(ml, mb);
                  scf::YieldOp::create(
                      ib, emitMask(ib, s, w, a, tile, logits, rowPositions,
                                   maskOffset, t0,
                                   variants ? &*variants : nullptr, keyOf));
                },
                [&](OpBuilder &mb, Location ml) {
                  scf::YieldOp::create(mb, ml, logits);
                });
            auto [stepped, p] =
                tile.softmax(state, SmallVector<Value>(masked.getResults()));
            SmallVector<Value> values = stepped.flatten();
            llvm::append_range(values, p);
            return values;
          };
          WarpAttentionTile::State stepped = state;
          SmallVector<Value> p;
          int64_t numStateValues = stateValues.size();
          if (!skipsTiles) {
            SmallVector<Value> values = scoreTile(lb);
            stepped = WarpAttentionTile::State::unflatten(
                ArrayRef<Value>(values).take_front(numStateValues),
                tile.getShape());
            p.assign(values.begin() + numStateValues, values.end());
          } else {
            // A dead tile keeps the state; its P is never used. (`b`, the
            // builder the tile and fragments build through, moves into each
            // branch.)
            SmallVector<Type> types(stateValues.getTypes());
            int64_t numP = mTiles * (kvTile / 16);
            types.append(numP, mma.getAType());
            auto scored = scf::IfOp::create(b, types, live,
                                            /*withElseRegion=*/true);
            {
              OpBuilder::InsertionGuard guard(b);
              b.setInsertionPointToEnd(scored.thenBlock());
              scf::YieldOp::create(b, scoreTile(b));
              b.setInsertionPointToEnd(scored.elseBlock());
              SmallVector<Value> values(stateValues);
              Value zero = arith::ConstantOp::create(
                  b, mma.getAType(), b.getZeroAttr(mma.getAType()));
              values.append(numP, zero);
              scf::YieldOp::create(b, values);
            }
            stepped = WarpAttentionTile::State::unflatten(
                scored.getResults().take_front(numStateValues),
                tile.getShape());
            llvm::append_range(p,
                               scored.getResults().drop_front(numStateValues));
          }

          if (!s.isMla()) {
            waitAsyncCopies(lb, 1);
            gpu::BarrierOp::create(lb);
            issueIfLive(lb, next, kv::PoolRole::V, liveNext);
            commitAsyncCopies(lb);
          }
          Value vStage = stage;
          if (vTransposed) {
            transposeTile(lb, s, *vTransposed, stage, vTiles, thread,
                          threads);
            gpu::BarrierOp::create(lb);
            vStage = j.idx(0);
          } else if (vQuant) {
            convertTile(lb, s, *vQuant, stage, thread, threads);
            gpu::BarrierOp::create(lb);
            vStage = j.idx(0);
          }
          SmallVector<Value> results;
          if (!skipsTiles) {
            results = tile.accumulate(stepped, p, vTiles, vStage).flatten();
          } else {
            SmallVector<Value> kept = stepped.flatten();
            auto accumulated = scf::IfOp::create(b, ValueRange(kept).getTypes(),
                                                 live, /*withElseRegion=*/true);
            {
              OpBuilder::InsertionGuard guard(b);
              b.setInsertionPointToEnd(accumulated.thenBlock());
              scf::YieldOp::create(
                  b, tile.accumulate(stepped, p, vTiles, vStage).flatten());
              b.setInsertionPointToEnd(accumulated.elseBlock());
              scf::YieldOp::create(b, kept);
            }
            results.assign(accumulated.getResults().begin(),
                           accumulated.getResults().end());
            results.push_back(liveNext);
          }
          scf::YieldOp::create(lb, results);
        });
    waitAsyncCopies(b, 0);
    // Warps of other value slices may still read the query tile that
    // stages the output.
    if (cfg.getValueWarps() > 1)
      gpu::BarrierOp::create(b);

    // Step 4.
    WarpAttentionTile::State state = WarpAttentionTile::State::unflatten(
        skipsTiles ? loop.getResults().drop_back() : loop.getResults(),
        tile.getShape());
    std::optional<SharedTile> outStage;
    if (s.stagesFinalOutput(
            (s.scheduled ? s.finalOutType : s.outType).getElementType()))
      outStage = buf.outStage
                     ? SharedTile{kf.getShared(*buf.outStage), cfg.getQTile(),
                                  s.headDimV}
                     : qTile;
    // Sinks join final states only (a partial one's merge adds them).
    auto epilogue = [&](ImplicitLocOpBuilder &eb, kv::LseBase base,
                        const Destination &dest, bool final) {
      SmallVector<Value> sinks;
      if (final && variants && variants->emitter.hasSinks())
        for (Value head : variants->heads)
          sinks.push_back(variants->emitter.sinkLogit(eb, head));
      WarpAttentionTile::Final fin =
          tile.finalize(state, base, vValueScale, sinks);
      emitEpilogue(eb, s, w, mma, tile, fin, warpRow0, kvHead, dest, lane);
    };
    Destination final{s.scheduled ? a.finalOut : a.out,
                      s.scheduled ? a.finalLse : a.lse, requestRows, Value(),
                      outStage ? &*outStage : nullptr};
    if (part) {
      epilogue(b, kv::LseBase::two,
               {a.out, a.lse, requestRows, ir.lt(w.start, w.end)},
               /*final=*/false);
    } else if (!s.scheduled) {
      epilogue(b, s.base, final, /*final=*/true);
    } else {
      // A whole request is final; a chunk of one a partial state. (`b`
      // moves into each branch: the tile and fragments build through it.)
      auto whole = scf::IfOp::create(b, ir.eq(w.numChunks, ir.idx(1)),
                                     /*withElseRegion=*/true);
      b.setInsertionPoint(whole.thenBlock()->getTerminator());
      epilogue(b, s.base, final, /*final=*/true);
      b.setInsertionPoint(whole.elseBlock()->getTerminator());
      epilogue(b, kv::LseBase::two, {a.out, a.lse, itemRows, Value()},
               /*final=*/false);
      b.setInsertionPointAfter(whole);
    }
  });
}
