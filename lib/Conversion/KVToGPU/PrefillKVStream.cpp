//===- PrefillKVStream.cpp - The prefill kernel's K/V tiles ---------------===//
//
// Step 3's producer side (PrefillKernelParts.h): where a partition's K/V
// tiles come from (PagedTileLoader: page tables, gathers, ragged rows),
// the stages they land in (CpAsyncPipeline), the conversion of code rings
// (fp8, int8 groups) and of vLLM's transposed V ring into the tiles the
// mma reads, and mask_mod's tile skipping.
//
//===----------------------------------------------------------------------===//
#include "PrefillKernelParts.h"

#include "kvir/Codegen/IRBuilder.h"
#include "kvir/Dialect/KV/Utils/Quantization.h"
#include "kvir/Dialect/KVGPU/Transforms/ConfigSelection.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace kvir;
using namespace kvir::codegen;
using namespace kvir::gpu_lowering;
using namespace kvir::gpu_lowering::prefill;

namespace {

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
      arith::ExtFOp::create(b, VectorType::get(shape, b.getF32Type()), values));
}

/// Converts stage `stage` of `t`'s codes into stage `valueStage` of its
/// value tile (the activation type), 8 codes per step (one 16-byte chunk of
/// the tile: a warp's phase writes 8 consecutive chunks, free of bank
/// conflicts), the steps spread over `threads` threads: fp8 as f16 values
/// 1 / fp8HalfScale of theirs (exact; the scales apply to logits and
/// output), int8 codes times their group's scale in f32, rounded once.
void convertTile(ImplicitLocOpBuilder &b, const PrefillKernelSpec &s,
                 const QuantizedTile &t, Value stage, Value valueStage,
                 Value thread, int64_t threads) {
  constexpr int64_t kStep = 8;
  Type code = s.paged.getStorageElementType(), f32 = b.getF32Type();
  auto vectorOf = [](Type elt) { return VectorType::get({kStep}, elt); };
  int64_t chunksPerRow = t.codes.cols / kStep;
  int64_t total = t.codes.rows * chunksPerRow;
  auto convert = [&](ImplicitLocOpBuilder &jb, Value i) {
    IRBuilder j{jb};
    Value row = j.divU(i, j.idx(chunksPerRow));
    Value col = j.mul(j.remU(i, j.idx(chunksPerRow)), j.idx(kStep));
    auto load =
        vector::LoadOp::create(jb, vectorOf(code), t.codes.memref,
                               t.codes.elementIndices(jb, stage, row, col));
    load.setAlignment(kStep);
    Value codes = load, values;
    if (s.int8Groups()) {
      int64_t g = s.paged.getQuantGroup();
      int64_t count = std::max<int64_t>(1, kStep / g);
      Value scales = vector::LoadOp::create(
          jb, VectorType::get({count}, s.kvElementType), t.scales->memref,
          t.scales->elementIndices(jb, stage, row, j.divU(col, j.idx(g))));
      Value dequantized = j.mul(
          arith::ExtFOp::create(jb, vectorOf(f32), kv::int8ToF16(jb, codes)),
          kv::spreadGroupScales(jb, scales, kStep, g));
      values =
          arith::TruncFOp::create(jb, vectorOf(s.kvElementType), dequantized);
    } else {
      values = fp8ToValues(jb, s, codes);
    }
    vector::StoreOp::create(jb, values, t.values.memref,
                            t.values.elementIndices(jb, valueStage, row, col))
        .setAlignment(16);
  };
  emitStrided(b, thread, threads, total, convert);
}

/// vLLM's V pool: writes stage `stage` of the transposed ring `from`
/// ([stages, dims, tokens]) into stage `toStage` of the value tile `to`
/// ([tokens, dims], swizzled), fp8 codes converted as convertTile does. A
/// thread takes one chunk of one dim (consecutive threads: consecutive
/// dims, so that the ring's padded rows spread over the banks and the
/// tile's row takes consecutive columns).
void transposeTile(ImplicitLocOpBuilder &b, const PrefillKernelSpec &s,
                   const SharedTile &from, Value stage, const SharedTile &to,
                   Value toStage, Value thread, int64_t threads) {
  Type code = s.paged.getStorageElementType();
  int64_t chunk = s.transposedVChunk(), dims = s.headDimV;
  int64_t total = dims * (s.config.getKvTile() / chunk);
  auto convert = [&](ImplicitLocOpBuilder &jb, Value i) {
    IRBuilder j{jb};
    Value dim = j.remU(i, j.idx(dims));
    Value first = j.mul(j.divU(i, j.idx(dims)), j.idx(chunk));
    auto load =
        vector::LoadOp::create(jb, VectorType::get({chunk}, code), from.memref,
                               from.elementIndices(jb, stage, dim, first));
    load.setAlignment(from.chunkBytes);
    Value values = load;
    if (s.paged.isFp8())
      values = fp8ToValues(jb, s, values);
    for (int64_t t = 0; t < chunk; ++t)
      memref::StoreOp::create(
          jb, vector::ExtractOp::create(jb, values, t), to.memref,
          to.elementIndices(jb, toStage, j.add(first, j.idx(t)), dim));
  };
  emitStrided(b, thread, threads, total, convert);
}

