//===- Quantization.cpp - IR for quantized KV values ----------------------===//
#include "kvir/Dialect/KV/Utils/Quantization.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/TypeUtilities.h"

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

/// Rounds f32 `v` to an integer, half to even, for |v| <= 2^22 (larger
/// magnitudes come back as large values of their sign): adding and
/// subtracting 1.5 * 2^23 leaves no fraction bits, and the addition rounds
/// to nearest even. Plain adds, where math.roundeven would need libdevice
/// in kernels.
static Value roundHalfEven(ImplicitLocOpBuilder &b, Value v) {
  Value magic = floatConst(b, 12582912.0);
  return arith::SubFOp::create(b, arith::AddFOp::create(b, v, magic), magic);
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
  int mantissaBits, bias;
  double maxFinite;
  int maxFiniteBits;
};
} // namespace

static Fp8Format getFormat(Type type) {
  if (isa<Float8E4M3FNType>(getElementTypeOrSelf(type)))
    return {3, 7, 448.0, 0x7e};
  return {2, 15, 57344.0, 0x7b};
}

/// A constant of `type` (scalar or vector: splat) holding `value`.
static Value constantLike(ImplicitLocOpBuilder &b, Type type, double value) {
  Type elt = getElementTypeOrSelf(type);
  TypedAttr attr;
  if (isa<FloatType>(elt))
    attr = b.getFloatAttr(elt, value);
  else
    attr = b.getIntegerAttr(elt, static_cast<int64_t>(value));
  if (auto vec = dyn_cast<VectorType>(type))
    attr = SplatElementsAttr::get(vec, attr);
  return arith::ConstantOp::create(b, type, attr);
}

double kv::fp8HalfScale(Type fp8Type) {
  // An f16's exponent bias is 15.
  return std::ldexp(1.0, 15 - getFormat(fp8Type).bias);
}

/// One-byte codes (a scalar, or a 1-D vector of a multiple of 4) as f16
/// values, built with integer ops four codes per 32-bit word: `halves`
/// maps two codes in the low bytes of a word's 16-bit halves (or one code
/// in the low byte, for a scalar) to the bits of two f16.
static Value bytePairsToF16(ImplicitLocOpBuilder &b, Value value,
                            function_ref<Value(Value pairs)> halves) {
  Type type = value.getType();
  auto vec = dyn_cast<VectorType>(type);
  assert((!vec || (vec.getRank() == 1 && vec.getNumElements() % 4 == 0)) &&
         "one-byte codes are converted four per 32-bit word");
  Type i8 = b.getI8Type(), i32 = b.getI32Type();
  auto asBytes = [&](Type bytesType) {
    return getElementTypeOrSelf(type) == i8
               ? value
               : arith::BitcastOp::create(b, bytesType, value).getResult();
  };
  Type f16 = b.getF16Type();
  if (!vec)
    return arith::BitcastOp::create(
        b, f16,
        arith::TruncIOp::create(
            b, b.getI16Type(),
            halves(arith::ExtUIOp::create(b, i32, asBytes(i8)))));
  // The codes as 32-bit words, four each.
  int64_t numWords = vec.getNumElements() / 4;
  Value words = vector::BitCastOp::create(
      b, VectorType::get({numWords}, i32),
      asBytes(VectorType::get({vec.getNumElements()}, i8)));
  Type wordType = words.getType();
  auto andI = [&](Value x, int64_t m) {
    return arith::AndIOp::create(b, x, constantLike(b, wordType, m))
        .getResult();
  };
  auto shift = [&](Value x, int64_t bits, bool left) -> Value {
    Value amount = constantLike(b, wordType, bits);
    if (left)
      return arith::ShLIOp::create(b, x, amount);
    return arith::ShRUIOp::create(b, x, amount);
  };
  // Codes (0, 1) and (2, 3) of each word.
  Value low = halves(arith::OrIOp::create(b, andI(words, 0xff),
                                          shift(andI(words, 0xff00), 8, true)));
  Value high = halves(arith::OrIOp::create(
      b, andI(shift(words, 16, false), 0xff),
      andI(shift(words, 8, false), 0xff0000)));
  auto asHalves = [&](Value w) {
    return vector::BitCastOp::create(b, VectorType::get({2 * numWords}, f16),
                                     w)
        .getResult();
  };
  SmallVector<int64_t> order;
  for (int64_t w = 0; w < numWords; ++w)
    order.append({2 * w, 2 * w + 1, 2 * numWords + 2 * w,
                  2 * numWords + 2 * w + 1});
  return vector::ShuffleOp::create(b, asHalves(low), asHalves(high), order);
}

