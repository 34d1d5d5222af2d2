//===- WgmmaAtom.h - wgmma.mma_async of one warpgroup -----------*- C++ -*-===//
//
// The MMA atom of sm_90a: warpgroup-level wgmma.mma_async m64nNk16 with f16
// or bf16 inputs and f32 accumulators (PTX ISA, "Asynchronous Warpgroup
// Level Matrix Multiply-Accumulate Instructions"):
//   - B always, and A in the SS form, from shared memory through matrix
//     descriptors; the tiles use the hardware's 128-byte swizzle
//     (TileLayout Swizzle::B128: rows cut into 64-element column blocks,
//     rows 128 bytes apart in a block), the layout TMA writes;
//       * K-major operands (rows M or N, K contiguous: Q, the key tile of
//         S = Q K^T) step through K by moving the start address 32 bytes
//         within a block, and by a block past 64 elements;
//       * MN-major operands (rows K, N contiguous: the value tile of
//         O += P V) give the 64-column blocks' distance as the leading
//         byte offset and 8 rows (1024 bytes) as the stride byte offset;
//   - A in the RS form from four b32 registers per thread, whose layout is
//     an f32 accumulator's two n8 tiles rounded (P of P V from registers).
//     MLIR 22's nvvm.wgmma.mma_async reads A from shared memory only, so
//     the RS form is emitted as inline PTX (llvm.inline_asm, accumulators
//     tied to the outputs);
//   - the accumulator, !llvm.struct of N/2 f32, is per warp of the
//     warpgroup an m16n8 fragment (FragmentLayout::mmaM16N8, N/8 n-tiles)
//     of rows 16 (warp % 4) ...: 64 rows for the warpgroup.
// Asynchronous: wgmma.fence before an issue whose registers a thread
// wrote, commit_group after issues, wait_group before reading results.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_CODEGEN_WGMMAATOM_H
#define KVIR_CODEGEN_WGMMAATOM_H

#include "kvir/Codegen/FragmentLayout.h"
#include "kvir/Codegen/TileLayout.h"

#include "mlir/IR/BuiltinTypes.h"

#include <optional>
#include <string>

namespace kvir::codegen {

/// A shared tile a wgmma reads: the memref (of `layout.stages` stages) and
/// its layout.
struct WgmmaOperandTile {
  mlir::Value memref;
  TileLayout layout;
};

class WgmmaAtom {
public:
  /// Fragments of `elementType` (f16 or bf16) and N = `n` (8-256, a
  /// multiple of 8) for thread `thread` (0-127) of its warpgroup.
  WgmmaAtom(mlir::ImplicitLocOpBuilder &b, mlir::Type elementType, int64_t n,
            mlir::Value thread);

  static constexpr int64_t kM = 64, kK = 16;
  /// The warps of a warpgroup, which issues a wgmma together.
  static constexpr int64_t kWarps = 4;
  int64_t getN() const { return n; }
  /// !llvm.struct<(f32 x N/2)>.
  mlir::Type getAccType() const;
  /// The per-warp layout of the accumulator, and the thread's view of it
  /// (rows within its warp's 16; add warpRow0 for the warpgroup's).
  static FragmentLayout layout() { return FragmentLayout::mmaM16N8(); }
  const LaneFragment &getAccFragment() const { return acc; }
  /// 16 * (thread / 32): the first of the warp's rows.
  mlir::Value warpRow0(mlir::ImplicitLocOpBuilder &b) const;
  /// Register i of the accumulator holds element (h, j) of n-tile t for
  /// i = 4 t + 2 h + j (PTX ISA, wgmma "Register Fragments", D).
  static int64_t accIndex(int64_t t, int64_t h, int64_t j) {
    return 4 * t + 2 * h + j;
  }

