//===- Quantization.cpp - IR for quantized KV values ----------------------===//
#include "kvir/Dialect/KV/Utils/Quantization.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>

using namespace mlir;
using namespace kvir;

static Value floatConst(ImplicitLocOpBuilder &b, double value) {
  return arith::ConstantOp::create(b, b.getF32FloatAttr(value));
}

static Value i32Const(ImplicitLocOpBuilder &b, int64_t value) {
  return arith::ConstantOp::create(b, b.getI32IntegerAttr(value));
}

Value kv::toF32(ImplicitLocOpBuilder &b, Value value) {
  Type type = value.getType();
  if (type.isF32())
    return value;
  if (isa<Float8E4M3FNType, Float8E5M2Type>(type))
    return fp8ToF32(b, value);
  if (type.isInteger(8))
    return arith::SIToFPOp::create(b, b.getF32Type(), value);
  return arith::ExtFOp::create(b, b.getF32Type(), value);
}

Value kv::fromF32(ImplicitLocOpBuilder &b, Value value, Type type) {
  if (type.isF32())
    return value;
  return arith::TruncFOp::create(b, type, value);
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

Value kv::fp8ToF32(ImplicitLocOpBuilder &b, Value value) {
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
  Value nan = floatConst(b, std::nan(""));
  if (fmt.ieee) {
    Value special =
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, exp, expMask);
    Value isInf =
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, mant, zero);
    Value specialValue = arith::SelectOp::create(
        b, isInf, floatConst(b, INFINITY), nan);
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

Value kv::f32ToFp8(ImplicitLocOpBuilder &b, Value value, Type type) {
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
                                       floatConst(b, fmt.maxFinite));
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


Value kv::int8GroupScale(ImplicitLocOpBuilder &b, Value absMax) {
  return arith::MaximumFOp::create(
      b, arith::DivFOp::create(b, absMax, floatConst(b, 127.0)),
      floatConst(b, 1e-5));
}

Value kv::int8Quantize(ImplicitLocOpBuilder &b, Value x, Value scale) {
  Value q = math::RoundEvenOp::create(b, arith::DivFOp::create(b, x, scale));
  q = arith::MinimumFOp::create(
      b, arith::MaximumFOp::create(b, q, floatConst(b, -127.0)),
      floatConst(b, 127.0));
  return arith::FPToSIOp::create(b, b.getI8Type(), q);
}
