//===- SpecializeLayout.cpp - Preset layouts to explicit affine maps ------===//
#include "kvir/Dialect/KV/Transforms/Passes.h"
#include "kvir/Dialect/KV/IR/PoolLayout.h"

namespace kvir::kv {
#define GEN_PASS_DEF_KVSPECIALIZELAYOUT
#include "kvir/Dialect/KV/Transforms/Passes.h.inc"
} // namespace kvir::kv

using namespace mlir;
using namespace kvir::kv;

namespace {
struct KVSpecializeLayoutPass
    : kvir::kv::impl::KVSpecializeLayoutBase<KVSpecializeLayoutPass> {
  void runOnOperation() override {
    getOperation()->walk([&](PagedViewOp view) {
      // The width is proven on the preset, whose maps are the same.
      int64_t width = view.getVectorWidth();
      view->setAttr("kv.vector_width",
                    IntegerAttr::get(IntegerType::get(&getContext(), 64),
                                     width));
      PagedType type = view.getType();
      // MLA caches keep their preset: they have no head axis to remap.
      if (type.getLayout() == LayoutKind::affine || type.isMla())
        return;
      // A view that leaves the kv ops (returned, passed to a call, ...)
      // keeps its type: retyping it would break those uses.
      if (!llvm::all_of(view->getUsers(), [](Operation *user) {
            return isa<DecodeOp, PrefillOp, MlaDecodeOp, CascadeOp, AppendOp>(
                user);
          }))
        return;
      AffineMap kMap = getPoolIndexMap(type, PoolRole::K);
      AffineMap vMap = getPoolIndexMap(type, PoolRole::V);
      bool split = type.getStorage() != Storage::combined;
      auto specialized = PagedType::get(
          type.getContext(), type.getPageSize(), type.getKvHeads(),
          type.getHeadDim(), type.getHeadDimV(), type.getDtype(),
          LayoutKind::affine, type.getStorage(), type.getTable(),
          type.getQuant(), type.getQuantGroup(), /*layer=*/0, type.getPeDim(),
          kMap, split && vMap != kMap ? vMap : AffineMap());
      view.getResult().setType(specialized);
    });
  }
};
} // namespace