/// The loader of the block's K/V rows: paged (page entries staged in
/// `pageIds` where the table has them) or ragged.
PagedTileLoader makeLoader(const KernelFunc &kf, const PrefillKernelSpec &s,
                           const Buffers &buf, const Arguments &a,
                           const Work &w, Value kvHead) {
  int64_t kvTile = s.config.getKvTile();
  if (!s.paged)
    return PagedTileLoader(a.ragged, w.base, kvHead, kvTile);
  return PagedTileLoader(a.paged, w.request, w.base, kvHead, kvTile,
                         buf.pageIds ? kf.getShared(*buf.pageIds) : Value());
}

} // namespace

KVTileStream::KVTileStream(ImplicitLocOpBuilder &b, const KernelFunc &kf,
                           const PrefillKernelSpec &s, const Buffers &buf,
                           const Arguments &a, const Work &w, Value kvHead,
                           Value thread)
    : s(s), w(w), thread(thread), kvHead(kvHead),
      pipeline(s.config.getStages(), /*groupsPerTile=*/s.isMla() ? 1 : 2,
               CpAsyncPipeline::Refill::afterWait,
               s.config.usesWgmma() ? CpAsyncPipeline::Readers::asyncProxy
                                    : CpAsyncPipeline::Readers::threads),
      k{kf.getShared(buf.k), s.config.getKvTile(), s.headDim,
        kvgpu::operandSwizzle(s.config)},
      // MLA's values are its latent keys: the ckv tile.
      v(s.isMla() ? k
                  : SharedTile{kf.getShared(*buf.v), s.config.getKvTile(),
                               s.headDimV, kvgpu::operandSwizzle(s.config)}),
      idSlots(layoutShape(s).idSlots()), hasIds(buf.pageIds || buf.keyIds),
      loader(makeLoader(kf, s, buf, a, w, kvHead)) {
  IRBuilder ir{b};
  int64_t kvTile = s.config.getKvTile();
  if (s.isMla())
    kpe = SharedTile{kf.getShared(*buf.kpe), kvTile, s.peDim,
                     kvgpu::operandSwizzle(s.config)};
  // Quantized KV: the rings the copies fill, converted per tile into k / v
  // (one stage each).
  if (s.quantizedKV()) {
    auto ring = [&](std::optional<unsigned> index, int64_t cols,
                    int64_t chunkBytes) {
      return SharedTile{kf.getShared(*index), kvTile, cols, Swizzle::None,
                        chunkBytes};
    };
    int64_t g = s.paged.getQuantGroup();
    int64_t scaleBytes =
        s.scaleChunk * s.kvElementType.getIntOrFloatBitWidth() / 8;
    kQuant = QuantizedTile{ring(buf.kCodes, s.headDim, 16), std::nullopt, k};
    if (!s.transposedVChunk())
      vQuant = QuantizedTile{ring(buf.vCodes, s.headDimV, 16), std::nullopt, v};
    if (s.int8Groups()) {
      kQuant->scales = ring(buf.kScales, s.headDim / g, scaleBytes);
      vQuant->scales = ring(buf.vScales, s.headDimV / g, scaleBytes);
    }
  }
  // vLLM's V pool: [stages, dims, tokens (+ pad)] by chunks of slots,
  // converted per tile into v (one stage).
  if (int64_t chunk = s.transposedVChunk()) {
    Type code = s.paged.getStorageElementType();
    vTransposed =
        SharedTile{kf.getShared(*buf.vCodes), s.headDimV,
                   kvTile + kvgpu::transposedVPad(s.paged, kvTile),
                   Swizzle::None, chunk * code.getIntOrFloatBitWidth() / 8};
  }
  if (s.config.copiesByTma()) {
    kTma.emplace(a.kMap, k);
    vTma.emplace(a.vMap, v);
  }
  // Gathering: the tile's query row (a tile lies within one) lists the
  // keys.
  if (a.topk)
    loader.setGather(
        {a.topk, ir.add(w.qoStart, ir.divU(w.firstRow, ir.idx(s.rowStride()))),
         w.kvLen, kf.getShared(*buf.keyIds)});
  numTiles =
      arith::CeilDivUIOp::create(b, ir.sub(w.end, w.start), ir.idx(kvTile));
  // The leaner copy addresses where the kernel has registers to spare and
  // each thread copies at most 4 rows of a K or V tile (a block of two
  // warps copying 16 each spilled on sm_86).
  if (s.paged) {
    int64_t rowBytes = std::max(s.headDim, s.headDimV) *
                       s.paged.getStorageElementType().getIntOrFloatBitWidth() /
                       8;
    int64_t copiesPerThread = kvTile * rowBytes / 16 / s.config.getNumThreads();
    loader.setLocateInTile(s.hasRegisterHeadroom() && copiesPerThread <= 4);
  }
}

