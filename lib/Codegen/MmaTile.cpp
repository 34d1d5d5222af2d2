//===- MmaTile.cpp - Tensor-core fragments of m16n8k16 --------------------===//
#include "kvir/Codegen/MmaTile.h"
#include "kvir/Codegen/IRBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace kvir::codegen;

MmaTile::MmaTile(ImplicitLocOpBuilder &b, Type elementType, Value lane)
    : b(b), elementType(elementType), lane(lane) {
  IRBuilder ir{b};
  group = ir.divU(lane, ir.idx(4));
  threadInGroup = ir.remU(lane, ir.idx(4));
}

VectorType MmaTile::getAType() const {
  return VectorType::get({4, 2}, elementType);
}
VectorType MmaTile::getBType() const {
  return VectorType::get({2, 2}, elementType);
}
VectorType MmaTile::getAccType() const {
  return VectorType::get({2, 2}, Float32Type::get(b.getContext()));
}

/// ldmatrix.x4: lanes 8j .. 8j + 7 give the 8 row addresses of matrix j;
/// register j of lane l holds row l / 4, elements 2 (l % 4) and + 1 of
/// matrix j (transposed: column l / 4, rows 2 (l % 4) and + 1).
Value MmaTile::ldmatrixX4(const SharedTile &tile, Value stage, Value row,
                          Value col, bool transpose) {
  IRBuilder ir{b};
  SmallVector<Value> indices = tile.chunkIndices(
      b, stage, row, ir.divU(col, ir.idx(tile.chunkElements())));
  return nvgpu::LdMatrixOp::create(b, getAType(), tile.memref, indices,
                                   transpose, /*numTiles=*/4);
}

std::pair<Value, Value> MmaTile::splitX4(Value v) {
  auto half = [&](int64_t row) -> Value {
    return vector::ExtractStridedSliceOp::create(
        b, v, ArrayRef<int64_t>{row, 0}, ArrayRef<int64_t>{2, 2},
        ArrayRef<int64_t>{1, 1});
  };
  return {half(0), half(2)};
}

Value MmaTile::loadA(const SharedTile &tile, Value stage, Value row0,
                     Value k0) {
  // Matrices: rows 0-7 / 8-15 (j % 2) by k 0-7 / 8-15 (j / 2): a0a1, a2a3,
  // a4a5, a6a7.
  IRBuilder ir{b};
  Value j = ir.divU(lane, ir.idx(8)), r = ir.remU(lane, ir.idx(8));
  Value row = ir.add(ir.add(row0, r), ir.mul(ir.remU(j, ir.idx(2)), ir.idx(8)));
  Value k = ir.add(k0, ir.mul(ir.divU(j, ir.idx(2)), ir.idx(8)));
  return ldmatrixX4(tile, stage, row, k, /*transpose=*/false);
}

std::pair<Value, Value> MmaTile::loadBRows(const SharedTile &tile,
                                           Value stage, Value n0, Value k0) {
  // Matrices: n 0-7 / 8-15 (j / 2) by k 0-7 / 8-15 (j % 2): (b0b1, b2b3) of
  // the first n8 fragment, then of the second.
  IRBuilder ir{b};
  Value j = ir.divU(lane, ir.idx(8)), r = ir.remU(lane, ir.idx(8));
  Value n = ir.add(ir.add(n0, r), ir.mul(ir.divU(j, ir.idx(2)), ir.idx(8)));
  Value k = ir.add(k0, ir.mul(ir.remU(j, ir.idx(2)), ir.idx(8)));
  return splitX4(ldmatrixX4(tile, stage, n, k, /*transpose=*/false));
}

std::pair<Value, Value> MmaTile::loadBCols(const SharedTile &tile,
                                           Value stage, Value k0, Value n0) {
  // Transposed matrices: k 0-7 / 8-15 (j % 2) by n 0-7 / 8-15 (j / 2); a
  // lane receives k = 2 (l % 4) and + 1 at n = l / 4, the B layout.
  IRBuilder ir{b};
  Value j = ir.divU(lane, ir.idx(8)), r = ir.remU(lane, ir.idx(8));
  Value k = ir.add(ir.add(k0, r), ir.mul(ir.remU(j, ir.idx(2)), ir.idx(8)));
  Value n = ir.add(n0, ir.mul(ir.divU(j, ir.idx(2)), ir.idx(8)));
  return splitX4(ldmatrixX4(tile, stage, k, n, /*transpose=*/true));
}

Value MmaTile::mma(Value a, Value bFrag, Value acc) {
  return nvgpu::MmaSyncOp::create(b, a, bFrag, acc,
                                  ArrayRef<int64_t>{16, 8, 16});
}

Value MmaTile::zeroAcc() {
  return arith::ConstantOp::create(
      b, getAccType(), DenseElementsAttr::get(getAccType(), 0.0f));
}

Value MmaTile::accumulatorsToA(Value acc0, Value acc1) {
  VectorType half = getBType();
  Value a = arith::ConstantOp::create(
      b, getAType(), b.getZeroAttr(getAType()));
  Value t0 = arith::TruncFOp::create(b, half, acc0);
  Value t1 = arith::TruncFOp::create(b, half, acc1);
  a = vector::InsertStridedSliceOp::create(b, t0, a, ArrayRef<int64_t>{0, 0},
                                           ArrayRef<int64_t>{1, 1});
  return vector::InsertStridedSliceOp::create(b, t1, a, ArrayRef<int64_t>{2, 0},
                                              ArrayRef<int64_t>{1, 1});
}

std::pair<Value, Value> MmaTile::accCoord(int64_t i, int64_t j) {
  IRBuilder ir{b};
  return {ir.add(group, ir.idx(8 * i)),
          ir.add(ir.mul(threadInGroup, ir.idx(2)), ir.idx(j))};
}
