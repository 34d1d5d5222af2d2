//===- SharedTile.cpp - Row-major tiles in shared memory ------------------===//
#include "kvir/Codegen/SharedTile.h"
#include "kvir/Codegen/IRBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace kvir::codegen;

int64_t SharedTile::chunkElements() const {
  auto type = cast<MemRefType>(memref.getType());
  return chunkBytes * 8 / type.getElementTypeBitWidth();
}

/// The physical chunk of logical chunk `chunk` in `row`.
static Value physicalChunk(ImplicitLocOpBuilder &b, const SharedTile &tile,
                           Value row, Value chunk) {
  if (!tile.swizzled)
    return chunk;
  // Chunks permute within aligned groups of `span` that divide the row: a
  // row of 10 or 12 chunks (head dim 80 or 96) swizzles in pairs or fours,
  // never past its end.
  int64_t chunks = tile.chunksPerRow();
  int64_t span = std::min<int64_t>(8, chunks & -chunks);
  if (span <= 1)
    return chunk;
  IRBuilder ir{b};
  Value phase = arith::AndIOp::create(b, row, ir.idx(span - 1));
  return arith::XOrIOp::create(b, chunk, phase);
}

SmallVector<Value> SharedTile::chunkIndices(ImplicitLocOpBuilder &b,
                                            Value stage, Value row,
                                            Value chunk) const {
  IRBuilder ir{b};
  Value col = ir.mul(physicalChunk(b, *this, row, chunk),
                     ir.idx(chunkElements()));
  SmallVector<Value> indices;
  if (stage)
    indices.push_back(stage);
  indices.append({row, col});
  return indices;
}

SmallVector<Value> SharedTile::elementIndices(ImplicitLocOpBuilder &b,
                                              Value stage, Value row,
                                              Value col) const {
  if (!swizzled) {
    SmallVector<Value> indices;
    if (stage)
      indices.push_back(stage);
    indices.append({row, col});
    return indices;
  }
  IRBuilder ir{b};
  Value ce = ir.idx(chunkElements());
  SmallVector<Value> indices =
      chunkIndices(b, stage, row, ir.divU(col, ce));
  indices.back() = ir.add(indices.back(), ir.remU(col, ce));
  return indices;
}

bool SharedTile::hasLinearSwizzle() const {
  return swizzled && chunksPerRow() % 8 == 0;
}

Value SharedTile::stageOffset(ImplicitLocOpBuilder &b, Value stage) const {
  IRBuilder ir{b};
  if (!stage)
    return ir.idx(0);
  return ir.mul(stage, ir.idx(rows * cols));
}

Value SharedTile::laneOffset(ImplicitLocOpBuilder &b, Value row,
                             Value chunk) const {
  IRBuilder ir{b};
  Value phys = arith::XOrIOp::create(
      b, chunk, arith::AndIOp::create(b, row, ir.idx(7)));
  return ir.add(ir.mul(row, ir.idx(cols)),
                ir.mul(phys, ir.idx(chunkElements())));
}

Value SharedTile::flatView(ImplicitLocOpBuilder &b) const {
  auto type = cast<MemRefType>(memref.getType());
  SmallVector<ReassociationIndices> all(1);
  for (int64_t i = 0; i < type.getRank(); ++i)
    all[0].push_back(i);
  return memref::CollapseShapeOp::create(b, memref, all);
}
