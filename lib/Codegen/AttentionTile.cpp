//===- AttentionTile.cpp - A warp's rows of FlashAttention-2 --------------===//
#include "kvir/Codegen/AttentionTile.h"
#include "kvir/Codegen/IRBuilder.h"
#include "kvir/Codegen/WarpOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cmath>

using namespace mlir;
using namespace kvir;
using namespace kvir::codegen;

SmallVector<Value> WarpAttentionTile::State::flatten() const {
  SmallVector<Value> values(m);
  llvm::append_range(values, l);
  llvm::append_range(values, o);
  return values;
}

WarpAttentionTile::State
WarpAttentionTile::unflatten(ValueRange values) const {
  int64_t rows = mma.accLayout().rowSlots(shape.mTiles);
  State s;
  s.m.assign(values.begin(), values.begin() + rows);
  s.l.assign(values.begin() + rows, values.begin() + 2 * rows);
  s.o.assign(values.begin() + 2 * rows, values.end());
  return s;
}

WarpAttentionTile::WarpAttentionTile(const MmaAtom &mma, Shape shape,
                                     Value rowOffset, Value valueOffset,
                                     const TileProducts *products)
    : mma(mma), shape(shape), rowOffset(rowOffset), valueOffset(valueOffset),
      products(products) {}

WarpAttentionTile::State
WarpAttentionTile::initialState(ImplicitLocOpBuilder &b) const {
  IRBuilder ir{b};
  const FragmentLayout &fragment = mma.accLayout();
  State s;
  for (int64_t r = 0; r < fragment.rowSlots(shape.mTiles); ++r) {
    s.m.push_back(ir.f32(-INFINITY));
    s.l.push_back(ir.f32(0.0));
  }
  for (int64_t i = 0; i < shape.mTiles * shape.headDimV / fragment.atomCols; ++i)
    s.o.push_back(mma.zeroAcc(b));
  return s;
}

SmallVector<Value> WarpAttentionTile::loadQuery(ImplicitLocOpBuilder &b,
                                                const SharedTile &q) const {
  assert(!products && "the tile's products read Q themselves");
  IRBuilder ir{b};
  const FragmentLayout &fragment = mma.accLayout();
  int64_t kStep = mma.getK();
  SmallVector<Value> frags;
  for (int64_t t = 0; t < shape.mTiles; ++t)
    for (int64_t k = 0; k < shape.headDim / kStep; ++k)
      frags.push_back(mma.loadA(b, q, Value(),
                                ir.add(rowOffset, ir.idx(fragment.atomRows * t)),
                                kStep * k));
  return frags;
}

SmallVector<Value> WarpAttentionTile::scores(ImplicitLocOpBuilder &b,
                                             ArrayRef<Value> queryFragments,
                                             const SharedTile &q,
                                             const SharedTile &k, Value stage,
                                             ArrayRef<Value> partial) const {
  if (products) {
    assert(queryFragments.empty() && "the tile's products read Q themselves");
    return products->scores(b, *this, q, k, stage, partial);
  }
  IRBuilder ir{b};
  const FragmentLayout &fragment = mma.accLayout();
  int64_t kStep = mma.getK();
  int64_t kSteps = q.cols / kStep, n8 = shape.kvTile / fragment.atomCols;
  SmallVector<Value> s = partial.empty()
                             ? SmallVector<Value>(shape.mTiles * n8,
                                                  mma.zeroAcc(b))
                             : SmallVector<Value>(partial);
  for (int64_t ks = 0; ks < kSteps; ++ks) {
    // The A fragments of this k step, shared by every key pair below.
    SmallVector<Value> a;
    for (int64_t t = 0; t < shape.mTiles; ++t)
      a.push_back(queryFragments.empty()
                      ? mma.loadA(b, q, Value(),
                                  ir.add(rowOffset, ir.idx(fragment.atomRows * t)),
                                  kStep * ks)
                      : queryFragments[t * kSteps + ks]);
    for (int64_t n = 0; n < n8; n += 2) {
      auto [b0, b1] =
          mma.loadBRows(b, k, stage, ir.idx(fragment.atomCols * n), kStep * ks);
      for (int64_t t = 0; t < shape.mTiles; ++t) {
        Value &s0 = s[t * n8 + n], &s1 = s[t * n8 + n + 1];
        s0 = mma.mma(b, a[t], b0, s0);
        s1 = mma.mma(b, a[t], b1, s1);
      }
    }
  }
  return s;
}

