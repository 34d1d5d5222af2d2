//===- AppendLowering.cpp - kv.append: RoPE, quantize, write through table ===//
#include "LoweringUtils.h"

#include "kvir/Codegen/Rope.h"

using namespace mlir;
using namespace kvir::kv;
using namespace kvir::kv::loops;

/// Rotates buf[0, headDim) in place to `position` (its first rotary_dim
/// dims; the rest stay).
static void applyRope(ImplicitLocOpBuilder &b, RopeAttr rope, int64_t headDim,
                      Value buf, Value position) {
  forLoop(b, indexConst(b, 0), indexConst(b, rope.getRotatedDims(headDim) / 2),
          [&](ImplicitLocOpBuilder &b, Value pair) {
            kvir::codegen::Rope r(b, rope, headDim,
                                  kvir::codegen::Rope::Flavor::exact);
            auto [da, db] = r.pairDims(pair);
            auto [c, s] = r.cosSin(pair, position);
            auto [ra, rb] = r.rotate(memref::LoadOp::create(b, buf, da),
                                     memref::LoadOp::create(b, buf, db), c, s);
            memref::StoreOp::create(b, ra, buf, da);
            memref::StoreOp::create(b, rb, buf, db);
          });
}

/// Writes buf[0, width) as token (page, slot), head `head` of `role`,
/// quantizing as the cache type says.
static void writeRow(ImplicitLocOpBuilder &b, const KVAccess &kv,
                     PoolRole role, Value page, Value slot, Value head,
                     Value buf, int64_t width) {
  PagedType type = kv.getPagedType();
  Value zero = indexConst(b, 0);
  Value pool = kv.pool(role);
  Type storageType = type.getStorageElementType();
  auto store = [&](ImplicitLocOpBuilder &b, Value value, Value d) {
    memref::StoreOp::create(b, value, pool,
                            kv.poolIndices(b, role, page, slot, head, d));
  };
  switch (type.getQuant()) {
  case Quant::none:
    forLoop(b, zero, indexConst(b, width),
            [&](ImplicitLocOpBuilder &b, Value d) {
              Value x = memref::LoadOp::create(b, buf, d);
              store(b, fromF32(b, x, storageType), d);
            });
    return;
  case Quant::fp8_e4m3:
  case Quant::fp8_e5m2: {
    Value scale = role == PoolRole::K ? kv.getKScale() : kv.getVScale();
    forLoop(b, zero, indexConst(b, width),
            [&](ImplicitLocOpBuilder &b, Value d) {
              Value x = memref::LoadOp::create(b, buf, d);
              Value scaled = arith::DivFOp::create(b, x, scale);
              store(b, f32ToFp8(b, scaled, storageType), d);
            });
    return;
  }
  case Quant::int8_group: {
    int64_t group = type.getQuantGroup();
    PoolRole scaleRole = role == PoolRole::K ? PoolRole::KScale : PoolRole::VScale;
    Value scalePool = kv.pool(scaleRole);
    Value groupSize = indexConst(b, group);
    forLoop(b, zero, indexConst(b, width / group), [&](ImplicitLocOpBuilder &b,
                                                       Value g) {
      Value first = arith::MulIOp::create(b, g, groupSize);
      Value last = arith::AddIOp::create(b, first, groupSize);
      Value amax = forLoop(b, first, last, ValueRange{f32Const(b, 0.0)},
                           [&](ImplicitLocOpBuilder &b, Value d,
                               ValueRange m) -> SmallVector<Value> {
                             Value x = memref::LoadOp::create(b, buf, d);
                             return {arith::MaximumFOp::create(
                                 b, m[0], math::AbsFOp::create(b, x))};
                           })[0];
      // scale = max(max|x| / 127, 1e-5), stored in the activation type; the
      // stored (rounded) scale is the one that quantizes, so dequantization
      // q * scale inverts exactly what was written.
      Value stored = fromF32(b, int8GroupScale(b, amax), type.getDtype());
      memref::StoreOp::create(
          b, stored, scalePool,
          kv.poolIndices(b, scaleRole, page, slot, head, g));
      Value s = toF32(b, stored);
      forLoop(b, first, last, [&](ImplicitLocOpBuilder &b, Value d) {
        Value x = memref::LoadOp::create(b, buf, d);
        store(b, int8Quantize(b, x, s), d);
      });
    });
    return;
  }
  }
}

LogicalResult loops::lowerAppend(ImplicitLocOpBuilder &b, AppendOp op) {
  FailureOr<KVAccess> kv = KVAccess::get(op, op.getKv());
  if (failed(kv))
    return failure();
  PagedType type = op.getKv().getType();
  // MLA: k is the latent ckv (the K role), v the rotary kpe (the V role).
  int64_t headDim = type.getHeadDim();
  int64_t headDimV = type.isMla() ? type.getPeDim() : type.getHeadDimV();
  Value zero = indexConst(b, 0);
  Value buf = memref::AllocOp::create(
      b, MemRefType::get({std::max(headDim, headDimV)}, b.getF32Type()),
      ValueRange{});
  Value nnz = memref::DimOp::create(b, op.getK(), 0);
  forLoop(b, zero, nnz, [&](ImplicitLocOpBuilder &b, Value i) {
    Value req = loadIndex(b, op.getBatchIndices(), i);
    Value pos = loadIndex(b, op.getPositions(), i);
    // Named values, not structured bindings: the lambda below captures them.
    std::pair<Value, Value> location = kv->locate(b, req, pos);
    Value page = location.first, slot = location.second;
    forLoop(b, zero, indexConst(b, type.getKvHeads()),
            [&](ImplicitLocOpBuilder &b, Value head) {
              auto gather = [&](Value source, int64_t width) {
                forLoop(b, zero, indexConst(b, width),
                        [&](ImplicitLocOpBuilder &b, Value d) {
                          Value x = memref::LoadOp::create(
                              b, source, ValueRange{i, head, d});
                          memref::StoreOp::create(b, toF32(b, x), buf, d);
                        });
              };
              gather(op.getK(), headDim);
              if (RopeAttr rope = op.getRopeAttr())
                applyRope(b, rope, headDim, buf, pos);
              writeRow(b, *kv, PoolRole::K, page, slot, head, buf, headDim);
              gather(op.getV(), headDimV);
              writeRow(b, *kv, PoolRole::V, page, slot, head, buf, headDimV);
            });
  });
  memref::DeallocOp::create(b, buf);
  return success();
}