std::pair<Value, Value> KVTileStream::range(ImplicitLocOpBuilder &b,
                                            Value index) const {
  return tileKeys(b, w.start, w.end, index, s.config.getKvTile());
}

Value KVTileStream::idSlot(ImplicitLocOpBuilder &b, Value index) const {
  IRBuilder ir{b};
  return ir.remU(index, ir.idx(idSlots));
}

void KVTileStream::ifTile(
    ImplicitLocOpBuilder &b, Value index,
    function_ref<void(ImplicitLocOpBuilder &, Value, Value)> body) const {
  emitIf(b, IRBuilder{b}.lt(index, numTiles), [&](ImplicitLocOpBuilder &jb) {
    auto [t0, count] = range(jb, index);
    body(jb, t0, count);
  });
}

void KVTileStream::stageIds(ImplicitLocOpBuilder &b, Value index) const {
  if (!hasIds)
    return;
  ifTile(b, index, [&](ImplicitLocOpBuilder &jb, Value t0, Value count) {
    loader.stagePageIdsAsync(jb, idSlot(jb, index), t0, count, thread,
                             s.copyThreads());
  });
}

void KVTileStream::stageFirstIds(ImplicitLocOpBuilder &b) const {
  IRBuilder ir{b};
  for (int64_t n = 0; n < pipeline.getStages(); ++n)
    stageIds(b, ir.idx(n));
}

void KVTileStream::issuePrologue(ImplicitLocOpBuilder &b,
                                 ArrayRef<Value> live) const {
  IRBuilder ir{b};
  if (pipeline.isSingleBuffered()) {
    issue(b, ir.idx(0), kv::PoolRole::K, Value());
    pipeline.commit(b);
    return;
  }
  int64_t stages = pipeline.getStages();
  for (int64_t m = 0; m + 1 < stages; ++m) {
    Value liveM = live.empty() ? Value() : live[m];
    issue(b, ir.idx(m), kv::PoolRole::K, liveM);
    // The entries of tiles S ... 2S - 3; tile 2S - 2's ride with the loop's
    // first K group.
    if (m + stages <= 2 * stages - 3)
      stageIds(b, ir.idx(m + stages));
    pipeline.commit(b);
    if (!s.isMla()) {
      issue(b, ir.idx(m), kv::PoolRole::V, liveM);
      pipeline.commit(b);
    }
  }
}

Value KVTileStream::aheadOf(ImplicitLocOpBuilder &b, Value i) const {
  IRBuilder ir{b};
  return ir.add(i, ir.idx(pipeline.tilesAhead()));
}

void KVTileStream::afterKWait(ImplicitLocOpBuilder &b, Value i, Value ahead,
                              Value live) const {
  IRBuilder ir{b};
  if (pipeline.isSingleBuffered()) {
    // Every thread is done with V_{i-1}: V_i (ahead is i); tile i + 1's
    // entries take the slot tile i - 1's V was issued from.
    issue(b, ahead, kv::PoolRole::V, live);
    stageIds(b, ir.add(i, ir.idx(1)));
    pipeline.commit(b);
    return;
  }
  issue(b, ahead, kv::PoolRole::K, live);
  stageIds(b, ir.add(i, ir.idx(2 * pipeline.tilesAhead())));
  pipeline.commit(b);
}

