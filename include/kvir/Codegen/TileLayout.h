//===- TileLayout.h - Where a shared tile keeps each element ---*- C++ -*-===//
//
// A tile layout is data: [stages x] rows x cols elements of `elementBits`
// and a swizzle, from which every shared-memory address of the tile is
// computed, as a number (sizes, alignment, tests) and as IR (kernels). The
// swizzles permute 16-byte chunks within a row:
//
//   - none:       row-major;
//   - xor-chunks: kvir's own: logical chunk c of row r is stored at chunk
//                 c ^ (r % s), s the largest power of two up to 8 dividing
//                 the row's chunks (ldmatrix and cp.async conflict-free for
//                 rows of any multiple of 64 bytes, correct for any width);
//   - 32B / 64B / 128B: the hardware's modes (PTX ISA: tensor maps of
//                 cp.async.bulk.tensor, the layout field of wgmma and
//                 tcgen05 shared-memory descriptors). A row of the tile is
//                 cut into column blocks of the swizzle's span (32, 64 or
//                 128 bytes); each block stores its rows `span` bytes apart
//                 and the blocks follow one another (CUTLASS's K-major
//                 atoms tiled rows first). Within each repeating pattern of
//                 8 x span bytes (256, 512 or 1024, which the tile's base
//                 must be aligned to), byte address a holds what row-major
//                 order puts at
//                     a ^ (((a >> 7) & (span / 16 - 1)) << 4),
//                 the ISA's swizzle of the 16-byte chunk bits [4, 4 +
//                 log2(span / 16)) by the address bits from 7 up.
//
// Components take the builder per call: a layout holds no IR.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_CODEGEN_TILELAYOUT_H
#define KVIR_CODEGEN_TILELAYOUT_H

#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace kvir::codegen {

enum class Swizzle : uint8_t { None, XorChunks, B32, B64, B128 };

/// "none", "xor-chunks", "32B", "64B", "128B".
llvm::StringRef stringifySwizzle(Swizzle swizzle);
std::optional<Swizzle> symbolizeSwizzle(llvm::StringRef name);
/// Whether `swizzle` is one of the hardware's modes.
bool isHardwareSwizzle(Swizzle swizzle);
/// The bytes a hardware swizzle permutes chunks within (32, 64, 128); 0 for
/// none and xor-chunks.
int64_t swizzleSpanBytes(Swizzle swizzle);
/// The bytes after which a hardware swizzle repeats (8 rows of its span:
/// 256, 512, 1024), which the tile's base address must be a multiple of;
/// 0 for none and xor-chunks.
int64_t swizzleAtomBytes(Swizzle swizzle);

struct TileLayout {
  int64_t rows = 0, cols = 0;
  int64_t elementBits = 16;
  /// Tiles of the same shape one after another (a pipeline's buffers).
  int64_t stages = 1;
  Swizzle swizzle = Swizzle::None;
  /// The bytes of a chunk: what one copy moves (xor-chunks permutes chunks
  /// of this size; 4 or 8 for rows narrower than 16 bytes). Hardware
  /// swizzles permute 16-byte chunks.
  int64_t chunkBytes = 16;

  /// Why this layout cannot hold its tile (a row not a whole number of
  /// chunks or of swizzle spans, rows not a whole number of swizzle
  /// atoms, ...), or "" if it can.
  std::string whyInvalid() const;

  int64_t rowBytes() const { return cols * elementBits / 8; }
  int64_t chunkElements() const { return chunkBytes * 8 / elementBits; }
  int64_t chunksPerRow() const { return cols / chunkElements(); }
  int64_t stageBytes() const { return rows * rowBytes(); }
  int64_t sizeBytes() const { return stages * stageBytes(); }
  /// The alignment the tile's base needs: a chunk (16 bytes at least), or
  /// the hardware swizzle's atom.
  int64_t alignment() const;
  /// The chunks xor-chunks permutes within (1: none).
  int64_t xorSpan() const;

  /// The byte offset of element (row, col) of stage `stage` from the base.
  int64_t byteOffset(int64_t stage, int64_t row, int64_t col) const;

  /// The same as IR: the element offset (an index) of (row, col) of stage
  /// `stage` (null: stage 0).
  mlir::Value emitElementOffset(mlir::ImplicitLocOpBuilder &b,
                                mlir::Value stage, mlir::Value row,
                                mlir::Value col) const;
  /// The physical chunk of logical chunk `chunk` of `row` within its row,
  /// for none and xor-chunks (a hardware swizzle's rows are split into
  /// column blocks: emitElementOffset addresses them).
  mlir::Value emitPhysicalChunk(mlir::ImplicitLocOpBuilder &b,
                                mlir::Value row, mlir::Value chunk) const;
};

} // namespace kvir::codegen

#endif // KVIR_CODEGEN_TILELAYOUT_H
