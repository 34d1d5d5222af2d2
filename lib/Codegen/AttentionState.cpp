//===- AttentionState.cpp - The math of attention states ------------------===//
#include "kvir/Codegen/AttentionState.h"
#include "kvir/Codegen/IRBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cmath>

using namespace mlir;
using namespace kvir;
using namespace kvir::codegen;

kv::LseBase AttentionState::getWorkingBase() const {
  return flavor == Flavor::ptxBase2 ? kv::LseBase::two : kv::LseBase::e;
}

Value AttentionState::exp(Value x) {
  if (flavor == Flavor::ptxBase2)
    return IRBuilder{b}.nvvmUnary("llvm.nvvm.ex2.approx.ftz.f", x);
  return math::ExpOp::create(b, x);
}

Value AttentionState::log(Value x) {
  if (flavor == Flavor::ptxBase2)
    return IRBuilder{b}.nvvmUnary("llvm.nvvm.lg2.approx.ftz.f", x);
  return math::LogOp::create(b, x);
}

double AttentionState::logitPrescale(bool softCap, bool natural) const {
  return flavor == Flavor::ptxBase2 && !softCap && !natural ? M_LOG2E : 1.0;
}

Value AttentionState::finishLogit(Value s, std::optional<double> softCap,
                                  bool natural) {
  IRBuilder ir{b};
  if (!softCap) {
    if (!natural || flavor == Flavor::exactBaseE)
      return s;
    return ir.mul(s, ir.splatLike(ir.f32(M_LOG2E), s));
  }
  double c = *softCap;
  if (flavor == Flavor::exactBaseE) {
    Value cap = ir.splatLike(ir.f32(c), s);
    return ir.mul(cap, math::TanhOp::create(b, arith::DivFOp::create(b, s, cap)));
  }
  // c * tanh(s / c) = c * (1 - 2 / (2^(2 s log2(e) / c) + 1)), in log2 units;
  // no libdevice tanh.
  Value e = exp(ir.mul(s, ir.splatLike(ir.f32(2.0 * M_LOG2E / c), s)));
  Value t = arith::DivFOp::create(b, ir.splatLike(ir.f32(2.0), s),
                                  ir.add(e, ir.splatLike(ir.f32(1.0), s)));
  return ir.mul(ir.sub(ir.splatLike(ir.f32(1.0), s), t),
                ir.splatLike(ir.f32(c * M_LOG2E), s));
}

Value AttentionState::reference(Value m) {
  IRBuilder ir{b};
  Value negInf = ir.splatLike(ir.f32(-INFINITY), m);
  Value empty = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, m, negInf);
  return ir.select(empty, ir.splatLike(ir.f32(0.0), m), m);
}

AttentionState::Rescale AttentionState::rescale(Value m, Value candidate) {
  IRBuilder ir{b};
  Value mNew = arith::MaximumFOp::create(b, m, candidate);
  Value ref = reference(mNew);
  return {mNew, exp(ir.sub(m, ref)), ref};
}

Value AttentionState::weightAt(Value s, Value ref) {
  IRBuilder ir{b};
  return exp(ir.sub(s, ir.splatLike(ref, s)));
}

Value AttentionState::weightOfScaled(Value s, Value c, Value ref) {
  IRBuilder ir{b};
  Value negRef = arith::NegFOp::create(b, ref);
  return exp(fma(s, ir.splatLike(c, s), ir.splatLike(negRef, s)));
}

Value AttentionState::weight(Value s, Value m) {
  return weightAt(s, reference(m));
}

Value AttentionState::fma(Value x, Value y, Value z) {
  IRBuilder ir{b};
  if (flavor == Flavor::ptxBase2)
    return ir.fma(x, y, z);
  // The loops stay in arith/math (no LLVM dialect before their lowering).
  Value like = isa<VectorType>(x.getType()) ? x : z;
  return math::FmaOp::create(b, ir.splatLike(x, like), ir.splatLike(y, like),
                             ir.splatLike(z, like));
}

Value AttentionState::accumulate(Value acc, Value alpha, Value p, Value v) {
  IRBuilder ir{b};
  Value kept = alpha ? ir.mul(acc, ir.splatLike(alpha, acc)) : acc;
  return fma(v, p, kept);
}