void KVTileStream::afterVWait(ImplicitLocOpBuilder &b, Value ahead,
                              Value live) const {
  if (pipeline.isSingleBuffered()) {
    // Every thread is done with K_i (its scores; ahead is i): K_{i+1},
    // whose entries landed at this wait.
    IRBuilder ir{b};
    issue(b, ir.add(ahead, ir.idx(1)), kv::PoolRole::K, live);
    pipeline.commit(b);
    return;
  }
  issue(b, ahead, kv::PoolRole::V, live);
  pipeline.commit(b);
}

Value KVTileStream::copiesByTma(ImplicitLocOpBuilder &b, Value t0,
                                Value count) const {
  IRBuilder ir{b};
  Value whole = ir.eq(count, ir.idx(s.config.getKvTile()));
  if (!s.paged)
    return whole;
  // A tile of whole pages: boxes of one page each.
  Value aligned = ir.eq(ir.remU(t0, ir.idx(s.paged.getPageSize())), ir.idx(0));
  return arith::AndIOp::create(b, whole, aligned);
}

void KVTileStream::issueBoxes(ImplicitLocOpBuilder &b,
                              const StageHandoff &handoff, Value index,
                              Value t0) const {
  IRBuilder ir{b};
  handoff.filledExpecting(b, index,
                          arith::ConstantIntOp::create(
                              b, kTma->tileBytes() + vTma->tileBytes(), 32));
  Value stage = pipeline.stageOf(b, index);
  Value barrier = handoff.fullBarrier(b, index);
  Value slot = idSlot(b, index);
  int64_t kvTile = s.config.getKvTile();
  int64_t boxRows = kvgpu::tmaBoxRows(s.paged, kvTile);
  for (auto [role, copy] : {std::pair(kv::PoolRole::K, &*kTma),
                            std::pair(kv::PoolRole::V, &*vTma)}) {
    for (int64_t row = 0; row < kvTile; row += boxRows) {
      for (int64_t block = 0; block < copy->numBlocks(); ++block) {
        // The map's coordinates of the box's first element: its indices in
        // the buffer, innermost first.
        Value token = ir.add(t0, ir.idx(row));
        Value dim = ir.idx(block * copy->boxColumns());
        SmallVector<Value> indices =
            loader.address(b, role, token, t0, dim, slot).second;
        SmallVector<Value> coordinates;
        for (Value i : llvm::reverse(indices))
          coordinates.push_back(
              arith::IndexCastOp::create(b, b.getI32Type(), i));
        copy->copyBox(b, stage, barrier, row, block, coordinates);
      }
    }
  }
}

