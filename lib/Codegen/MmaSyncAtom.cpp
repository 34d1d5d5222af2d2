//===- MmaSyncAtom.cpp - mma.sync m16n8k16 fed by ldmatrix ----------------===//
#include "kvir/Codegen/MmaSyncAtom.h"
#include "kvir/Codegen/IRBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace kvir::codegen;

MmaSyncAtom::MmaSyncAtom(ImplicitLocOpBuilder &b, Type elementType,
                         Value lane)
    : MmaAtom(LaneFragment(b, layout(), lane)), elementType(elementType),
      lane(lane) {}

VectorType MmaSyncAtom::getAType() const {
  return VectorType::get({4, 2}, elementType);
}
VectorType MmaSyncAtom::getBType() const {
  return VectorType::get({2, 2}, elementType);
}
VectorType MmaSyncAtom::getAccType() const {
  return VectorType::get({2, 2}, Float32Type::get(elementType.getContext()));
}

std::optional<std::string>
MmaSyncAtom::whyNotOperand(const SharedTile &tile) const {
  TileLayout layout = tile.layout();
  if (layout.elementBits != 16)
    return "ldmatrix feeds mma.sync m16n8k16 16-bit elements, not " +
           std::to_string(layout.elementBits) + "-bit ones";
  if (layout.chunkBytes != 16)
    return "ldmatrix reads rows of 16-byte chunks, not " +
           std::to_string(layout.chunkBytes) + "-byte ones";
  if (layout.swizzle != Swizzle::None && layout.swizzle != Swizzle::XorChunks)
    return "ldmatrix addresses of the " +
           stringifySwizzle(layout.swizzle).str() +
           " swizzle are not generated; the mma.sync kernels lay tiles out "
           "as xor-chunks";
  return std::nullopt;
}

/// The lane's share of an ldmatrix.x4 over a 16 x 16 block: row r = lane % 8
/// of matrix j = lane / 8, the four matrices stacked down the rows by one
/// bit of j (the low bit when `rowsByLowBit`) and across the 8-element
/// chunks by the other. Returns (row within the block, chunk within it).
static std::pair<Value, Value> x4Lane(ImplicitLocOpBuilder &b, Value lane,
                                      bool rowsByLowBit) {
  IRBuilder ir{b};
  Value j = ir.divU(lane, ir.idx(8)), r = ir.remU(lane, ir.idx(8));
  Value low = ir.remU(j, ir.idx(2)), high = ir.divU(j, ir.idx(2));
  return {ir.add(r, ir.mul(rowsByLowBit ? low : high, ir.idx(8))),
          rowsByLowBit ? high : low};
}

/// ldmatrix.x4 of the 16 x 16 block at (row0, colBase + col0) (row0 a
/// multiple of 8, col0 of 16, colBase of 64): lanes 8j .. 8j + 7 give the 8
/// row addresses of matrix j; register j of lane l holds row l / 4,
/// elements 2 (l % 4) and + 1 of matrix j (transposed: column l / 4, rows
/// 2 (l % 4) and + 1).
Value MmaSyncAtom::ldmatrixX4(ImplicitLocOpBuilder &b, const SharedTile &tile,
                              Value stage, Value row0, int64_t col0,
                              bool rowsByLowBit, bool transpose,
                              Value colBase) const {
  IRBuilder ir{b};
  auto [laneRow, laneChunk] = x4Lane(b, lane, rowsByLowBit);
  int64_t chunk0 = col0 / tile.chunkElements();
  if (!tile.hasLinearSwizzle()) {
    Value chunk = ir.add(ir.idx(chunk0), laneChunk);
    if (colBase)
      chunk = ir.add(chunk, ir.divU(colBase, ir.idx(tile.chunkElements())));
    SmallVector<Value> indices =
        tile.chunkIndices(b, stage, ir.add(row0, laneRow), chunk);
    return nvgpu::LdMatrixOp::create(b, getAType(), tile.memref, indices,
                                     transpose, /*numTiles=*/4);
  }
  // Rows of whole 8-chunk groups: the element offset of the lane's row
  // address is ((stage base + lane base) ^ 8 (chunk0 % 8)) + row0 * cols +
  // 64 (chunk0 / 8), with a lane base computed once, so that every
  // ldmatrix of a loop costs one xor instead of a live address register.
  Value offset = arith::XOrIOp::create(
      b, ir.add(tile.stageOffset(b, stage), tile.laneOffset(b, laneRow, laneChunk)),
      ir.idx(tile.chunkElements() * (chunk0 % 8)));
  offset = ir.add(offset, ir.add(ir.mul(row0, ir.idx(tile.cols)),
                                 ir.idx(8 * tile.chunkElements() * (chunk0 / 8))));
  // A whole group of 8 chunks leaves the swizzle's xor alone.
  if (colBase)
    offset = ir.add(offset, colBase);
  return nvgpu::LdMatrixOp::create(b, getAType(), tile.flatView(b),
                                   ValueRange{offset}, transpose,
                                   /*numTiles=*/4);
}

