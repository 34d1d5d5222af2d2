//===- DecodeKVStream.cpp - The decode kernel's K/V tiles -----------------===//
//
// The decode kernel's producer side (DecodeKernelParts.h): where a block's
// K/V tiles come from (PagedTileLoader), the ring of stages they land in
// (CpAsyncPipeline) and mask_mod's tile skipping.
//
//===----------------------------------------------------------------------===//
#include "DecodeKernelParts.h"

#include "kvir/Codegen/IRBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace kvir;
using namespace kvir::codegen;
using namespace kvir::gpu_lowering;
using namespace kvir::gpu_lowering::decode;

namespace {

/// V as staged: [stages, tile, padded] rows, or, vLLM's V pool,
/// [stages, padded dims, tile (+ pad) tokens] copied in chunks.
SharedTile stagedValues(const DecodeBlock &blk) {
  Value buffer = blk.kf.getShared(blk.buf.vTiles);
  if (int64_t chunk = blk.spec.transposedVChunk())
    return SharedTile{buffer, blk.padded,
                      blk.tile + kvgpu::transposedVPad(blk.spec.kv, blk.tile),
                      Swizzle::None,
                      chunk * blk.elt.getIntOrFloatBitWidth() / 8};
  return SharedTile{buffer, blk.tile, blk.padded, Swizzle::None};
}

} // namespace

DecodeKVStream::DecodeKVStream(ImplicitLocOpBuilder &b, const DecodeBlock &blk,
                               const LiveTileMarks *marks)
    : blk(blk), marks(marks),
      pipeline(blk.spec.config.getStages()), keys{blk.kf.getShared(
                                                      blk.buf.kTiles),
                                                  blk.tile, blk.padded,
                                                  Swizzle::None},
      values(stagedValues(blk)),
      loader(blk.args.kv, blk.req, blk.tableBase, blk.kvHead, blk.tile,
             blk.kf.getShared(blk.buf.pageIds)) {
  IRBuilder ir{b};
  // int8 groups: the tiles' scales, staged with their codes.
  if (blk.int8) {
    int64_t bytes = blk.spec.scaleChunk *
                    blk.spec.kv.getDtype().getIntOrFloatBitWidth() / 8;
    kScale = SharedTile{blk.kf.getShared(*blk.buf.kScales), blk.tile,
                        blk.spec.scaleColumns(), Swizzle::None, bytes};
    vScale = SharedTile{blk.kf.getShared(*blk.buf.vScales), blk.tile,
                        blk.spec.scaleColumns(), Swizzle::None, bytes};
  }
  // One chunk a copy: two chunks of a row a thread cost the group-1 split
  // kernel an occupancy step on sm_90a (bench/RESULTS.md).
  loader.setMaxChunksPerThreadRow(1);
  if (Value topk = blk.args.topk)
    loader.setGather({topk, blk.qRow, blk.metaAt(b, kMetaKvLen),
                      blk.kf.getShared(*blk.buf.keyIds)});
  numTiles = arith::CeilDivUIOp::create(b, ir.sub(blk.end, blk.start),
                                        ir.idx(blk.tile));
}

std::pair<Value, Value> DecodeKVStream::range(ImplicitLocOpBuilder &b,
                                              Value index) const {
  return tileKeys(b, blk.start, blk.end, index, blk.tile);
}

Value DecodeKVStream::idSlot(ImplicitLocOpBuilder &b, Value index) const {
  IRBuilder k{b};
  return k.remU(index, k.idx(blk.spec.idSlots()));
}

void DecodeKVStream::issue(ImplicitLocOpBuilder &b, Value index) const {
  IRBuilder k{b};
  // Whole 16-byte chunks of vectors go by cp.async; narrower vectors (a
  // layout that proves less) by loads and stores.
  bool asyncRows = blk.vec * blk.elt.getIntOrFloatBitWidth() % 128 == 0;
  int64_t headDim = blk.headDim;
  emitIf(b, k.lt(index, numTiles), [&](ImplicitLocOpBuilder &jb) {
    auto [t0, count] = range(jb, index);
    Value stage = pipeline.stageOf(jb, index);
    Value slot = idSlot(jb, index);
    SmallVector<TileCopy> copies{TileCopy{kv::PoolRole::K, keys, headDim}};
    if (blk.spec.transposedVChunk())
      loader.copyTileTransposedAsync(jb, kv::PoolRole::V, values, stage, t0,
                                     count, headDim, blk.lane, blk.numThreads);
    else
      copies.push_back(TileCopy{kv::PoolRole::V, values, headDim});
    if (blk.int8)
      copies.append(
          {TileCopy{kv::PoolRole::KScale, *kScale, headDim / blk.quantGroup},
           TileCopy{kv::PoolRole::VScale, *vScale, headDim / blk.quantGroup}});
    if (asyncRows)
      loader.copyTileAsync(jb, copies, stage, t0, count, blk.lane,
                           blk.numThreads, slot);
    else
      loader.copyTile(jb, copies, stage, t0, count, blk.lane, blk.numThreads,
                      blk.vec, nullptr, slot);
  });
}