std::pair<Value, Value>
WarpAttentionTile::elementCoords(ImplicitLocOpBuilder &b, int64_t t, int64_t h,
                                 int64_t n, int64_t j) const {
  IRBuilder ir{b};
  const LaneFragment &fragment = mma.getAccFragment();
  const FragmentLayout &layout = fragment.getLayout();
  Value row = fragment.atomRow(b, h), col = fragment.atomCol(b, j);
  return {ir.add(rowOffset, ir.add(row, ir.idx(layout.atomRows * t))),
          ir.add(col, ir.idx(layout.atomCols * n))};
}

SmallVector<Value> WarpAttentionTile::mask(ImplicitLocOpBuilder &b,
                                           ArrayRef<Value> logits,
                                           ArrayRef<RowKeys> rows,
                                           const CustomVisibility &custom) const {
  IRBuilder ir{b};
  const FragmentLayout &fragment = mma.accLayout();
  int64_t n8 = shape.kvTile / fragment.atomCols;
  Value negInf = ir.f32(-INFINITY);
  SmallVector<Value> masked;
  for (int64_t t = 0; t < shape.mTiles; ++t)
    for (int64_t n = 0; n < n8; ++n) {
      Value acc = logits[t * n8 + n];
      for (int64_t h = 0; h < fragment.rowsPerLane; ++h)
        for (int64_t j = 0; j < fragment.colsPerLane; ++j) {
          const RowKeys &row = rows[fragment.rowSlot(t, h)];
          int64_t column = fragment.atomCols * n + j;
          Value c = ir.i32(column);
          Value visible = arith::AndIOp::create(
              b, ir.cmp(arith::CmpIPredicate::sle, row.lo, c),
              ir.lt(c, row.hi));
          if (custom)
            visible = arith::AndIOp::create(b, visible,
                                            custom(b, fragment.rowSlot(t, h),
                                                   column));
          Value v = vector::ExtractOp::create(b, acc, ArrayRef<int64_t>{h, j});
          v = ir.select(visible, v, negInf);
          acc = vector::InsertOp::create(b, v, acc, ArrayRef<int64_t>{h, j});
        }
      masked.push_back(acc);
    }
  return masked;
}

Value WarpAttentionTile::fusedLogitScale(ImplicitLocOpBuilder &b,
                                         double smScale,
                                         std::optional<double> softCap,
                                         Value scoreScale,
                                         bool modified) const {
  if (softCap || scoreScale || modified)
    return Value();
  AttentionState math(b, AttentionState::Flavor::ptxBase2);
  return IRBuilder{b}.f32(smScale * math.logitPrescale(/*softCap=*/false));
}

SmallVector<Value> WarpAttentionTile::logits(ImplicitLocOpBuilder &b,
                                             ArrayRef<Value> scores,
                                             double smScale,
                                             std::optional<double> softCap,
                                             Value scoreScale,
                                             const ElementMod &mod) const {
  IRBuilder ir{b};
  const FragmentLayout &fragment = mma.accLayout();
  AttentionState math(b, AttentionState::Flavor::ptxBase2);
  bool natural = bool(mod);
  Value scale =
      ir.f32(smScale * math.logitPrescale(softCap.has_value(), natural));
  if (scoreScale)
    scale = ir.mul(scale, scoreScale);
  int64_t n8 = shape.kvTile / fragment.atomCols;
  SmallVector<Value> out;
  for (auto [i, s] : llvm::enumerate(scores)) {
    Value x = ir.mul(s, ir.splatLike(scale, s));
    if (mod) {
      int64_t t = int64_t(i) / n8, n = int64_t(i) % n8;
      for (int64_t h = 0; h < fragment.rowsPerLane; ++h)
        for (int64_t j = 0; j < fragment.colsPerLane; ++j) {
          Value v = vector::ExtractOp::create(b, x, ArrayRef<int64_t>{h, j});
          v = mod(b, v, fragment.rowSlot(t, h), fragment.atomCols * n + j);
          x = vector::InsertOp::create(b, v, x, ArrayRef<int64_t>{h, j});
        }
    }
    out.push_back(math.finishLogit(x, softCap, natural));
  }
  return out;
}

Value WarpAttentionTile::rowPair(ImplicitLocOpBuilder &b, Value x0,
                                 Value x1) const {
  return vector::FromElementsOp::create(b, mma.getAccType(),
                                        ValueRange{x0, x0, x1, x1});
}

std::pair<WarpAttentionTile::State, SmallVector<Value>>
WarpAttentionTile::softmax(ImplicitLocOpBuilder &b, const State &state,
                           ArrayRef<Value> logits, Value logitScale) const {
  SoftmaxStep step =
      onlineSoftmax(b, state, logits, logitScale, /*rescaleO=*/true);
  return {step.state, step.p};
}

