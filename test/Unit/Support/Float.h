//===- Float.h - Host-side conversions of kvir's element types --*- C++ -*-===//
//
// Encodes and decodes f16, bf16 and the OCP fp8 formats (e4m3fn, e5m2) on the
// host with llvm::APFloat, rounding to nearest even. Independent of kvir's
// lowerings: the tests use these to build inputs and to read results.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_TEST_UNIT_SUPPORT_FLOAT_H
#define KVIR_TEST_UNIT_SUPPORT_FLOAT_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace kvir::test {

/// Element types of the buffers a kv kernel reads and writes.
enum class DType { F32, F16, BF16, I8, F8E4M3, F8E5M2, I32, I1, I64 };

/// Bytes per element.
size_t byteSize(DType type);
/// The MLIR spelling (f32, f16, bf16, i8, f8E4M3FN, f8E5M2, i32, i1, i64).
std::string mlirName(DType type);
/// Whether `type` is f32, f16 or bf16 (an activation type).
bool isActivation(DType type);

/// f16 / bf16: round to nearest even (NaN stays NaN, overflow gives inf).
uint16_t encodeF16(double value);
double decodeF16(uint16_t bits);
uint16_t encodeBF16(double value);
double decodeBF16(uint16_t bits);
float roundF32(double value);

/// fp8 decoding of the stored byte (e4m3fn: no infinities, 0x7f/0xff NaN;
/// e5m2: IEEE-like).
double decodeFp8(uint8_t bits, bool e4m3);
/// fp8 encoding, round to nearest even, saturating to the largest finite
/// magnitude (448 for e4m3fn, 57344 for e5m2) as vLLM's scaled_convert; NaN
/// stays NaN.
uint8_t encodeFp8Saturating(double value, bool e4m3);
/// The largest finite fp8 magnitude.
double fp8MaxFinite(bool e4m3);

/// Rounds `value` to the nearest value of `type` (RNE; fp8 saturating; i8
/// rounds half to even and clamps to [-128, 127]; i1 is value != 0).
double roundTo(DType type, double value);

/// Encodes `value` (rounded as roundTo) into the bit pattern of `type`.
uint64_t encode(DType type, double value);
/// Decodes a bit pattern of `type`.
double decode(DType type, uint64_t bits);

/// A NaN bit pattern of `type` (0 for the integer types, which have none).
uint64_t nanBits(DType type);

} // namespace kvir::test

#endif // KVIR_TEST_UNIT_SUPPORT_FLOAT_H
