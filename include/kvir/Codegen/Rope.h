//===- Rope.h - Rotary position embedding -----------------------*- C++ -*-===//
//
// The one implementation of RoPE (docs/Semantics.md, "RoPE") every
// lowering emits: pair i of the R rotated dims (rotary_dim, or the head dim
// D) rotates dims (2i, 2i + 1) (interleave) or (i, i + R/2) (rotate_half)
// by the angle position * scale * f_i, f_i = theta^(-2i / R) (with Llama
// 3.1's scaling where the attribute has it), computed in f32 the same way
// everywhere; dims R..D pass unchanged. The CPU loops take math.cos /
// math.sin / math.exp2; kernels take ex2.approx and sin / cos.approx after
// reducing the angle to [-pi, pi] (the range where the PTX approximations
// hold their 2^-20.9 absolute error), so no libdevice function is called.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_CODEGEN_ROPE_H
#define KVIR_CODEGEN_ROPE_H

#include "kvir/Dialect/KV/IR/KVTypes.h"

#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <string>

namespace kvir::codegen {

class Rope {
public:
  enum class Flavor { exact, ptx };

  Rope(mlir::ImplicitLocOpBuilder &b, kv::RopeAttr rope, int64_t headDim,
       Flavor flavor)
      : b(b), rope(rope), headDim(headDim), flavor(flavor) {}

  /// The rotated dims R: callers rotate pairs 0 .. R/2 - 1 and leave dims
  /// R .. D as they are.
  int64_t rotatedDims() const { return rope.getRotatedDims(headDim); }
  /// The dims (a, b) that pair `pair` (index) rotates together.
  std::pair<mlir::Value, mlir::Value> pairDims(mlir::Value pair);
  /// cos and sin of the pair's angle at `position` (index), f32.
  std::pair<mlir::Value, mlir::Value> cosSin(mlir::Value pair,
                                             mlir::Value position);
  /// The pair's frequency f_i (f32; Llama 3.1's blend applied): kernels
  /// that rotate many positions compute it once.
  mlir::Value frequency(mlir::Value pair);
  /// cos and sin of the angle position * scale * `freq` (a frequency()),
  /// f32. `position` (index) may be negative: a relative position.
  std::pair<mlir::Value, mlir::Value> cosSinAt(mlir::Value freq,
                                               mlir::Value position);
  /// (a cos - b sin, b cos + a sin): the rotated pair, f32.
  std::pair<mlir::Value, mlir::Value> rotate(mlir::Value a, mlir::Value b,
                                             mlir::Value cos, mlir::Value sin);

  /// The frequencies of pairs firstPair, firstPair + 1, ... (count of them).
  llvm::SmallVector<mlir::Value> frequencies(mlir::Value firstPair,
                                             int64_t count);
  /// Rotates the pairs (a[j], b[j]) (vectors of any float type, each
  /// freqs.size() long) by `position` * scale * freqs[j] in f32; the
  /// results are vectors of `resultType`.
  std::pair<mlir::Value, mlir::Value>
  rotateVectors(mlir::Value a, mlir::Value b, llvm::ArrayRef<mlir::Value> freqs,
                mlir::Value position, mlir::Type resultType);
  /// Rotates the interleaved pairs (2j, 2j + 1) of `chunk` (pair j with
  /// freqs[j]) at `position`; a vector of `resultType`.
  mlir::Value rotateInterleaved(mlir::Value chunk,
                                llvm::ArrayRef<mlir::Value> freqs,
                                mlir::Value position, mlir::Type resultType);

private:
  mlir::ImplicitLocOpBuilder &b;
  kv::RopeAttr rope;
  int64_t headDim;
  Flavor flavor;
};

struct SharedTile;

/// Where a tile row's vectors rotate: its position (index) and whether the
/// row is rotated at all (an i1, or null: every row is).
struct RopeRowPosition {
  mlir::Value valid, position;
};

/// Why rows of `headDim` 16-bit elements cannot be rotated by a
/// TileRotation of `threads` threads (its units are 16-byte chunks, one
/// column of them per thread), or "".
std::string whyNotRotateTiles(kv::RopeAttr rope, int64_t headDim,
                              int64_t threads);

/// Rotates the rows of 16-bit shared tiles in place by RoPE, the results
/// rounded to the tile's element type. A row's work is split into units of
/// 16-byte chunks -- an interleaved chunk, or a rotate-half chunk with its
/// partner R / 2 dims up -- and each of the block's threads keeps one unit
/// column for every row it takes, so its pair frequencies are computed
/// once, when the TileRotation is built (before a kernel's tile loop).
class TileRotation {
public:
  TileRotation(mlir::ImplicitLocOpBuilder &b, kv::RopeAttr rope,
               int64_t headDim, mlir::Value thread, int64_t threads);

  /// Rotates the rows of `tile` (stage `stage`, null without stages), row
  /// r at `rowPosition(r)`. The caller puts barriers around it.
  void apply(mlir::ImplicitLocOpBuilder &b, const SharedTile &tile,
             mlir::Value stage,
             llvm::function_ref<RopeRowPosition(mlir::ImplicitLocOpBuilder &,
                                                mlir::Value row)>
                 rowPosition) const;

private:
  kv::RopeAttr rope;
  int64_t headDim;
  /// Threads per row (one unit column each), and rows taken at once.
  int64_t units, rowLanes;
  /// This thread's first row, and its unit's first dim (and partner dim).
  mlir::Value firstRow, dim0, dim1;
  llvm::SmallVector<mlir::Value> freqs;
};

} // namespace kvir::codegen

#endif // KVIR_CODEGEN_ROPE_H
