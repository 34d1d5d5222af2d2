//===- PrefillMask.cpp - Which keys the prefill kernel's rows see --------===//
//
// Step 3's per-row rules of the tensor-core prefill kernel: the fragment
// rows' query rows and positions, their view in the variants' frame, and
// the -inf mask of a K/V tile (partition end, causal, window, the custom
// mask, mask_mod, gathered keys).
//
//===----------------------------------------------------------------------===//
#include "PrefillKernelParts.h"

#include "kvir/Codegen/IRBuilder.h"
#include "kvir/Dialect/KV/Utils/Visibility.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace kvir;
using namespace kvir::codegen;

namespace kvir::gpu_lowering::prefill {

Value needsMask(ImplicitLocOpBuilder &b, const PrefillKernelSpec &s,
                const Work &w, Value t0) {
  IRBuilder ir{b};
  // Rows at given positions: any tile may cross a row's diagonal or window;
  // gathered keys come in any order.
  if (s.maskType || (s.positionsType && (s.causal || s.windowLeft)) ||
      s.hasMaskMod() || s.gathers())
    return arith::ConstantIntOp::create(b, 1, 1);
  Value tileEnd = ir.add(t0, ir.idx(s.config.getKvTile()));
  Value need = ir.cmp(arith::CmpIPredicate::sgt, tileEnd, w.end);
  if (s.causal)
    need = arith::OrIOp::create(b, need,
                                ir.cmp(arith::CmpIPredicate::sgt, tileEnd,
                                       ir.add(w.firstPos, ir.idx(1))));
  if (s.windowLeft)
    need = arith::OrIOp::create(
        b, need, ir.lt(t0, ir.sub(w.lastPos, ir.idx(*s.windowLeft))));
  return need;
}

std::pair<Value, Value> fragmentRow(ImplicitLocOpBuilder &b,
                                    const PrefillKernelSpec &s, const Work &w,
                                    const WarpAttentionTile &tile, int64_t t,
                                    int64_t h) {
  IRBuilder ir{b};
  Value r = ir.add(w.firstRow,
                   ir.add(tile.getRowOffset(),
                          tile.getMma().getAccFragment().row(b, t, h)));
  Value queryRow = ir.divU(r, ir.idx(s.rowStride()));
  return {r, ir.minS(queryRow, ir.sub(w.qoLen, ir.idx(1)))};
}

Value queryPosition(ImplicitLocOpBuilder &b, const PrefillKernelSpec &s,
                    const Work &w, const Arguments &a, Value queryRow) {
  IRBuilder ir{b};
  if (!a.positions)
    return kv::emitQueryPosition(b, w.kvLen, w.qoLen, queryRow);
  return ir.toIndex(memref::LoadOp::create(
      b, a.positions, ValueRange{ir.add(w.qoStart, queryRow)}));
}

SmallVector<Value> loadRowPositions(ImplicitLocOpBuilder &b,
                                    const PrefillKernelSpec &s, const Work &w,
                                    const Arguments &a,
                                    const WarpAttentionTile &tile) {
  IRBuilder ir{b};
  SmallVector<Value> positions;
  if (!a.positions)
    return positions;
  const FragmentLayout &acc = tile.getMma().accLayout();
  for (int64_t t = 0; t < tile.getShape().mTiles; ++t)
    for (int64_t h = 0; h < acc.rowsPerLane; ++h) {
      Value row = fragmentRow(b, s, w, tile, t, h).second;
      positions.push_back(ir.toIndex(memref::LoadOp::create(
          b, a.positions, ValueRange{ir.add(w.qoStart, row)})));
    }
  return positions;
}

kv::FrameRow frameRow(ImplicitLocOpBuilder &b, const Work &w,
                      const Arguments &a, Value queryRow, Value position) {
  if (!a.framePositions)
    return {w.request, position, Value()};
  return kv::emitFrameRow(b, a.frameIndptr, a.framePositions,
                          IRBuilder{b}.add(w.qoStart, queryRow), position);
}

SmallVector<Value> emitMask(ImplicitLocOpBuilder &b, const PrefillKernelSpec &s,
                            const Work &w, const Arguments &a,
                            const WarpAttentionTile &tile, ArrayRef<Value> logits,
                            ArrayRef<Value> rowPositions, Value maskOffset,
                            Value t0, const RowVariants *variants,
                            TileKeyOf keyOf) {
  IRBuilder ir{b};
  int64_t mTiles = tile.getShape().mTiles;
  const FragmentLayout &acc = tile.getMma().accLayout();
  Value keyBase = ir.add(t0, tile.getMma().getAccFragment().firstCol(b));
  auto relative = [&](Value key) { return ir.toI32(ir.sub(key, keyBase)); };
  SmallVector<Value> positions;
  SmallVector<WarpAttentionTile::RowKeys> rows;
  SmallVector<Value> maskRows, rowValid;
  for (int64_t t = 0; t < mTiles; ++t)
    for (int64_t h = 0; h < acc.rowsPerLane; ++h) {
      auto [r, clampedRow] = fragmentRow(b, s, w, tile, t, h);
      Value pos = rowPositions.empty()
                      ? kv::emitQueryPosition(b, w.kvLen, w.qoLen,
                                              ir.divU(r, ir.idx(s.rowStride())))
                      : rowPositions[acc.rowSlot(t, h)];
      Value lo = t0, hi = w.end;
      if (s.causal && !s.gathers())
        hi = ir.minS(hi, ir.add(pos, ir.idx(1)));
      if (s.windowLeft && !s.gathers())
        lo = ir.maxS(lo, ir.sub(pos, ir.idx(*s.windowLeft)));
      rows.push_back({relative(lo), relative(hi)});
      positions.push_back(pos);
      maskRows.push_back(clampedRow);
      rowValid.push_back(ir.lt(r, w.packedRows));
    }
  WarpAttentionTile::CustomVisibility custom;
  bool maskMod = variants && variants->emitter.hasMask();
  if (s.maskType || maskMod || s.gathers())
    custom = [&](ImplicitLocOpBuilder &vb, int64_t row, int64_t column) {
      IRBuilder j{vb};
      // Keys past the request are rejected by `hi`; clamp their reads.
      Value key =
          j.minS(j.add(keyBase, j.idx(column)), j.sub(w.kvLen, j.idx(1)));
      Value visible = rowValid[row];
      if (s.gathers()) {
        // The entry's key (entries past the partition are rejected by
        // `hi`): it exists, and the row's causal and window rules hold.
        Value gathered = keyOf(vb, j.sub(j.add(keyBase, j.idx(column)), t0));
        visible = arith::AndIOp::create(
            vb, visible, j.cmp(arith::CmpIPredicate::sge, gathered, j.idx(0)));
        if (s.causal)
          visible = arith::AndIOp::create(
              vb, visible,
              j.cmp(arith::CmpIPredicate::sle, gathered, positions[row]));
        if (s.windowLeft)
          visible = arith::AndIOp::create(
              vb, visible,
              j.cmp(arith::CmpIPredicate::sge, gathered,
                    j.sub(positions[row], j.idx(*s.windowLeft))));
        key = j.maxS(gathered, j.idx(0));
      }
      if (s.maskType)
        visible =
            arith::AndIOp::create(vb, visible,
                                  kv::emitMaskBit(vb, a.mask, maskOffset,
                                                  maskRows[row], key, w.kvLen));
      if (maskMod)
        visible =
            arith::AndIOp::create(vb, visible, variants->visible(vb, row, key));
      return visible;
    };
  return tile.mask(b, logits, rows, custom);
}

} // namespace kvir::gpu_lowering::prefill
