//===- Visibility.cpp - Which keys a query row sees -----------------------===//
#include "kvir/Dialect/KV/Utils/Visibility.h"

#include "kvir/Dialect/KV/Utils/PagedAddressing.h"
#include "kvir/Dialect/KV/Utils/Search.h"

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

Value kvir::kv::emitCascadeRowPosition(ImplicitLocOpBuilder &b, Value row,
                                       ArrayRef<Value> qoIndptrs,
                                       ArrayRef<PagedOperands> levels) {
  assert(qoIndptrs.size() == levels.size() && !levels.empty());
  Value position = cst(b, 0);
  for (size_t l = 0; l < levels.size(); ++l) {
    Value indptr = qoIndptrs[l];
    const PagedOperands &level = levels[l];
    // The request holding `row`: the last offset at or below it, when
    // that is a request's start (not indptr[B]) and the row is past it
    // (indptr[0] > row only in a malformed table).
    Value entries = memref::DimOp::create(b, indptr, 0);
    Value last = emitLastAtOrBelow(
        b, entries,
        [&](ImplicitLocOpBuilder &ib, Value i) {
          return loadIndexValue(ib, indptr, i);
        },
        row);
    Value requests = arith::SubIOp::create(b, entries, cst(b, 1));
    Value inside = arith::AndIOp::create(
        b, arith::CmpIOp::create(b, arith::CmpIPredicate::slt, last, requests),
        arith::CmpIOp::create(b, arith::CmpIPredicate::sle,
                              loadIndexValue(b, indptr, last), row));
    // Outside: read request 0's table (in bounds when there is one) and
    // drop it.
    Value request = arith::SelectOp::create(b, inside, last, cst(b, 0));
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
      // (Clamped: a row past the last request reads indptr[B], unused.)
      Value next = arith::MinSIOp::create(
          b, arith::AddIOp::create(b, last, cst(b, 1)), requests);
      Value end = arith::SelectOp::create(
          b, inside, loadIndexValue(b, indptr, next),
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

FrameRow kvir::kv::emitFrameRow(ImplicitLocOpBuilder &b, Value frameIndptr,
                                Value framePositions, Value row,
                                Value position) {
  // The last request starting at or below the row: empty requests share
  // their start with the next one, and the search over the starts alone
  // stays in bounds.
  Value requests = arith::SubIOp::create(
      b, memref::DimOp::create(b, frameIndptr, 0), cst(b, 1));
  FrameRow frame;
  frame.request = emitLastAtOrBelow(
      b, requests,
      [&](ImplicitLocOpBuilder &ib, Value i) {
        return loadIndexValue(ib, frameIndptr, i);
      },
      row);
  frame.position = loadIndexValue(b, framePositions, row);
  frame.keyShift = arith::SubIOp::create(b, frame.position, position);
  return frame;
}
