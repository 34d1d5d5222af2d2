//===- PagedAccess.cpp - Table forms, layouts and dequantization ----------===//
#include "LoweringUtils.h"


using namespace mlir;
using namespace kvir::kv;
using namespace kvir::kv::loops;

FailureOr<KVAccess> KVAccess::get(Operation *user, Value kv) {
  KVAccess access;
  if (auto view = kv.getDefiningOp<PagedViewOp>()) {
    access.paged = PagedOperands::fromView(view);
    return access;
  }
  if (auto view = kv.getDefiningOp<RaggedViewOp>()) {
    access.raggedK = view.getK();
    access.raggedV = view.getV();
    access.raggedIndptr = view.getKvIndptr();
    return access;
  }
  return user->emitOpError()
         << "kv-to-loops needs its KV operand to be defined by kv.paged_view "
         << "or kv.ragged_view in the same function";
}

Value KVAccess::kvLen(ImplicitLocOpBuilder &b, Value req) const {
  if (!isRagged())
    return emitKvLen(b, paged, req);
  Value next = arith::AddIOp::create(b, req, indexConst(b, 1));
  return arith::SubIOp::create(b, loadIndex(b, raggedIndptr, next),
                               loadIndex(b, raggedIndptr, req));
}

std::pair<Value, Value> KVAccess::locate(ImplicitLocOpBuilder &b, Value req,
                                         Value token) const {
  return emitLocate(b, paged, req, token);
}

Value KVAccess::pool(PoolRole role) const { return paged.pool(role); }

SmallVector<Value> KVAccess::poolIndices(ImplicitLocOpBuilder &b,
                                         PoolRole role, Value page, Value slot,
                                         Value head, Value dim) const {
  return emitPoolIndices(b, paged.type, role, page, slot, head, dim);
}

Value KVAccess::load(ImplicitLocOpBuilder &b, PoolRole role, Value req,
                     Value token, Value head, Value dim) const {
  if (isRagged()) {
    Value row = arith::AddIOp::create(b, loadIndex(b, raggedIndptr, req), token);
    Value buffer = role == PoolRole::K ? raggedK : raggedV;
    return toF32(b, memref::LoadOp::create(b, buffer,
                                           ValueRange{row, head, dim}));
  }
  auto [page, slot] = locate(b, req, token);
  Value raw = memref::LoadOp::create(
      b, pool(role), poolIndices(b, role, page, slot, head, dim));
  Value value = toF32(b, raw);
  switch (paged.type.getQuant()) {
  case Quant::none:
    return value;
  case Quant::int8_group: {
    PoolRole scaleRole = role == PoolRole::K ? PoolRole::KScale : PoolRole::VScale;
    Value group = arith::DivUIOp::create(
        b, dim, indexConst(b, paged.type.getQuantGroup()));
    Value scale = memref::LoadOp::create(
        b, pool(scaleRole), poolIndices(b, scaleRole, page, slot, head, group));
    return arith::MulFOp::create(b, value, toF32(b, scale));
  }
  case Quant::fp8_e4m3:
  case Quant::fp8_e5m2:
    // An MLA cache is one latent tensor: ckv and kpe share k_scale.
    return arith::MulFOp::create(
        b, value, role == PoolRole::K || paged.type.isMla() ? paged.kScale : paged.vScale);
  }
  llvm_unreachable("unknown quantization");
}
