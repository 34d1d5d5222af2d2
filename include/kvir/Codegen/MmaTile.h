//===- MmaTile.h - Tensor-core fragments of m16n8k16 ------------*- C++ -*-===//
//
// Warp-level mma.sync m16n8k16 with f16 or bf16 inputs and f32
// accumulators (PTX ISA, "Matrix Fragments for mma.m16n8k16 with
// floating point type"), fed from SharedTiles by ldmatrix:
//   - A (16 x 16, row major: rows = M, cols = K): ldmatrix.x4;
//   - B from a tile whose rows are N (K^T of attention: a key tile with the
//     head dim contiguous): ldmatrix.x4, two n8 fragments at once;
//   - B from a tile whose rows are K (the value tile of P V): ldmatrix.x4
//     .trans, two n8 fragments at once;
//   - an f32 accumulator pair (16 x 8 + 16 x 8) rounds to an A fragment
//     with no data movement: P feeds P V from registers.
// Fragment types are nvgpu's: A vector<4x2xT>, B vector<2x2xT>,
// accumulators vector<2x2xf32> holding (row g, cols 2t, 2t+1) and
// (row g + 8, cols 2t, 2t+1) with g = lane / 4, t = lane % 4.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_CODEGEN_MMATILE_H
#define KVIR_CODEGEN_MMATILE_H

#include "kvir/Codegen/FragmentLayout.h"
#include "kvir/Codegen/SharedTile.h"

#include "mlir/IR/BuiltinTypes.h"

namespace kvir::codegen {

class MmaTile {
public:
  /// Fragments of `elementType` (f16 or bf16) for a warp whose lane index
  /// is `lane`.
  MmaTile(mlir::ImplicitLocOpBuilder &b, mlir::Type elementType,
          mlir::Value lane);

  mlir::VectorType getAType() const;
  mlir::VectorType getBType() const;
  mlir::VectorType getAccType() const;

  /// The A fragment of rows [row0, row0 + 16), cols [k0, k0 + 16) (row0 a
  /// multiple of 16, k0 of 16).
  mlir::Value loadA(const SharedTile &tile, mlir::Value stage,
                    mlir::Value row0, int64_t k0);
  /// B fragments for n [n0, n0 + 8) and [n0 + 8, n0 + 16), k [k0, k0 + 16)
  /// of a tile stored [n][k].
  std::pair<mlir::Value, mlir::Value> loadBRows(const SharedTile &tile,
                                                mlir::Value stage,
                                                mlir::Value n0, int64_t k0);
  /// B fragments for k [k0, k0 + 16), n [n0, n0 + 8) and [n0 + 8, n0 + 16)
  /// of a tile stored [k][n], n counted from `nBase` (null: 0; else a
  /// multiple of 64 columns, a whole group of swizzled chunks: a warp's
  /// slice of a wide value tile).
  std::pair<mlir::Value, mlir::Value> loadBCols(const SharedTile &tile,
                                                mlir::Value stage,
                                                mlir::Value k0, int64_t n0,
                                                mlir::Value nBase = {});
  /// acc + a * b.
  mlir::Value mma(mlir::Value a, mlir::Value b, mlir::Value acc);
  mlir::Value zeroAcc();
  /// The A fragment whose k [0, 8) is `acc0` and k [8, 16) is `acc1`,
  /// rounded to the element type.
  mlir::Value accumulatorsToA(mlir::Value acc0, mlir::Value acc1);
  /// Row and column (within the 16 x 8 tile) of accumulator element
  /// [i][j], i, j in {0, 1}.
  std::pair<mlir::Value, mlir::Value> accCoord(int64_t i, int64_t j);
  /// The accumulators' fragment layout (FragmentLayout::mmaM16N8), and the
  /// lane's view of it: element [h][j] of accumulator (t, n) is the lane's
  /// row h of m-tile t and column j of n-tile n.
  static FragmentLayout accLayout() { return FragmentLayout::mmaM16N8(); }
  const LaneFragment &getAccFragment() const { return acc; }

private:
  mlir::Value ldmatrixX4(const SharedTile &tile, mlir::Value stage,
                         mlir::Value row0, int64_t col0, bool rowsByLowBit,
                         bool transpose, mlir::Value colBase = {});
  std::pair<mlir::Value, mlir::Value> splitX4(mlir::Value v);

  mlir::ImplicitLocOpBuilder &b;
  mlir::Type elementType;
  mlir::Value lane;
  LaneFragment acc;
};

} // namespace kvir::codegen

#endif // KVIR_CODEGEN_MMATILE_H
