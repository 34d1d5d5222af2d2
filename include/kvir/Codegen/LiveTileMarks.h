//===- LiveTileMarks.h - Which K/V tiles a block found live -----*- C++ -*-===//
//
// Tile skipping's bookkeeping, shared by the kernels that skip K/V tiles a
// mask hides: a ring of `slots` i32 in shared memory where slot n % slots
// holds n + 1 once some thread found a visible pair in tile n. Marks are
// atomic maxes, so threads that find pairs store the same value and the
// slot's older mark (tile n - slots) is smaller; a tile is live when its
// slot holds exactly n + 1. The ring must hold every tile between a mark
// and the last read of it.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_CODEGEN_LIVETILEMARKS_H
#define KVIR_CODEGEN_LIVETILEMARKS_H

#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace kvir::codegen {

class LiveTileMarks {
public:
  /// `buffer`: an i32 shared buffer of `slots` entries.
  LiveTileMarks(mlir::Value buffer, int64_t slots)
      : buffer(buffer), slots(slots) {}

  /// Stores 0 in every slot (shared memory starts undefined), from one
  /// thread; a barrier must follow before the first mark.
  void clear(mlir::ImplicitLocOpBuilder &b) const;
  /// Marks tile `index` live where `found` (i1) holds.
  void mark(mlir::ImplicitLocOpBuilder &b, mlir::Value index,
            mlir::Value found) const;
  /// Whether tile `index` (< numTiles) is marked, after its marks and a
  /// barrier.
  mlir::Value isLive(mlir::ImplicitLocOpBuilder &b, mlir::Value index,
                     mlir::Value numTiles) const;

private:
  mlir::Value buffer;
  int64_t slots;
};

} // namespace kvir::codegen

#endif // KVIR_CODEGEN_LIVETILEMARKS_H