WarpAttentionTile::SoftmaxStep
WarpAttentionTile::softmaxStep(ImplicitLocOpBuilder &b, const State &state,
                               ArrayRef<Value> logits, Value logitScale) const {
  return onlineSoftmax(b, state, logits, logitScale, /*rescaleO=*/false);
}

WarpAttentionTile::SoftmaxStep
WarpAttentionTile::onlineSoftmax(ImplicitLocOpBuilder &b, const State &state,
                                 ArrayRef<Value> logits, Value logitScale,
                                 bool rescaleO) const {
  IRBuilder ir{b};
  const FragmentLayout &fragment = mma.accLayout();
  AttentionState math(b, AttentionState::Flavor::ptxBase2);
  int64_t n8 = shape.kvTile / fragment.atomCols;
  SoftmaxStep step{state, {}, SmallVector<Value>(state.m.size())};
  State &next = step.state;
  for (int64_t t = 0; t < shape.mTiles; ++t) {
    ArrayRef<Value> s = logits.slice(t * n8, n8);
    Value ref[2];
    for (int64_t h = 0; h < fragment.rowsPerLane; ++h) {
      // The row's max over this lane's columns, then over its quad.
      Value rowMax;
      for (Value acc : s) {
        Value pair = vector::ExtractOp::create(b, acc, ArrayRef<int64_t>{h});
        Value m = vector::ReductionOp::create(b, vector::CombiningKind::MAXIMUMF,
                                              pair);
        rowMax = rowMax ? arith::MaximumFOp::create(b, rowMax, m).getResult() : m;
      }
      rowMax = warpReduce(b, rowMax, fragment.lanesPerRow, WarpReduction::max);
      // The max of the raw scores, scaled (c > 0 keeps the order).
      if (logitScale)
        rowMax = ir.mul(rowMax, logitScale);
      AttentionState::Rescale r =
          math.rescale(state.m[fragment.rowSlot(t, h)], rowMax);
      next.m[fragment.rowSlot(t, h)] = r.m;
      step.alpha[fragment.rowSlot(t, h)] = r.alpha;
      ref[h] = r.ref;
    }
    Value refs = rowPair(b, ref[0], ref[1]);
    SmallVector<Value> weights;
    Value sum[2];
    for (Value acc : s) {
      Value w = logitScale ? math.weightOfScaled(acc, logitScale, refs)
                           : math.weightAt(acc, refs);
      weights.push_back(w);
      for (int64_t h = 0; h < fragment.rowsPerLane; ++h) {
        Value pair = vector::ExtractOp::create(b, w, ArrayRef<int64_t>{h});
        Value part = vector::ReductionOp::create(b, vector::CombiningKind::ADD,
                                                 pair);
        sum[h] = sum[h] ? ir.add(sum[h], part) : part;
      }
    }
    // Row sums stay per lane (the quad reduces them once, at the end).
    for (int64_t h = 0; h < fragment.rowsPerLane; ++h) {
      int64_t slot = fragment.rowSlot(t, h);
      next.l[slot] = ir.add(ir.mul(state.l[slot], step.alpha[slot]), sum[h]);
    }
    if (rescaleO && !shape.skipUnchangedRescale)
      rescaleMTile(b, state.o, step.alpha, t, next.o);
    for (int64_t j = 0; j < n8; j += 2)
      step.p.push_back(mma.accumulatorsToA(b, weights[j], weights[j + 1]));
  }
  if (rescaleO && shape.skipUnchangedRescale)
    next.o = rescaleIfChanged(b, state.o, step.alpha);
  return step;
}

SmallVector<Value>
WarpAttentionTile::rescaleIfChanged(ImplicitLocOpBuilder &b, ArrayRef<Value> o,
                                    ArrayRef<Value> alpha) const {
  // Once the rows' maxima settle, a tile leaves every factor at exactly 1:
  // the warp skips the multiplies (exact: x * 1 is x), deciding together.
  Value changed;
  for (Value a : alpha) {
    Value ne = arith::CmpFOp::create(b, arith::CmpFPredicate::UNE, a,
                                     IRBuilder{b}.f32(1.0));
    changed = changed ? arith::OrIOp::create(b, changed, ne).getResult() : ne;
  }
  auto ifOp = scf::IfOp::create(b, ValueRange(o).getTypes(),
                                warpAny(b, changed), /*withElseRegion=*/true);
  auto thenB = ImplicitLocOpBuilder::atBlockEnd(b.getLoc(), ifOp.thenBlock());
  scf::YieldOp::create(thenB, rescale(thenB, o, alpha));
  auto elseB = ImplicitLocOpBuilder::atBlockEnd(b.getLoc(), ifOp.elseBlock());
  scf::YieldOp::create(elseB, o);
  return SmallVector<Value>(ifOp.getResults());
}

