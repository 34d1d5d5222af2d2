//===- TmaCopy.cpp - TMA copies of tensor-map boxes into shared tiles -----===//
#include "kvir/Codegen/TmaCopy.h"
#include "kvir/Codegen/IRBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace kvir;
using namespace kvir::codegen;

namespace {
/// The bytes of a 128-byte swizzle's row: one box's innermost dim.
constexpr int64_t kBoxRowBytes = 128;
/// A CUtensorMap's bytes (the fence's range).
constexpr int64_t kMapBytes = 128;
} // namespace

TmaTileCopy::TmaTileCopy(Value map, const SharedTile &tile)
    : map(map), tile(tile) {
  assert(!whyNot(tile.layout()) && "a tile TMA boxes can fill");
}

std::optional<std::string> TmaTileCopy::whyNot(const TileLayout &layout) {
  if (layout.swizzle != Swizzle::B128)
    return "TMA boxes fill tiles with the 128-byte hardware swizzle, not " +
           stringifySwizzle(layout.swizzle).str();
  if (layout.rowBytes() % kBoxRowBytes)
    return "a " + std::to_string(layout.rowBytes()) +
           "-byte row is not whole 128-byte column blocks";
  if (layout.rows > 256)
    return "a box has at most 256 rows, not " + std::to_string(layout.rows);
  if (std::string why = layout.whyInvalid(); !why.empty())
    return why;
  return std::nullopt;
}

int64_t TmaTileCopy::boxColumns(int64_t elementBits) {
  return kBoxRowBytes * 8 / elementBits;
}

int64_t TmaTileCopy::tileBytes() const { return tile.layout().stageBytes(); }

Value TmaTileCopy::mapPointer(ImplicitLocOpBuilder &b) const {
  Value address = arith::IndexCastUIOp::create(
      b, b.getI64Type(),
      memref::ExtractAlignedPointerAsIndexOp::create(b, map));
  return LLVM::IntToPtrOp::create(b, LLVM::LLVMPointerType::get(b.getContext()),
                                  address);
}

void TmaTileCopy::acquireMap(ImplicitLocOpBuilder &b) const {
  // The host wrote the map (a copy into device memory before the launch):
  // system scope, as the CUDA programming guide asks of a map in global
  // memory.
  NVVM::FenceProxyAcquireOp::create(
      b, NVVM::MemScopeKind::SYS, mapPointer(b),
      arith::ConstantIntOp::create(b, kMapBytes, 32));
}

void TmaTileCopy::copyBox(ImplicitLocOpBuilder &b, Value stage, Value barrier,
                          int64_t row, int64_t block,
                          ArrayRef<Value> coordinates) const {
  assert(row % 8 == 0 && "a box starts a swizzle atom");
  IRBuilder ir{b};
  TileLayout layout = tile.layout();
  int64_t offset = layout.byteOffset(0, row, block * boxColumns());
  Value stageOffset = ir.mul(stage, ir.idx(layout.stageBytes()));
  // The .shared::cluster form (sm_90's; .shared::cta needs PTX 8.6): the
  // block's own shared address is one of the cluster's.
  Value dst = LLVM::AddrSpaceCastOp::create(
      b, LLVM::LLVMPointerType::get(b.getContext(), 7),
      ir.sharedPointer(tile.memref, ir.add(stageOffset, ir.idx(offset))));
  NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
      b, dst, mapPointer(b), coordinates, barrier,
      /*im2colOffsets=*/ValueRange(), /*multicastMask=*/Value(),
      /*l2CacheHint=*/Value(), NVVM::TMALoadMode::TILE, /*isCTAOnly=*/false,
      /*group=*/nullptr, /*predicate=*/Value());
}
