//===- FragmentLayout.h - Tile elements a lane's registers hold -*- C++ -*-===//
//
// The accumulator of an MMA atom spread over a warp: a warp's accumulator
// tile is mTiles x nTiles atoms of atomRows x atomCols; in each atom a lane
// holds `rowsPerLane` rows, `rowStep` apart from row lane / lanesPerRow,
// and in each of them `colsPerLane` consecutive columns from column
// (lane % lanesPerRow) * colsPerLane. The lanes holding one row are
// `lanesPerRow` consecutive lanes, so a row reduction is a butterfly over
// xor 1 .. lanesPerRow / 2. A lane's rows are numbered across the tile as
// *row slots*, slot t * rowsPerLane + h for row h of m-tile t: the order
// of per-row state (running max, sum, LSE, positions).
//
// Softmax, masks, variants and epilogues address accumulator elements only
// through this: they never know the instruction.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_CODEGEN_FRAGMENTLAYOUT_H
#define KVIR_CODEGEN_FRAGMENTLAYOUT_H

#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace kvir::codegen {

struct FragmentLayout {
  int64_t atomRows = 0, atomCols = 0;
  int64_t rowsPerLane = 0, rowStep = 0;
  int64_t colsPerLane = 0, lanesPerRow = 0;

  /// mma.sync m16n8k* with f32 accumulators (PTX ISA, "Matrix Fragments for
  /// mma.m16n8k16"): c0, c1 at (lane / 4, 2 (lane % 4) + {0, 1}), c2, c3
  /// eight rows below.
  static FragmentLayout mmaM16N8();

  int64_t rowSlots(int64_t mTiles) const { return mTiles * rowsPerLane; }
  int64_t rowSlot(int64_t t, int64_t h) const { return t * rowsPerLane + h; }
  /// The rows of mTiles atoms stacked.
  int64_t tileRows(int64_t mTiles) const { return mTiles * atomRows; }
  /// How far row h of m-tile t lies below a lane's row in the first atom.
  int64_t rowOffset(int64_t t, int64_t h) const {
    return t * atomRows + h * rowStep;
  }
  /// The row and column of element (h, j) of atom (t, n) in lane `lane`.
  int64_t row(int64_t lane, int64_t t, int64_t h) const;
  int64_t col(int64_t lane, int64_t n, int64_t j) const;
};

/// A lane's view of a FragmentLayout: the lane-dependent parts computed
/// once, coordinates built per call with the builder given.
class LaneFragment {
public:
  LaneFragment(mlir::ImplicitLocOpBuilder &b, const FragmentLayout &layout,
               mlir::Value lane);

  const FragmentLayout &getLayout() const { return layout; }
  /// The lane's row h within an atom, and column j.
  mlir::Value atomRow(mlir::ImplicitLocOpBuilder &b, int64_t h) const;
  mlir::Value atomCol(mlir::ImplicitLocOpBuilder &b, int64_t j) const;
  /// The lane's row h of m-tile t, within the warp's tile.
  mlir::Value row(mlir::ImplicitLocOpBuilder &b, int64_t t, int64_t h) const;
  /// The lane's column j of n-tile n.
  mlir::Value col(mlir::ImplicitLocOpBuilder &b, int64_t n, int64_t j) const;
  /// The lane's first column of n-tile 0; column j of n-tile n is this
  /// plus n * atomCols + j.
  mlir::Value firstCol(mlir::ImplicitLocOpBuilder &b) const;
  /// Whether the lane is the first of the lanes sharing its rows (one
  /// lane writes a row's scalar results).
  mlir::Value isRowLeader(mlir::ImplicitLocOpBuilder &b) const;
  /// The lane's place among the lanes sharing its rows (0 ...
  /// lanesPerRow - 1).
  mlir::Value getLaneInRow() const { return laneInRow; }

private:
  FragmentLayout layout;
  /// lane / lanesPerRow and lane % lanesPerRow.
  mlir::Value rowInAtom, laneInRow;
};

} // namespace kvir::codegen

#endif // KVIR_CODEGEN_FRAGMENTLAYOUT_H
