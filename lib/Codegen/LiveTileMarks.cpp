//===- LiveTileMarks.cpp - Which K/V tiles a block found live -------------===//
#include "kvir/Codegen/LiveTileMarks.h"
#include "kvir/Codegen/IRBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace kvir::codegen;

void LiveTileMarks::clear(ImplicitLocOpBuilder &b) const {
  IRBuilder ir{b};
  for (int64_t slot = 0; slot < slots; ++slot)
    memref::StoreOp::create(b, ir.i32(0), buffer, ValueRange{ir.idx(slot)});
}

void LiveTileMarks::mark(ImplicitLocOpBuilder &b, Value index,
                         Value found) const {
  emitIf(b, found, [&](ImplicitLocOpBuilder &mb) {
    IRBuilder m{mb};
    memref::AtomicRMWOp::create(mb, arith::AtomicRMWKind::maxs,
                                m.toI32(m.add(index, m.idx(1))), buffer,
                                ValueRange{m.remU(index, m.idx(slots))});
  });
}

Value LiveTileMarks::isLive(ImplicitLocOpBuilder &b, Value index,
                            Value numTiles) const {
  IRBuilder ir{b};
  Value slot = memref::LoadOp::create(
      b, buffer, ValueRange{ir.remU(index, ir.idx(slots))});
  return arith::AndIOp::create(b, ir.lt(index, numTiles),
                               ir.eq(slot, ir.toI32(ir.add(index, ir.idx(1)))));
}
