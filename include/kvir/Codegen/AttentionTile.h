//===- AttentionTile.h - A warp's rows of FlashAttention-2 ------*- C++ -*-===//
//
// The tensor-core form of attention for one warp: its `mTiles` M-row mma
// tiles of a query tile (in shared memory), scored against K tiles and
// accumulated against V tiles (in shared memory, SharedTile layout), all on
// an MMA atom's fragments (MmaAtom; MmaSyncAtom's m16n8k16 today), every
// element placed by the atom's accumulator FragmentLayout:
//   S = Q K^T    ldmatrix Q as A (or A fragments kept in registers), K rows
//                as B; f32 accumulators [mTiles][kvTile / 8];
//   mask         -inf where a caller's predicate of (row, key) says so;
//   softmax      online, per fragment row (a lane holds rows g and g + 8):
//                the row max and sum need only the quad's xor-shuffles 1
//                and 2; AttentionState's math (base 2, ex2.approx), the O
//                accumulators rescaled by the change of the running max;
//   O += P V     P's accumulators rounded to A fragments in registers (no
//                shared memory), V read by ldmatrix.trans;
//   finalize     the row sums reduced over the quad, O / l and the LSE.
// The running state (m, l per fragment row, O fragments) is a flat list of
// SSA values so that it can be carried by an scf.for over the key tiles.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_CODEGEN_ATTENTIONTILE_H
#define KVIR_CODEGEN_ATTENTIONTILE_H

#include "kvir/Codegen/AttentionState.h"
#include "kvir/Codegen/MmaAtom.h"

#include <functional>
#include <optional>

namespace kvir::codegen {

class WarpAttentionTile;
class AsyncTileProducts;

/// The two products of a warp's attention tile, S = Q K^T and O += P V, on
/// the tile's fragments. Without one a WarpAttentionTile issues them on its
/// own MmaAtom (each warp its mma.sync); WarpgroupProducts issues them for
/// the warp's whole warpgroup (wgmma).
class TileProducts {
public:
  virtual ~TileProducts() = default;
  /// Raw scores [mTiles][kvTile / 8] of `tile`'s rows of `q` against K tile
  /// `stage` over the `q.cols` dims, added to `partial` when given.
  virtual llvm::SmallVector<mlir::Value>
  scores(mlir::ImplicitLocOpBuilder &b, const WarpAttentionTile &tile,
         const SharedTile &q, const SharedTile &k, mlir::Value stage,
         llvm::ArrayRef<mlir::Value> partial) const = 0;
  /// o + P V: `o` [mTiles][headDimV / 8] accumulators, `p` the softmax's A
  /// fragments [mTiles][kvTile / K], V tile `stage` of `v`.
  virtual llvm::SmallVector<mlir::Value>
  accumulate(mlir::ImplicitLocOpBuilder &b, const WarpAttentionTile &tile,
             llvm::ArrayRef<mlir::Value> o, llvm::ArrayRef<mlir::Value> p,
             const SharedTile &v, mlir::Value stage) const = 0;

  /// The same products issued without waiting (wgmma), or null.
  virtual const AsyncTileProducts *async() const { return nullptr; }
};

/// Products that can be overlapped with other work: an issue returns the
/// product's accumulator in flight, one commit group; `retire(n)` waits
/// until at most n of the warp's groups are in flight (oldest first), and
/// only then may the fragments of the retired ones be read.
class AsyncTileProducts : public TileProducts {
public:
  const AsyncTileProducts *async() const override { return this; }
  virtual mlir::Value issueScores(mlir::ImplicitLocOpBuilder &b,
                                  const SharedTile &q, const SharedTile &k,
                                  mlir::Value stage) const = 0;
  virtual mlir::Value
  issueAccumulate(mlir::ImplicitLocOpBuilder &b, const WarpAttentionTile &tile,
                  llvm::ArrayRef<mlir::Value> o, llvm::ArrayRef<mlir::Value> p,
                  const SharedTile &v, mlir::Value stage) const = 0;
  /// o + P V with P from `p`, a shared tile of the query tile's rows x
  /// the keys (K-major, as the A operand of the SS form reads it), issued
  /// and committed: the value product of warps that share one softmax
  /// (SharedSoftmax).
  virtual mlir::Value issueAccumulateShared(mlir::ImplicitLocOpBuilder &b,
                                            const WarpAttentionTile &tile,
                                            llvm::ArrayRef<mlir::Value> o,
                                            const SharedTile &p,
                                            const SharedTile &v,
                                            mlir::Value stage) const = 0;
  /// An empty commit group, for a product a path does not issue (so that
  /// every path counts the same groups).
  virtual void issueNothing(mlir::ImplicitLocOpBuilder &b) const = 0;
  virtual void retire(mlir::ImplicitLocOpBuilder &b, int64_t pending) const = 0;
  /// The m16n8 fragments of a retired product's accumulator (scores: the
  /// key tile's columns, accumulate: the value columns), O as an
  /// accumulator (the registers a value product's issue takes), and its
  /// type.
  virtual llvm::SmallVector<mlir::Value>
  scoreFragments(mlir::ImplicitLocOpBuilder &b, mlir::Value acc) const = 0;
  virtual llvm::SmallVector<mlir::Value>
  valueFragments(mlir::ImplicitLocOpBuilder &b, mlir::Value acc) const = 0;
  virtual mlir::Value valueAccumulator(mlir::ImplicitLocOpBuilder &b,
                                       llvm::ArrayRef<mlir::Value> o) const = 0;
  virtual mlir::Type valueAccumulatorType() const = 0;
};

class WarpAttentionTile {
public:
  struct Shape {
    /// 16-row mma tiles of this warp.
    int64_t mTiles = 1;
    /// Keys per K/V tile (a multiple of 16), head dims (multiples of 16).
    /// headDimV is the width of the warp's slice of the value tile.
    int64_t kvTile = 64, headDim = 128, headDimV = 128;
    /// softmax() leaves O alone, in a branch the warp takes together,
    /// where every row's rescale factor is exactly 1 (once the rows'
    /// maxima settle); it keeps O's fragments live across the branch.
    bool skipUnchangedRescale = false;
  };

