//===- WarpgroupProducts.cpp - Attention's products on wgmma --------------===//
#include "kvir/Codegen/WarpgroupProducts.h"
#include "kvir/Codegen/IRBuilder.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace kvir::codegen;

namespace {
/// The columns of one n-tile of the accumulator (FragmentLayout's atom).
constexpr int64_t kN8 = 8;
/// 16-bit elements in a 128-byte swizzle row: a K-major operand's column
/// block.
constexpr int64_t kBlockElements = 64;

WgmmaOperandTile operand(const SharedTile &tile) {
  return {tile.memref, tile.layout()};
}
} // namespace

WarpgroupProducts::WarpgroupProducts(ImplicitLocOpBuilder &b, Type elementType,
                                     int64_t kvTile, int64_t headDimV,
                                     Value warpgroupRow0, Value thread)
    : scoreAtom(b, elementType, kvTile, thread),
      valueAtom(b, elementType, headDimV, thread),
      warpgroupRow0(warpgroupRow0) {}

std::optional<std::string> WarpgroupProducts::whyNot(Type elementType,
                                                     int64_t kvTile,
                                                     int64_t headDim,
                                                     int64_t headDimV) {
  if (!elementType.isF16() && !elementType.isBF16())
    return std::string("wgmma multiplies f16 or bf16 tiles here");
  if (headDim % kBlockElements || headDimV % kBlockElements)
    return "head dims " + std::to_string(headDim) + " / " +
           std::to_string(headDimV) +
           " are not whole 64-element blocks of the 128-byte swizzle";
  if (headDimV > 256)
    return "a value dim of " + std::to_string(headDimV) +
           " is wider than one wgmma's 256 columns";
  if (kvTile % WgmmaAtom::kK || kvTile > 256)
    return "a " + std::to_string(kvTile) +
           "-key tile is not whole k16 steps of at most 256 keys";
  return std::nullopt;
}

Value WarpgroupProducts::toAccumulator(ImplicitLocOpBuilder &b,
                                       const WgmmaAtom &atom,
                                       ArrayRef<Value> fragments) {
  assert(int64_t(fragments.size()) == atom.getN() / kN8 &&
         "one fragment per n-tile");
  Value acc = LLVM::UndefOp::create(b, atom.getAccType());
  for (auto [t, fragment] : llvm::enumerate(fragments))
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t j = 0; j < 2; ++j) {
        Value x =
            vector::ExtractOp::create(b, fragment, ArrayRef<int64_t>{h, j});
        acc = LLVM::InsertValueOp::create(
            b, acc, x, ArrayRef<int64_t>{WgmmaAtom::accIndex(t, h, j)});
      }
  return acc;
}

SmallVector<Value> WarpgroupProducts::toFragments(ImplicitLocOpBuilder &b,
                                                  const WgmmaAtom &atom,
                                                  Value acc) {
  auto type = VectorType::get({2, 2}, b.getF32Type());
  SmallVector<Value> fragments;
  for (int64_t t = 0; t < atom.getN() / kN8; ++t) {
    SmallVector<Value> elements;
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t j = 0; j < 2; ++j)
        elements.push_back(LLVM::ExtractValueOp::create(
            b, acc, ArrayRef<int64_t>{WgmmaAtom::accIndex(t, h, j)}));
    fragments.push_back(vector::FromElementsOp::create(b, type, elements));
  }
  return fragments;
}

SmallVector<Value> WarpgroupProducts::scores(ImplicitLocOpBuilder &b,
                                             const WarpAttentionTile &,
                                             const SharedTile &q,
                                             const SharedTile &k, Value stage,
                                             ArrayRef<Value> partial) const {
  IRBuilder ir{b};
  WgmmaOperandTile qTile = operand(q), kTile = operand(k);
  bool accumulate = !partial.empty();
  Value acc =
      accumulate ? toAccumulator(b, scoreAtom, partial) : scoreAtom.zeroAcc(b);
  scoreAtom.fence(b);
  for (int64_t k0 = 0; k0 < q.cols; k0 += WgmmaAtom::kK) {
    Value descQ =
        scoreAtom.descriptorRows(b, qTile, Value(), warpgroupRow0, k0);
    Value descK = scoreAtom.descriptorRows(b, kTile, stage, ir.idx(0), k0);
    acc = scoreAtom.mma(b, descQ, descK, acc, /*bColumns=*/false,
                        accumulate || k0 > 0);
  }
  scoreAtom.commit(b);
  scoreAtom.wait(b, 0);
  return toFragments(b, scoreAtom, acc);
}

SmallVector<Value> WarpgroupProducts::accumulate(
    ImplicitLocOpBuilder &b, const WarpAttentionTile &tile, ArrayRef<Value> o,
    ArrayRef<Value> p, const SharedTile &v, Value stage) const {
  IRBuilder ir{b};
  assert(tile.getShape().mTiles == 1 && !tile.getValueOffset() &&
         "a warp of a warpgroup owns one m-tile and every value column");
  WgmmaOperandTile vTile = operand(v);
  auto words = VectorType::get({4}, b.getI32Type());
  // A 16-bit A fragment's rows are its four registers.
  SmallVector<Value> aRegs;
  for (Value fragment : p) {
    auto type = cast<VectorType>(fragment.getType());
    Value bits = vector::BitCastOp::create(
        b, VectorType::get({type.getDimSize(0), 1}, b.getI32Type()), fragment);
    aRegs.push_back(vector::ShapeCastOp::create(b, words, bits));
  }
  Value acc = toAccumulator(b, valueAtom, o);
  valueAtom.fence(b);
  for (auto [j, a] : llvm::enumerate(aRegs)) {
    Value descV = valueAtom.descriptorCols(
        b, vTile, stage, ir.idx(int64_t(j) * WgmmaAtom::kK), 0);
    acc = valueAtom.mmaRegisters(b, a, descV, acc, /*bColumns=*/true,
                                 /*accumulate=*/true);
  }
  valueAtom.commit(b);
  valueAtom.wait(b, 0);
  return toFragments(b, valueAtom, acc);
}
