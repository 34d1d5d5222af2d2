//===- WarpgroupProducts.h - Attention's products on wgmma -----*- C++ -*-===//
//
// The products of an attention tile (TileProducts) issued by a whole
// warpgroup on wgmma (WgmmaAtom). The warpgroup's four warps are each a
// WarpAttentionTile of one 16-row m-tile, rows 16 (warp % 4) of the
// warpgroup's 64: per warp, a wgmma accumulator is an m16n8 fragment per
// 8 columns (the same registers mma.sync's fragments would be), so the
// tile's softmax, masks, variants and epilogue run on it unchanged.
//   S = Q K^T    SS form, m64 n(kvTile) k16 per 16 dims: Q rows of the
//                warpgroup and the K tile's rows, both K-major;
//   O += P V     RS form, m64 n(headDimV) k16 per 16 keys: P, the
//                softmax's A fragments, from registers (a 16-bit A
//                fragment of mma.sync is the RS form's, register for
//                register); V MN-major (rows are keys). With value warps
//                (WarpAttentionTile's value offset) each warpgroup of the
//                same rows accumulates its slice of the value columns;
//                with one softmax shared between them (SharedSoftmax) P
//                comes from shared memory instead: the SS form.
// Each product is one wgmma group: fenced after the registers it reads were
// written and committed. scores() and accumulate() wait for it at once;
// the issue* methods leave it in flight for a caller that overlaps it with
// other work (the prefill's mainloop: the softmax of one key tile while
// the values of the one before accumulate).
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_CODEGEN_WARPGROUPPRODUCTS_H
#define KVIR_CODEGEN_WARPGROUPPRODUCTS_H

#include "kvir/Codegen/AttentionTile.h"
#include "kvir/Codegen/WgmmaAtom.h"

namespace kvir::codegen {

class WarpgroupProducts : public AsyncTileProducts {
public:
  /// Products of `kvTile`-key tiles and `headDimV` value columns in
  /// `elementType` (f16 / bf16) for the warpgroup whose rows start at
  /// `warpgroupRow0` of the query tile; `thread` is the thread's index in
  /// the warpgroup (0-127).
  WarpgroupProducts(mlir::ImplicitLocOpBuilder &b, mlir::Type elementType,
                    int64_t kvTile, int64_t headDimV, mlir::Value warpgroupRow0,
                    mlir::Value thread);

  /// Why wgmma cannot multiply such tiles (Q of `queryType`, K/V of
  /// `elementType`), or nullopt: 16-bit elements, Q in the K/V type, head
  /// dims of whole 64-element swizzle blocks, at most 256 value columns
  /// per warpgroup (`valueSlice` of the `headDimV`; one wgmma's N), key
  /// tiles of whole k16 steps.
  static std::optional<std::string>
  whyNot(mlir::Type queryType, mlir::Type elementType, int64_t kvTile,
         int64_t headDim, int64_t headDimV, int64_t valueSlice);

  llvm::SmallVector<mlir::Value>
  scores(mlir::ImplicitLocOpBuilder &b, const WarpAttentionTile &tile,
         const SharedTile &q, const SharedTile &k, mlir::Value stage,
         llvm::ArrayRef<mlir::Value> partial) const override;
  llvm::SmallVector<mlir::Value>
  accumulate(mlir::ImplicitLocOpBuilder &b, const WarpAttentionTile &tile,
             llvm::ArrayRef<mlir::Value> o, llvm::ArrayRef<mlir::Value> p,
             const SharedTile &v, mlir::Value stage) const override;

  mlir::Value issueScores(mlir::ImplicitLocOpBuilder &b, const SharedTile &q,
                          const SharedTile &k,
                          mlir::Value stage) const override;
  mlir::Value
  issueAccumulate(mlir::ImplicitLocOpBuilder &b, const WarpAttentionTile &tile,
                  llvm::ArrayRef<mlir::Value> o, llvm::ArrayRef<mlir::Value> p,
                  const SharedTile &v, mlir::Value stage) const override;
  mlir::Value issueAccumulateShared(mlir::ImplicitLocOpBuilder &b,
                                    const WarpAttentionTile &tile,
                                    llvm::ArrayRef<mlir::Value> o,
                                    const SharedTile &p, const SharedTile &v,
                                    mlir::Value stage) const override;
  void issueNothing(mlir::ImplicitLocOpBuilder &b) const override;
  void retire(mlir::ImplicitLocOpBuilder &b, int64_t pending) const override;
  llvm::SmallVector<mlir::Value> scoreFragments(mlir::ImplicitLocOpBuilder &b,
                                                mlir::Value acc) const override;
  llvm::SmallVector<mlir::Value> valueFragments(mlir::ImplicitLocOpBuilder &b,
                                                mlir::Value acc) const override;
  mlir::Value valueAccumulator(mlir::ImplicitLocOpBuilder &b,
                               llvm::ArrayRef<mlir::Value> o) const override;
  mlir::Type valueAccumulatorType() const override;

private:
  /// The warpgroup's value columns: the tile's value offset, or 0.
  mlir::Value valueColumn0(mlir::ImplicitLocOpBuilder &b,
                           const WarpAttentionTile &tile) const;
  /// S = Q K^T (+ partial), issued and committed.
  mlir::Value issueScoreProduct(mlir::ImplicitLocOpBuilder &b,
                                const SharedTile &q, const SharedTile &k,
                                mlir::Value stage,
                                llvm::ArrayRef<mlir::Value> partial) const;

  WgmmaAtom scoreAtom, valueAtom;
  mlir::Value warpgroupRow0;
};

} // namespace kvir::codegen

#endif // KVIR_CODEGEN_WARPGROUPPRODUCTS_H