  /// The running state of the warp's rows. Fragment row h of m-tile t is
  /// index 2 t + h of m and l (rows g and g + 8 of the m-tile); o holds
  /// [mTiles][headDimV / 8] accumulators.
  struct State {
    llvm::SmallVector<mlir::Value> m, l, o;
    llvm::SmallVector<mlir::Value> flatten() const;
  };
  /// The state whose flatten() is `values`.
  State unflatten(mlir::ValueRange values) const;

  /// `rowOffset` is the warp's first row in the query tile; the warp
  /// accumulates value columns [valueOffset, valueOffset + headDimV) (null:
  /// 0; else as MmaAtom::loadBCols takes it). `mma` places the fragments'
  /// elements and issues the products, unless `products` (not owned) does.
  /// Every method builds at the builder it is given.
  WarpAttentionTile(const MmaAtom &mma, Shape shape, mlir::Value rowOffset,
                    mlir::Value valueOffset = {},
                    const TileProducts *products = nullptr);

  /// m = -inf, l = 0, O = 0.
  State initialState(mlir::ImplicitLocOpBuilder &b) const;

  /// The A fragments [mTiles][headDim / K] of the warp's query rows (not
  /// with `products`: they read Q themselves).
  llvm::SmallVector<mlir::Value> loadQuery(mlir::ImplicitLocOpBuilder &b,
                                           const SharedTile &q) const;
  /// Raw scores <q, k> [mTiles][kvTile / 8] over the `q.cols` dims of `q`
  /// and K tile `stage`, from `queryFragments` (loadQuery) or, if empty,
  /// from `q` directly, added to `partial` (scores of other dims, e.g. MLA's
  /// rotary part) when given.
  llvm::SmallVector<mlir::Value>
  scores(mlir::ImplicitLocOpBuilder &b,
         llvm::ArrayRef<mlir::Value> queryFragments, const SharedTile &q,
         const SharedTile &k, mlir::Value stage,
         llvm::ArrayRef<mlir::Value> partial = {}) const;

  /// Where fragment element (m-tile t, row half h, n8 tile n, column j)
  /// lies: the row in the query tile and the key in the K tile.
  std::pair<mlir::Value, mlir::Value>
  elementCoords(mlir::ImplicitLocOpBuilder &b, int64_t t, int64_t h, int64_t n,
                int64_t j) const;
  /// The keys of a fragment row that may be visible, relative to the
  /// lane's first column 2 (lane % 4) (element (n, j) of the row is key
  /// 2 (lane % 4) + 8 n + j of the K tile): element (n, j) passes when
  /// lo <= 8 n + j < hi (i32, so that the
  /// test is one compare with a constant per bound), and, with a custom
  /// predicate, when custom(row index, 8 n + j) holds.
  struct RowKeys {
    mlir::Value lo, hi;
  };
  using CustomVisibility = std::function<mlir::Value(
      mlir::ImplicitLocOpBuilder &, int64_t fragmentRow, int64_t column)>;
  /// Sets the logits of keys a fragment row does not see to -inf. `rows`
  /// is indexed like State::m.
  llvm::SmallVector<mlir::Value>
  mask(mlir::ImplicitLocOpBuilder &b, llvm::ArrayRef<mlir::Value> logits,
       llvm::ArrayRef<RowKeys> rows,
       const CustomVisibility &custom = nullptr) const;

