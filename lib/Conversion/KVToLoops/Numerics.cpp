//===- Numerics.cpp - Scalar building blocks of kv-to-loops ---------------===//
#include "LoweringUtils.h"

#include <cmath>

using namespace mlir;
using namespace kvir::kv;
using namespace kvir::kv::loops;

Value loops::indexConst(ImplicitLocOpBuilder &b, int64_t value) {
  return arith::ConstantIndexOp::create(b, value);
}

Value loops::f32Const(ImplicitLocOpBuilder &b, double value) {
  return arith::ConstantOp::create(b, b.getF32FloatAttr(value));
}

static Value i32Const(ImplicitLocOpBuilder &b, int64_t value) {
  return arith::ConstantOp::create(b, b.getI32IntegerAttr(value));
}

Value loops::toF32(ImplicitLocOpBuilder &b, Value value) {
  Type type = value.getType();
  if (type.isF32())
    return value;
  if (isa<Float8E4M3FNType, Float8E5M2Type>(type))
    return fp8ToF32(b, value);
  if (type.isInteger(8))
    return arith::SIToFPOp::create(b, b.getF32Type(), value);
  return arith::ExtFOp::create(b, b.getF32Type(), value);
}

Value loops::fromF32(ImplicitLocOpBuilder &b, Value value, Type type) {
  if (type.isF32())
    return value;
  return arith::TruncFOp::create(b, type, value);
}

Value loops::loadIndex(ImplicitLocOpBuilder &b, Value memref,
                       ValueRange indices) {
  Value v = memref::LoadOp::create(b, memref, indices);
  return arith::IndexCastOp::create(b, b.getIndexType(), v);
}

/// 2^k as f32 for an i32 k in the normal range, built from its bits.
static Value pow2(ImplicitLocOpBuilder &b, Value k) {
  Value biased = arith::AddIOp::create(b, k, i32Const(b, 127));
  Value bits = arith::ShLIOp::create(b, biased, i32Const(b, 23));
  return arith::BitcastOp::create(b, b.getF32Type(), bits);
}

namespace {
/// The parameters of an fp8 format (OCP FP8: e4m3fn has no infinities and
/// one NaN mantissa; e5m2 is IEEE-like).
struct Fp8Format {
  int mantissaBits, exponentBits, bias;
  bool ieee; // e5m2: all-ones exponent is inf/NaN
  double maxFinite;
  int maxFiniteBits;
};
} // namespace

static Fp8Format getFormat(Type type) {
  if (isa<Float8E4M3FNType>(type))
    return {3, 4, 7, false, 448.0, 0x7e};
  return {2, 5, 15, true, 57344.0, 0x7b};
}

Value loops::fp8ToF32(ImplicitLocOpBuilder &b, Value value) {
  Fp8Format fmt = getFormat(value.getType());
  Value byte = arith::BitcastOp::create(b, b.getI8Type(), value);
  Value bits = arith::ExtUIOp::create(b, b.getI32Type(), byte);
  Value mantMask = i32Const(b, (1 << fmt.mantissaBits) - 1);
  Value expMask = i32Const(b, (1 << fmt.exponentBits) - 1);
  Value mant = arith::AndIOp::create(b, bits, mantMask);
  Value exp = arith::AndIOp::create(
      b, arith::ShRUIOp::create(b, bits, i32Const(b, fmt.mantissaBits)),
      expMask);
  Value sign = arith::ShRUIOp::create(b, bits, i32Const(b, 7));
  Value zero = i32Const(b, 0);
  Value isSubnormal =
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, exp, zero);
  // value = significand * 2^(e - bias - mantissaBits), with the implicit one
  // for normals and e = 1 for subnormals.
  Value implicitOne = arith::SelectOp::create(
      b, isSubnormal, zero, i32Const(b, 1 << fmt.mantissaBits));
  Value significand = arith::OrIOp::create(b, mant, implicitOne);
  Value effExp = arith::SelectOp::create(b, isSubnormal, i32Const(b, 1), exp);
  Value scaleExp = arith::SubIOp::create(
      b, effExp, i32Const(b, fmt.bias + fmt.mantissaBits));
  Value magnitude = arith::MulFOp::create(
      b, arith::UIToFPOp::create(b, b.getF32Type(), significand),
      pow2(b, scaleExp));
  Value nan = f32Const(b, std::nan(""));
  if (fmt.ieee) {
    Value special =
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, exp, expMask);
    Value isInf =
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, mant, zero);
    Value specialValue = arith::SelectOp::create(
        b, isInf, f32Const(b, INFINITY), nan);
    magnitude = arith::SelectOp::create(b, special, specialValue, magnitude);
  } else {
    Value isNan = arith::CmpIOp::create(
        b, arith::CmpIPredicate::eq, arith::AndIOp::create(b, bits,
                                                          i32Const(b, 0x7f)),
        i32Const(b, 0x7f));
    magnitude = arith::SelectOp::create(b, isNan, nan, magnitude);
  }
  Value negative = arith::CmpIOp::create(b, arith::CmpIPredicate::ne, sign,
                                         zero);
  return arith::SelectOp::create(b, negative,
                                 arith::NegFOp::create(b, magnitude),
                                 magnitude);
}

