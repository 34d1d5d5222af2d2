//===- PrefillEpilogue.cpp - Where a prefill block's states go ------------===//
//
// Step 4 of the prefill kernel: O / l and the LSE of the warp's rows and
// value columns to a Destination (the outputs, a partition's partial
// states, a work item's workspace row); 16-bit outputs staged through
// shared memory for 16-byte stores, f32 ones stored from the fragments.
//
//===----------------------------------------------------------------------===//
#include "PrefillKernelParts.h"

#include "kvir/Codegen/IRBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cmath>

using namespace mlir;
using namespace kvir;
using namespace kvir::codegen;
using namespace kvir::gpu_lowering;
using namespace kvir::gpu_lowering::prefill;

/// Step 4: the normalized output and LSE of the warp's valid rows.
void prefill::emitEpilogue(ImplicitLocOpBuilder &b, const PrefillKernelSpec &s,
                           const Work &w, const WarpAttentionTile &tile,
                           const WarpAttentionTile::Final &fin, Value warpRow0,
                           Value kvHead, const Destination &dest, Value lane) {
  IRBuilder ir{b};
  const MmaAtom &mma = tile.getMma();
  const FragmentLayout &acc = mma.accLayout();
  int64_t mTiles = tile.getShape().mTiles;
  int64_t dv8 = s.valueSlice() / acc.atomCols;
  Type outElt = cast<MemRefType>(dest.out.getType()).getElementType();
  const SharedTile *stage = dest.stage;
  // The warp's value columns start at `valueOffset`; the warps of the first
  // slice write the LSE.
  Value valueOffset = tile.getValueOffset() ? tile.getValueOffset() : ir.idx(0);
  Value writesLse = ir.eq(valueOffset, ir.idx(0));
  auto rowIndices = [&](const PackedRow &p) { return dest.rows(b, p); };
  for (int64_t t = 0; t < mTiles; ++t)
    for (int64_t h = 0; h < acc.rowsPerLane; ++h) {
      Value rowInTile = tile.elementCoords(b, t, h, 0, 0).first;
      PackedRow p = unpackRow(b, s, w, kvHead, rowInTile);
      // The LSE: one lane of the quad.
      Value first = arith::AndIOp::create(
          b, mma.getAccFragment().isRowLeader(b), writesLse);
      emitIf(b, arith::AndIOp::create(b, p.valid, first),
             [&](ImplicitLocOpBuilder &ib) {
               memref::StoreOp::create(ib, fin.lse[acc.rowSlot(t, h)],
                                       dest.lse, rowIndices(p));
             });
      if (stage)
        continue;
      // f32: a quad's 8-byte stores cover a whole 32-byte sector.
      Value store = p.valid;
      if (dest.writeOutput)
        store = arith::AndIOp::create(b, store, dest.writeOutput);
      emitIf(b, store, [&](ImplicitLocOpBuilder &ib) {
        for (int64_t d = 0; d < dv8; ++d) {
          Value v = vector::ExtractOp::create(ib, fin.o[t * dv8 + d],
                                              ArrayRef<int64_t>{h});
          if (!outElt.isF32())
            v = arith::TruncFOp::create(
                ib, VectorType::get({acc.colsPerLane}, outElt), v);
          SmallVector<Value> idx = rowIndices(p);
          idx.push_back(IRBuilder{ib}.add(
              tile.elementCoords(ib, t, h, d, 0).second, valueOffset));
          vector::StoreOp::create(ib, v, dest.out, idx)
              .setAlignment(acc.colsPerLane * outElt.getIntOrFloatBitWidth() /
                            8);
        }
      });
    }
  if (!stage)
    return;
  // 16-bit: the warp's rows through shared memory (its own rows only, so
  // a warp barrier orders the accesses), then 16-byte stores.
  NVVM::SyncWarpOp::create(b, ir.i32(-1));
  // A lane's columns of a row, in the output type.
  auto laneRow = VectorType::get({acc.colsPerLane}, outElt);
  for (int64_t t = 0; t < mTiles; ++t)
    for (int64_t d = 0; d < dv8; ++d)
      for (int64_t h = 0; h < acc.rowsPerLane; ++h) {
        auto [row, col] = tile.elementCoords(b, t, h, d, 0);
        Value v = arith::TruncFOp::create(
            b, laneRow,
            vector::ExtractOp::create(b, fin.o[t * dv8 + d],
                                      ArrayRef<int64_t>{h}));
        vector::StoreOp::create(
            b, v, stage->memref,
            stage->elementIndices(b, Value(), row, ir.add(col, valueOffset)))
            .setAlignment(acc.colsPerLane * outElt.getIntOrFloatBitWidth() / 8);
      }
  NVVM::SyncWarpOp::create(b, ir.i32(-1));
  int64_t chunks = s.valueSlice() / 8;
  int64_t total = acc.tileRows(mTiles) * chunks;
  auto chunkType = VectorType::get({8}, outElt);
  for (int64_t k = 0; k * 32 < total; ++k) {
    Value i = ir.add(lane, ir.idx(32 * k));
    Value rowInTile = ir.add(warpRow0, ir.divU(i, ir.idx(chunks)));
    Value c =
        ir.add(ir.remU(i, ir.idx(chunks)), ir.divU(valueOffset, ir.idx(8)));
    PackedRow p = unpackRow(b, s, w, kvHead, rowInTile);
    Value v =
        vector::LoadOp::create(b, chunkType, stage->memref,
                               stage->chunkIndices(b, Value(), rowInTile, c));
    emitIf(b, p.valid, [&](ImplicitLocOpBuilder &ib) {
      IRBuilder j{ib};
      SmallVector<Value> idx = rowIndices(p);
      idx.push_back(j.mul(c, j.idx(8)));
      vector::StoreOp::create(ib, v, dest.out, idx).setAlignment(16);
    });
  }
}

/// The LSEs of an empty partition's rows: -inf, one row per thread.
void prefill::emitEmptyPartition(ImplicitLocOpBuilder &b,
                                 const PrefillKernelSpec &s, const Work &w,
                                 Value kvHead, const Destination &dest,
                                 Value thread) {
  IRBuilder ir{b};
  scf::ForOp::create(
      b, thread, ir.idx(s.config.getQTile()), ir.idx(s.config.getNumThreads()),
      ValueRange{}, [&](OpBuilder &nb, Location l, Value r, ValueRange) {
        ImplicitLocOpBuilder ib(l, nb);
        PackedRow p = unpackRow(ib, s, w, kvHead, r);
        emitIf(ib, p.valid, [&](ImplicitLocOpBuilder &jb) {
          memref::StoreOp::create(jb, IRBuilder{jb}.f32(-INFINITY), dest.lse,
                                  dest.rows(jb, p));
        });
        scf::YieldOp::create(ib);
      });
}
