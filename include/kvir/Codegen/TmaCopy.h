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
  /// box is rows of one 128-byte column block of the tile (its innermost
  /// dim the block's columns).
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
  /// Column blocks of a tile row: boxes a tile's rows take side by side.
  int64_t numBlocks() const { return tile.cols / boxColumns(); }
  /// Issues one box into stage `stage` (index) of the tile at rows
  /// [row, row + box rows) of column block `block`, completing on `barrier`
  /// (a shared pointer); `coordinates` (i32, innermost first) are the
  /// map's of the box's first element. `row` is a multiple of 8: the
  /// swizzle the copy applies by shared address is then the tile's.
  void copyBox(mlir::ImplicitLocOpBuilder &b, mlir::Value stage,
               mlir::Value barrier, int64_t row, int64_t block,
               mlir::ArrayRef<mlir::Value> coordinates) const;

private:
  mlir::Value mapPointer(mlir::ImplicitLocOpBuilder &b) const;

  mlir::Value map;
  SharedTile tile;
};

} // namespace kvir::codegen

#endif // KVIR_CODEGEN_TMACOPY_H
