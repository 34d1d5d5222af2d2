//===- PrefillMainloop.cpp - The prefill kernel's K/V loop ----------------===//
//
// Step 3 of the tensor-core prefill kernel (PrefillKernel.cpp): per K/V
// tile i, in the K/V stream's S-stage pipeline: wait for K_i, issue
// K_{i+S-1} (with the page entries of tile i + 2S - 2), S = Q K_i^T, mask
// only where a tile crosses the diagonal, the window, the partition's end
// or a custom mask, the online softmax on the fragments; wait for V_i,
// issue V_{i+S-1}, O += P V_i (WarpAttentionTile). Quantized or transposed
// rings are converted into the tiles the mma reads after each wait
// (KVTileStream). On wgmma (PrefillKernelSpec::overlapsProducts) the
// products overlap the softmax: iteration i issues S_i, then
// O += P_{i-1} V_{i-1}, retires S_i, runs the softmax while the values
// accumulate, retires them and rescales O; the last tile's values follow
// the loop.
//
//===----------------------------------------------------------------------===//
#include "PrefillKernelParts.h"

#include "kvir/Codegen/IRBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace kvir;
using namespace kvir::codegen;
using namespace kvir::gpu_lowering;
using namespace kvir::gpu_lowering::prefill;

namespace {

using KeyFn = std::function<Value(ImplicitLocOpBuilder &, Value)>;
using State = WarpAttentionTile::State;

class Mainloop {
public:
  Mainloop(const PrefillKernelSpec &s, const Work &w, const Arguments &a,
           const KVTileStream &stream, const TileSkipping *skipping,
           const WarpAttentionTile &tile, const MainloopInputs &in)
      : s(s), w(w), a(a), stream(stream), skipping(skipping), tile(tile),
        in(in) {}

  State run(ImplicitLocOpBuilder &b, ArrayRef<Value> liveAhead);

private:
  /// The loop of overlappedIteration, then the last tile's values.
  State runOverlapped(ImplicitLocOpBuilder &b, SmallVector<Value> init);
  /// Iteration i: the carried state (and, skipping, whether tiles i ...
  /// i + S - 2 are live) to the values it yields.
  SmallVector<Value> iteration(ImplicitLocOpBuilder &lb, Value i,
                               ValueRange carried);
  /// S = Q K^T of the tile at t0 (K in `kStage`, MLA's kpe in `stage`),
  /// masked, and the online softmax: the new state, flattened, then P.
  SmallVector<Value> scoreTile(ImplicitLocOpBuilder &sb, const State &state,
                               Value t0, Value kStage, Value stage,
                               const KeyFn &keyOf);
  /// scoreTile, or, for a dead tile, the state kept and a P never used.
  std::pair<State, SmallVector<Value>>
  scoreIfLive(ImplicitLocOpBuilder &lb, const State &state, Value live,
              Value t0, Value kStage, Value stage, const KeyFn &keyOf);
  /// `body` where `live` holds (null: always), else `kept`: a mask_mod
  /// tile's values, or the state a dead tile keeps.
  SmallVector<Value>
  ifLive(ImplicitLocOpBuilder &lb, Value live, ArrayRef<Value> kept,
         function_ref<SmallVector<Value>(ImplicitLocOpBuilder &)> body);
  /// O += P V, or, for a dead tile, the state kept.
  SmallVector<Value> accumulateIfLive(ImplicitLocOpBuilder &lb,
                                      const State &stepped, ArrayRef<Value> p,
                                      Value live, Value vStage);
  /// The tile's asynchronous products (the overlapped schedule's).
  const AsyncTileProducts &asyncProducts() const;
  /// P's A fragments per tile: [mTiles][kvTile / K].
  int64_t numPFragments() const;
  /// O + P V of K/V tile `index` (its V stage), issued and committed.
  Value issueValues(ImplicitLocOpBuilder &b, ArrayRef<Value> o,
                    ArrayRef<Value> p, Value index) const;
  /// Iteration i of the overlapped schedule (overlapsProducts): the carried
  /// state and P_{i-1} to the state, rescaled after O += P_{i-1} V_{i-1},
  /// and P_i.
  SmallVector<Value> overlappedIteration(ImplicitLocOpBuilder &lb, Value i,
                                         ValueRange carried);
  /// The tile's keys: its start t0 and `keyOf`, after K_i is ready (and
  /// rotated, RoPE); the K stage to read.
  struct KeyTile {
    Value t0, kStage;
    KeyFn keyOf;
  };
  KeyTile prepareKeys(ImplicitLocOpBuilder &lb, Value i, Value stage);
  /// The logits of the tile at t0 (K in `kStage`, MLA's kpe in `stage`):
  /// S = Q K^T, scaled, modified and masked.
  SmallVector<Value> tileLogits(ImplicitLocOpBuilder &sb, Value t0,
                                Value kStage, Value stage, const KeyFn &keyOf);
  /// A softmax shared by the value slices (in.sharedSoftmax): the scoring
  /// slice publishes the step of the tile at t0, and after the barrier
  /// (the wait for V_i, which then refills tile i - 1's V stage with tile
  /// `ahead`) every warp takes it and accumulates P V from shared memory;
  /// a dead tile keeps the state. Returns the state, flattened.
  SmallVector<Value> sharedSoftmaxStep(ImplicitLocOpBuilder &lb,
                                       const State &state, Value live,
                                       const KeyTile &keys, Value stage,
                                       Value ahead, Value liveAhead);
  /// Logits of raw scores of the tile at t0, masked where needed: the raw
  /// scores themselves where logitScale() fuses the scaling into the
  /// softmax.
  SmallVector<Value> maskedLogits(ImplicitLocOpBuilder &sb,
                                  ArrayRef<Value> scores, Value t0,
                                  const KeyFn &keyOf);
  /// WarpAttentionTile::fusedLogitScale of the kernel's logits, or null.
  Value logitScale(ImplicitLocOpBuilder &b) const {
    bool modified = in.variants && in.variants->emitter.modifiesScores();
    return tile.fusedLogitScale(b, s.smScale, s.softCap, in.kValueScale,
                                modified);
  }
  /// ALiBi and score_mod on each natural-unit logit of the tile at t0 (its
  /// keys by `keyOf`), or null.
  WarpAttentionTile::ElementMod scoreMod(Value t0, const KeyFn &keyOf) const;

