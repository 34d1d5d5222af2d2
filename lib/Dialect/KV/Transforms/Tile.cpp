//===- Tile.cpp - kv-tile: the GPU decomposition of kv.decode -------------===//
#include "kvir/Dialect/KV/Transforms/Passes.h"
#include "kvir/Dialect/KV/Transforms/Tiling.h"
#include "kvir/Dialect/KV/IR/PoolLayout.h"

#include "llvm/ADT/StringSwitch.h"

#include <algorithm>
#include <numeric>

namespace kvir::kv {
#define GEN_PASS_DEF_KVTILE
#include "kvir/Dialect/KV/Transforms/Passes.h.inc"
} // namespace kvir::kv

using namespace mlir;
using namespace kvir::kv;

int64_t kvir::kv::getSmCount(StringRef chip) {
  return llvm::StringSwitch<int64_t>(chip)
      .Case("sm_80", 108)
      .Case("sm_86", 84)
      .Case("sm_89", 142)
      .Cases({"sm_90", "sm_90a"}, 132)
      .Default(0);
}

int64_t kvir::kv::getViewVectorWidth(PagedViewOp view) {
  if (auto attr = view->getAttrOfType<IntegerAttr>("kv.vector_width"))
    return attr.getInt();
  PagedType type = view.getType();
  int64_t maxElements =
      128 / type.getStorageElementType().getIntOrFloatBitWidth();
  int64_t width = maxElements;
  for (auto [i, pool] : llvm::enumerate(view.getPools())) {
    PoolRole role = i == 0 ? PoolRole::K : PoolRole::V;
    auto memref = cast<MemRefType>(pool.getType());
    width = std::min(width, getDimVectorWidth(type, role, memref, maxElements));
    if (type.getStorage() == Storage::combined)
      width = std::min(width, getDimVectorWidth(type, PoolRole::V, memref,
                                                maxElements));
  }
  return width;
}

static int64_t nextPowerOf2(int64_t v) {
  int64_t p = 1;
  while (p < v)
    p *= 2;
  return p;
}

DecodeTilingAttr kvir::kv::chooseDecodeTiling(PagedViewOp view,
                                              int64_t qHeads, int64_t smCount) {
  PagedType kv = view.getType();
  int64_t vec = getViewVectorWidth(view);
  while (kv.getHeadDim() % vec)
    vec /= 2;
  int64_t threadsX = nextPowerOf2(kv.getHeadDim() / vec);
  int64_t group = qHeads / kv.getKvHeads();
  // About 128 threads per block; more tokens in flight when the group is
  // small; whole warps only, since shuffles use the full membermask.
  int64_t threadsZ = std::clamp<int64_t>(128 / (threadsX * group), 1, 8);
  int64_t step = 32 / std::gcd<int64_t>(threadsX * group, 32);
  threadsZ = (threadsZ + step - 1) / step * step;
  // A tile holds up to 32 tokens and at most 16 KB per K or V tile.
  int64_t rowBytes = threadsX * vec * kv.getDtype().getIntOrFloatBitWidth() / 8;
  int64_t tile = std::min<int64_t>(32, (16 * 1024) / rowBytes);
  tile = (std::max(tile, threadsZ) + threadsZ - 1) / threadsZ * threadsZ;
  return DecodeTilingAttr::get(view.getContext(), vec, threadsX, threadsZ,
                               tile, smCount, /*max_partitions=*/32);
}

namespace {
struct KVTilePass : kvir::kv::impl::KVTileBase<KVTilePass> {
  using Base::Base;
  void runOnOperation() override {
    int64_t sms = getSmCount(chip);
    if (!sms) {
      getOperation()->emitError("kv-tile: unknown chip '")
          << chip << "', expected sm_80, sm_86, sm_89, sm_90 or sm_90a";
      return signalPassFailure();
    }
    getOperation()->walk([&](DecodeOp op) {
      auto view = op.getKv().getDefiningOp<PagedViewOp>();
      if (!view || op.getTilingAttr())
        return;
      int64_t qHeads = cast<MemRefType>(op.getQ().getType()).getDimSize(1);
      op.setTilingAttr(chooseDecodeTiling(view, qHeads, sms));
    });
  }
};
} // namespace