SmallVector<Value> DecodeKVStream::loadIds(ImplicitLocOpBuilder &b,
                                           Value index) const {
  auto [t0, count] = range(b, index);
  return loader.loadPageIds(b, IRBuilder{b}.lt(index, numTiles), t0, count,
                            blk.lane, blk.numThreads);
}

void DecodeKVStream::storeIds(ImplicitLocOpBuilder &b, Value index,
                              ArrayRef<Value> entries) const {
  loader.storePageIds(b, idSlot(b, index), entries, blk.lane, blk.numThreads);
}

void DecodeKVStream::mark(ImplicitLocOpBuilder &b, Value index) const {
  if (!marks)
    return;
  // Every thread evaluates the region on its share of the tile's (head,
  // key) pairs (one head when the region ignores it); those that find a
  // visible pair put n + 1 in slot n % (stages + 1) (an atomic max: the
  // slot's older mark is smaller).
  int64_t tile = blk.tile, group = blk.group;
  emitIf(b, IRBuilder{b}.lt(index, numTiles), [&](ImplicitLocOpBuilder &jb) {
    IRBuilder k{jb};
    std::pair<Value, Value> tileRange = range(jb, index);
    Value t0 = tileRange.first, count = tileRange.second;
    int64_t heads = blk.variants->maskReadsHead() ? group : 1;
    auto any = scf::ForOp::create(
        jb, blk.lane, k.idx(heads * tile), k.idx(blk.numThreads),
        ValueRange{arith::ConstantIntOp::create(jb, 0, 1)},
        [&](OpBuilder &nb, Location l, Value pair, ValueRange found) {
          ImplicitLocOpBuilder pb(l, nb);
          IRBuilder x{pb};
          Value t = x.remU(pair, x.idx(tile));
          Value pairHead =
              x.add(x.mul(blk.kvHead, x.idx(group)), x.divU(pair, x.idx(tile)));
          // Past the tile the region sees its last key (in bounds).
          Value key = x.add(t0, x.minS(t, x.sub(count, x.idx(1))));
          if (blk.keyShift)
            key = x.add(key, blk.keyShift);
          Value seen = blk.variants->visible(pb, blk.variantRequest, pairHead,
                                             blk.variantPosition, key);
          scf::YieldOp::create(
              pb, ValueRange{arith::OrIOp::create(
                      pb, found[0],
                      arith::AndIOp::create(pb, x.lt(t, count), seen))});
        });
    marks->mark(jb, index, any.getResult(0));
  });
}

Value DecodeKVStream::isLive(ImplicitLocOpBuilder &b, Value index) const {
  return marks->isLive(b, index, numTiles);
}

void DecodeKVStream::issueIfLive(ImplicitLocOpBuilder &b, Value index) const {
  if (!marks)
    return issue(b, index);
  emitIf(b, isLive(b, index),
         [&](ImplicitLocOpBuilder &jb) { issue(jb, index); });
}

void DecodeKVStream::emitPrologue(ImplicitLocOpBuilder &b) const {
  IRBuilder ir{b};
  int64_t stages = pipeline.getStages();
  SmallVector<SmallVector<Value>> entries;
  for (int64_t i = 0; i < stages; ++i)
    entries.push_back(loadIds(b, ir.idx(i)));
  for (int64_t i = 0; i < stages; ++i)
    storeIds(b, ir.idx(i), entries[i]);
  for (int64_t i = 0; i < stages; ++i)
    mark(b, ir.idx(i));
  gpu::BarrierOp::create(b);
  for (int64_t i = 0; i < pipeline.tilesAhead(); ++i) {
    issueIfLive(b, ir.idx(i));
    pipeline.commit(b);
  }
}
