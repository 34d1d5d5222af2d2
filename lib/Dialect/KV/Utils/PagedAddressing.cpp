//===- PagedAddressing.cpp - IR for finding a token in a paged cache ------===//
#include "kvir/Dialect/KV/Utils/PagedAddressing.h"

#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <optional>

using namespace mlir;
using namespace kvir::kv;

PagedOperands PagedOperands::fromView(PagedViewOp view) {
  PagedOperands kv;
  kv.type = view.getType();
  kv.pools = llvm::to_vector(view.getPools());
  kv.tables = llvm::to_vector(view.getTables());
  kv.scales = llvm::to_vector(view.getScales());
  kv.kScale = view.getKScale();
  kv.vScale = view.getVScale();
  return kv;
}

SmallVector<Value> PagedOperands::flatten() const {
  SmallVector<Value> values(pools);
  llvm::append_range(values, tables);
  llvm::append_range(values, scales);
  if (kScale)
    values.append({kScale, vScale});
  return values;
}

PagedOperands PagedOperands::withValues(ValueRange values) const {
  PagedOperands kv;
  kv.type = type;
  unsigned next = 0;
  auto take = [&](size_t n, SmallVector<Value> &into) {
    for (size_t i = 0; i < n; ++i)
      into.push_back(values[next++]);
  };
  take(pools.size(), kv.pools);
  take(tables.size(), kv.tables);
  take(scales.size(), kv.scales);
  // fp8 views always carry their two scales (the view's verifier).
  if (type.isFp8()) {
    kv.kScale = values[next++];
    kv.vScale = values[next++];
  }
  return kv;
}

PagedOperands PagedOperands::fromFlattened(PagedType type,
                                          ValueRange values) {
  PagedOperands shape;
  shape.type = type;
  shape.pools.resize(type.getNumPools());
  shape.tables.resize(type.getNumTables());
  shape.scales.resize(type.getNumScalePools());
  return shape.withValues(values);
}

Value PagedOperands::pool(PoolRole role) const {
  if (role == PoolRole::KScale || role == PoolRole::VScale)
    return scales[getPoolOperandIndex(type, role)];
  return pools[getPoolOperandIndex(type, role)];
}

Value kvir::kv::loadIndexValue(ImplicitLocOpBuilder &b, Value memref,
                               ValueRange indices) {
  Value v = memref::LoadOp::create(b, memref, indices);
  return arith::IndexCastOp::create(b, b.getIndexType(), v);
}

static Value cst(ImplicitLocOpBuilder &b, int64_t v) {
  return arith::ConstantIndexOp::create(b, v);
}

Value kvir::kv::emitTableBase(ImplicitLocOpBuilder &b, const PagedOperands &kv,
                              Value req) {
  switch (kv.type.getTable()) {
  case TableForm::csr:
  case TableForm::token_offset:
    return loadIndexValue(b, kv.tables[0], req);
  case TableForm::block_table:
  case TableForm::token_table:
    return cst(b, 0);
  }
  llvm_unreachable("unknown table form");
}

RequestTable kvir::kv::emitRequestTable(ImplicitLocOpBuilder &b,
                                        const PagedOperands &kv, Value req) {
  Value base = emitTableBase(b, kv, req);
  if (kv.type.getTable() != TableForm::csr)
    return {loadIndexValue(b, kv.tables[1], req), base};
  // kv_len = page_size * (n - 1) + last_page_len for n > 0 pages, else 0.
  Value one = cst(b, 1);
  Value end = loadIndexValue(b, kv.tables[0],
                             ValueRange{arith::AddIOp::create(b, req, one)});
  Value numPages = arith::SubIOp::create(b, end, base);
  Value last = loadIndexValue(b, kv.tables[2], req);
  Value full = arith::MulIOp::create(b, arith::SubIOp::create(b, numPages, one),
                                     cst(b, kv.type.getPageSize()));
  Value len = arith::AddIOp::create(b, full, last);
  Value empty = arith::CmpIOp::create(b, arith::CmpIPredicate::sle, numPages,
                                      cst(b, 0));
  return {arith::SelectOp::create(b, empty, cst(b, 0), len), base};
}

Value kvir::kv::emitKvLen(ImplicitLocOpBuilder &b, const PagedOperands &kv,
                          Value req) {
  if (kv.type.getTable() != TableForm::csr)
    return loadIndexValue(b, kv.tables[1], req);
  return emitRequestTable(b, kv, req).kvLen;
}

/// Which of a table form's tables holds its page entries (none for
/// token_offset).
static std::optional<unsigned> pageEntryTable(TableForm form) {
  switch (form) {
  case TableForm::csr:
    return 1; // kv_indices
  case TableForm::block_table:
  case TableForm::token_table:
    return 0;
  case TableForm::token_offset:
    break;
  }
  return std::nullopt;
}