void KVTileStream::produce(ImplicitLocOpBuilder &b,
                           const StageHandoff &handoff) const {
  IRBuilder ir{b};
  int64_t threads = s.copyThreads();
  // With TMA, the tiles cp.async takes are handed over at once (they are
  // the few a box cannot copy).
  int64_t lag = pipeline.getStages() > 2 && !kTma ? 1 : 0;
  Value leader = ir.eq(thread, ir.idx(0));
  if (kTma)
    emitIf(b, leader, [&](ImplicitLocOpBuilder &ib) {
      kTma->acquireMap(ib);
      vTma->acquireMap(ib);
    });
  bool stagesIds = loader.stagesPageIds();
  // Tile `index`'s page entries, loaded now (where it exists), stored in its
  // slot later.
  auto loadIds = [&](ImplicitLocOpBuilder &jb, Value index) {
    IRBuilder j{jb};
    auto [t0, count] = range(jb, index);
    return loader.loadPageIds(jb, j.lt(index, numTiles), t0, count, thread,
                              threads);
  };
  auto storeIds = [&](ImplicitLocOpBuilder &jb, Value index,
                      ArrayRef<Value> entries) {
    loader.storePageIds(jb, idSlot(jb, index), entries, thread, threads);
    handoff.producerSync(jb);
  };
  // The thread's copies of tile `index` (and those before) landed; codes
  // (quantized, transposed V) are converted into the tile's stage once
  // every producer thread's landed; fenced for wgmma's async proxy, handed
  // over.
  // RoPE: the producer turns each K tile's keys to their positions before
  // handing it over (its own threads, its own frequencies).
  std::optional<TileRotation> rotation;
  if (s.rope)
    rotation.emplace(b, s.rope, s.headDim, thread, threads);
  auto handOver = [&](ImplicitLocOpBuilder &jb, Value index, int64_t pending) {
    waitAsyncCopies(jb, pending);
    if (kQuant || s.convertsV() || rotation) {
      handoff.producerSync(jb);
      Value stage = pipeline.stageOf(jb, index);
      if (kQuant)
        convertTile(jb, s, *kQuant, stage, stage, thread, threads);
      convertV(jb, stage, stage, threads);
      if (rotation)
        rotateKeys(jb, *rotation, index, stage);
    }
    pipeline.publish(jb);
    handoff.filled(jb, index);
  };
  if (stagesIds) {
    SmallVector<Value> first = loadIds(b, ir.idx(0));
    storeIds(b, ir.idx(0), first);
  }
  scf::ForOp::create(b, ir.idx(0), numTiles, ir.idx(1), ValueRange{},
                     [&](OpBuilder &nb, Location l, Value n, ValueRange) {
                       ImplicitLocOpBuilder lb(l, nb);
                       IRBuilder k{lb};
                       Value next = k.add(n, k.idx(1));
                       SmallVector<Value> nextIds;
                       if (stagesIds)
                         nextIds = loadIds(lb, next);
                       handoff.waitEmpty(lb, n);
                       auto byCpAsync = [&](ImplicitLocOpBuilder &cb) {
                         issue(cb, n, kv::PoolRole::K, Value());
                         issue(cb, n, kv::PoolRole::V, Value());
                         pipeline.commit(cb);
                       };
                       if (kTma) {
                         // Boxes by thread 0 (the others arrive), or
                         // cp.async handed over at once.
                         Value t0, count;
                         std::tie(t0, count) = range(lb, n);
                         emitIfElse(
                             lb, copiesByTma(lb, t0, count),
                             [&](ImplicitLocOpBuilder &tb) {
                               emitIfElse(
                                   tb, leader,
                                   [&](ImplicitLocOpBuilder &xb) {
                                     issueBoxes(xb, handoff, n, t0);
                                   },
                                   [&](ImplicitLocOpBuilder &ob) {
                                     handoff.filled(ob, n);
                                   });
                             },
                             [&](ImplicitLocOpBuilder &cb) {
                               byCpAsync(cb);
                               handOver(cb, n, 0);
                             });
                       } else if (lag == 0) {
                         byCpAsync(lb);
                         handOver(lb, n, 0);
                       } else {
                         byCpAsync(lb);
                         emitIf(lb, k.lt(k.idx(0), n),
                                [&](ImplicitLocOpBuilder &ib) {
                                  IRBuilder x{ib};
                                  handOver(ib, x.sub(n, x.idx(1)), 1);
                                });
                       }
                       if (stagesIds)
                         storeIds(lb, next, nextIds);
                       scf::YieldOp::create(lb);
                     });
  if (lag == 1)
    emitIf(b, ir.lt(ir.idx(0), numTiles), [&](ImplicitLocOpBuilder &ib) {
      IRBuilder x{ib};
      handOver(ib, x.sub(numTiles, x.idx(1)), 0);
    });
}

void KVTileStream::issue(ImplicitLocOpBuilder &b, Value index,
                         kv::PoolRole role, Value live) const {
  if (live) {
    emitIf(b, live,
           [&](ImplicitLocOpBuilder &jb) { issue(jb, index, role, Value()); });
    return;
  }
  int64_t threads = s.copyThreads();
  ifTile(b, index, [&](ImplicitLocOpBuilder &jb, Value t0, Value count) {
    Value stage = pipeline.stageOf(jb, index);
    bool isK = role == kv::PoolRole::K;
    if (!isK && vTransposed) {
      loader.copyTileTransposedAsync(jb, role, *vTransposed, stage, t0, count,
                                     s.headDimV, thread, threads,
                                     idSlot(jb, index));
      return;
    }
    SmallVector<TileCopy> copies;
    const std::optional<QuantizedTile> &quant = isK ? kQuant : vQuant;
    if (quant) {
      int64_t width = isK ? s.headDim : s.headDimV;
      copies.push_back({role, quant->codes, width});
      if (quant->scales)
        copies.push_back({isK ? kv::PoolRole::KScale : kv::PoolRole::VScale,
                          *quant->scales, width / s.paged.getQuantGroup()});
    } else {
      copies.push_back({role, isK ? k : v, isK ? s.headDim : s.headDimV});
    }
    // MLA's K tile is ckv (the K pool) and kpe (the V pool).
    if (isK && s.isMla())
      copies.push_back({kv::PoolRole::V, *kpe, s.peDim});
    loader.copyTileAsync(jb, copies, stage, t0, count, thread, threads,
                         idSlot(jb, index));
  });
}

