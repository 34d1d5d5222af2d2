//===- Visibility.cpp - Which keys a query row sees -----------------------===//
#include "kvir/Dialect/KV/Utils/Visibility.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;

static Value cst(ImplicitLocOpBuilder &b, int64_t v) {
  return arith::ConstantIndexOp::create(b, v);
}

Value kvir::kv::emitQueryPosition(ImplicitLocOpBuilder &b, Value kvLen,
                                  Value qoLen, Value row) {
  return arith::AddIOp::create(b, arith::SubIOp::create(b, kvLen, qoLen), row);
}

std::pair<Value, Value>
kvir::kv::emitVisibleKeyRange(ImplicitLocOpBuilder &b, Value position,
                              Value kvLen, bool causal,
                              std::optional<int64_t> windowLeft) {
  Value lo = cst(b, 0), hi = kvLen;
  if (causal)
    hi = arith::MinSIOp::create(
        b, hi, arith::AddIOp::create(b, position, cst(b, 1)));
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
  Value byteIndex =
      arith::AddIOp::create(b, offset, arith::DivUIOp::create(b, bit, cst(b, 8)));
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
