//===- Float.cpp - Host-side conversions of kvir's element types ----------===//
#include "Float.h"

#include "llvm/ADT/APFloat.h"

#include <cstring>
#include <vector>
#include "llvm/ADT/APInt.h"
#include "llvm/Support/ErrorHandling.h"

#include <cmath>
#include <cstring>

using namespace kvir::test;
using llvm::APFloat;
using llvm::APInt;

size_t kvir::test::byteSize(DType type) {
  switch (type) {
  case DType::I64:
    return 8;
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::I8:
  case DType::F8E4M3:
  case DType::F8E5M2:
  case DType::I1:
    return 1;
  }
  llvm_unreachable("unknown dtype");
}

std::string kvir::test::mlirName(DType type) {
  switch (type) {
  case DType::F32:
    return "f32";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::I8:
    return "i8";
  case DType::F8E4M3:
    return "f8E4M3FN";
  case DType::F8E5M2:
    return "f8E5M2";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  case DType::I1:
    return "i1";
  }
  llvm_unreachable("unknown dtype");
}

bool kvir::test::isActivation(DType type) {
  return type == DType::F32 || type == DType::F16 || type == DType::BF16;
}

/// Rounds a double to `semantics` (nearest even) and returns the bits.
static uint64_t encodeWith(const llvm::fltSemantics &semantics, double value) {
  APFloat f(value);
  bool lost = false;
  f.convert(semantics, APFloat::rmNearestTiesToEven, &lost);
  return f.bitcastToAPInt().getZExtValue();
}

static double decodeWith(const llvm::fltSemantics &semantics, uint64_t bits) {
  unsigned width = APFloat::getSizeInBits(semantics);
  APFloat f(semantics, APInt(width, bits));
  bool lost = false;
  f.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
  return f.convertToDouble();
}

uint16_t kvir::test::encodeF16(double value) {
  return encodeWith(APFloat::IEEEhalf(), value);
}
double kvir::test::decodeF16(uint16_t bits) {
  // Exact; decoded once per bit pattern (the references read every element).
  static const std::vector<double> table = [] {
    std::vector<double> t(1 << 16);
    for (uint32_t i = 0; i < t.size(); ++i)
      t[i] = decodeWith(APFloat::IEEEhalf(), i);
    return t;
  }();
  return table[bits];
}
uint16_t kvir::test::encodeBF16(double value) {
  return encodeWith(APFloat::BFloat(), value);
}
double kvir::test::decodeBF16(uint16_t bits) {
  // bf16 is the upper half of an f32.
  uint32_t word = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &word, 4);
  return f;
}
float kvir::test::roundF32(double value) { return static_cast<float>(value); }

static const llvm::fltSemantics &fp8Semantics(bool e4m3) {
  return e4m3 ? APFloat::Float8E4M3FN() : APFloat::Float8E5M2();
}

double kvir::test::decodeFp8(uint8_t bits, bool e4m3) {
  return decodeWith(fp8Semantics(e4m3), bits);
}

double kvir::test::fp8MaxFinite(bool e4m3) { return e4m3 ? 448.0 : 57344.0; }

uint8_t kvir::test::encodeFp8Saturating(double value, bool e4m3) {
  if (std::isnan(value))
    return 0x7f;
  // Clamping first makes round-to-nearest-even saturate: every magnitude at
  // or beyond the largest finite one encodes as that one.
  double limit = fp8MaxFinite(e4m3);
  double clamped = std::fmin(std::fmax(value, -limit), limit);
  return encodeWith(fp8Semantics(e4m3), clamped);
}

double kvir::test::roundTo(DType type, double value) {
  return decode(type, encode(type, value));
}

uint64_t kvir::test::encode(DType type, double value) {
  switch (type) {
  case DType::F32: {
    float f = static_cast<float>(value);
    uint32_t bits;
    static_assert(sizeof(bits) == sizeof(f));
    std::memcpy(&bits, &f, sizeof(f));
    return bits;
  }
  case DType::F16:
    return encodeF16(value);
  case DType::BF16:
    return encodeBF16(value);
  case DType::F8E4M3:
    return encodeFp8Saturating(value, /*e4m3=*/true);
  case DType::F8E5M2:
    return encodeFp8Saturating(value, /*e4m3=*/false);
  case DType::I8: {
    double r = std::nearbyint(value); // the default rounding mode: half even
    r = std::fmin(std::fmax(r, -128.0), 127.0);
    return static_cast<uint8_t>(static_cast<int8_t>(r));
  }
  case DType::I32:
    return static_cast<uint32_t>(static_cast<int32_t>(value));
  case DType::I64:
    return static_cast<uint64_t>(static_cast<int64_t>(value));
  case DType::I1:
    return value != 0.0 ? 1 : 0;
  }
  llvm_unreachable("unknown dtype");
}

double kvir::test::decode(DType type, uint64_t bits) {
  switch (type) {
  case DType::F32: {
    uint32_t b = static_cast<uint32_t>(bits);
    float f;
    std::memcpy(&f, &b, sizeof(f));
    return f;
  }
  case DType::F16:
    return decodeF16(static_cast<uint16_t>(bits));
  case DType::BF16:
    return decodeBF16(static_cast<uint16_t>(bits));
  case DType::F8E4M3:
    return decodeFp8(static_cast<uint8_t>(bits), /*e4m3=*/true);
  case DType::F8E5M2:
    return decodeFp8(static_cast<uint8_t>(bits), /*e4m3=*/false);
  case DType::I8:
    return static_cast<int8_t>(static_cast<uint8_t>(bits));
  case DType::I32:
    return static_cast<int32_t>(static_cast<uint32_t>(bits));
  case DType::I64:
    return static_cast<double>(static_cast<int64_t>(bits));
  case DType::I1:
    return (bits & 0xff) != 0 ? 1.0 : 0.0;
  }
  llvm_unreachable("unknown dtype");
}

uint64_t kvir::test::nanBits(DType type) {
  switch (type) {
  case DType::F32:
    return 0x7fc00000u;
  case DType::F16:
    return 0x7e00u;
  case DType::BF16:
    return 0x7fc0u;
  case DType::F8E4M3:
    return 0x7fu;
  case DType::F8E5M2:
    return 0x7fu;
  case DType::I8:
  case DType::I32:
  case DType::I64:
  case DType::I1:
    return 0;
  }
  llvm_unreachable("unknown dtype");
}
