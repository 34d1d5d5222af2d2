//===- DecodeKeyRows.cpp - The rows a decode block scores -----------------===//
//
// How the decode kernel's scores read a tile's K and V rows
// (DecodeKernelParts.h): from the stage ring, or from what the block wrote
// once per tile for the whole group: vLLM's transposed V back to rows,
// quantized codes decoded to f16, keys rotated by RoPE.
//
//===----------------------------------------------------------------------===//
#include "DecodeKernelParts.h"

#include "kvir/Codegen/IRBuilder.h"
#include "kvir/Codegen/Rope.h"
#include "kvir/Dialect/KV/Utils/Quantization.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace kvir;
using namespace kvir::codegen;
using namespace kvir::gpu_lowering;
using namespace kvir::gpu_lowering::decode;

DecodeKeyRows::DecodeKeyRows(ImplicitLocOpBuilder &b, const DecodeBlock &blk,
                             const DecodeKVStream &stream, Value zeroVec)
    : blk(blk), stream(stream), zeroVec(zeroVec) {
  IRBuilder ir{b};
  const KernelFunc &kf = blk.kf;
  int64_t tile = blk.tile, padded = blk.padded;
  if (blk.buf.vRows)
    vRows =
        SharedTile{kf.getShared(*blk.buf.vRows), tile, padded, Swizzle::None};
  if (blk.spec.decodesTilesInShared()) {
    kDecoded = SharedTile{kf.getShared(*blk.buf.kDecoded), tile, padded,
                          Swizzle::None};
    vDecoded = SharedTile{kf.getShared(*blk.buf.vDecoded), tile, padded,
                          Swizzle::None};
  }
  // RoPE: the query stays as it is and each key turns by its position
  // relative to the query's (kv_len - 1 for a decode, a query row's own),
  // R(p) q . R(j) k = q . R(j - p) k,
  // in f32 (an angle that is small for the recent keys). A lane's vector
  // lies wholly in the rotated dims or past them (whyNotDecodeRope);
  // rotate-half lanes read their partner dims R / 2 away from the same row.
  // The pairs' frequencies are the lane's, computed once.
  if (kv::RopeAttr ropeAttr = blk.spec.rope) {
    ropes = true;
    Rope rope(b, ropeAttr, blk.headDim, Rope::Flavor::ptx);
    Value dim0 = blk.dim0;
    int64_t rotated = rope.rotatedDims(), half = rotated / 2;
    rotates = ir.lt(dim0, ir.idx(rotated));
    if (ropeAttr.getStyle() == kv::RopeStyle::interleave) {
      freqs = rope.frequencies(ir.divU(dim0, ir.idx(2)), blk.vec / 2);
    } else {
      Value low = ir.lt(dim0, ir.idx(half));
      freqs = rope.frequencies(ir.remU(dim0, ir.idx(half)), blk.vec);
      partnerDim = ir.select(low, ir.add(dim0, ir.idx(half)),
                             ir.sub(dim0, ir.idx(half)));
      // Low dims take k c - k' s, high dims k c + k' s.
      partnerSign =
          ir.splat(ir.select(low, ir.f32(1.0), ir.f32(-1.0)), blk.vec);
    }
  }
  // With a group, the block rotates each tile once (rotate) and the heads
  // read the rotated f32 rows: a thread keeps its lane's columns and
  // frequencies and takes rows y + G z, y + G z + G tz, ...
  if (blk.buf.kRotated)
    kRotated = SharedTile{kf.getShared(*blk.buf.kRotated), tile, padded,
                          Swizzle::None};
}

const SharedTile &DecodeKeyRows::valueSource() const {
  return vRows ? *vRows : stream.vTiles();
}

