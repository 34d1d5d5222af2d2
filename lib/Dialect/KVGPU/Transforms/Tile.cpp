//===- Tile.cpp - kv-tile: the GPU decomposition of kv attention ops ------===//
#include "kvir/Dialect/KVGPU/Transforms/ConfigSelection.h"
#include "kvir/Dialect/KVGPU/Transforms/Passes.h"

namespace kvir::kvgpu {
#define GEN_PASS_DEF_KVTILE
#include "kvir/Dialect/KVGPU/Transforms/Passes.h.inc"
} // namespace kvir::kvgpu

using namespace mlir;
using namespace kvir;
using namespace kvir::kvgpu;

namespace {
struct KVTilePass : kvgpu::impl::KVTileBase<KVTilePass> {
  using Base::Base;
  void runOnOperation() override {
    const target::TargetInfo *target = target::TargetInfo::get(
        chip, [&] { return getOperation()->emitError("kv-tile: "); });
    if (!target)
      return signalPassFailure();
    getOperation()->walk([&](Operation *op) {
      if (!isa<kv::DecodeOp, kv::PrefillOp, kv::MlaDecodeOp>(op) || getConfig(op))
        return;
      std::string whyNot;
      FailureOr<Attribute> config = chooseConfig(op, *target, whyNot);
      if (succeeded(config))
        op->setAttr(KVGPUDialect::getConfigAttrName(), *config);
    });
  }
};
} // namespace
