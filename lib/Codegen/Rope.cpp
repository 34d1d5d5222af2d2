//===- Rope.cpp - Rotary position embedding -------------------------------===//
#include "kvir/Codegen/Rope.h"
#include "kvir/Codegen/IRBuilder.h"
#include "kvir/Codegen/SharedTile.h"
#include "kvir/Dialect/KV/Utils/Quantization.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cmath>

using namespace mlir;
using namespace kvir;
using namespace kvir::codegen;

std::pair<Value, Value> Rope::pairDims(Value pair) {
  IRBuilder ir{b};
  if (rope.getStyle() == kv::RopeStyle::interleave) {
    Value first = ir.mul(pair, ir.idx(2));
    return {first, ir.add(first, ir.idx(1))};
  }
  return {pair, ir.add(pair, ir.idx(rotatedDims() / 2))};
}

std::pair<Value, Value> Rope::cosSin(Value pair, Value position) {
  return cosSinAt(frequency(pair), position);
}

Value Rope::frequency(Value pair) {
  IRBuilder ir{b};
  // f = 2^(pair * -2 log2(theta) / R)
  double log2Theta = std::log2(rope.getTheta().convertToDouble());
  Value pairF = arith::UIToFPOp::create(b, b.getF32Type(), ir.toI32(pair));
  Value exponent = ir.mul(
      pairF, ir.f32(-2.0 * log2Theta / static_cast<double>(rotatedDims())));
  Value freq = flavor == Flavor::exact
                   ? math::Exp2Op::create(b, exponent).getResult()
                   : ir.nvvmUnary("llvm.nvvm.ex2.approx.ftz.f", exponent);
  if (rope.hasLlama31Scaling()) {
    // Llama 3.1: by the wavelength 2 pi / f, keep f (short waves), divide
    // it by `factor` (long), or blend the two in between. In turns of the
    // original context: r = original_max_position / wavelength = orig f /
    // (2 pi); short waves have r > high_freq_factor, long r <
    // low_freq_factor, and s = (r - low) / (high - low) blends.
    double factor = rope.getFactor().convertToDouble();
    double low = rope.getLowFreqFactor().convertToDouble();
    double high = rope.getHighFreqFactor().convertToDouble();
    double orig = rope.getOriginalMaxPosition().convertToDouble();
    Value r = ir.mul(freq, ir.f32(orig / (2.0 * M_PI)));
    Value smooth = ir.mul(ir.sub(r, ir.f32(low)), ir.f32(1.0 / (high - low)));
    // Clamped to [0, 1] by compares and selects (arith's min/max would
    // become libdevice calls on the GPU).
    smooth = ir.select(arith::CmpFOp::create(b, arith::CmpFPredicate::OLT,
                                             smooth, ir.f32(0.0)),
                       ir.f32(0.0), smooth);
    smooth = ir.select(arith::CmpFOp::create(b, arith::CmpFPredicate::OGT,
                                             smooth, ir.f32(1.0)),
                       ir.f32(1.0), smooth);
    // (1 - s) f / factor + s f
    Value scaled = ir.mul(freq, ir.f32(1.0 / factor));
    freq = ir.add(scaled, ir.mul(smooth, ir.sub(freq, scaled)));
  }
  return freq;
}