SmallVector<Value> WarpAttentionTile::rescale(ImplicitLocOpBuilder &b,
                                              ArrayRef<Value> o,
                                              ArrayRef<Value> alpha) const {
  SmallVector<Value> scaled(o);
  for (int64_t t = 0; t < shape.mTiles; ++t)
    rescaleMTile(b, o, alpha, t, scaled);
  return scaled;
}

void WarpAttentionTile::rescaleMTile(ImplicitLocOpBuilder &b, ArrayRef<Value> o,
                                     ArrayRef<Value> alpha, int64_t t,
                                     MutableArrayRef<Value> scaled) const {
  IRBuilder ir{b};
  const FragmentLayout &fragment = mma.accLayout();
  int64_t dv8 = shape.headDimV / fragment.atomCols;
  Value alphas =
      rowPair(b, alpha[fragment.rowSlot(t, 0)], alpha[fragment.rowSlot(t, 1)]);
  for (int64_t d = 0; d < dv8; ++d)
    scaled[t * dv8 + d] = ir.mul(o[t * dv8 + d], alphas);
}

WarpAttentionTile::State
WarpAttentionTile::accumulate(ImplicitLocOpBuilder &b, const State &state,
                              ArrayRef<Value> p, const SharedTile &v,
                              Value stage) const {
  State next = state;
  if (products) {
    next.o = products->accumulate(b, *this, state.o, p, v, stage);
    return next;
  }
  IRBuilder ir{b};
  const FragmentLayout &fragment = mma.accLayout();
  int64_t kStep = mma.getK();
  int64_t k16 = shape.kvTile / kStep, dv8 = shape.headDimV / fragment.atomCols;
  for (int64_t j = 0; j < k16; ++j)
    for (int64_t d = 0; d < dv8; d += 2) {
      auto [b0, b1] = mma.loadBCols(b, v, stage, ir.idx(kStep * j),
                                    fragment.atomCols * d, valueOffset);
      for (int64_t t = 0; t < shape.mTiles; ++t) {
        Value a = p[t * k16 + j];
        Value &o0 = next.o[t * dv8 + d], &o1 = next.o[t * dv8 + d + 1];
        o0 = mma.mma(b, a, b0, o0);
        o1 = mma.mma(b, a, b1, o1);
      }
    }
  return next;
}

WarpAttentionTile::Final
WarpAttentionTile::finalize(ImplicitLocOpBuilder &b, const State &state,
                            kv::LseBase base, Value outputScale,
                            ArrayRef<Value> sinkLogits) const {
  IRBuilder ir{b};
  const FragmentLayout &fragment = mma.accLayout();
  AttentionState math(b, AttentionState::Flavor::ptxBase2);
  int64_t dv8 = shape.headDimV / fragment.atomCols;
  Final f;
  for (int64_t t = 0; t < shape.mTiles; ++t) {
    Value l[2], alpha[2];
    for (int64_t h = 0; h < fragment.rowsPerLane; ++h) {
      l[h] = warpReduce(b, state.l[fragment.rowSlot(t, h)], fragment.lanesPerRow,
                        WarpReduction::sum);
      Value m = state.m[fragment.rowSlot(t, h)];
      // The sink joins the row's whole sum (after the quad's reduction).
      if (!sinkLogits.empty()) {
        PartialState merged =
            math.mergeSink(m, l[h], sinkLogits[fragment.rowSlot(t, h)]);
        m = merged.m;
        l[h] = merged.l;
        alpha[h] = merged.acc;
      }
      f.lse.push_back(math.finalLse(m, l[h], base));
    }
    Value ls = rowPair(b, l[0], l[1]);
    Value alphas =
        sinkLogits.empty() ? Value() : rowPair(b, alpha[0], alpha[1]);
    for (int64_t d = 0; d < dv8; ++d) {
      Value acc = state.o[t * dv8 + d];
      if (alphas)
        acc = ir.mul(acc, alphas);
      Value o = math.normalize(acc, ls);
      if (outputScale)
        o = ir.mul(o, ir.splatLike(outputScale, o));
      f.o.push_back(o);
    }
  }
  return f;
}