Value loops::f32ToFp8(ImplicitLocOpBuilder &b, Value value, Type type) {
  Fp8Format fmt = getFormat(type);
  Type i32 = b.getI32Type();
  Value bits = arith::BitcastOp::create(b, i32, value);
  Value signBit = arith::AndIOp::create(
      b, arith::ShRUIOp::create(b, bits, i32Const(b, 24)), i32Const(b, 0x80));
  Value absValue = math::AbsFOp::create(b, value);
  Value absBits = arith::BitcastOp::create(b, i32, absValue);
  // Unbiased f32 exponent, clamped below to the fp8 subnormal exponent so
  // that one quantum serves normals and subnormals alike.
  Value exp = arith::SubIOp::create(
      b, arith::ShRUIOp::create(b, absBits, i32Const(b, 23)), i32Const(b, 127));
  Value minExp = i32Const(b, 1 - fmt.bias);
  exp = arith::MaxSIOp::create(b, exp, minExp);
  Value quantum = pow2(b, arith::SubIOp::create(b, exp, i32Const(b,
                                                           fmt.mantissaBits)));
  // |x| / quantum is exact (a power of two); rounding it to an integer is the
  // fp8 rounding, and the carry into the exponent falls out of the addition.
  Value steps = math::RoundEvenOp::create(
      b, arith::DivFOp::create(b, absValue, quantum));
  Value stepsInt = arith::FPToSIOp::create(b, i32, steps);
  Value base = arith::ShLIOp::create(
      b, arith::SubIOp::create(b, exp, minExp), i32Const(b, fmt.mantissaBits));
  Value encoded = arith::AddIOp::create(b, base, stepsInt);
  // Saturate (including +-inf) to the largest finite magnitude.
  Value tooBig = arith::CmpFOp::create(b, arith::CmpFPredicate::OGE, absValue,
                                       f32Const(b, fmt.maxFinite));
  encoded = arith::SelectOp::create(b, tooBig, i32Const(b, fmt.maxFiniteBits),
                                    encoded);
  encoded = arith::MinSIOp::create(b, encoded, i32Const(b, fmt.maxFiniteBits));
  Value isNan = arith::CmpFOp::create(b, arith::CmpFPredicate::UNO, value,
                                      value);
  encoded = arith::SelectOp::create(b, isNan, i32Const(b, 0x7f), encoded);
  Value withSign = arith::OrIOp::create(b, encoded, signBit);
  Value byte = arith::TruncIOp::create(b, b.getI8Type(), withSign);
  return arith::BitcastOp::create(b, type, byte);
}

Value loops::softCap(ImplicitLocOpBuilder &b, Value logit, double cap) {
  Value c = f32Const(b, cap);
  Value t = math::TanhOp::create(b, arith::DivFOp::create(b, logit, c));
  return arith::MulFOp::create(b, c, t);
}

std::pair<Value, Value> loops::ropePairDims(ImplicitLocOpBuilder &b,
                                            RopeAttr rope, int64_t headDim,
                                            Value pair) {
  if (rope.getStyle() == RopeStyle::interleave) {
    Value first = arith::MulIOp::create(b, pair, indexConst(b, 2));
    return {first, arith::AddIOp::create(b, first, indexConst(b, 1))};
  }
  return {pair, arith::AddIOp::create(b, pair, indexConst(b, headDim / 2))};
}

