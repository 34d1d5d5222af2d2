//===- TmaCopy.h - TMA copies of tensor-map boxes into shared tiles -*- C++
//-*-===//
//
// sm_90's tensor copies (cp.async.bulk.tensor, PTX ISA 9.7.9.27) as a copy
// atom: one thread moves a whole tile, box by box, from a tensor map into
// a shared tile laid out with the map's hardware swizzle, the copies
// completing their bytes on an mbarrier (the caller's arrive.expect_tx
// announces them). The map is a kernel argument in global memory (the
// host encoded it and copied it there), read through the tensormap proxy:
// a thread acquires it (fence.proxy.tensormap::generic.acquire.sys) before
// its first copy.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_CODEGEN_TMACOPY_H
#define KVIR_CODEGEN_TMACOPY_H

#include "kvir/Codegen/SharedTile.h"

#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <optional>
#include <string>

namespace kvir::codegen {

class TmaTileCopy {
public:
  /// Copies into `tile` (rows x cols, 128-byte swizzle, whyNot is none)
  /// from the map in `map` (the kernel's memref<16xi64> argument) whose
  /// box is one 128-byte column block of the tile: its innermost dim the
  /// block's columns, its outermost the tile's rows, 1 between.
  TmaTileCopy(mlir::Value map, const SharedTile &tile);

  /// Why `layout` cannot be filled by 128-byte swizzled boxes, or none.
  static std::optional<std::string> whyNot(const TileLayout &layout);
  /// The columns of one box (a 128-byte row of the swizzle) of elements
  /// of `elementBits`.
  static int64_t boxColumns(int64_t elementBits);
  int64_t boxColumns() const { return boxColumns(tile.layout().elementBits); }
  /// The bytes one tile's boxes move.
  int64_t tileBytes() const;

  /// This thread acquires the map for its copies.
  void acquireMap(mlir::ImplicitLocOpBuilder &b) const;
  /// Issues the boxes of one tile into stage `stage` (index) of the tile,
  /// completing on `barrier` (a shared pointer): column block c reads the
  /// map at {c * boxColumns(), middle..., row} (innermost first; `middle`
  /// and `row` are i32 coordinates).
  void copyTile(mlir::ImplicitLocOpBuilder &b, mlir::Value stage,
                mlir::Value barrier, mlir::ArrayRef<mlir::Value> middle,
                mlir::Value row) const;

private:
  mlir::Value mapPointer(mlir::ImplicitLocOpBuilder &b) const;

  mlir::Value map;
  SharedTile tile;
};

} // namespace kvir::codegen

#endif // KVIR_CODEGEN_TMACOPY_H
