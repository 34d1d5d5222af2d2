//===- FloatBits.cpp - Float conversions as integer arithmetic ------------===//
#include "kvir/Target/Host/FloatBits.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace kvir::target::host;
using LLVM::FCmpPredicate;
using LLVM::ICmpPredicate;

bool kvir::target::host::isNarrowFloat(Type type) {
  return isa<Float16Type, BFloat16Type>(getElementTypeOrSelf(type));
}

FloatBits::FloatBits(OpBuilder &builder, Location loc, Type like)
    : builder(builder), loc(loc), like(like) {}

Type FloatBits::shaped(Type element) const {
  if (auto vector = dyn_cast<VectorType>(like))
    return vector.clone(element);
  return element;
}

unsigned FloatBits::widthOf(Value v) {
  return getElementTypeOrSelf(v.getType()).getIntOrFloatBitWidth();
}

Value FloatBits::intConstant(unsigned width, uint64_t value) {
  return intConstant(APInt(width, value));
}

/// `scalar` (of type `element`), splat to the shape of the values.
static Value shapedConstant(OpBuilder &builder, Location loc, Type type,
                            Attribute scalar) {
  if (auto vector = dyn_cast<VectorType>(type))
    scalar = DenseElementsAttr::get(vector, scalar);
  return LLVM::ConstantOp::create(builder, loc, type, scalar);
}

Value FloatBits::intConstant(const APInt &value) {
  Type element = builder.getIntegerType(value.getBitWidth());
  return shapedConstant(builder, loc, shaped(element),
                        IntegerAttr::get(element, value));
}

Value FloatBits::floatConstant(Type element, double value) {
  return shapedConstant(builder, loc, shaped(element),
                        FloatAttr::get(element, value));
}

Value FloatBits::bitcast(Value v, Type element) {
  return LLVM::BitcastOp::create(builder, loc, shaped(element), v);
}

Value FloatBits::select(Value c, Value t, Value f) {
  return LLVM::SelectOp::create(builder, loc, c, t, f);
}

Value FloatBits::icmp(ICmpPredicate predicate, Value a, Value b) {
  return LLVM::ICmpOp::create(builder, loc, predicate, a, b);
}

Value FloatBits::fcmp(FCmpPredicate predicate, Value a, Value b) {
  return LLVM::FCmpOp::create(builder, loc, predicate, a, b);
}

Value FloatBits::extendToF32(Value narrow) {
  Type i32 = builder.getI32Type();
  Value h = LLVM::ZExtOp::create(builder, loc, shaped(i32),
                                 bitcast(narrow, builder.getI16Type()));
  auto k = [&](uint64_t v) { return intConstant(32, v); };
  Value bits;
  if (isa<BFloat16Type>(getElementTypeOrSelf(narrow.getType()))) {
    // bf16 is the top half of an f32.
    Value word = op<LLVM::ShlOp>(h, 16);
    Value isNan = icmp(ICmpPredicate::ugt, op<LLVM::AndOp>(h, 0x7fff),
                       k(0x7f80));
    bits = select(isNan, op<LLVM::OrOp>(word, 0x00400000), word);
  } else {
    Value sign = op<LLVM::ShlOp>(op<LLVM::AndOp>(h, 0x8000), 16);
    Value exponent = op<LLVM::AndOp>(op<LLVM::LShrOp>(h, 10), 0x1f);
    Value mantissa = op<LLVM::AndOp>(h, 0x3ff);
    // Normal: rebias the exponent by 127 - 15.
    Value normal = op<LLVM::AddOp>(
        op<LLVM::ShlOp>(op<LLVM::AndOp>(h, 0x7fff), 13), 0x38000000);
    Value quiet = select(icmp(ICmpPredicate::ne, mantissa, k(0)),
                         k(0x00400000), k(0));
    Value special = op<LLVM::OrOp>(
        op<LLVM::OrOp>(op<LLVM::ShlOp>(mantissa, 13), 0x7f800000), quiet);
    // Zero or subnormal: mantissa * 2^-24, exact in f32 (a normal f32).
    Type f32 = builder.getF32Type();
    Value scaled = LLVM::FMulOp::create(
        builder, loc,
        LLVM::UIToFPOp::create(builder, loc, shaped(f32), mantissa),
        floatConstant(f32, 0x1p-24));
    Value tiny = bitcast(scaled, i32);
    Value magnitude =
        select(icmp(ICmpPredicate::eq, exponent, k(31)), special,
               select(icmp(ICmpPredicate::eq, exponent, k(0)), tiny, normal));
    bits = op<LLVM::OrOp>(sign, magnitude);
  }
  return bitcast(bits, builder.getF32Type());
}

