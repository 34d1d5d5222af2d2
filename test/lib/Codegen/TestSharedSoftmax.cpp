//===- TestSharedSoftmax.cpp - shared_softmax of -test-kvir-codegen ------===//
//
// SharedSoftmax on mma.sync: two value warps of the same 16 query rows.
// Arguments q [16, 16], k [16 keys, 16], v [16 keys, 128] (f16 or bf16),
// shared [16, 128] f32, own [16, 128] f32; 64 threads. Warp w accumulates
// value columns [64 w, 64 w + 64) of one K/V tile, twice:
//   own     the warp scores the tile and runs the softmax itself, P from
//           its registers (WarpAttentionTile, as without sharing);
//   shared  warp 0 scores and publishes its step, after the block's
//           barrier both warps take it and accumulate P V from shared P.
// Both write the normalized O; the host finds them bit-identical (the same
// rounded P, the same sums) and checks `own` against its own softmax.
//
//===----------------------------------------------------------------------===//
#include "TestComponents.h"

#include "kvir/Codegen/AttentionTile.h"
#include "kvir/Codegen/IRBuilder.h"
#include "kvir/Codegen/MmaSyncAtom.h"
#include "kvir/Codegen/SharedSoftmax.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace kvir::codegen;

namespace {

constexpr int64_t kRows = 16, kKeys = 16, kDim = 16, kSlice = 64;

/// Copies global [rows, cols] into `tile` (the first warp's threads).
void stage(ImplicitLocOpBuilder &b, Value thread, Value global,
           const SharedTile &tile) {
  IRBuilder ir{b};
  int64_t ce = tile.chunkElements(), chunks = tile.chunksPerRow();
  Type element = cast<MemRefType>(global.getType()).getElementType();
  kvir::test::forStrided(
      b, thread, tile.rows * chunks, 32, [&](ImplicitLocOpBuilder &sb, Value i) {
        IRBuilder s{sb};
        Value r = s.divU(i, s.idx(chunks)), c = s.remU(i, s.idx(chunks));
        Value v = vector::LoadOp::create(sb, VectorType::get({ce}, element),
                                         global,
                                         ValueRange{r, s.mul(c, s.idx(ce))});
        vector::StoreOp::create(sb, v, tile.memref,
                                tile.chunkIndices(sb, Value(), r, c));
      });
  (void)ir;
}

/// The warp's normalized O fragments into `out` at its value columns.
void storeO(ImplicitLocOpBuilder &b, const WarpAttentionTile &tile,
            const WarpAttentionTile::State &state, Value out) {
  IRBuilder ir{b};
  WarpAttentionTile::Final final =
      tile.finalize(b, state, kvir::kv::LseBase::e);
  const LaneFragment &lane = tile.getMma().getAccFragment();
  const FragmentLayout &layout = tile.getMma().accLayout();
  for (int64_t n = 0; n < kSlice / layout.atomCols; ++n)
    for (int64_t h = 0; h < layout.rowsPerLane; ++h)
      for (int64_t j = 0; j < layout.colsPerLane; ++j) {
        Value v = vector::ExtractOp::create(b, final.o[n],
                                            ArrayRef<int64_t>{h, j});
        Value col = ir.add(tile.getValueOffset(), lane.col(b, n, j));
        memref::StoreOp::create(b, v, out,
                                ValueRange{lane.row(b, 0, h), col});
      }
}

} // namespace

void kvir::test::buildSharedSoftmax(gpu::GPUFuncOp stub) {
  Type element = cast<MemRefType>(stub.getArgumentTypes()[0]).getElementType();
  MLIRContext *ctx = stub.getContext();
  SharedMemoryLayout layout;
  layout.add("q", {kRows, kDim}, element);
  layout.add("k", {kKeys, kDim}, element);
  layout.add("v", {kKeys, 2 * kSlice}, element);
  layout.add("p",
             {kRows, SharedSoftmax::pColumns(kKeys, Swizzle::XorChunks)},
             element);
  layout.add("row_stats", {kRows, SharedSoftmax::statsPerRow()},
             Float32Type::get(ctx));
  KernelFunc kf = replaceKernel(stub, {64, 1, 1}, layout);
  ImplicitLocOpBuilder b = kf.getBuilder();
  IRBuilder ir{b};
  Value thread = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value lane = ir.remU(thread, ir.idx(32)), warp = ir.divU(thread, ir.idx(32));
  SharedTile q{kf.getShared(0), kRows, kDim, Swizzle::XorChunks};
  SharedTile k{kf.getShared(1), kKeys, kDim, Swizzle::XorChunks};
  SharedTile v{kf.getShared(2), kKeys, 2 * kSlice, Swizzle::XorChunks};
  emitIf(b, ir.lt(thread, ir.idx(32)), [&](ImplicitLocOpBuilder &sb) {
    stage(sb, thread, kf.getArgument(0), q);
    stage(sb, thread, kf.getArgument(1), k);
    stage(sb, thread, kf.getArgument(2), v);
  });
  gpu::BarrierOp::create(b);

  MmaSyncAtom mma(b, element, lane);
  WarpAttentionTile tile(mma, {1, kKeys, kDim, kSlice}, ir.idx(0),
                         ir.mul(warp, ir.idx(kSlice)));
  WarpAttentionTile::State initial = tile.initialState(b);
  auto logits = [&](ImplicitLocOpBuilder &lb) {
    return tile.logits(lb, tile.scores(lb, {}, q, k, Value()),
                       /*smScale=*/0.25, std::nullopt);
  };

  // Each warp on its own.
  auto [stepped, p] = tile.softmax(b, initial, logits(b));
  storeO(b, tile, tile.accumulate(b, stepped, p, v, Value()),
         kf.getArgument(4));

  // Warp 0 scores for both.
  SharedSoftmax shared(
      SharedTile{kf.getShared(3), kRows,
                 SharedSoftmax::pColumns(kKeys, Swizzle::XorChunks),
                 Swizzle::XorChunks},
      kf.getShared(4));
  emitIf(b, ir.eq(warp, ir.idx(0)), [&](ImplicitLocOpBuilder &sb) {
    shared.publish(sb, tile, tile.softmaxStep(sb, initial, logits(sb)));
  });
  gpu::BarrierOp::create(b);
  WarpAttentionTile::State received = shared.receive(b, tile, initial);
  received.o = shared.accumulate(b, tile, received.o, v, Value());
  storeO(b, tile, received, kf.getArgument(3));
}