  /// A change of one natural-unit logit (ALiBi, score_mod) by its
  /// fragment row (indexed like State::m) and column (key 2 (lane % 4) +
  /// column of the K tile).
  using ElementMod =
      std::function<mlir::Value(mlir::ImplicitLocOpBuilder &, mlir::Value logit,
                                int64_t fragmentRow, int64_t column)>;
  /// The one factor c > 0 that makes raw scores logits in the working
  /// base (sm_scale and log2(e)), when nothing else applies to them (no
  /// element mod, soft cap or run-time `scoreScale`); else null. The
  /// softmax then takes the raw scores and c and fuses the multiply into
  /// the exponent (B^(c s - m) as one fma); a mask applies to the raw
  /// scores (-inf stays -inf).
  mlir::Value fusedLogitScale(mlir::ImplicitLocOpBuilder &b, double smScale,
                              std::optional<double> softCap,
                              mlir::Value scoreScale, bool modified) const;
  /// Scales raw scores to logits in AttentionState's working base:
  /// sm_scale (times `scoreScale`, an f32 known at run time, if given),
  /// `mod` on each element, the soft cap, log2(e).
  llvm::SmallVector<mlir::Value>
  logits(mlir::ImplicitLocOpBuilder &b, llvm::ArrayRef<mlir::Value> scores,
         double smScale, std::optional<double> softCap,
         mlir::Value scoreScale = {}, const ElementMod &mod = nullptr) const;

  /// The online softmax step over a tile's logits: the new running max and
  /// row sums, O rescaled; returns the state and P as A fragments
  /// [mTiles][kvTile / K]. With `logitScale` (fusedLogitScale), the logits
  /// are `logitScale` times `logits`.
  std::pair<State, llvm::SmallVector<mlir::Value>>
  softmax(mlir::ImplicitLocOpBuilder &b, const State &state,
          llvm::ArrayRef<mlir::Value> logits,
          mlir::Value logitScale = {}) const;
  /// The same step with O left alone (a product may still be accumulating
  /// into it): the new m and l (o as given), P, and each fragment row's
  /// factor for O (indexed like State::m), for rescale().
  struct SoftmaxStep {
    State state;
    llvm::SmallVector<mlir::Value> p, alpha;
  };
  SoftmaxStep softmaxStep(mlir::ImplicitLocOpBuilder &b, const State &state,
                          llvm::ArrayRef<mlir::Value> logits,
                          mlir::Value logitScale = {}) const;
  /// O [mTiles][headDimV / 8] times each fragment row's `alpha`.
  llvm::SmallVector<mlir::Value>
  rescale(mlir::ImplicitLocOpBuilder &b, llvm::ArrayRef<mlir::Value> o,
          llvm::ArrayRef<mlir::Value> alpha) const;

  /// O += P V with the warp's columns of V tile `stage`.
  State accumulate(mlir::ImplicitLocOpBuilder &b, const State &state,
                   llvm::ArrayRef<mlir::Value> p, const SharedTile &v,
                   mlir::Value stage) const;

  struct Final {
    /// Normalized O fragments [mTiles][headDimV / 8], and the LSE of each
    /// fragment row in `base` (indexed like State::m).
    llvm::SmallVector<mlir::Value> o, lse;
  };
  /// `outputScale` (an f32, if given) multiplies the normalized O; a sink
  /// logit per fragment row (natural units, indexed like State::m), if
  /// given, joins each row's sum once.
  Final finalize(mlir::ImplicitLocOpBuilder &b, const State &state,
                 kv::LseBase base, mlir::Value outputScale = {},
                 llvm::ArrayRef<mlir::Value> sinkLogits = {}) const;

  const Shape &getShape() const { return shape; }
  const MmaAtom &getMma() const { return mma; }
  /// The tile's products when they are not the atom's (null: mma's).
  const TileProducts *getProducts() const { return products; }
  mlir::Value getRowOffset() const { return rowOffset; }
  mlir::Value getValueOffset() const { return valueOffset; }

private:
  /// The per-row values of fragment row pair (2 t, 2 t + 1) spread over an
  /// accumulator's shape: [[x0, x0], [x1, x1]].
  mlir::Value rowPair(mlir::ImplicitLocOpBuilder &b, mlir::Value x0,
                      mlir::Value x1) const;
  /// rescale(), in a branch the warp takes only where some row's factor is
  /// not exactly 1 (a uniform vote).
  llvm::SmallVector<mlir::Value>
  rescaleIfChanged(mlir::ImplicitLocOpBuilder &b, llvm::ArrayRef<mlir::Value> o,
                   llvm::ArrayRef<mlir::Value> alpha) const;
  /// Rows of m-tile `t` of `o` times their `alpha`, into `scaled`.
  void rescaleMTile(mlir::ImplicitLocOpBuilder &b,
                    llvm::ArrayRef<mlir::Value> o,
                    llvm::ArrayRef<mlir::Value> alpha, int64_t t,
                    llvm::MutableArrayRef<mlir::Value> scaled) const;
  /// softmax() and softmaxStep(): O rescaled in place (where the
  /// synchronous kernels always did) or left for rescale().
  SoftmaxStep onlineSoftmax(mlir::ImplicitLocOpBuilder &b, const State &state,
                            llvm::ArrayRef<mlir::Value> logits,
                            mlir::Value logitScale, bool rescaleO) const;

  const MmaAtom &mma;
  Shape shape;
  mlir::Value rowOffset, valueOffset;
  const TileProducts *products;
};

} // namespace kvir::codegen

#endif // KVIR_CODEGEN_ATTENTIONTILE_H
