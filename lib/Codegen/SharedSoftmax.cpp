//===- SharedSoftmax.cpp - One softmax for the value warps of a row -------===//
#include "kvir/Codegen/SharedSoftmax.h"
#include "kvir/Codegen/IRBuilder.h"
#include "kvir/Codegen/WgmmaAtom.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace kvir::codegen;

int64_t SharedSoftmax::pColumns(int64_t kvTile, Swizzle swizzle) {
  return swizzle == Swizzle::B128 ? llvm::alignTo(kvTile, 64) : kvTile;
}

int64_t SharedSoftmax::statsPerRow() {
  return 2 + WgmmaAtom::layout().lanesPerRow;
}

SmallVector<Value> SharedSoftmax::statIndices(ImplicitLocOpBuilder &b,
                                              const WarpAttentionTile &tile,
                                              Stat stat, int64_t t,
                                              int64_t h) const {
  IRBuilder ir{b};
  const LaneFragment &lane = tile.getMma().getAccFragment();
  Value row = ir.add(tile.getRowOffset(), lane.row(b, t, h));
  Value column = stat == Sum ? ir.add(ir.idx(Sum), lane.getLaneInRow())
                             : ir.idx(stat);
  return {row, column};
}

void SharedSoftmax::publish(ImplicitLocOpBuilder &b,
                            const WarpAttentionTile &tile,
                            const WarpAttentionTile::SoftmaxStep &step) const {
  IRBuilder ir{b};
  const MmaAtom &mma = tile.getMma();
  const LaneFragment &lane = mma.getAccFragment();
  const FragmentLayout &layout = mma.accLayout();
  int64_t mTiles = tile.getShape().mTiles;
  int64_t kSteps = tile.getShape().kvTile / mma.getK();
  // A fragment j of m-tile t: register r is row half r % 2 of n-tile
  // 2 j + r / 2 (the two accumulators it was rounded from, side by side),
  // two consecutive keys of one 16-byte chunk.
  VectorType pair = VectorType::get({2}, mma.getAType().getElementType());
  for (int64_t t = 0; t < mTiles; ++t)
    for (int64_t j = 0; j < kSteps; ++j) {
      Value a = step.p[t * kSteps + j];
      for (int64_t r = 0; r < 4; ++r) {
        int64_t h = r % 2, n = 2 * j + r / 2;
        Value row = ir.add(tile.getRowOffset(), lane.row(b, t, h));
        Value col = lane.col(b, n, 0);
        Value keys = vector::ExtractOp::create(b, a, ArrayRef<int64_t>{r});
        assert(cast<VectorType>(keys.getType()) == pair &&
               "an A fragment register holds two keys");
        (void)pair;
        vector::StoreOp::create(b, keys, p.memref,
                                p.elementIndices(b, Value(), row, col));
      }
    }
  auto store = [&](ImplicitLocOpBuilder &wb, Stat stat,
                   ArrayRef<Value> values) {
    for (int64_t t = 0; t < mTiles; ++t)
      for (int64_t h = 0; h < layout.rowsPerLane; ++h)
        memref::StoreOp::create(wb, values[layout.rowSlot(t, h)], rowStats,
                                statIndices(wb, tile, stat, t, h));
  };
  store(b, Sum, step.state.l);
  emitIf(b, lane.isRowLeader(b), [&](ImplicitLocOpBuilder &wb) {
    store(wb, Alpha, step.alpha);
    store(wb, Max, step.state.m);
  });
  // wgmma reads P through the async proxy.
  const TileProducts *products = tile.getProducts();
  if (products && products->async())
    NVVM::FenceProxyOp::create(
        b, NVVM::ProxyKind::async_shared,
        NVVM::SharedSpaceAttr::get(b.getContext(),
                                   NVVM::SharedSpace::shared_cta));
}

WarpAttentionTile::State
SharedSoftmax::receive(ImplicitLocOpBuilder &b, const WarpAttentionTile &tile,
                       const WarpAttentionTile::State &state) const {
  const FragmentLayout &layout = tile.getMma().accLayout();
  WarpAttentionTile::State next = state;
  SmallVector<Value> alpha(state.m.size());
  for (int64_t t = 0; t < tile.getShape().mTiles; ++t)
    for (int64_t h = 0; h < layout.rowsPerLane; ++h) {
      int64_t slot = layout.rowSlot(t, h);
      auto load = [&](Stat stat) {
        return memref::LoadOp::create(b, rowStats,
                                      statIndices(b, tile, stat, t, h))
            .getResult();
      };
      alpha[slot] = load(Alpha);
      next.m[slot] = load(Max);
      next.l[slot] = load(Sum);
    }
  next.o = tile.rescale(b, state.o, alpha);
  return next;
}

SmallVector<Value> SharedSoftmax::accumulate(ImplicitLocOpBuilder &b,
                                             const WarpAttentionTile &tile,
                                             ArrayRef<Value> o,
                                             const SharedTile &v,
                                             Value stage) const {
  const TileProducts *products = tile.getProducts();
  if (products && products->async()) {
    const AsyncTileProducts &async = *products->async();
    Value acc = async.issueAccumulateShared(b, tile, o, p, v, stage);
    async.retire(b, 0);
    return async.valueFragments(b, acc);
  }
  // The warp's own products: P's A fragments by ldmatrix, as the scorers'
  // registers held them.
  IRBuilder ir{b};
  const MmaAtom &mma = tile.getMma();
  int64_t kSteps = tile.getShape().kvTile / mma.getK();
  SmallVector<Value> pFragments;
  for (int64_t t = 0; t < tile.getShape().mTiles; ++t)
    for (int64_t j = 0; j < kSteps; ++j)
      pFragments.push_back(mma.loadA(
          b, p, Value(),
          ir.add(tile.getRowOffset(), ir.idx(mma.accLayout().rowOffset(t, 0))),
          j * mma.getK()));
  WarpAttentionTile::State state;
  state.o.assign(o.begin(), o.end());
  return tile.accumulate(b, state, pFragments, v, stage).o;
}