void DecodeKeyRows::transposeV(ImplicitLocOpBuilder &b, Value stage) const {
  // A thread takes a chunk of one dim (consecutive threads: consecutive
  // dims) and stores its tokens' elements down the dim's column.
  IRBuilder ir{b};
  int64_t vChunk = blk.spec.transposedVChunk(), headDim = blk.headDim;
  int64_t chunks = headDim * (blk.tile / vChunk);
  auto chunkType = VectorType::get({vChunk}, blk.elt);
  const SharedTile &vTiles = stream.vTiles();
  scf::ForOp::create(
      b, blk.lane, ir.idx(chunks), ir.idx(blk.numThreads), ValueRange{},
      [&](OpBuilder &nb, Location l, Value chunk, ValueRange) {
        ImplicitLocOpBuilder jb(l, nb);
        IRBuilder k{jb};
        Value dim = k.remU(chunk, k.idx(headDim));
        Value first = k.mul(k.divU(chunk, k.idx(headDim)), k.idx(vChunk));
        auto load = vector::LoadOp::create(
            jb, chunkType, vTiles.memref,
            vTiles.elementIndices(jb, stage, dim, first));
        load.setAlignment(vChunk * blk.elt.getIntOrFloatBitWidth() / 8);
        for (int64_t j = 0; j < vChunk; ++j)
          memref::StoreOp::create(
              jb, vector::ExtractOp::create(jb, load, j), vRows->memref,
              vRows->elementIndices(jb, Value(), k.add(first, k.idx(j)), dim));
        scf::YieldOp::create(jb);
      });
}

Value DecodeKeyRows::codesToF16(ImplicitLocOpBuilder &b, Value codes) const {
  // fp8 values 1 / fp8HalfScale of theirs, int8 codes as they are (their
  // scales apply after).
  return blk.fp8 ? kv::fp8ToScaledF16(b, codes) : kv::int8ToF16(b, codes);
}

void DecodeKeyRows::decodeTile(ImplicitLocOpBuilder &b, Value stage) const {
  // 16 codes per step, the steps spread over the block.
  IRBuilder ir{b};
  int64_t padded = blk.padded;
  int64_t chunks = blk.tile * padded / 16;
  auto codeType = VectorType::get({16}, blk.elt);
  for (auto [codes, decoded] :
       {std::pair<const SharedTile *, const SharedTile *>{&stream.kTiles(),
                                                          &*kDecoded},
        std::pair<const SharedTile *, const SharedTile *>{&valueSource(),
                                                          &*vDecoded}}) {
    // (Named copies: a lambda captures no structured binding in C++17.)
    const SharedTile *source = codes, *target = decoded;
    Value codeStage = vRows && codes == &*vRows ? Value() : stage;
    scf::ForOp::create(
        b, blk.lane, ir.idx(chunks), ir.idx(blk.numThreads), ValueRange{},
        [&](OpBuilder &nb, Location l, Value chunk, ValueRange) {
          ImplicitLocOpBuilder jb(l, nb);
          IRBuilder k{jb};
          Value row = k.divU(chunk, k.idx(padded / 16));
          Value col = k.mul(k.remU(chunk, k.idx(padded / 16)), k.idx(16));
          Value v = vector::LoadOp::create(
              jb, codeType, source->memref,
              source->elementIndices(jb, codeStage, row, col));
          vector::StoreOp::create(
              jb, codesToF16(jb, v), target->memref,
              target->elementIndices(jb, Value(), row, col));
          scf::YieldOp::create(jb);
        });
  }
}

Value DecodeKeyRows::rowOf(ImplicitLocOpBuilder &b, bool isKey, Value stage,
                           Value t, bool scaled, Value *groupScales,
                           Value column) const {
  if (!column)
    column = blk.dim0;
  const SharedTile *from = isKey ? &stream.kTiles() : &valueSource();
  Type rowType = blk.elt;
  if (kDecoded) {
    from = isKey ? &*kDecoded : &*vDecoded;
    rowType = b.getF16Type();
  }
  bool staged = !kDecoded && !(vRows && from == &*vRows);
  auto v = vector::LoadOp::create(
      b, VectorType::get({blk.vec}, rowType), from->memref,
      from->elementIndices(b, staged ? stage : Value(), t, column));
  Value raw = v.getResult();
  if ((blk.fp8 || blk.int8) && !kDecoded)
    raw = codesToF16(b, raw);
  Value f = blk.toVecF32(b, raw);
  if (blk.int8) {
    // The row's scales for dims [dim0, dim0 + vec): one per quant_group,
    // spread over the dims they scale.
    const SharedTile &scales = isKey ? *stream.kScales() : *stream.vScales();
    int64_t count = std::max<int64_t>(1, blk.vec / blk.quantGroup);
    IRBuilder k{b};
    Value s = vector::LoadOp::create(
        b, VectorType::get({count}, blk.spec.kv.getDtype()), scales.memref,
        scales.elementIndices(b, stage, t,
                              k.divU(column, k.idx(blk.quantGroup))));
    if (scaled)
      f = k.mul(f, kv::spreadGroupScales(b, s, blk.vec, blk.quantGroup));
    else
      *groupScales = s;
  }
  // Lanes past the head dim read columns nobody wrote.
  return blk.padded != blk.headDim
             ? IRBuilder{b}.select(blk.activeX, f, zeroVec)
             : f;
}