std::pair<Value, Value> Rope::cosSinAt(Value freq, Value position) {
  IRBuilder ir{b};
  // angle = position * scale * f
  Value posF = arith::SIToFPOp::create(b, b.getF32Type(), ir.toI32(position));
  Value angle =
      ir.mul(ir.mul(posF, ir.f32(rope.getScale().convertToDouble())), freq);
  if (flavor == Flavor::exact)
    return {math::CosOp::create(b, angle), math::SinOp::create(b, angle)};
  // Cody-Waite reduction by 2 pi in two fused steps: r = angle - k 2pi with
  // 2pi split into its f32 value and the remainder.
  const float twoPiHi = static_cast<float>(2.0 * M_PI);
  const double twoPiLo = 2.0 * M_PI - static_cast<double>(twoPiHi);
  // k: the nearest integer (ties away from zero), by conversions that
  // lower to cvt instructions; fma is LLVM's intrinsic, not math.fma,
  // which gpu-to-nvvm would map to libdevice.
  Value turns = ir.mul(angle, ir.f32(0.5 / M_PI));
  Value half = ir.select(arith::CmpFOp::create(b, arith::CmpFPredicate::OGE,
                                               turns, ir.f32(0.0)),
                         ir.f32(0.5), ir.f32(-0.5));
  Value k = arith::SIToFPOp::create(
      b, b.getF32Type(),
      arith::FPToSIOp::create(b, b.getI32Type(), ir.add(turns, half)));
  Value r = LLVM::FMAOp::create(b, k, ir.f32(-twoPiHi), angle);
  r = LLVM::FMAOp::create(b, k, ir.f32(-twoPiLo), r);
  return {ir.nvvmUnary("llvm.nvvm.cos.approx.ftz.f", r),
          ir.nvvmUnary("llvm.nvvm.sin.approx.ftz.f", r)};
}

std::pair<Value, Value> Rope::rotate(Value x, Value y, Value cos, Value sin) {
  IRBuilder ir{b};
  return {ir.sub(ir.mul(x, cos), ir.mul(y, sin)),
          ir.add(ir.mul(y, cos), ir.mul(x, sin))};
}

SmallVector<Value> Rope::frequencies(Value firstPair, int64_t count) {
  IRBuilder ir{b};
  SmallVector<Value> freqs;
  for (int64_t j = 0; j < count; ++j)
    freqs.push_back(frequency(ir.add(firstPair, ir.idx(j))));
  return freqs;
}

std::pair<Value, Value> Rope::rotateVectors(Value a, Value bv,
                                            ArrayRef<Value> freqs,
                                            Value position, Type resultType) {
  SmallVector<Value> ra, rb;
  for (auto [j, freq] : llvm::enumerate(freqs)) {
    int64_t at = j;
    Value x = kv::toF32(b, vector::ExtractOp::create(b, a, at).getResult());
    Value y = kv::toF32(b, vector::ExtractOp::create(b, bv, at).getResult());
    auto [c, s] = cosSinAt(freq, position);
    auto [u, v] = rotate(x, y, c, s);
    ra.push_back(kv::fromF32(b, u, resultType));
    rb.push_back(kv::fromF32(b, v, resultType));
  }
  auto result = VectorType::get({int64_t(freqs.size())}, resultType);
  return {vector::FromElementsOp::create(b, result, ra),
          vector::FromElementsOp::create(b, result, rb)};
}

Value Rope::rotateInterleaved(Value chunk, ArrayRef<Value> freqs,
                              Value position, Type resultType) {
  int64_t width = cast<VectorType>(chunk.getType()).getNumElements();
  auto half = [&](int64_t first) -> Value {
    SmallVector<int64_t> picks;
    for (int64_t e = first; e < width; e += 2)
      picks.push_back(e);
    return vector::ShuffleOp::create(b, chunk, chunk, picks);
  };
  auto [even, odd] =
      rotateVectors(half(0), half(1), freqs, position, resultType);
  SmallVector<int64_t> interleave;
  for (int64_t p = 0; p < width / 2; ++p)
    interleave.append({p, width / 2 + p});
  return vector::ShuffleOp::create(b, even, odd, interleave);
}

/// A TileRotation's chunk: 16 bytes of 16-bit elements.
constexpr int64_t kTileRotationChunk = 8;

/// The dims one of a row's TileRotation units covers in the rotated dims:
/// a chunk, or for rotate-half a chunk of each half.
static int64_t tileRotationUnitDims(kv::RopeAttr rope) {
  return rope.getStyle() == kv::RopeStyle::rotate_half ? 2 * kTileRotationChunk
                                                       : kTileRotationChunk;
}