Value FloatBits::f16Magnitude(Value a) {
  auto k = [&](uint64_t v) { return intConstant(32, v); };
  // Normal f16 (|x| >= 2^-14): rebias, round the 13 dropped bits to even.
  Value rebiased = op<LLVM::SubOp>(a, 0x38000000);
  Value lsb = op<LLVM::AndOp>(op<LLVM::LShrOp>(rebiased, 13), 1);
  Value normal = op<LLVM::LShrOp>(
      op<LLVM::AddOp>(op<LLVM::AddOp>(rebiased, 0xfff), lsb), 13);
  // Subnormal f16: |x| * 2^24 (exact, < 2^10) rounded to an integer by
  // adding 2^23 in f32 (round to nearest even), read off the low bits.
  Type f32 = builder.getF32Type();
  Value scaled = LLVM::FMulOp::create(builder, loc, bitcast(a, f32),
                                      floatConstant(f32, 0x1p24));
  Value shifted = LLVM::FAddOp::create(builder, loc, scaled,
                                       floatConstant(f32, 0x1p23));
  Value tiny = op<LLVM::SubOp>(bitcast(shifted, builder.getI32Type()),
                               0x4b000000);
  // 65520 and above round to infinity (65504 is the largest f16).
  Value overflows = icmp(ICmpPredicate::uge, a, k(0x477ff000));
  Value isNormal = icmp(ICmpPredicate::uge, a, k(0x38800000));
  return select(overflows, k(0x7c00), select(isNormal, normal, tiny));
}

Value FloatBits::truncateF32(Value x, Type narrowElement) {
  Type i32 = builder.getI32Type();
  auto k = [&](uint64_t v) { return intConstant(32, v); };
  Value word = bitcast(x, i32);
  Value magnitude = op<LLVM::AndOp>(word, 0x7fffffff);
  Value isNan = icmp(ICmpPredicate::ugt, magnitude, k(0x7f800000));
  Value bits;
  if (isa<BFloat16Type>(narrowElement)) {
    // Round the low half to even; a carry moves into the exponent, up to
    // infinity, as it should.
    Value lsb = op<LLVM::AndOp>(op<LLVM::LShrOp>(word, 16), 1);
    Value rounded = op<LLVM::LShrOp>(
        op<LLVM::AddOp>(op<LLVM::AddOp>(word, 0x7fff), lsb), 16);
    Value nan = op<LLVM::OrOp>(op<LLVM::LShrOp>(word, 16), 0x40);
    bits = select(isNan, nan, rounded);
  } else {
    Value sign = op<LLVM::AndOp>(op<LLVM::LShrOp>(word, 16), 0x8000);
    Value nan =
        op<LLVM::OrOp>(op<LLVM::AndOp>(op<LLVM::LShrOp>(magnitude, 13), 0x3ff),
                       0x7e00);
    bits = op<LLVM::OrOp>(sign,
                          select(isNan, nan, f16Magnitude(magnitude)));
  }
  Value half = LLVM::TruncOp::create(builder, loc,
                                     shaped(builder.getI16Type()), bits);
  return bitcast(half, narrowElement);
}

Value FloatBits::roundToOddF32(Value x) {
  Type f32 = builder.getF32Type(), i32 = builder.getI32Type();
  Value nearest = LLVM::FPTruncOp::create(builder, loc, shaped(f32), x);
  Value back = LLVM::FPExtOp::create(builder, loc, x.getType(), nearest);
  Value inexact = fcmp(FCmpPredicate::one, back, x);
  Value away =
      fcmp(FCmpPredicate::ogt, LLVM::FAbsOp::create(builder, loc, back),
           LLVM::FAbsOp::create(builder, loc, x));
  Value bits = bitcast(nearest, i32);
  // Rounded away from zero: one unit back (infinity becomes the largest
  // finite value), then the sticky last bit.
  Value truncated = select(away, op<LLVM::SubOp>(bits, 1), bits);
  Value odd = op<LLVM::OrOp>(truncated, 1);
  return bitcast(select(inexact, odd, bits), f32);
}