void KVTileStream::rotateKeys(ImplicitLocOpBuilder &b,
                              const TileRotation &rotation, Value index,
                              Value stage) const {
  Value t0, count;
  std::tie(t0, count) = range(b, index);
  Value slot = idSlot(b, index);
  rotation.apply(b, k, stage, [&](ImplicitLocOpBuilder &jb, Value t) {
    IRBuilder x{jb};
    return RopeRowPosition{x.lt(t, count),
                           x.maxS(loader.keyOf(jb, slot, t0, t), x.idx(0))};
  });
}

Value KVTileStream::prepareK(ImplicitLocOpBuilder &b, Value stage) const {
  // (A producer converted the tile into its stage.)
  if (!kQuant || s.config.hasProducer())
    return stage;
  Value zero = IRBuilder{b}.idx(0);
  convertTile(b, s, *kQuant, stage, zero, thread, s.config.getNumThreads());
  pipeline.publish(b);
  gpu::BarrierOp::create(b);
  return zero;
}

Value KVTileStream::prepareV(ImplicitLocOpBuilder &b, Value stage) const {
  if (!s.convertsV() || s.config.hasProducer())
    return stage;
  Value zero = IRBuilder{b}.idx(0);
  convertV(b, stage, zero, s.config.getNumThreads());
  pipeline.publish(b);
  gpu::BarrierOp::create(b);
  return zero;
}

void KVTileStream::convertV(ImplicitLocOpBuilder &b, Value stage,
                            Value valueStage, int64_t threads) const {
  if (vTransposed)
    transposeTile(b, s, *vTransposed, stage, v, valueStage, thread, threads);
  else if (vQuant)
    convertTile(b, s, *vQuant, stage, valueStage, thread, threads);
}

TileSkipping::TileSkipping(ImplicitLocOpBuilder &b, const KernelFunc &kf,
                           const PrefillKernelSpec &s, const Buffers &buf,
                           const Arguments &a, const Work &w,
                           const KVTileStream &stream,
                           const VariantEmitter &variants, Value kvHead,
                           Value thread)
    : s(s), a(a), w(w), stream(stream), variants(variants), kvHead(kvHead),
      thread(thread),
      marks(kf.getShared(*buf.liveTiles), layoutShape(s).liveTileSlots()) {
  IRBuilder ir{b};
  emitIf(b, ir.eq(thread, ir.idx(0)),
         [&](ImplicitLocOpBuilder &ib) { marks.clear(ib); });
  gpu::BarrierOp::create(b);
}

void TileSkipping::mark(ImplicitLocOpBuilder &b, Value index) const {
  int64_t kvTile = s.config.getKvTile(), qTile = s.config.getQTile();
  int64_t threads = s.config.getNumThreads();
  stream.ifTile(b, index, [&](ImplicitLocOpBuilder &jb, Value t0, Value count) {
    IRBuilder k{jb};
    // The tile's packed rows, or, when the mask ignores the head, the
    // query rows they cover (G heads share one).
    bool perQueryRow = !variants.maskReadsHead() && s.group() > 1;
    Value g = k.idx(s.rowStride());
    Value firstQueryRow = k.divU(w.firstRow, g);
    Value rows = k.idx(qTile);
    if (perQueryRow)
      rows = k.add(
          k.sub(k.divU(k.add(w.firstRow, k.idx(qTile - 1)), g), firstQueryRow),
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
          kv::FrameRow frame = frameRow(
              pb, w, a, row.queryRow, queryPosition(pb, s, w, a, row.queryRow));
          if (frame.keyShift)
            key = x.add(key, frame.keyShift);
          Value seen = variants.visible(pb, frame.request, row.head,
                                        frame.position, key);
          scf::YieldOp::create(
              pb, ValueRange{arith::OrIOp::create(
                      pb, found[0], arith::AndIOp::create(pb, inTile, seen))});
        });
    marks.mark(jb, index, any.getResult(0));
  });
}

Value TileSkipping::isLive(ImplicitLocOpBuilder &b, Value index) const {
  return marks.isLive(b, index, stream.getNumTiles());
}
