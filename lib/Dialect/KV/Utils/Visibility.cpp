//===- Visibility.cpp - Which keys a query row sees -----------------------===//
#include "kvir/Dialect/KV/Utils/Visibility.h"

#include "kvir/Dialect/KV/Utils/PagedAddressing.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace kvir::kv;

static Value cst(ImplicitLocOpBuilder &b, int64_t v) {
  return arith::ConstantIndexOp::create(b, v);
}

Value kvir::kv::emitQueryPosition(ImplicitLocOpBuilder &b, Value kvLen,
                                  Value qoLen, Value row) {
  return arith::AddIOp::create(b, arith::SubIOp::create(b, kvLen, qoLen), row);
}

/// How many entries of the non-decreasing `indptr` are <= `row`, by
/// binary search: request count - 1 is the request holding `row` when the
/// count is in [1, requests].
static Value countEntriesAtOrBelow(ImplicitLocOpBuilder &b, Value indptr,
                                   Value row) {
  Value entries = memref::DimOp::create(b, indptr, 0);
  auto search = scf::WhileOp::create(
      b, TypeRange{b.getIndexType(), b.getIndexType()},
      ValueRange{cst(b, 0), entries},
      [&](OpBuilder &nb, Location l, ValueRange range) {
        ImplicitLocOpBuilder ib(l, nb);
        Value open = arith::CmpIOp::create(ib, arith::CmpIPredicate::slt,
                                           range[0], range[1]);
        scf::ConditionOp::create(ib, open, range);
      },
      [&](OpBuilder &nb, Location l, ValueRange range) {
        ImplicitLocOpBuilder ib(l, nb);
        Value lo = range[0], hi = range[1];
        Value mid = arith::DivUIOp::create(
            ib, arith::AddIOp::create(ib, lo, hi), cst(ib, 2));
        Value atOrBelow =
            arith::CmpIOp::create(ib, arith::CmpIPredicate::sle,
                                  loadIndexValue(ib, indptr, mid), row);
        Value nextLo = arith::SelectOp::create(
            ib, atOrBelow, arith::AddIOp::create(ib, mid, cst(ib, 1)), lo);
        Value nextHi = arith::SelectOp::create(ib, atOrBelow, hi, mid);
        scf::YieldOp::create(ib, ValueRange{nextLo, nextHi});
      });
  return search.getResult(0);
}

Value kvir::kv::emitCascadeRowPosition(ImplicitLocOpBuilder &b, Value row,
                                       ArrayRef<Value> qoIndptrs,
                                       ArrayRef<PagedOperands> levels) {
  assert(qoIndptrs.size() == levels.size() && !levels.empty());
  Value position = cst(b, 0);
  for (size_t l = 0; l < levels.size(); ++l) {
    Value indptr = qoIndptrs[l];
    const PagedOperands &level = levels[l];
    Value count = countEntriesAtOrBelow(b, indptr, row);
    Value requests = arith::SubIOp::create(
        b, memref::DimOp::create(b, indptr, 0), cst(b, 1));
    Value inside = arith::AndIOp::create(
        b,
        arith::CmpIOp::create(b, arith::CmpIPredicate::sge, count, cst(b, 1)),
        arith::CmpIOp::create(b, arith::CmpIPredicate::sle, count, requests));
    // Outside: read request 0's table (in bounds when there is one) and
    // drop it.
    Value request = arith::SelectOp::create(
        b, inside, arith::SubIOp::create(b, count, cst(b, 1)), cst(b, 0));
    Value keys = scf::IfOp::create(
                     b, inside,
                     [&](OpBuilder &nb, Location loc) {
                       ImplicitLocOpBuilder ib(loc, nb);
                       scf::YieldOp::create(ib, emitKvLen(ib, level, request));
                     },
                     [&](OpBuilder &nb, Location loc) {
                       ImplicitLocOpBuilder ib(loc, nb);
                       scf::YieldOp::create(ib, cst(ib, 0));
                     })
                     .getResult(0);
    position = arith::AddIOp::create(b, position, keys);
    if (l + 1 == levels.size()) {
      // Bottom-right: the request's last row sits at the last key.
      Value end =
          arith::SelectOp::create(b, inside, loadIndexValue(b, indptr, count),
                                  arith::AddIOp::create(b, row, cst(b, 1)));
      position = arith::SubIOp::create(b, position,
                                       arith::SubIOp::create(b, end, row));
    }
  }
  return position;
}

std::pair<Value, Value>
kvir::kv::emitVisibleKeyRange(ImplicitLocOpBuilder &b, Value position,
                              Value kvLen, bool causal,
                              std::optional<int64_t> windowLeft) {
  Value lo = cst(b, 0), hi = kvLen;
  if (causal)
    hi = arith::MinSIOp::create(b, hi,
                                arith::AddIOp::create(b, position, cst(b, 1)));
  if (windowLeft)
    lo = arith::MaxSIOp::create(
        b, lo, arith::SubIOp::create(b, position, cst(b, *windowLeft)));
  return {lo, hi};
}

Value kvir::kv::emitMaskBit(ImplicitLocOpBuilder &b, Value mask, Value offset,
                            Value row, Value key, Value kvLen) {
  Value bit =
      arith::AddIOp::create(b, arith::MulIOp::create(b, row, kvLen), key);
  if (cast<MemRefType>(mask.getType()).getElementType().isInteger(1))
    return memref::LoadOp::create(
        b, mask, ValueRange{arith::AddIOp::create(b, offset, bit)});
  // Bit k of the block is bit k % 8 of the block's byte k / 8.
  Value byteIndex = arith::AddIOp::create(
      b, offset, arith::DivUIOp::create(b, bit, cst(b, 8)));
  Value byte = memref::LoadOp::create(b, mask, ValueRange{byteIndex});
  Value shift = arith::IndexCastOp::create(
      b, b.getI32Type(), arith::RemUIOp::create(b, bit, cst(b, 8)));
  Value word = arith::ExtUIOp::create(b, b.getI32Type(), byte);
  return arith::TruncIOp::create(b, b.getI1Type(),
                                 arith::ShRUIOp::create(b, word, shift));
}

Value kvir::kv::emitMaskBlockSize(ImplicitLocOpBuilder &b, Value mask,
                                  Value qoLen, Value kvLen) {
  Value bits = arith::MulIOp::create(b, qoLen, kvLen);
  if (cast<MemRefType>(mask.getType()).getElementType().isInteger(1))
    return bits;
  return arith::DivUIOp::create(b, arith::AddIOp::create(b, bits, cst(b, 7)),
                                cst(b, 8));
}
