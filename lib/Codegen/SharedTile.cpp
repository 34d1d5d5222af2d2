//===- SharedTile.cpp - Row-major tiles in shared memory ------------------===//
#include "kvir/Codegen/SharedTile.h"
#include "kvir/Codegen/IRBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace kvir::codegen;

TileLayout SharedTile::layout() const {
  auto type = cast<MemRefType>(memref.getType());
  TileLayout layout;
  layout.rows = rows;
  layout.cols = cols;
  layout.elementBits = type.getElementTypeBitWidth();
  layout.stages = type.getRank() == 3 ? type.getDimSize(0) : 1;
  layout.swizzle = swizzle;
  layout.chunkBytes = chunkBytes;
  return layout;
}

int64_t SharedTile::chunkElements() const { return layout().chunkElements(); }

/// The physical chunk of logical chunk `chunk` in `row`.
static Value physicalChunk(ImplicitLocOpBuilder &b, const SharedTile &tile,
                           Value row, Value chunk) {
  return tile.layout().emitPhysicalChunk(b, row, chunk);
}

/// The indices of the element at offset `offset` of a stage, the memref's
/// [rows, cols] read as the flat array it is (a hardware swizzle moves
/// elements across rows: its column blocks are stored one after another).
static SmallVector<Value> flatIndices(ImplicitLocOpBuilder &b,
                                      const SharedTile &tile, Value stage,
                                      Value offset) {
  IRBuilder ir{b};
  SmallVector<Value> indices;
  if (stage)
    indices.push_back(stage);
  indices.append(
      {ir.divU(offset, ir.idx(tile.cols)), ir.remU(offset, ir.idx(tile.cols))});
  return indices;
}

SmallVector<Value> SharedTile::chunkIndices(ImplicitLocOpBuilder &b,
                                            Value stage, Value row,
                                            Value chunk) const {
  IRBuilder ir{b};
  if (isHardwareSwizzle(swizzle))
    return elementIndices(b, stage, row,
                          ir.mul(chunk, ir.idx(chunkElements())));
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
  if (isHardwareSwizzle(swizzle))
    return flatIndices(b, *this, stage,
                       layout().emitElementOffset(b, Value(), row, col));
  if (swizzle == Swizzle::None) {
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
  return swizzle == Swizzle::XorChunks && layout().xorSpan() == 8;
}

Value SharedTile::stageOffset(ImplicitLocOpBuilder &b, Value stage) const {
  IRBuilder ir{b};
  if (!stage)
    return ir.idx(0);
  return ir.mul(stage, ir.idx(rows * cols));
}

Value SharedTile::laneOffset(ImplicitLocOpBuilder &b, Value row,
                             Value chunk) const {
  assert(hasLinearSwizzle() && "lane offsets need whole groups of 8 chunks");
  IRBuilder ir{b};
  Value phys = physicalChunk(b, *this, row, chunk);
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