Value FloatBits::intToF64RoundToOdd(Value x, bool isSigned) {
  Type f64 = builder.getF64Type(), i64 = builder.getI64Type();
  unsigned width = widthOf(x);
  if (width <= 53)
    return isSigned
               ? LLVM::SIToFPOp::create(builder, loc, shaped(f64), x).getResult()
               : LLVM::UIToFPOp::create(builder, loc, shaped(f64), x).getResult();
  assert(width <= 64 && "wider integers are rejected by the caller");
  Value wide = x;
  if (width < 64)
    wide = isSigned
               ? LLVM::SExtOp::create(builder, loc, shaped(i64), x).getResult()
               : LLVM::ZExtOp::create(builder, loc, shaped(i64), x).getResult();
  Value zero = intConstant(64, 0);
  Value negative = isSigned ? icmp(ICmpPredicate::slt, wide, zero) : Value();
  Value magnitude =
      isSigned ? select(negative, op<LLVM::SubOp>(zero, wide), wide) : wide;
  // From 2^53 on, keep 53 bits and make the last one sticky.
  Value sticky = LLVM::ZExtOp::create(
      builder, loc, shaped(i64),
      icmp(ICmpPredicate::ne, op<LLVM::AndOp>(magnitude, 0x7ff), zero));
  Value kept = op<LLVM::OrOp>(op<LLVM::LShrOp>(magnitude, 11), sticky);
  Value large = LLVM::FMulOp::create(
      builder, loc, LLVM::UIToFPOp::create(builder, loc, shaped(f64), kept),
      floatConstant(f64, 2048.0));
  Value small = LLVM::UIToFPOp::create(builder, loc, shaped(f64), magnitude);
  Value result = select(
      icmp(ICmpPredicate::uge, magnitude, intConstant(64, uint64_t(1) << 53)),
      large, small);
  if (isSigned)
    result = select(negative, LLVM::FNegOp::create(builder, loc, result),
                    result);
  return result;
}

Value FloatBits::addRoundToOdd(Value x, Value y) {
  Type i64 = builder.getI64Type();
  Value sum = LLVM::FAddOp::create(builder, loc, x, y);
  // TwoSum: sum + error == x + y exactly.
  Value yPart = LLVM::FSubOp::create(builder, loc, sum, x);
  Value xPart = LLVM::FSubOp::create(builder, loc, sum, yPart);
  Value error = LLVM::FAddOp::create(
      builder, loc, LLVM::FSubOp::create(builder, loc, x, xPart),
      LLVM::FSubOp::create(builder, loc, y, yPart));
  Value inexact = fcmp(FCmpPredicate::one, error,
                       floatConstant(builder.getF64Type(), 0.0));
  Value bits = bitcast(sum, i64);
  Value even = icmp(ICmpPredicate::eq, op<LLVM::AndOp>(bits, 1),
                    intConstant(64, 0));
  // One unit toward the exact sum: up in magnitude if the error has the
  // sum's sign.
  Value sameSign = icmp(
      ICmpPredicate::sge,
      op<LLVM::XOrOp>(bits, bitcast(error, i64)), intConstant(64, 0));
  Value moved = select(sameSign, op<LLVM::AddOp>(bits, 1),
                       op<LLVM::SubOp>(bits, 1));
  Value adjust = op<LLVM::AndOp>(inexact, even);
  return bitcast(select(adjust, moved, bits), builder.getF64Type());
}

Value FloatBits::toNarrow(Value x, Type narrowElement, bool isSigned) {
  Type element = getElementTypeOrSelf(x.getType());
  Type f32 = builder.getF32Type();
  if (isa<IntegerType>(element)) {
    if (element.getIntOrFloatBitWidth() <= 24) {
      Value exact =
          isSigned
              ? LLVM::SIToFPOp::create(builder, loc, shaped(f32), x).getResult()
              : LLVM::UIToFPOp::create(builder, loc, shaped(f32), x).getResult();
      return truncateF32(exact, narrowElement);
    }
    return truncateF32(roundToOddF32(intToF64RoundToOdd(x, isSigned)),
                       narrowElement);
  }
  if (element.isF32())
    return truncateF32(x, narrowElement);
  if (element.isF64())
    return truncateF32(roundToOddF32(x), narrowElement);
  assert(isNarrowFloat(element) && "callers convert only f16/bf16/f32/f64");
  return truncateF32(extendToF32(x), narrowElement);
}
