//===- QueryTiles.cpp - Ragged query rows in fixed-size tiles -------------===//
#include "kvir/Codegen/QueryTiles.h"
#include "kvir/Codegen/IRBuilder.h"
#include "kvir/Dialect/KV/Utils/Search.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace kvir;
using namespace kvir::codegen;

kvgpu::SizeExprAttr QueryTiles::numSlots(kvgpu::SizeExprAttr nnz,
                                         kvgpu::SizeExprAttr batch) const {
  MLIRContext *ctx = nnz.getContext();
  auto cst = [&](int64_t v) { return kvgpu::SizeExprAttr::constant(ctx, v); };
  return kvgpu::SizeExprAttr::add(
      kvgpu::SizeExprAttr::floorDiv(kvgpu::SizeExprAttr::mul(nnz, cst(group)),
                                    cst(tileRows)),
      batch);
}

QueryTile QueryTiles::locate(ImplicitLocOpBuilder &b, Value qoIndptr,
                             Value batch, Value slot) const {
  IRBuilder ir{b};
  auto indptrAt = [&](ImplicitLocOpBuilder &ib, Value i) {
    return IRBuilder{ib}.toIndex(
        memref::LoadOp::create(ib, qoIndptr, ValueRange{i}));
  };
  auto start = [&](ImplicitLocOpBuilder &ib, Value req) {
    IRBuilder j{ib};
    return j.add(j.divU(j.mul(indptrAt(ib, req), j.idx(group)),
                        j.idx(tileRows)),
                 req);
  };
  // The last request whose start() is at most `slot` (start(0) = 0).
  QueryTile tile;
  tile.request = kv::emitLastAtOrBelow(b, batch, start, slot);
  tile.qoStart = indptrAt(b, tile.request);
  tile.qoLen =
      ir.sub(indptrAt(b, ir.add(tile.request, ir.idx(1))), tile.qoStart);
  Value tiles = arith::CeilDivUIOp::create(
      b, ir.mul(tile.qoLen, ir.idx(group)), ir.idx(tileRows));
  Value i = ir.sub(slot, start(b, tile.request));
  tile.valid = ir.lt(i, tiles);
  // Backwards: slot 0 of the request takes its last tile.
  Value reversed = ir.sub(ir.sub(tiles, ir.idx(1)), i);
  tile.firstRow = ir.mul(ir.select(tile.valid, reversed, ir.idx(0)),
                         ir.idx(tileRows));
  return tile;
}

kvgpu::SizeExprAttr
QueryTiles::numSlotsOneRowEach(kvgpu::SizeExprAttr batch) const {
  return kvgpu::SizeExprAttr::mul(
      batch, kvgpu::SizeExprAttr::constant(batch.getContext(),
                                           llvm::divideCeil(group, tileRows)));
}

QueryTile QueryTiles::locateOneRowEach(ImplicitLocOpBuilder &b, Value batch,
                                       Value slot) const {
  IRBuilder ir{b};
  Value perRequest = ir.idx(llvm::divideCeil(group, tileRows));
  Value request = ir.divU(slot, perRequest);
  QueryTile tile;
  tile.valid = ir.lt(request, batch);
  // Clamped, so that a slot past the batch reads the tables in bounds.
  tile.request = ir.minS(request, ir.sub(ir.maxS(batch, ir.idx(1)), ir.idx(1)));
  tile.qoStart = tile.request;
  tile.qoLen = ir.idx(1);
  tile.firstRow = ir.mul(ir.remU(slot, perRequest), ir.idx(tileRows));
  return tile;
}