PartialState AttentionState::update(PartialState state, Value s, Value v) {
  IRBuilder ir{b};
  Rescale r = rescale(state.m, s);
  Value p = weightAt(s, r.ref);
  return {r.m, ir.add(ir.mul(state.l, r.alpha), p),
          accumulate(state.acc, r.alpha, p, v)};
}

PartialState AttentionState::updateTile(PartialState state,
                                        ArrayRef<Value> logits,
                                        function_ref<Value(int64_t)> value) {
  IRBuilder ir{b};
  Value tileMax = logits.front();
  for (Value s : logits.drop_front())
    tileMax = arith::MaximumFOp::create(b, tileMax, s);
  Rescale r = rescale(state.m, tileMax);
  Value sum, acc = ir.mul(state.acc, ir.splatLike(r.alpha, state.acc));
  for (auto [j, s] : llvm::enumerate(logits)) {
    Value p = weightAt(s, r.ref);
    sum = sum ? ir.add(sum, p) : p;
    acc = fma(value(j), p, acc);
  }
  return {r.m, fma(state.l, r.alpha, sum), acc};
}

PartialState AttentionState::merge(ArrayRef<PartialState> states) {
  IRBuilder ir{b};
  Value m = states.front().m;
  for (const PartialState &s : states.drop_front())
    m = arith::MaximumFOp::create(b, m, s.m);
  Value ref = reference(m);
  Value l, acc;
  for (const PartialState &s : states) {
    Value w = weightAt(s.m, ref);
    Value wl = ir.mul(w, s.l);
    Value wacc = ir.mul(s.acc, ir.splatLike(w, s.acc));
    l = l ? ir.add(l, wl) : wl;
    acc = acc ? ir.add(acc, wacc) : wacc;
  }
  return {m, l, acc};
}

PartialState AttentionState::mergeSink(Value m, Value l, Value sink) {
  IRBuilder ir{b};
  Value sinkW = sink;
  if (flavor == Flavor::ptxBase2)
    sinkW = ir.mul(sink, ir.f32(M_LOG2E));
  Rescale r = rescale(m, sinkW);
  Value lNew = fma(l, r.alpha, weightAt(sinkW, r.ref));
  return {r.m, lNew, r.alpha};
}

PartialState AttentionState::withSink(PartialState state, Value sink) {
  IRBuilder ir{b};
  PartialState merged = mergeSink(state.m, state.l, sink);
  Value alpha = merged.acc;
  merged.acc = ir.mul(state.acc, ir.splatLike(alpha, state.acc));
  return merged;
}

Value AttentionState::convertLse(Value lse, kv::LseBase from, kv::LseBase to) {
  if (from == to)
    return lse;
  IRBuilder ir{b};
  // log_to(x) = log_from(x) * ln(from) / ln(to).
  double factor = from == kv::LseBase::two ? M_LN2 : M_LOG2E;
  return ir.mul(lse, ir.splatLike(ir.f32(factor), lse));
}

Value AttentionState::normalize(Value acc, Value l) {
  IRBuilder ir{b};
  Value empty = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, l,
                                      ir.splatLike(ir.f32(0.0), l));
  Value inv = arith::DivFOp::create(b, ir.splatLike(ir.f32(1.0), l), l);
  Value o = ir.mul(acc, ir.splatLike(inv, acc));
  return ir.select(ir.splatLike(empty, o), ir.splatLike(ir.f32(0.0), o), o);
}

Value AttentionState::finalLse(Value m, Value l, kv::LseBase outBase) {
  IRBuilder ir{b};
  Value empty = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, l,
                                      ir.splatLike(ir.f32(0.0), l));
  Value lse = convertLse(ir.add(m, log(l)), getWorkingBase(), outBase);
  return ir.select(empty, ir.splatLike(ir.f32(-INFINITY), lse), lse);
}

FinalState AttentionState::finalize(PartialState state, kv::LseBase outBase) {
  return {normalize(state.acc, state.l), finalLse(state.m, state.l, outBase)};
}

PartialState AttentionState::fromNormalized(Value o, Value lse,
                                            kv::LseBase base) {
  IRBuilder ir{b};
  return {convertLse(lse, base, getWorkingBase()),
          ir.splatLike(ir.f32(1.0), lse), o};
}