  const PrefillKernelSpec &s;
  const Work &w;
  const Arguments &a;
  const KVTileStream &stream;
  const TileSkipping *skipping;
  const WarpAttentionTile &tile;
  const MainloopInputs &in;
};

WarpAttentionTile::ElementMod Mainloop::scoreMod(Value t0,
                                                 const KeyFn &keyOf) const {
  const RowVariants *variants = in.variants;
  if (!variants || !variants->emitter.modifiesScores())
    return nullptr;
  return [this, variants, t0, keyOf](ImplicitLocOpBuilder &eb, Value logit,
                                     int64_t row, int64_t column) {
    IRBuilder k{eb};
    // Keys past the request read the tables at its last key, entries of
    // no key at key 0 (their logits are masked).
    Value e = k.add(tile.getMma().getAccFragment().firstCol(eb), k.idx(column));
    Value key = s.gathers() ? k.maxS(keyOf(eb, e), k.idx(0))
                            : k.minS(k.add(t0, e), k.sub(w.kvLen, k.idx(1)));
    return variants->emitter.modifyScore(
        eb, logit, variants->requests[row], variants->heads[row],
        variants->positions[row], variants->key(eb, row, key));
  };
}

SmallVector<Value> Mainloop::maskedLogits(ImplicitLocOpBuilder &sb,
                                          ArrayRef<Value> scores, Value t0,
                                          const KeyFn &keyOf) {
  SmallVector<Value> logits =
      logitScale(sb) ? SmallVector<Value>(scores)
                     : tile.logits(sb, scores, s.smScale, s.softCap,
                                   in.kValueScale, scoreMod(t0, keyOf));
  auto masked = scf::IfOp::create(
      sb, needsMask(sb, s, w, t0),
      [&](OpBuilder &mb, Location ml) {
        ImplicitLocOpBuilder ib(ml, mb);
        scf::YieldOp::create(ib, emitMask(ib, s, w, a, tile, logits,
                                          in.rowPositions, in.maskOffset, t0,
                                          in.variants, keyOf));
      },
      [&](OpBuilder &mb, Location ml) {
        scf::YieldOp::create(mb, ml, logits);
      });
  return SmallVector<Value>(masked.getResults());
}

SmallVector<Value> Mainloop::tileLogits(ImplicitLocOpBuilder &sb, Value t0,
                                        Value kStage, Value stage,
                                        const KeyFn &keyOf) {
  SmallVector<Value> scores =
      tile.scores(sb, in.qFrags, in.qTile, stream.kTiles(), kStage);
  if (s.isMla())
    scores =
        tile.scores(sb, {}, *in.qPeTile, *stream.kpeTiles(), stage, scores);
  return maskedLogits(sb, scores, t0, keyOf);
}

SmallVector<Value> Mainloop::sharedSoftmaxStep(ImplicitLocOpBuilder &lb,
                                               const State &state, Value live,
                                               const KeyTile &keys, Value stage,
                                               Value ahead, Value liveAhead) {
  const SharedSoftmax &shared = *in.sharedSoftmax;
  // The scoring slice's warpgroups (whole ones: wgmma is collective).
  Value scores =
      live ? arith::AndIOp::create(lb, live, in.scoresTiles) : in.scoresTiles;
  emitIf(lb, scores, [&](ImplicitLocOpBuilder &sb) {
    SmallVector<Value> logits =
        tileLogits(sb, keys.t0, keys.kStage, stage, keys.keyOf);
    shared.publish(sb, tile,
                   tile.softmaxStep(sb, state, logits, logitScale(sb)));
  });
  // (MLA: the K/V tile holds the values.)
  if (s.isMla()) {
    gpu::BarrierOp::create(lb);
  } else {
    stream.getPipeline().wait(lb);
    stream.afterVWait(lb, ahead, liveAhead);
  }
  Value vStage = stream.prepareV(lb, stage);
  return ifLive(lb, live, state.flatten(), [&](ImplicitLocOpBuilder &ab) {
    State next = shared.receive(ab, tile, state);
    next.o = shared.accumulate(ab, tile, next.o, stream.vTiles(), vStage);
    return next.flatten();
  });
}

SmallVector<Value> Mainloop::ifLive(
    ImplicitLocOpBuilder &lb, Value live, ArrayRef<Value> kept,
    function_ref<SmallVector<Value>(ImplicitLocOpBuilder &)> body) {
  if (!live)
    return body(lb);
  auto ifOp = scf::IfOp::create(lb, ValueRange(kept).getTypes(), live,
                                /*withElseRegion=*/true);
  auto thenB = ImplicitLocOpBuilder::atBlockEnd(lb.getLoc(), ifOp.thenBlock());
  scf::YieldOp::create(thenB, body(thenB));
  auto elseB = ImplicitLocOpBuilder::atBlockEnd(lb.getLoc(), ifOp.elseBlock());
  scf::YieldOp::create(elseB, kept);
  return SmallVector<Value>(ifOp.getResults());
}

SmallVector<Value> Mainloop::scoreTile(ImplicitLocOpBuilder &sb,
                                       const State &state, Value t0,
                                       Value kStage, Value stage,
                                       const KeyFn &keyOf) {
  auto [stepped, p] = tile.softmax(
      sb, state, tileLogits(sb, t0, kStage, stage, keyOf), logitScale(sb));
  SmallVector<Value> values = stepped.flatten();
  llvm::append_range(values, p);
  return values;
}

std::pair<State, SmallVector<Value>>
Mainloop::scoreIfLive(ImplicitLocOpBuilder &lb, const State &state, Value live,
                      Value t0, Value kStage, Value stage, const KeyFn &keyOf) {
  SmallVector<Value> stateValues = state.flatten();
  int64_t numStateValues = stateValues.size();
  auto split = [&](ValueRange values) {
    return std::make_pair(tile.unflatten(values.take_front(numStateValues)),
                          SmallVector<Value>(values.drop_front(numStateValues)));
  };
  if (!skipping) {
    SmallVector<Value> values = scoreTile(lb, state, t0, kStage, stage, keyOf);
    return split(values);
  }
  // A dead tile keeps the state; its P is never used.
  const MmaAtom &mma = tile.getMma();
  SmallVector<Type> types(ValueRange(stateValues).getTypes());
  int64_t numP = numPFragments();
  types.append(numP, mma.getAType());
  auto scored = scf::IfOp::create(lb, types, live, /*withElseRegion=*/true);
  auto thenB =
      ImplicitLocOpBuilder::atBlockEnd(lb.getLoc(), scored.thenBlock());
  scf::YieldOp::create(thenB,
                       scoreTile(thenB, state, t0, kStage, stage, keyOf));
  auto elseB =
      ImplicitLocOpBuilder::atBlockEnd(lb.getLoc(), scored.elseBlock());
  SmallVector<Value> values(stateValues);
  Value zero = arith::ConstantOp::create(elseB, mma.getAType(),
                                         elseB.getZeroAttr(mma.getAType()));
  values.append(numP, zero);
  scf::YieldOp::create(elseB, values);
  return split(scored.getResults());
}

SmallVector<Value> Mainloop::accumulateIfLive(ImplicitLocOpBuilder &lb,
                                              const State &stepped,
                                              ArrayRef<Value> p, Value live,
                                              Value vStage) {
  return ifLive(lb, live, stepped.flatten(), [&](ImplicitLocOpBuilder &ab) {
    return tile.accumulate(ab, stepped, p, stream.vTiles(), vStage).flatten();
  });
}

Mainloop::KeyTile Mainloop::prepareKeys(ImplicitLocOpBuilder &lb, Value i,
                                        Value stage) {
  // Quantized: everyone is done with the value tiles of tile i - 1 (the
  // barrier before): this tile's K codes become them.
  KeyTile keys;
  keys.kStage = stream.prepareK(lb, stage);
  keys.t0 = stream.range(lb, i).first;
  Value idSlot = stream.idSlot(lb, i);
  keys.keyOf = [this, idSlot, t0 = keys.t0](ImplicitLocOpBuilder &kb, Value e) {
    return stream.keyOf(kb, idSlot, t0, e);
  };
  // RoPE: the tile's keys turn to their positions, in place (the barrier
  // before: everyone is done with tile i - 1's scores).
  if (in.rotation) {
    stream.rotateKeys(lb, *in.rotation, i, keys.kStage);
    stream.getPipeline().publish(lb);
    gpu::BarrierOp::create(lb);
  }
  return keys;
}

const AsyncTileProducts &Mainloop::asyncProducts() const {
  const TileProducts *products = tile.getProducts();
  assert(products && products->async() &&
         "schedule = overlap runs on asynchronous products (wgmma)");
  return *products->async();
}

int64_t Mainloop::numPFragments() const {
  return tile.getShape().mTiles *
         (tile.getShape().kvTile / tile.getMma().getK());
}

Value Mainloop::issueValues(ImplicitLocOpBuilder &b, ArrayRef<Value> o,
                            ArrayRef<Value> p, Value index) const {
  return asyncProducts().issueAccumulate(
      b, tile, o, p, stream.vTiles(), stream.getPipeline().stageOf(b, index));
}

SmallVector<Value> Mainloop::overlappedIteration(ImplicitLocOpBuilder &lb,
                                                 Value i, ValueRange carried) {
  IRBuilder ir{lb};
  const CpAsyncPipeline &pipeline = stream.getPipeline();
  const AsyncTileProducts &products = asyncProducts();
  // The state, then P of the tile before.
  ValueRange stateValues = carried.drop_back(numPFragments());
  State state = tile.unflatten(stateValues);
  SmallVector<Value> pPrev(carried.drop_front(stateValues.size()));
  const StageHandoff *handoff = in.handoff;
  Value stage = pipeline.stageOf(lb, i);
  Value ahead = handoff ? Value() : stream.aheadOf(lb, i);
  if (handoff) {
    handoff->waitFull(lb, i);
  } else {
    pipeline.wait(lb);
    // Everyone is done with tile i - 1's K (its scores retired in
    // iteration i - 1): its K stage takes tile i + S - 1.
    stream.afterKWait(lb, i, ahead, Value());
  }
  KeyTile keys = prepareKeys(lb, i, stage);

  // Two groups: S_i, then O + P_{i-1} V_{i-1} (none before the first tile),
  // in the warpgroup's turn.
  if (handoff)
    handoff->awaitTurn(lb, in.consumerGroup);
  Value scoreAcc =
      products.issueScores(lb, in.qTile, stream.kTiles(), keys.kStage);
  auto accumulated =
      scf::IfOp::create(lb, products.valueAccumulatorType(),
                        ir.lt(ir.idx(0), i), /*withElseRegion=*/true);
  {
    auto thenB =
        ImplicitLocOpBuilder::atBlockEnd(lb.getLoc(), accumulated.thenBlock());
    scf::YieldOp::create(
        thenB, issueValues(thenB, state.o, pPrev,
                           IRBuilder{thenB}.sub(i, IRBuilder{thenB}.idx(1))));
    auto elseB =
        ImplicitLocOpBuilder::atBlockEnd(lb.getLoc(), accumulated.elseBlock());
    products.issueNothing(elseB);
    scf::YieldOp::create(elseB, products.valueAccumulator(elseB, state.o));
  }
  if (handoff)
    handoff->passTurn(lb, in.consumerGroup);
  // S_i retired (P_{i-1} V_{i-1} may still run): the softmax, O untouched.
  products.retire(lb, 1);
  SmallVector<Value> logits = maskedLogits(
      lb, products.scoreFragments(lb, scoreAcc), keys.t0, keys.keyOf);
  WarpAttentionTile::SoftmaxStep step =
      tile.softmaxStep(lb, state, logits, logitScale(lb));
  products.retire(lb, 0);
  step.state.o = tile.rescale(
      lb, products.valueFragments(lb, accumulated.getResult(0)), step.alpha);

  if (handoff) {
    // The warp's products of tile i - 1 retired: its stage may be refilled
    // once every consumer thread says so.
    emitIf(lb, ir.lt(ir.idx(0), i), [&](ImplicitLocOpBuilder &rb) {
      handoff->release(rb, IRBuilder{rb}.sub(i, IRBuilder{rb}.idx(1)));
    });
  } else {
    // V_i is ready; everyone's P_{i-1} V_{i-1} retired (the barrier): tile
    // i - 1's V stage takes tile i + S - 1.
    pipeline.wait(lb);
    stream.afterVWait(lb, ahead, Value());
  }
  SmallVector<Value> results = step.state.flatten();
  llvm::append_range(results, step.p);
  return results;
}

SmallVector<Value> Mainloop::iteration(ImplicitLocOpBuilder &lb, Value i,
                                       ValueRange carried) {
  const CpAsyncPipeline &pipeline = stream.getPipeline();
  // Skipping, the loop carries whether tiles i ... i + S - 2 are live.
  int64_t numLive = skipping ? pipeline.tilesAhead() : 0;
  State state = tile.unflatten(carried.drop_back(numLive));
  ValueRange liveAhead = carried.take_back(numLive);
  Value live = skipping ? liveAhead.front() : Value();
  Value stage = pipeline.stageOf(lb, i);
  Value ahead = stream.aheadOf(lb, i);
  if (skipping)
    skipping->mark(lb, ahead);
  pipeline.wait(lb);
  Value liveNew = skipping ? skipping->isLive(lb, ahead) : Value();
  // Everyone is done with tile i - 1: its K/V stage and page-entry slot
  // take tile i + S - 1 and the entries of tile i + 2S - 2.
  stream.afterKWait(lb, i, ahead, liveNew);

  KeyTile keys = prepareKeys(lb, i, stage);
  SmallVector<Value> results;
  if (in.sharedSoftmax) {
    results = sharedSoftmaxStep(lb, state, live, keys, stage, ahead, liveNew);
  } else {
    auto [stepped, p] =
        scoreIfLive(lb, state, live, keys.t0, keys.kStage, stage, keys.keyOf);
    if (!s.isMla()) {
      pipeline.wait(lb);
      stream.afterVWait(lb, ahead, liveNew);
    }
    Value vStage = stream.prepareV(lb, stage);
    results = accumulateIfLive(lb, stepped, p, live, vStage);
  }
  if (skipping) {
    llvm::append_range(results, liveAhead.drop_front());
    results.push_back(liveNew);
  }
  return results;
}

State Mainloop::run(ImplicitLocOpBuilder &b, ArrayRef<Value> liveAhead) {
  IRBuilder ir{b};
  // Groups in flight at the top of iteration i: K and V of tiles i ...
  // i + S - 2 (MLA: K/V tiles, whose ckv part is V). The loop carries the
  // rows' state and (mask_mod) whether tiles i ... i + S - 2 are live; a
  // dead tile is neither loaded nor multiplied, the pipeline's commit
  // groups and barriers stay the same.
  SmallVector<Value> init = tile.initialState(b).flatten();
  if (s.overlapsProducts())
    return runOverlapped(b, init);
  llvm::append_range(init, liveAhead);
  auto loop = scf::ForOp::create(
      b, ir.idx(0), stream.getNumTiles(), ir.idx(1), init,
      [&](OpBuilder &nb, Location l, Value i, ValueRange carried) {
        ImplicitLocOpBuilder lb(l, nb);
        scf::YieldOp::create(lb, iteration(lb, i, carried));
      });
  stream.getPipeline().drain(b);
  return tile.unflatten(loop.getResults().drop_back(liveAhead.size()));
}

State Mainloop::runOverlapped(ImplicitLocOpBuilder &b,
                              SmallVector<Value> init) {
  IRBuilder ir{b};
  // The loop carries the state and P of the tile before (zeros before the
  // first; its product is not issued).
  const MmaAtom &mma = tile.getMma();
  int64_t numState = init.size();
  init.append(numPFragments(),
              arith::ConstantOp::create(b, mma.getAType(),
                                        b.getZeroAttr(mma.getAType())));
  Value numTiles = stream.getNumTiles();
  if (in.handoff)
    in.handoff->beginTurns(b, in.consumerGroup);
  auto loop = scf::ForOp::create(
      b, ir.idx(0), numTiles, ir.idx(1), init,
      [&](OpBuilder &nb, Location l, Value i, ValueRange carried) {
        ImplicitLocOpBuilder lb(l, nb);
        scf::YieldOp::create(lb, overlappedIteration(lb, i, carried));
      });
  // (The producer's copies are its own.)
  if (!in.handoff)
    stream.getPipeline().drain(b);
  // The last tile's values.
  State state = tile.unflatten(loop.getResults().take_front(numState));
  SmallVector<Value> pLast(loop.getResults().drop_front(numState));
  const AsyncTileProducts &products = asyncProducts();
  auto last = scf::IfOp::create(b, ValueRange(state.o).getTypes(),
                                ir.lt(ir.idx(0), numTiles),
                                /*withElseRegion=*/true);
  auto thenB = ImplicitLocOpBuilder::atBlockEnd(b.getLoc(), last.thenBlock());
  Value acc =
      issueValues(thenB, state.o, pLast,
                  IRBuilder{thenB}.sub(numTiles, IRBuilder{thenB}.idx(1)));
  products.retire(thenB, 0);
  scf::YieldOp::create(thenB, products.valueFragments(thenB, acc));
  auto elseB = ImplicitLocOpBuilder::atBlockEnd(b.getLoc(), last.elseBlock());
  scf::YieldOp::create(elseB, state.o);
  state.o.assign(last.getResults().begin(), last.getResults().end());
  return state;
}

} // namespace

WarpAttentionTile::State
prefill::emitMainloop(ImplicitLocOpBuilder &b, const PrefillKernelSpec &s,
                      const Work &w, const Arguments &a,
                      const KVTileStream &stream, const TileSkipping *skipping,
                      const WarpAttentionTile &tile, const MainloopInputs &in,
                      ArrayRef<Value> liveAhead) {
  return Mainloop(s, w, a, stream, skipping, tile, in).run(b, liveAhead);
}
