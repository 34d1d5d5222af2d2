//===- DecodeMainloop.cpp - The decode kernel's K/V loop ------------------===//
//
// Per K/V tile (DecodeKernelParts.h): wait for the tile, refill the ring,
// load the page entries of the tile `stages` ahead and mark it; then each
// z-lane scores tokens z, z + tz, ... of the tile (a fixed count, so that
// every lane of a warp takes part in the shuffles): a vector dot product
// reduced across x (WarpOps), the variants, the soft cap, the mask; all of
// them before one online update (one rescale per tile). A dead tile
// (mask_mod) skips the scoring whole, barriers included (block-uniform).
//
//===----------------------------------------------------------------------===//
#include "DecodeKernelParts.h"

#include "kvir/Codegen/IRBuilder.h"
#include "kvir/Codegen/WarpOps.h"
#include "kvir/Dialect/KV/Utils/Quantization.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace kvir;
using namespace kvir::codegen;
using namespace kvir::gpu_lowering;
using namespace kvir::gpu_lowering::decode;

namespace {

class Mainloop {
public:
  Mainloop(const DecodeBlock &blk, const DecodeKVStream &stream,
           const DecodeKeyRows &rows, Value qVec, Value negInf)
      : blk(blk), stream(stream), rows(rows), qVec(qVec), negInf(negInf) {}

  PartialState run(ImplicitLocOpBuilder &b, Value zeroVec);

private:
  /// Iteration i, from the carried state to the one it yields.
  PartialState iteration(ImplicitLocOpBuilder &ib, Value i,
                         const PartialState &kept);
  /// Scores tile i's tokens and updates the state.
  PartialState scoreTile(ImplicitLocOpBuilder &ib, Value i,
                         const PartialState &kept);
  /// The raw score <q, k> of token `t` (key `key`) of the tile in `stage`,
  /// reduced over the x lanes.
  Value score(ImplicitLocOpBuilder &ib, Value stage, Value key, Value t);
  /// Whether token `t` (key `key`, the variants' `keyPosition`) of the tile
  /// at t0 with `count` tokens is visible.
  Value visible(ImplicitLocOpBuilder &ib, Value t0, Value count, Value t,
                Value key, Value keyPosition);