std::string codegen::whyNotRotateTiles(kv::RopeAttr rope, int64_t headDim,
                                       int64_t threads) {
  int64_t rotated = rope.getRotatedDims(headDim);
  bool halves = rope.getStyle() == kv::RopeStyle::rotate_half;
  std::string what = std::string(halves ? "rotate-half" : "interleaved") +
                     " RoPE over " + std::to_string(rotated) + " rotary dims";
  if (rotated % tileRotationUnitDims(rope))
    return what + ": the tensor-core kernels rotate 16-byte chunks of 8 "
                  "dims in place, so the rotated dims (each half, for "
                  "rotate-half) must be whole chunks";
  int64_t units = rotated / tileRotationUnitDims(rope);
  if (units > threads)
    return what + " in a block of " + std::to_string(threads) +
           " threads: the tensor-core kernels give each thread one of a "
           "row's " +
           std::to_string(units) + " 16-byte units (more warps would do)";
  return "";
}

TileRotation::TileRotation(ImplicitLocOpBuilder &b, kv::RopeAttr rope,
                           int64_t headDim, Value thread, int64_t threads)
    : rope(rope), headDim(headDim) {
  IRBuilder ir{b};
  const int64_t chunk = kTileRotationChunk;
  int64_t rotated = rope.getRotatedDims(headDim);
  bool halves = rope.getStyle() == kv::RopeStyle::rotate_half;
  units = rotated / tileRotationUnitDims(rope);
  // Threads past the last whole set of unit columns idle.
  rowLanes = threads / units;
  assert(rowLanes > 0 && "whyNotRotateTiles rejects more units than threads");
  Value unit = ir.remU(thread, ir.idx(units));
  firstRow = ir.divU(thread, ir.idx(units));
  dim0 = ir.mul(unit, ir.idx(chunk));
  Rope r(b, rope, headDim, Rope::Flavor::ptx);
  if (halves) {
    freqs = r.frequencies(dim0, chunk);
    dim1 = ir.add(dim0, ir.idx(rotated / 2));
  } else {
    freqs = r.frequencies(ir.divU(dim0, ir.idx(2)), chunk / 2);
  }
}

void TileRotation::apply(
    ImplicitLocOpBuilder &b, const SharedTile &tile, Value stage,
    function_ref<RopeRowPosition(ImplicitLocOpBuilder &, Value)> rowPosition)
    const {
  IRBuilder ir{b};
  Type element = getElementTypeOrSelf(tile.memref.getType());
  auto chunkType = VectorType::get({kTileRotationChunk}, element);
  emitIf(b, ir.lt(firstRow, ir.idx(rowLanes)), [&](ImplicitLocOpBuilder &ib) {
    scf::ForOp::create(
        ib, firstRow, IRBuilder{ib}.idx(tile.rows),
        IRBuilder{ib}.idx(rowLanes), ValueRange{},
        [&](OpBuilder &nb, Location l, Value row, ValueRange) {
          ImplicitLocOpBuilder jb(l, nb);
          RopeRowPosition at = rowPosition(jb, row);
          auto rotateRow = [&](ImplicitLocOpBuilder &rb) {
            Rope r(rb, rope, headDim, Rope::Flavor::ptx);
            auto load = [&](Value dim) {
              return vector::LoadOp::create(
                         rb, chunkType, tile.memref,
                         tile.elementIndices(rb, stage, row, dim))
                  .getResult();
            };
            auto store = [&](Value v, Value dim) {
              vector::StoreOp::create(rb, v, tile.memref,
                                      tile.elementIndices(rb, stage, row, dim));
            };
            if (dim1) {
              auto [lo, hi] = r.rotateVectors(load(dim0), load(dim1), freqs,
                                              at.position, element);
              store(lo, dim0);
              store(hi, dim1);
            } else {
              store(r.rotateInterleaved(load(dim0), freqs, at.position,
                                        element),
                    dim0);
            }
          };
          if (at.valid)
            emitIf(jb, at.valid, rotateRow);
          else
            rotateRow(jb);
          scf::YieldOp::create(jb);
        });
  });
}