std::pair<Value, Value> loops::ropeCosSin(ImplicitLocOpBuilder &b,
                                          RopeAttr rope, int64_t headDim,
                                          Value pair, Value position) {
  // angle = position * scale * theta^(-2 pair / D)
  double log2Theta = std::log2(rope.getTheta().convertToDouble());
  Value pairF = arith::UIToFPOp::create(
      b, b.getF32Type(), arith::IndexCastOp::create(b, b.getI32Type(), pair));
  Value exponent = arith::MulFOp::create(
      b, pairF, f32Const(b, -2.0 * log2Theta / static_cast<double>(headDim)));
  Value freq = math::Exp2Op::create(b, exponent);
  Value posF = arith::SIToFPOp::create(
      b, b.getF32Type(),
      arith::IndexCastOp::create(b, b.getI32Type(), position));
  Value angle = arith::MulFOp::create(
      b, arith::MulFOp::create(b, posF,
                               f32Const(b, rope.getScale().convertToDouble())),
      freq);
  return {math::CosOp::create(b, angle), math::SinOp::create(b, angle)};
}

StateBuffers loops::allocState(ImplicitLocOpBuilder &b, StateType type,
                               Value rows, Value partitions) {
  SmallVector<Value> dynSizes;
  if (ShapedType::isDynamic(type.getPartitions()))
    dynSizes.push_back(partitions);
  if (ShapedType::isDynamic(type.getRows()))
    dynSizes.push_back(rows);
  auto outType = MemRefType::get(type.getOutputShape(), type.getElementType());
  auto lseType = MemRefType::get(type.getLseShape(), b.getF32Type());
  return {memref::AllocOp::create(b, outType, dynSizes),
          memref::AllocOp::create(b, lseType, dynSizes)};
}

/// Builds a loop nest over every index of `shape` (memref dims of `memref`)
/// and calls `body` with the induction variables.
static void forEachIndex(
    ImplicitLocOpBuilder &b, Value memref,
    function_ref<void(ImplicitLocOpBuilder &, ValueRange)> body) {
  auto type = cast<MemRefType>(memref.getType());
  SmallVector<Value> lbs, ubs, steps;
  for (int64_t i = 0; i < type.getRank(); ++i) {
    lbs.push_back(indexConst(b, 0));
    ubs.push_back(memref::DimOp::create(b, memref, i));
    steps.push_back(indexConst(b, 1));
  }
  scf::buildLoopNest(b, b.getLoc(), lbs, ubs, steps,
                     [&](OpBuilder &nested, Location loc, ValueRange ivs) {
                       ImplicitLocOpBuilder ib(loc, nested);
                       body(ib, ivs);
                     });
}

void loops::fillEmpty(ImplicitLocOpBuilder &b, StateBuffers buffers) {
  Type outElt = cast<MemRefType>(buffers.output.getType()).getElementType();
  forEachIndex(b, buffers.output, [&](ImplicitLocOpBuilder &ib, ValueRange iv) {
    Value zero = arith::ConstantOp::create(ib, ib.getFloatAttr(outElt, 0.0));
    memref::StoreOp::create(ib, zero, buffers.output, iv);
  });
  forEachIndex(b, buffers.lse, [&](ImplicitLocOpBuilder &ib, ValueRange iv) {
    memref::StoreOp::create(ib, f32Const(ib, -INFINITY), buffers.lse, iv);
  });
}

void loops::copyState(ImplicitLocOpBuilder &b, StateBuffers from,
                      StateBuffers to) {
  forEachIndex(b, from.output, [&](ImplicitLocOpBuilder &ib, ValueRange iv) {
    Value v = memref::LoadOp::create(ib, from.output, iv);
    memref::StoreOp::create(ib, v, to.output, iv);
  });
  if (!to.lse)
    return;
  forEachIndex(b, from.lse, [&](ImplicitLocOpBuilder &ib, ValueRange iv) {
    Value v = memref::LoadOp::create(ib, from.lse, iv);
    memref::StoreOp::create(ib, v, to.lse, iv);
  });
}

ValueRange loops::forLoop(
    ImplicitLocOpBuilder &b, Value lb, Value ub, ValueRange inits,
    function_ref<SmallVector<Value>(ImplicitLocOpBuilder &, Value, ValueRange)>
        body) {
  auto loop = scf::ForOp::create(
      b, lb, ub, indexConst(b, 1), inits,
      [&](OpBuilder &nested, Location loc, Value iv, ValueRange args) {
        ImplicitLocOpBuilder ib(loc, nested);
        scf::YieldOp::create(ib, body(ib, iv, args));
      });
  return loop.getResults();
}

void loops::forLoop(ImplicitLocOpBuilder &b, Value lb, Value ub,
                    function_ref<void(ImplicitLocOpBuilder &, Value)> body) {
  forLoop(b, lb, ub, ValueRange{},
          [&](ImplicitLocOpBuilder &ib, Value iv, ValueRange) {
            body(ib, iv);
            return SmallVector<Value>{};
          });
}
