//===- PagedAccess.cpp - Table forms, layouts and dequantization ----------===//
#include "LoweringUtils.h"

#include "mlir/Dialect/Affine/Utils.h"

using namespace mlir;
using namespace kvir::kv;
using namespace kvir::kv::loops;

FailureOr<KVAccess> KVAccess::get(Operation *user, Value kv) {
  KVAccess access;
  if (auto view = kv.getDefiningOp<PagedViewOp>()) {
    access.pagedType = view.getType();
    access.pools = llvm::to_vector(view.getPools());
    access.tables = llvm::to_vector(view.getTables());
    access.scales = llvm::to_vector(view.getScales());
    access.kScale = view.getKScale();
    access.vScale = view.getVScale();
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
  Value one = indexConst(b, 1);
  if (isRagged()) {
    Value next = arith::AddIOp::create(b, req, one);
    return arith::SubIOp::create(b, loadIndex(b, raggedIndptr, next),
                                 loadIndex(b, raggedIndptr, req));
  }
  if (pagedType.getTable() != TableForm::csr)
    return loadIndex(b, tables[1], req);
  // kv_len = page_size * (n - 1) + last_page_len for n > 0 pages, else 0.
  Value start = loadIndex(b, tables[0], req);
  Value end = loadIndex(b, tables[0], arith::AddIOp::create(b, req, one));
  Value numPages = arith::SubIOp::create(b, end, start);
  Value last = loadIndex(b, tables[2], req);
  Value full = arith::MulIOp::create(
      b, arith::SubIOp::create(b, numPages, one),
      indexConst(b, pagedType.getPageSize()));
  Value len = arith::AddIOp::create(b, full, last);
  Value empty = arith::CmpIOp::create(b, arith::CmpIPredicate::sle, numPages,
                                      indexConst(b, 0));
  return arith::SelectOp::create(b, empty, indexConst(b, 0), len);
}

std::pair<Value, Value> KVAccess::locate(ImplicitLocOpBuilder &b, Value req,
                                         Value token) const {
  Value pageSize = indexConst(b, pagedType.getPageSize());
  Value logicalPage = arith::DivUIOp::create(b, token, pageSize);
  Value slot = arith::RemUIOp::create(b, token, pageSize);
  Value page;
  switch (pagedType.getTable()) {
  case TableForm::csr: {
    Value first = loadIndex(b, tables[0], req);
    page = loadIndex(b, tables[1],
                     ValueRange{arith::AddIOp::create(b, first, logicalPage)});
    return {page, slot};
  }
  case TableForm::block_table:
    page = loadIndex(b, tables[0], {req, logicalPage});
    return {page, slot};
  case TableForm::token_table:
  case TableForm::token_offset: {
    // The table yields a token index into the pool's token axis.
    Value tokenIndex =
        pagedType.getTable() == TableForm::token_table
            ? arith::AddIOp::create(b, loadIndex(b, tables[0], {req, logicalPage}),
                                    slot)
            : arith::AddIOp::create(b, loadIndex(b, tables[0], req), token);
    return {arith::DivUIOp::create(b, tokenIndex, pageSize),
            arith::RemUIOp::create(b, tokenIndex, pageSize)};
  }
  }
  llvm_unreachable("unknown table form");
}

Value KVAccess::pool(PoolRole role) const {
  if (role == PoolRole::KScale || role == PoolRole::VScale)
    return scales[getPoolOperandIndex(pagedType, role)];
  return pools[getPoolOperandIndex(pagedType, role)];
}

SmallVector<Value> KVAccess::poolIndices(ImplicitLocOpBuilder &b,
                                         PoolRole role, Value page, Value slot,
                                         Value head, Value dim) const {
  bool isValue = role == PoolRole::V || role == PoolRole::VScale;
  Value kvCoord = indexConst(b, isValue ? 1 : 0);
  AffineMap map = getPoolIndexMap(pagedType, role);
  std::optional<SmallVector<Value, 8>> indices = affine::expandAffineMap(
      b, b.getLoc(), map, ValueRange{page, kvCoord, slot, head, dim});
  assert(indices && "layout maps are pure affine");
  return SmallVector<Value>(indices->begin(), indices->end());
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
  switch (pagedType.getQuant()) {
  case Quant::none:
    return value;
  case Quant::int8_group: {
    PoolRole scaleRole = role == PoolRole::K ? PoolRole::KScale : PoolRole::VScale;
    Value group = arith::DivUIOp::create(
        b, dim, indexConst(b, pagedType.getQuantGroup()));
    Value scale = memref::LoadOp::create(
        b, pool(scaleRole), poolIndices(b, scaleRole, page, slot, head, group));
    return arith::MulFOp::create(b, value, toF32(b, scale));
  }
  case Quant::fp8_e4m3:
  case Quant::fp8_e5m2:
    // An MLA cache is one latent tensor: ckv and kpe share k_scale.
    return arith::MulFOp::create(
        b, value, role == PoolRole::K || pagedType.isMla() ? kScale : vScale);
  }
  llvm_unreachable("unknown quantization");
}