std::pair<Value, Value> MmaSyncAtom::splitX4(ImplicitLocOpBuilder &b,
                                             Value v) const {
  auto half = [&](int64_t row) -> Value {
    return vector::ExtractStridedSliceOp::create(
        b, v, ArrayRef<int64_t>{row, 0}, ArrayRef<int64_t>{2, 2},
        ArrayRef<int64_t>{1, 1});
  };
  return {half(0), half(2)};
}

Value MmaSyncAtom::loadA(ImplicitLocOpBuilder &b, const SharedTile &tile,
                         Value stage, Value row0, int64_t k0) const {
  // Matrices: rows 0-7 / 8-15 (j % 2) by k 0-7 / 8-15 (j / 2): a0a1, a2a3,
  // a4a5, a6a7.
  return ldmatrixX4(b, tile, stage, row0, k0, /*rowsByLowBit=*/true,
                    /*transpose=*/false);
}

std::pair<Value, Value> MmaSyncAtom::loadBRows(ImplicitLocOpBuilder &b,
                                               const SharedTile &tile,
                                               Value stage, Value n0,
                                               int64_t k0) const {
  // Matrices: n 0-7 / 8-15 (j / 2) by k 0-7 / 8-15 (j % 2): (b0b1, b2b3) of
  // the first n8 fragment, then of the second.
  return splitX4(b, ldmatrixX4(b, tile, stage, n0, k0,
                               /*rowsByLowBit=*/false, /*transpose=*/false));
}

std::pair<Value, Value> MmaSyncAtom::loadBCols(ImplicitLocOpBuilder &b,
                                               const SharedTile &tile,
                                               Value stage, Value k0,
                                               int64_t n0, Value nBase) const {
  // Transposed matrices: k 0-7 / 8-15 (j % 2) by n 0-7 / 8-15 (j / 2); a
  // lane receives k = 2 (l % 4) and + 1 at n = l / 4, the B layout.
  return splitX4(b, ldmatrixX4(b, tile, stage, k0, n0, /*rowsByLowBit=*/true,
                               /*transpose=*/true, nBase));
}

Value MmaSyncAtom::mma(ImplicitLocOpBuilder &b, Value a, Value bFrag,
                       Value acc) const {
  if (!elementType.isBF16())
    return nvgpu::MmaSyncOp::create(b, a, bFrag, acc,
                                    ArrayRef<int64_t>{16, 8, 16});
  // nvgpu.mma.sync cannot deduce bf16 PTX types in MLIR 22: pack each pair
  // of a fragment row into a 32-bit register (the lower element in the low
  // half, as the PTX fragment layout has it) and issue nvvm.mma.sync.
  auto registers = [&](Value frag) {
    auto type = cast<VectorType>(frag.getType());
    SmallVector<Value> regs;
    for (int64_t r = 0; r < type.getDimSize(0); ++r) {
      Value row = vector::ExtractOp::create(b, frag, ArrayRef<int64_t>{r});
      Value packed = vector::BitCastOp::create(
          b, VectorType::get({1}, b.getI32Type()), row);
      regs.push_back(vector::ExtractOp::create(b, packed, ArrayRef<int64_t>{0}));
    }
    return regs;
  };
  SmallVector<Value> c;
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 2; ++j)
      c.push_back(vector::ExtractOp::create(b, acc, ArrayRef<int64_t>{i, j}));
  Type f32 = b.getF32Type();
  auto resultType = LLVM::LLVMStructType::getLiteral(b.getContext(),
                                                     {f32, f32, f32, f32});
  Value d = NVVM::MmaOp::create(
      b, resultType, registers(a), registers(bFrag), c,
      ArrayRef<int64_t>{16, 8, 16}, std::nullopt, std::nullopt,
      std::array<NVVM::MMATypes, 2>{NVVM::MMATypes::bf16, NVVM::MMATypes::bf16},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                     NVVM::MMALayout::col});
  SmallVector<Value> elements;
  for (int64_t i = 0; i < 4; ++i)
    elements.push_back(LLVM::ExtractValueOp::create(b, d, i));
  return vector::FromElementsOp::create(b, getAccType(), elements);
}

Value MmaSyncAtom::accumulatorsToA(ImplicitLocOpBuilder &b, Value acc0,
                                   Value acc1) const {
  VectorType half = getBType();
  Value a =
      arith::ConstantOp::create(b, getAType(), b.getZeroAttr(getAType()));
  Value t0 = arith::TruncFOp::create(b, half, acc0);
  Value t1 = arith::TruncFOp::create(b, half, acc1);
  a = vector::InsertStridedSliceOp::create(b, t0, a, ArrayRef<int64_t>{0, 0},
                                           ArrayRef<int64_t>{1, 1});
  return vector::InsertStridedSliceOp::create(b, t1, a, ArrayRef<int64_t>{2, 0},
                                              ArrayRef<int64_t>{1, 1});
}