Value kv::fp8ToScaledF16(ImplicitLocOpBuilder &b, Value value) {
  bool e5m2 = isa<Float8E5M2Type>(getElementTypeOrSelf(value.getType()));
  // e5m2 is an f16's upper byte (subnormals, inf and NaN included);
  // e4m3fn's exponent and mantissa go to the f16's low exponent and high
  // mantissa bits, which reads the value 2^-8 too small (subnormals too),
  // and its NaN (magnitude 0x7f) gets an all-ones exponent.
  return bytePairsToF16(b, value, [&](Value pairs) -> Value {
    Type wordType = pairs.getType();
    auto c = [&](int64_t v) { return constantLike(b, wordType, v); };
    auto andI = [&](Value x, int64_t m) {
      return arith::AndIOp::create(b, x, c(m)).getResult();
    };
    if (e5m2)
      return arith::ShLIOp::create(b, pairs, c(8));
    Value magnitude = andI(pairs, 0x007f007f);
    Value bits = arith::OrIOp::create(
        b, arith::ShLIOp::create(b, andI(pairs, 0x00800080), c(8)),
        arith::ShLIOp::create(b, magnitude, c(7)));
    Value nan = andI(arith::AddIOp::create(b, magnitude, c(0x00010001)),
                     0x00800080);
    return arith::OrIOp::create(b, bits, arith::ShLIOp::create(b, nan, c(7)));
  });
}

Value kv::int8ToF16(ImplicitLocOpBuilder &b, Value value) {
  // 1024 + (code + 128) is an f16 (spacing 1 in [1024, 2048)) whose bits
  // are 0x6400 | (code ^ 0x80); subtracting 1152 leaves the code, exactly.
  Value biased = bytePairsToF16(b, value, [&](Value pairs) -> Value {
    Type wordType = pairs.getType();
    return arith::OrIOp::create(
        b,
        arith::XOrIOp::create(b, pairs, constantLike(b, wordType, 0x00800080)),
        constantLike(b, wordType, 0x64006400));
  });
  return arith::SubFOp::create(b, biased,
                               constantLike(b, biased.getType(), 1152.0));
}

Value kv::fp8ToF32(ImplicitLocOpBuilder &b, Value value) {
  Type type = value.getType();
  auto vec = dyn_cast<VectorType>(type);
  Type f32 = vec ? Type(VectorType::get(vec.getShape(), b.getF32Type()))
                 : Type(b.getF32Type());
  Value result =
      arith::ExtFOp::create(b, f32, fp8ToScaledF16(b, value)).getResult();
  double scale = fp8HalfScale(type);
  if (scale == 1.0)
    return result;
  return arith::MulFOp::create(b, result, constantLike(b, f32, scale));
}

Value kv::f32ToFp8(ImplicitLocOpBuilder &b, Value value, Type type) {
  Fp8Format fmt = getFormat(type);
  Type i32 = b.getI32Type();
  Value bits = arith::BitcastOp::create(b, i32, value);
  Value signBit = arith::AndIOp::create(
      b, arith::ShRUIOp::create(b, bits, i32Const(b, 24)), i32Const(b, 0x80));
  Value absValue = absF32(b, value);
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
  // (Values that saturate may give any steps: they are replaced below.)
  Value steps =
      roundHalfEven(b, arith::DivFOp::create(b, absValue, quantum));
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


Value kv::absF32(ImplicitLocOpBuilder &b, Value value) {
  Value bits = arith::BitcastOp::create(b, b.getI32Type(), value);
  return arith::BitcastOp::create(
      b, b.getF32Type(),
      arith::AndIOp::create(b, bits, i32Const(b, 0x7fffffff)));
}

Value kv::spreadGroupScales(ImplicitLocOpBuilder &b, Value scales,
                            int64_t width, int64_t group) {
  int64_t count = cast<VectorType>(scales.getType()).getNumElements();
  Value f32 = arith::ExtFOp::create(
      b, VectorType::get({count}, b.getF32Type()), scales);
  SmallVector<int64_t> spread;
  for (int64_t i = 0; i < width; ++i)
    spread.push_back(std::min(i / group, count - 1));
  return vector::ShuffleOp::create(b, f32, f32, spread);
}

Value kv::int8GroupScale(ImplicitLocOpBuilder &b, Value absMax) {
  return arith::MaximumFOp::create(
      b, arith::DivFOp::create(b, absMax, floatConst(b, 127.0)),
      floatConst(b, 1e-5));
}

Value kv::int8Quantize(ImplicitLocOpBuilder &b, Value x, Value scale) {
  Value q = roundHalfEven(b, arith::DivFOp::create(b, x, scale));
  q = arith::MinimumFOp::create(
      b, arith::MaximumFOp::create(b, q, floatConst(b, -127.0)),
      floatConst(b, 127.0));
  return arith::FPToSIOp::create(b, b.getI8Type(), q);
}
