//===- SharedTile.h - Row-major tiles in shared memory ----------*- C++ -*-===//
//
// A [rows, cols] tile in shared memory (optionally one of `stages` in a
// leading axis) and where its chunks (16 bytes unless said) live, by its
// TileLayout's swizzle:
//   - xor-chunks (the default): chunk c of row r is stored at chunk
//     c ^ (r % s), s the largest power of two up to 8 dividing the row's
//     chunks: the 8 rows an ldmatrix phase reads (one 16-byte chunk each,
//     same logical chunk) then fall into 8 different bank groups, and so
//     do the 8 rows a warp's cp.async chunks write, for every row width
//     that is a multiple of 64 elements. Other widths (80, 96: s = 2, 4)
//     stay correct with fewer distinct groups;
//   - 128B: the hardware's swizzle that wgmma descriptors and TMA read
//     (64-element column blocks, each the tile's rows 128 bytes apart);
//     its indices address the memref as the flat array it is;
//   - none: row-major.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_CODEGEN_SHAREDTILE_H
#define KVIR_CODEGEN_SHAREDTILE_H

#include "kvir/Codegen/TileLayout.h"

#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "llvm/ADT/SmallVector.h"

namespace kvir::codegen {

struct SharedTile {
  /// memref<[stages x] rows x cols x T, workgroup>.
  mlir::Value memref;
  int64_t rows = 0, cols = 0;
  Swizzle swizzle = Swizzle::XorChunks;
  /// The bytes of a chunk: what one cp.async copies (4, 8 or 16; narrower
  /// rows than 16 bytes, such as an int8 cache's scales, take 4 or 8).
  int64_t chunkBytes = 16;

  /// The tile's layout: every address below is its.
  TileLayout layout() const;
  /// Elements per chunk.
  int64_t chunkElements() const;
  int64_t chunksPerRow() const { return cols / chunkElements(); }
  /// The indices of the element at (row, the start of logical chunk
  /// `chunk`), in stage `stage` (null for a tile without stages).
  llvm::SmallVector<mlir::Value> chunkIndices(mlir::ImplicitLocOpBuilder &b,
                                              mlir::Value stage, mlir::Value row,
                                              mlir::Value chunk) const;
  /// The indices of element (row, col); col need not start a chunk.
  llvm::SmallVector<mlir::Value> elementIndices(mlir::ImplicitLocOpBuilder &b,
                                                mlir::Value stage,
                                                mlir::Value row,
                                                mlir::Value col) const;

  /// Whether rows are whole groups of 8 swizzled chunks: then the element
  /// offset of (row, chunk) for a row r0 + r with r0 a multiple of 8 and
  /// a chunk c0 + c (c0 a multiple of 8) is
  ///   stageOffset + laneOffset(r, c) + r0 * cols + c0 * chunkElements
  /// and xor-ing laneOffset with 8 k chunkElements (k < 8) moves to chunk
  /// c ^ k: address arithmetic a kernel can keep in one register.
  bool hasLinearSwizzle() const;
  /// The element offset of stage `stage` (0 without stages).
  mlir::Value stageOffset(mlir::ImplicitLocOpBuilder &b,
                          mlir::Value stage) const;
  /// The element offset of (row, chunk) for row < 8 ... rows of a 16-row
  /// block and chunk < 8, with the swizzle applied.
  mlir::Value laneOffset(mlir::ImplicitLocOpBuilder &b, mlir::Value row,
                         mlir::Value chunk) const;
  /// The tile's memref collapsed to one dimension.
  mlir::Value flatView(mlir::ImplicitLocOpBuilder &b) const;
};

} // namespace kvir::codegen

#endif // KVIR_CODEGEN_SHAREDTILE_H
