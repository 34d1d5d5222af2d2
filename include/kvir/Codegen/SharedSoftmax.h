//===- SharedSoftmax.h - One softmax for a row's value warps --*- C++ -*-===//
//
// With value warps (MLA's 512 value columns over several warps) the warps
// of every value slice hold the same query rows. Rather than each scoring
// them (the scores' products repeated per slice), the warps of slice 0
// score each K tile and run the online softmax, and hand the result over
// in shared memory (FlashMLA's split of the 64 x 512 output):
//   P            rounded to the element type, in a tile of the query
//                tile's rows x the key tile's columns in the operand
//                swizzle: the A operand of the value product (wgmma's SS
//                form, K-major, rows padded to a 64-element block of the
//                128-byte swizzle; mma.sync's ldmatrix);
//   row stats    per row the factor that rescales O (alpha) and the new
//                running max m, and per lane of the row its partial sum l
//                (the lanes holding a row sum their columns; finalize
//                reduces them), f32.
// The scorers write them with generic stores (fenced for the async proxy
// where wgmma reads P); after the block's barrier every warp takes m and
// l, rescales its O slice by alpha and accumulates P V over its columns
// from the shared P. Until the next barrier nobody writes them again: the
// products retire before it.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_CODEGEN_SHAREDSOFTMAX_H
#define KVIR_CODEGEN_SHAREDSOFTMAX_H

#include "kvir/Codegen/AttentionTile.h"
#include "kvir/Codegen/SharedTile.h"

namespace kvir::codegen {

class SharedSoftmax {
public:
  /// The columns of P's tile for `kvTile`-key tiles in `swizzle`: whole
  /// 64-element blocks of the 128-byte swizzle, else the keys.
  static int64_t pColumns(int64_t kvTile, Swizzle swizzle);
  /// The f32 row stats per row: alpha, m, then l of each lane holding
  /// the row (wgmma's accumulator layout).
  static int64_t statsPerRow();

  /// `p`: [rows x pColumns(kvTile, swizzle)] of the element type in the
  /// operand swizzle of the tile's products;
  /// `rowStats`: memref<rows x statsPerRow() x f32> in shared memory.
  SharedSoftmax(SharedTile p, mlir::Value rowStats)
      : p(std::move(p)), rowStats(rowStats) {}

  /// Scoring warps: `step`'s P (the warp's A fragments) and its rows'
  /// alpha and m (one lane per row writes them) and l (every lane its
  /// own) into shared memory (fenced for the async proxy where the
  /// products are asynchronous). The caller's block barrier publishes them.
  void publish(mlir::ImplicitLocOpBuilder &b, const WarpAttentionTile &tile,
               const WarpAttentionTile::SoftmaxStep &step) const;
  /// Every warp, after that barrier: `state` with the published m and l,
  /// and its O rescaled by alpha.
  WarpAttentionTile::State receive(mlir::ImplicitLocOpBuilder &b,
                                   const WarpAttentionTile &tile,
                                   const WarpAttentionTile::State &state) const;
  /// Every warp: O + P V over its value slice of V tile `stage` of `v`,
  /// P read from the shared tile: wgmma's SS form, or mma.sync on A
  /// fragments loaded by ldmatrix.
  llvm::SmallVector<mlir::Value>
  accumulate(mlir::ImplicitLocOpBuilder &b, const WarpAttentionTile &tile,
             llvm::ArrayRef<mlir::Value> o, const SharedTile &v,
             mlir::Value stage) const;

private:
  enum Stat : int64_t { Alpha, Max, Sum };
  /// The indices of stat `stat` of the lane's fragment row (t, h) (Sum:
  /// the lane's own).
  llvm::SmallVector<mlir::Value> statIndices(mlir::ImplicitLocOpBuilder &b,
                                             const WarpAttentionTile &tile,
                                             Stat stat, int64_t t,
                                             int64_t h) const;

  SharedTile p;
  mlir::Value rowStats;
};

} // namespace kvir::codegen

#endif // KVIR_CODEGEN_SHAREDSOFTMAX_H