  const DecodeBlock &blk;
  const DecodeKVStream &stream;
  const DecodeKeyRows &rows;
  Value qVec, negInf;
};

Value Mainloop::score(ImplicitLocOpBuilder &ib, Value stage, Value key,
                      Value t) {
  IRBuilder k{ib};
  int64_t quantGroup = blk.quantGroup;
  if (!(blk.int8 && blk.vec % quantGroup == 0 && !blk.spec.rope))
    return warpReduce(ib, k.dot(qVec, rows.keyRow(ib, stage, key, t)), blk.tx,
                      WarpReduction::sum);
  // int8 groups: a dot product per group of the codes, times its scale:
  // one multiply per group instead of one per dim.
  auto [codes, scales] = rows.keyCodes(ib, stage, t);
  Value score;
  for (int64_t g = 0; g < blk.vec / quantGroup; ++g) {
    auto slice = [&](Value v) {
      return vector::ExtractStridedSliceOp::create(
                 ib, v, ArrayRef<int64_t>{g * quantGroup},
                 ArrayRef<int64_t>{quantGroup}, ArrayRef<int64_t>{1})
          .getResult();
    };
    Value scale =
        kv::toF32(ib, vector::ExtractOp::create(ib, scales, g).getResult());
    // Lanes past the head dim read scales nobody wrote.
    if (blk.padded != blk.headDim)
      scale = k.select(blk.activeX, scale, k.f32(0.0));
    Value part = k.dot(slice(qVec), slice(codes));
    score = score ? k.fma(scale, part, score) : k.mul(scale, part);
  }
  return warpReduce(ib, score, blk.tx, WarpReduction::sum);
}

Value Mainloop::visible(ImplicitLocOpBuilder &ib, Value t0, Value count,
                        Value t, Value key, Value keyPosition) {
  IRBuilder k{ib};
  Value visible = k.lt(t, count);
  if (blk.args.topk) {
    // The entry's key exists; the window applies key by key.
    visible = arith::AndIOp::create(
        ib, visible, k.cmp(arith::CmpIPredicate::sge, key, k.idx(0)));
    if (blk.spec.windowLeft)
      visible = arith::AndIOp::create(
          ib, visible,
          k.cmp(arith::CmpIPredicate::sge, key,
                k.sub(blk.queryPosition, k.idx(*blk.spec.windowLeft))));
  }
  if (blk.variants)
    if (Value kept = blk.variants->visible(ib, blk.variantRequest, blk.head,
                                           blk.variantPosition, keyPosition))
      visible = arith::AndIOp::create(ib, visible, kept);
  // Transposed V: the range starts up to a chunk early.
  if (blk.spec.transposedVChunk())
    visible = arith::AndIOp::create(
        ib, visible,
        k.cmp(arith::CmpIPredicate::sge, k.add(t0, t), blk.visibleStart));
  return visible;
}

PartialState Mainloop::scoreTile(ImplicitLocOpBuilder &ib, Value i,
                                 const PartialState &kept) {
  IRBuilder k{ib};
  AttentionState tileState(ib, AttentionState::Flavor::ptxBase2);
  Value stage = stream.getPipeline().stageOf(ib, i);
  // Everyone is done with the previous tile's V rows and decoded tiles
  // (the barrier at the top): transpose and decode this one for all.
  rows.prepare(ib, stage);
  auto [t0, count] = stream.range(ib, i);
  Value idSlot = stream.idSlot(ib, i), tileStart = t0;
  auto keyOf = [&](ImplicitLocOpBuilder &jb, Value t) {
    return stream.keyOf(jb, idSlot, tileStart, t);
  };
  // Everyone is done with the previous tile's rotated rows.
  rows.rotate(ib, stage, keyOf);
  SmallVector<Value> tokens, logits;
  for (int64_t j = 0; j < blk.tile / blk.tz; ++j) {
    Value t = k.add(k.idx(j * blk.tz), blk.z);
    // Gathering: -1 for an entry of no key.
    Value key = keyOf(ib, t);
    Value score = this->score(ib, stage, key, t);
    // The regions read the key's position: past the tile's end they see
    // its last key instead, for no key key 0 (their logits are masked
    // below).
    Value keyPosition;
    if (blk.variants) {
      keyPosition = blk.args.topk
                        ? k.maxS(key, k.idx(0))
                        : k.minS(key, k.sub(k.add(t0, count), k.idx(1)));
      if (blk.keyShift)
        keyPosition = k.add(keyPosition, blk.keyShift);
    }
    if (blk.natural)
      score = blk.variants->modifyScore(ib, score, blk.variantRequest, blk.head,
                                        blk.variantPosition, keyPosition);
    score = tileState.finishLogit(score, blk.spec.softCap, blk.natural);
    tokens.push_back(t);
    logits.push_back(
        k.select(visible(ib, t0, count, t, key, keyPosition), score, negInf));
  }
  return tileState.updateTile(kept, logits, [&](int64_t j) {
    return rows.valueRow(ib, stage, tokens[j]);
  });
}

PartialState Mainloop::iteration(ImplicitLocOpBuilder &ib, Value i,
                                 const PartialState &kept) {
  IRBuilder k{ib};
  const CpAsyncPipeline &pipeline = stream.getPipeline();
  pipeline.wait(ib);
  stream.issueIfLive(ib, k.add(i, k.idx(pipeline.tilesAhead())));
  pipeline.commit(ib);
  Value ahead = k.add(i, k.idx(pipeline.getStages()));
  SmallVector<Value> entries = stream.loadIds(ib, ahead);
  // (Tile i - 1's slot: everyone read its mark before the barrier.)
  stream.mark(ib, ahead);
  PartialState updated = kept;
  if (!stream.skipsTiles()) {
    updated = scoreTile(ib, i, kept);
  } else {
    auto scored = scf::IfOp::create(
        ib, stream.isLive(ib, i),
        [&](OpBuilder &nb2, Location l2) {
          ImplicitLocOpBuilder jb(l2, nb2);
          PartialState s = scoreTile(jb, i, kept);
          scf::YieldOp::create(jb, ValueRange{s.m, s.l, s.acc});
        },
        [&](OpBuilder &nb2, Location l2) {
          scf::YieldOp::create(nb2, l2, ValueRange{kept.m, kept.l, kept.acc});
        });
    updated = {scored.getResult(0), scored.getResult(1), scored.getResult(2)};
  }
  stream.storeIds(ib, ahead, entries);
  return updated;
}

PartialState Mainloop::run(ImplicitLocOpBuilder &b, Value zeroVec) {
  IRBuilder ir{b};
  auto tileLoop = scf::ForOp::create(
      b, ir.idx(0), stream.getNumTiles(), ir.idx(1),
      ValueRange{negInf, ir.f32(0.0), zeroVec},
      [&](OpBuilder &nb, Location l, Value i, ValueRange carried) {
        ImplicitLocOpBuilder ib(l, nb);
        PartialState updated =
            iteration(ib, i, {carried[0], carried[1], carried[2]});
        scf::YieldOp::create(ib, ValueRange{updated.m, updated.l, updated.acc});
      });
  stream.getPipeline().drain(b);
  return {tileLoop.getResult(0), tileLoop.getResult(1), tileLoop.getResult(2)};
}

} // namespace

PartialState decode::emitDecodeMainloop(ImplicitLocOpBuilder &b,
                                        const DecodeBlock &blk,
                                        const DecodeKVStream &stream,
                                        const DecodeKeyRows &rows, Value qVec,
                                        Value zeroVec, Value negInf) {
  return Mainloop(blk, stream, rows, qVec, negInf).run(b, zeroVec);
}