  /// The accumulator holding the thread's m16n8 fragments `fragments` (one
  /// per n-tile, vector<rowsPerLane x colsPerLane x f32> as layout() and
  /// mma.sync place them), and back: the same registers.
  mlir::Value
  fragmentsToAccumulator(mlir::ImplicitLocOpBuilder &b,
                         llvm::ArrayRef<mlir::Value> fragments) const;
  llvm::SmallVector<mlir::Value>
  accumulatorToFragments(mlir::ImplicitLocOpBuilder &b, mlir::Value acc) const;
  /// The RS A registers (vector<4xi32>) of an mma.sync m16n8k16 A fragment
  /// (vector<4x2xT>, a register per row): the ISA gives both forms the same
  /// per-warp layout.
  static mlir::Value fragmentToA(mlir::ImplicitLocOpBuilder &b,
                                 mlir::Value fragment);

  /// Why `layout` cannot hold a wgmma operand, or nullopt: 16-bit elements,
  /// the 128-byte hardware swizzle, rows a multiple of 8.
  static std::optional<std::string> whyNotOperand(const TileLayout &layout);

  /// The descriptor of rows [row0, row0 + rows) and K [k0, k0 + 16) of a
  /// K-major tile (its rows M or N, its columns K). row0 a multiple of 8.
  mlir::Value descriptorRows(mlir::ImplicitLocOpBuilder &b,
                             const WgmmaOperandTile &tile, mlir::Value stage,
                             mlir::Value row0, int64_t k0) const;
  /// The descriptor of K [k0, k0 + 16) and N [n0, n0 + N) of an MN-major
  /// tile (its rows K, its columns N). k0 a multiple of 8, n0 (an index,
  /// e.g. a warpgroup's slice of the value columns) a multiple of 64.
  mlir::Value descriptorCols(mlir::ImplicitLocOpBuilder &b,
                             const WgmmaOperandTile &tile, mlir::Value stage,
                             mlir::Value k0, mlir::Value n0) const;

  mlir::Value zeroAcc(mlir::ImplicitLocOpBuilder &b) const;
  /// SS: acc + A B (acc ignored unless `accumulate`). `bColumns`: B from
  /// descriptorCols (MN-major), else from descriptorRows.
  mlir::Value mma(mlir::ImplicitLocOpBuilder &b, mlir::Value descA,
                  mlir::Value descB, mlir::Value acc, bool bColumns,
                  bool accumulate) const;
  /// RS: A the vector<4xi32> of accumulatorToA.
  mlir::Value mmaRegisters(mlir::ImplicitLocOpBuilder &b, mlir::Value aRegs,
                           mlir::Value descB, mlir::Value acc, bool bColumns,
                           bool accumulate) const;
  /// The RS A fragment of K [16 j, 16 j + 16) of accumulator `acc` (its
  /// n-tiles 2j and 2j + 1, rounded to the element type): registers
  /// 8j ... 8j + 7 packed in pairs, low half first.
  mlir::Value accumulatorToA(mlir::ImplicitLocOpBuilder &b, mlir::Value acc,
                             int64_t j) const;

  void fence(mlir::ImplicitLocOpBuilder &b) const;
  void commit(mlir::ImplicitLocOpBuilder &b) const;
  void wait(mlir::ImplicitLocOpBuilder &b, int64_t pending) const;

private:
  /// The descriptor of the operand at `byteOffset` of `tile`'s stage with
  /// the given leading byte offset (the stride: one 1024-byte pattern).
  mlir::Value descriptor(mlir::ImplicitLocOpBuilder &b,
                         const WgmmaOperandTile &tile, mlir::Value stage,
                         mlir::Value byteOffset, int64_t leadingBytes) const;
  /// The 14-bit start field of the shared address `base + byteOffset`.
  mlir::Value startField(mlir::ImplicitLocOpBuilder &b,
                         const WgmmaOperandTile &tile, mlir::Value stage,
                         mlir::Value byteOffset) const;

  mlir::Type elementType;
  int64_t n;
  mlir::Value thread;
  LaneFragment acc;
};

} // namespace kvir::codegen

#endif // KVIR_CODEGEN_WGMMAATOM_H