Type kvir::kv::getPageEntryType(PagedType type, TypeRange flatTypes) {
  std::optional<unsigned> entries = pageEntryTable(type.getTable());
  if (!entries)
    return Type();
  unsigned table = *entries;
  // Without the operands' types (shared-memory estimates before a lowering
  // knows them): i32, four bytes less per entry than an i64 table's.
  if (flatTypes.size() <= type.getNumPools() + table)
    return IntegerType::get(type.getContext(), 32);
  return cast<MemRefType>(flatTypes[type.getNumPools() + table])
      .getElementType();
}

std::pair<Value, SmallVector<Value>>
kvir::kv::emitPageEntryAddress(ImplicitLocOpBuilder &b, const PagedOperands &kv,
                               Value req, Value base, Value logicalPage) {
  std::optional<unsigned> table = pageEntryTable(kv.type.getTable());
  assert(table && "token_offset tables have no page entries");
  // CSR's entries of all requests are one array; the others a row each.
  if (kv.type.getTable() == TableForm::csr)
    return {kv.tables[*table], {arith::AddIOp::create(b, base, logicalPage)}};
  return {kv.tables[*table], {req, logicalPage}};
}

Value kvir::kv::emitPageEntry(ImplicitLocOpBuilder &b, const PagedOperands &kv,
                              Value req, Value base, Value logicalPage) {
  auto [table, indices] = emitPageEntryAddress(b, kv, req, base, logicalPage);
  return loadIndexValue(b, table, indices);
}

std::pair<Value, Value> kvir::kv::emitLocateFromEntry(ImplicitLocOpBuilder &b,
                                                      PagedType type,
                                                      Value entry, Value base,
                                                      Value token) {
  Value pageSize = cst(b, type.getPageSize());
  Value tokenIndex;
  switch (type.getTable()) {
  case TableForm::csr:
  case TableForm::block_table:
    return {entry, arith::RemUIOp::create(b, token, pageSize)};
  case TableForm::token_table:
    // The entry is the token index the page starts at.
    tokenIndex = arith::AddIOp::create(
        b, entry, arith::RemUIOp::create(b, token, pageSize));
    break;
  case TableForm::token_offset:
    tokenIndex = arith::AddIOp::create(b, base, token);
    break;
  }
  // Token-axis pools see token t as page t / page_size, slot t % page_size.
  return {arith::DivUIOp::create(b, tokenIndex, pageSize),
          arith::RemUIOp::create(b, tokenIndex, pageSize)};
}

std::pair<Value, Value> kvir::kv::emitLocate(ImplicitLocOpBuilder &b,
                                             const PagedOperands &kv, Value req,
                                             Value token) {
  Value base = emitTableBase(b, kv, req);
  Value entry;
  if (kv.type.getTable() != TableForm::token_offset) {
    Value logicalPage =
        arith::DivUIOp::create(b, token, cst(b, kv.type.getPageSize()));
    entry = emitPageEntry(b, kv, req, base, logicalPage);
  }
  return emitLocateFromEntry(b, kv.type, entry, base, token);
}

SmallVector<Value> kvir::kv::emitPoolIndices(ImplicitLocOpBuilder &b,
                                             PagedType type, PoolRole role,
                                             Value page, Value slot, Value head,
                                             Value dim) {
  bool isValue = role == PoolRole::V || role == PoolRole::VScale;
  Value kvCoord = cst(b, isValue ? 1 : 0);
  AffineMap map = getPoolIndexMap(type, role);
  std::optional<SmallVector<Value, 8>> indices = affine::expandAffineMap(
      b, b.getLoc(), map, ValueRange{page, kvCoord, slot, head, dim});
  assert(indices && "layout maps are pure affine");
  return SmallVector<Value>(indices->begin(), indices->end());
}

Value kvir::kv::emitLengthsBuffer(
    ImplicitLocOpBuilder &b, Value batch,
    function_ref<Value(ImplicitLocOpBuilder &, Value)> lengthOf) {
  Value buffer = memref::AllocOp::create(
      b, MemRefType::get({ShapedType::kDynamic}, b.getI32Type()),
      ValueRange{batch});
  scf::ForOp::create(
      b, arith::ConstantIndexOp::create(b, 0), batch,
      arith::ConstantIndexOp::create(b, 1), ValueRange{},
      [&](OpBuilder &nb, Location l, Value r, ValueRange) {
        ImplicitLocOpBuilder ib(l, nb);
        Value v =
            arith::IndexCastOp::create(ib, ib.getI32Type(), lengthOf(ib, r));
        memref::StoreOp::create(ib, v, buffer, ValueRange{r});
        scf::YieldOp::create(ib);
      });
  return buffer;
}
