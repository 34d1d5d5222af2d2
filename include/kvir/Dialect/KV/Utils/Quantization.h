//===- Quantization.h - IR for quantized KV values --------------*- C++ -*-===//
//
// The one implementation of kvir's KV quantization math (docs/Semantics.md,
// "Quantized KV"), emitted as arith ops so that the CPU loops and the GPU
// kernels compute the same values: exact fp8 (e4m3fn, e5m2) decoding,
// round-to-nearest-even saturating fp8 encoding, and OpenPPL's int8 groups
// (scale = max(max|x| / 127, 1e-5) stored in the activation type, codes
// clamp(round_half_even(x / stored_scale), -127, 127) with an f32 quotient).
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_DIALECT_KV_UTILS_QUANTIZATION_H
#define KVIR_DIALECT_KV_UTILS_QUANTIZATION_H

#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace kvir::kv {

/// Extends (or converts) an f16 / bf16 / f32 / i8 / fp8 value to f32.
mlir::Value toF32(mlir::ImplicitLocOpBuilder &b, mlir::Value value);
/// Rounds an f32 to `type` (round to nearest even).
mlir::Value fromF32(mlir::ImplicitLocOpBuilder &b, mlir::Value value,
                    mlir::Type type);
/// Decodes an fp8 value or vector (as stored: f8E4M3FN or f8E5M2) to f32
/// exactly: fp8ToScaledF16, extended, times fp8HalfScale.
mlir::Value fp8ToF32(mlir::ImplicitLocOpBuilder &b, mlir::Value value);
/// fp8 codes (a scalar, or a 1-D vector of a multiple of 4) as f16 values
/// exactly 1 / fp8HalfScale of theirs (NaN codes NaN), built with integer
/// ops four codes per 32-bit word, two f16 per half: kernels fold the
/// factor into a scale they apply anyway.
mlir::Value fp8ToScaledF16(mlir::ImplicitLocOpBuilder &b, mlir::Value value);
/// int8 codes (a scalar, or a 1-D vector of a multiple of 4) as f16, exactly
/// (|code| <= 128), built with integer ops four codes per 32-bit word and
/// one f16 subtraction per pair: kernels apply the group scales after.
mlir::Value int8ToF16(mlir::ImplicitLocOpBuilder &b, mlir::Value value);
/// int8 groups: the f32 scale of each of `width` consecutive dims starting
/// on a group or within one, from `scales` (a vector of the group scales
/// those dims span, in the activation type).
mlir::Value spreadGroupScales(mlir::ImplicitLocOpBuilder &b,
                              mlir::Value scales, int64_t width,
                              int64_t group);
/// 256 for e4m3fn (whose bias 7 reads as f16's 15), 1 for e5m2.
double fp8HalfScale(mlir::Type fp8Type);
/// Encodes an f32 as fp8 of `type`, rounding to nearest even and saturating
/// to the largest finite value (vLLM's scaled_convert).
mlir::Value f32ToFp8(mlir::ImplicitLocOpBuilder &b, mlir::Value value,
                     mlir::Type type);
/// |x| of an f32 by clearing its sign bit (math.absf would need libdevice in
/// kernels).
mlir::Value absF32(mlir::ImplicitLocOpBuilder &b, mlir::Value value);
/// The int8 group scale of a group whose largest magnitude is `absMax`
/// (f32), before rounding to the activation type.
mlir::Value int8GroupScale(mlir::ImplicitLocOpBuilder &b, mlir::Value absMax);
/// The int8 code of f32 `x` under the stored (rounded) scale, as f32 `scale`.
mlir::Value int8Quantize(mlir::ImplicitLocOpBuilder &b, mlir::Value x,
                         mlir::Value scale);

} // namespace kvir::kv

#endif // KVIR_DIALECT_KV_UTILS_QUANTIZATION_H
