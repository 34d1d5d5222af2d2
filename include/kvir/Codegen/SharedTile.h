//===- SharedTile.h - Row-major tiles in shared memory ----------*- C++ -*-===//
//
// A [rows, cols] tile of 16-bit elements in shared memory (optionally one
// of `stages` in a leading axis) and where its 16-byte chunks live. With
// `swizzled`, chunk c of row r is stored at chunk c ^ (r % 8): the 8 rows an
// ldmatrix phase reads (one 16-byte chunk each, same logical chunk) then
// fall into 8 different bank groups, and so do the 8 rows a warp's
// cp.async chunks write, for every row width of 64 elements or more.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_CODEGEN_SHAREDTILE_H
#define KVIR_CODEGEN_SHAREDTILE_H

#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "llvm/ADT/SmallVector.h"

namespace kvir::codegen {

struct SharedTile {
  /// memref<[stages x] rows x cols x T, workgroup>.
  mlir::Value memref;
  int64_t rows = 0, cols = 0;
  bool swizzled = true;

  /// Elements per 16-byte chunk.
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
};

} // namespace kvir::codegen

#endif // KVIR_CODEGEN_SHAREDTILE_H
