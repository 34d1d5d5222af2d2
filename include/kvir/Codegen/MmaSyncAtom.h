//===- MmaSyncAtom.h - mma.sync m16n8k16 fed by ldmatrix --------*- C++ -*-===//
//
// The MMA atom of sm_80 on (MmaAtom): warp-level mma.sync m16n8k16 with
// f16 or bf16 inputs and f32 accumulators (PTX ISA, "Matrix Fragments for
// mma.m16n8k16 with floating point type"), fed from SharedTiles by
// ldmatrix:
//   - A (16 x 16, row major: rows = M, cols = K): ldmatrix.x4;
//   - B from a tile whose rows are N (K^T of attention: a key tile with the
//     head dim contiguous): ldmatrix.x4, two n8 fragments at once;
//   - B from a tile whose rows are K (the value tile of P V): ldmatrix.x4
//     .trans, two n8 fragments at once;
//   - an f32 accumulator pair (16 x 8 + 16 x 8) rounds to an A fragment
//     with no data movement: P feeds P V from registers.
// Fragment types are nvgpu's: A vector<4x2xT>, B vector<2x2xT>,
// accumulators vector<2x2xf32> holding (row g, cols 2t, 2t+1) and
// (row g + 8, cols 2t, 2t+1) with g = lane / 4, t = lane % 4
// (FragmentLayout::mmaM16N8). Synchronous: fence, commit and wait are
// no-ops.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_CODEGEN_MMASYNCATOM_H
#define KVIR_CODEGEN_MMASYNCATOM_H

#include "kvir/Codegen/MmaAtom.h"

namespace kvir::codegen {

class MmaSyncAtom : public MmaAtom {
public:
  /// Fragments of `elementType` (f16 or bf16) for a warp whose lane index
  /// is `lane` (the lane's accumulator rows and columns are built at `b`).
  MmaSyncAtom(mlir::ImplicitLocOpBuilder &b, mlir::Type elementType,
              mlir::Value lane);

  /// m16n8k16.
  static constexpr int64_t kM = 16, kN = 8, kK = 16;
  int64_t getM() const override { return kM; }
  int64_t getN() const override { return kN; }
  int64_t getK() const override { return kK; }
  mlir::VectorType getAType() const override;
  mlir::VectorType getBType() const override;
  mlir::VectorType getAccType() const override;

  /// ldmatrix reads 16-byte rows of 8 elements: tiles of 16-byte chunks
  /// (no swizzle or xor-chunks), of 16-bit elements.
  std::optional<std::string>
  whyNotOperand(const SharedTile &tile) const override;

  /// row0 a multiple of 16, k0 of 16.
  mlir::Value loadA(mlir::ImplicitLocOpBuilder &b, const SharedTile &tile,
                    mlir::Value stage, mlir::Value row0,
                    int64_t k0) const override;
  std::pair<mlir::Value, mlir::Value>
  loadBRows(mlir::ImplicitLocOpBuilder &b, const SharedTile &tile,
            mlir::Value stage, mlir::Value n0, int64_t k0) const override;
  /// nBase: null, or a multiple of 64 columns, a whole group of swizzled
  /// chunks (a warp's slice of a wide value tile).
  std::pair<mlir::Value, mlir::Value>
  loadBCols(mlir::ImplicitLocOpBuilder &b, const SharedTile &tile,
            mlir::Value stage, mlir::Value k0, int64_t n0,
            mlir::Value nBase = {}) const override;
  mlir::Value mma(mlir::ImplicitLocOpBuilder &b, mlir::Value a,
                  mlir::Value bFragment, mlir::Value acc) const override;
  mlir::Value accumulatorsToA(mlir::ImplicitLocOpBuilder &b, mlir::Value acc0,
                              mlir::Value acc1) const override;

  /// The accumulator layout of every mma.sync m16n8 atom.
  static FragmentLayout layout() { return FragmentLayout::mmaM16N8(); }

private:
  mlir::Value ldmatrixX4(mlir::ImplicitLocOpBuilder &b, const SharedTile &tile,
                         mlir::Value stage, mlir::Value row0, int64_t col0,
                         bool rowsByLowBit, bool transpose,
                         mlir::Value colBase = {}) const;
  std::pair<mlir::Value, mlir::Value> splitX4(mlir::ImplicitLocOpBuilder &b,
                                              mlir::Value v) const;

  mlir::Type elementType;
  mlir::Value lane;
};

} // namespace kvir::codegen

#endif // KVIR_CODEGEN_MMASYNCATOM_H
