//===- WarpgroupProducts.cpp - Attention's products on wgmma --------------===//
#include "kvir/Codegen/WarpgroupProducts.h"
#include "kvir/Codegen/IRBuilder.h"

using namespace mlir;
using namespace kvir::codegen;

namespace {
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

std::optional<std::string>
WarpgroupProducts::whyNot(Type queryType, Type elementType, int64_t kvTile,
                          int64_t headDim, int64_t headDimV,
                          int64_t valueSlice) {
  if (!elementType.isF16() && !elementType.isBF16())
    return std::string("wgmma multiplies f16 or bf16 tiles here");
  if (queryType != elementType)
    return std::string("wgmma reads Q in the K/V tiles' type");
  if (headDim % kBlockElements || headDimV % kBlockElements)
    return "head dims " + std::to_string(headDim) + " / " +
           std::to_string(headDimV) +
           " are not whole 64-element blocks of the 128-byte swizzle";
  if (valueSlice > 256)
    return "a value slice of " + std::to_string(valueSlice) +
           " columns is wider than one wgmma's 256";
  if (kvTile % WgmmaAtom::kK || kvTile > 256)
    return "a " + std::to_string(kvTile) +
           "-key tile is not whole k16 steps of at most 256 keys";
  return std::nullopt;
}

Value WarpgroupProducts::issueScores(ImplicitLocOpBuilder &b,
                                     const SharedTile &q, const SharedTile &k,
                                     Value stage) const {
  return issueScoreProduct(b, q, k, stage, {});
}

Value WarpgroupProducts::issueScoreProduct(ImplicitLocOpBuilder &b,
                                           const SharedTile &q,
                                           const SharedTile &k, Value stage,
                                           ArrayRef<Value> partial) const {
  IRBuilder ir{b};
  WgmmaOperandTile qTile = operand(q), kTile = operand(k);
  bool accumulate = !partial.empty();
  Value acc = accumulate ? scoreAtom.fragmentsToAccumulator(b, partial)
                         : scoreAtom.zeroAcc(b);
  scoreAtom.fence(b);
  for (int64_t k0 = 0; k0 < q.cols; k0 += WgmmaAtom::kK) {
    Value descQ =
        scoreAtom.descriptorRows(b, qTile, Value(), warpgroupRow0, k0);
    Value descK = scoreAtom.descriptorRows(b, kTile, stage, ir.idx(0), k0);
    acc = scoreAtom.mma(b, descQ, descK, acc, /*bColumns=*/false,
                        accumulate || k0 > 0);
  }
  scoreAtom.commit(b);
  return acc;
}

Value WarpgroupProducts::issueAccumulate(ImplicitLocOpBuilder &b,
                                         const WarpAttentionTile &tile,
                                         ArrayRef<Value> o, ArrayRef<Value> p,
                                         const SharedTile &v,
                                         Value stage) const {
  IRBuilder ir{b};
  assert(tile.getShape().mTiles == 1 &&
         "a warp of a warpgroup owns one m-tile");
  WgmmaOperandTile vTile = operand(v);
  Value n0 = valueColumn0(b, tile);
  // P's registers are packed before the fence (definitions after it would
  // need another).
  SmallVector<Value> aRegs;
  for (Value fragment : p)
    aRegs.push_back(WgmmaAtom::fragmentToA(b, fragment));
  Value acc = valueAtom.fragmentsToAccumulator(b, o);
  valueAtom.fence(b);
  for (auto [j, a] : llvm::enumerate(aRegs)) {
    Value descV = valueAtom.descriptorCols(
        b, vTile, stage, ir.idx(int64_t(j) * WgmmaAtom::kK), n0);
    acc = valueAtom.mmaRegisters(b, a, descV, acc, /*bColumns=*/true,
                                 /*accumulate=*/true);
  }
  valueAtom.commit(b);
  return acc;
}

Value WarpgroupProducts::valueColumn0(ImplicitLocOpBuilder &b,
                                      const WarpAttentionTile &tile) const {
  // Value warps: each warpgroup of the same rows accumulates a slice.
  return tile.getValueOffset() ? tile.getValueOffset() : IRBuilder{b}.idx(0);
}

Value WarpgroupProducts::issueAccumulateShared(
    ImplicitLocOpBuilder &b, const WarpAttentionTile &tile, ArrayRef<Value> o,
    const SharedTile &p, const SharedTile &v, Value stage) const {
  IRBuilder ir{b};
  assert(tile.getShape().mTiles == 1 &&
         "a warp of a warpgroup owns one m-tile");
  WgmmaOperandTile pTile = operand(p), vTile = operand(v);
  Value n0 = valueColumn0(b, tile);
  Value acc = valueAtom.fragmentsToAccumulator(b, o);
  valueAtom.fence(b);
  for (int64_t k0 = 0; k0 < tile.getShape().kvTile; k0 += WgmmaAtom::kK) {
    Value descP =
        valueAtom.descriptorRows(b, pTile, Value(), warpgroupRow0, k0);
    Value descV = valueAtom.descriptorCols(b, vTile, stage, ir.idx(k0), n0);
    acc = valueAtom.mma(b, descP, descV, acc, /*bColumns=*/true,
                        /*accumulate=*/true);
  }
  valueAtom.commit(b);
  return acc;
}

void WarpgroupProducts::issueNothing(ImplicitLocOpBuilder &b) const {
  valueAtom.commit(b);
}

void WarpgroupProducts::retire(ImplicitLocOpBuilder &b, int64_t pending) const {
  valueAtom.wait(b, pending);
}

SmallVector<Value> WarpgroupProducts::scoreFragments(ImplicitLocOpBuilder &b,
                                                     Value acc) const {
  return scoreAtom.accumulatorToFragments(b, acc);
}

SmallVector<Value> WarpgroupProducts::valueFragments(ImplicitLocOpBuilder &b,
                                                     Value acc) const {
  return valueAtom.accumulatorToFragments(b, acc);
}

Value WarpgroupProducts::valueAccumulator(ImplicitLocOpBuilder &b,
                                          ArrayRef<Value> o) const {
  return valueAtom.fragmentsToAccumulator(b, o);
}

Type WarpgroupProducts::valueAccumulatorType() const {
  return valueAtom.getAccType();
}

SmallVector<Value> WarpgroupProducts::scores(ImplicitLocOpBuilder &b,
                                             const WarpAttentionTile &,
                                             const SharedTile &q,
                                             const SharedTile &k, Value stage,
                                             ArrayRef<Value> partial) const {
  Value acc = issueScoreProduct(b, q, k, stage, partial);
  retire(b, 0);
  return scoreFragments(b, acc);
}

SmallVector<Value> WarpgroupProducts::accumulate(
    ImplicitLocOpBuilder &b, const WarpAttentionTile &tile, ArrayRef<Value> o,
    ArrayRef<Value> p, const SharedTile &v, Value stage) const {
  Value acc = issueAccumulate(b, tile, o, p, v, stage);
  retire(b, 0);
  return valueFragments(b, acc);
}