Value DecodeKeyRows::rotatedKeyRow(ImplicitLocOpBuilder &b, Value stage,
                                   Value key, Value t) const {
  Value row = rowOf(b, /*isKey=*/true, stage, t);
  IRBuilder k{b};
  Value relative = k.sub(key, blk.queryPosition);
  kv::RopeAttr ropeAttr = blk.spec.rope;
  return scf::IfOp::create(
             b, rotates,
             [&](OpBuilder &nb, Location l) {
               ImplicitLocOpBuilder rb(l, nb);
               Rope r(rb, ropeAttr, blk.headDim, Rope::Flavor::ptx);
               Type f32 = rb.getF32Type();
               Value rotated;
               if (!partnerDim) {
                 rotated = r.rotateInterleaved(row, freqs, relative, f32);
               } else {
                 Value partner = rowOf(rb, /*isKey=*/true, stage, t, true,
                                       nullptr, partnerDim);
                 rotated = r.rotateVectors(
                                row, IRBuilder{rb}.mul(partner, partnerSign),
                                freqs, relative, f32)
                               .first;
               }
               scf::YieldOp::create(rb, rotated);
             },
             [&](OpBuilder &nb, Location l) {
               scf::YieldOp::create(nb, l, row);
             })
      .getResult(0);
}

void DecodeKeyRows::prepare(ImplicitLocOpBuilder &b, Value stage) const {
  if (vRows) {
    transposeV(b, stage);
    gpu::BarrierOp::create(b);
  }
  if (kDecoded) {
    decodeTile(b, stage);
    gpu::BarrierOp::create(b);
  }
}

void DecodeKeyRows::rotate(ImplicitLocOpBuilder &b, Value stage,
                           KeyOf keyOf) const {
  if (!kRotated)
    return;
  IRBuilder k{b};
  scf::ForOp::create(b, k.add(blk.y, k.mul(k.idx(blk.group), blk.z)),
                     k.idx(blk.tile), k.idx(blk.group * blk.tz), ValueRange{},
                     [&](OpBuilder &nb, Location l, Value t, ValueRange) {
                       ImplicitLocOpBuilder jb(l, nb);
                       vector::StoreOp::create(
                           jb, rotatedKeyRow(jb, stage, keyOf(jb, t), t),
                           kRotated->memref,
                           kRotated->elementIndices(jb, Value(), t, blk.dim0));
                       scf::YieldOp::create(jb);
                     });
  gpu::BarrierOp::create(b);
}

Value DecodeKeyRows::keyRow(ImplicitLocOpBuilder &b, Value stage, Value key,
                            Value t) const {
  if (!ropes)
    return rowOf(b, /*isKey=*/true, stage, t);
  if (!kRotated)
    return rotatedKeyRow(b, stage, key, t);
  return vector::LoadOp::create(
             b, VectorType::get({blk.vec}, b.getF32Type()), kRotated->memref,
             kRotated->elementIndices(b, Value(), t, blk.dim0))
      .getResult();
}

Value DecodeKeyRows::valueRow(ImplicitLocOpBuilder &b, Value stage,
                              Value t) const {
  return rowOf(b, /*isKey=*/false, stage, t);
}

std::pair<Value, Value> DecodeKeyRows::keyCodes(ImplicitLocOpBuilder &b,
                                                Value stage, Value t) const {
  Value scales;
  Value codes = rowOf(b, /*isKey=*/true, stage, t, /*scaled=*/false, &scales);
  return {codes, scales};
}
