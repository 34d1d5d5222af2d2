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
/// The remark of kv-tile's `explain`: the configuration (or why none), and,
/// for a prefill on mma.sync although the chip has wgmma, or on wgmma
/// without a producer warpgroup, why.
void explainChoice(Operation *op, const target::TargetInfo &target,
                   FailureOr<Attribute> config, StringRef whyNot,
                   MmaChoice choice) {
  InFlightDiagnostic remark = op->emitRemark("kv-tile: ");
  if (failed(config)) {
    remark << "no configuration: " << whyNot;
    return;
  }
  remark << *config;
  auto tensorCore = dyn_cast<PrefillConfigAttr>(*config);
  if (tensorCore && tensorCore.usesWgmma() && !tensorCore.hasProducer()) {
    if (auto p = dyn_cast<kv::PrefillOp>(op))
      remark << "; no producer warpgroup: " << whyNoProducerPrefill(p);
    return;
  }
  if (tensorCore && tensorCore.hasProducer() && !tensorCore.copiesByTma()) {
    if (auto p = dyn_cast<kv::PrefillOp>(op))
      remark << "; cp.async, not TMA: "
             << whyNoTmaPrefill(p, tensorCore.getKvTile());
    return;
  }
  if (!tensorCore || tensorCore.usesWgmma() ||
      !target.has(target::MmaAtom::WgmmaM64NK16))
    return;
  if (choice == MmaChoice::mmaSync) {
    remark << "; mma.sync, as mma=mma_sync asks";
    return;
  }
  std::string why;
  if (auto p = dyn_cast<kv::PrefillOp>(op))
    why = whyNoWgmmaPrefill(p, target);
  else if (auto mla = dyn_cast<kv::MlaDecodeOp>(op))
    why = whyNoWgmmaMla(mla, target);
  else
    why = whyNoWgmmaDecode(cast<kv::DecodeOp>(op), target);
  remark << "; mma.sync, not wgmma: "
         << (why.empty() ? "no wgmma configuration fits" : why);
}

struct KVTilePass : kvgpu::impl::KVTileBase<KVTilePass> {
  using Base::Base;
  void runOnOperation() override {
    const target::TargetInfo *target = target::TargetInfo::get(
        chip, [&] { return getOperation()->emitError("kv-tile: "); });
    if (!target)
      return signalPassFailure();
    if (mma != "auto" && mma != "mma_sync") {
      getOperation()->emitError("kv-tile: unknown mma '")
          << mma << "', expected auto or mma_sync";
      return signalPassFailure();
    }
    MmaChoice choice =
        mma == "mma_sync" ? MmaChoice::mmaSync : MmaChoice::automatic;
    getOperation()->walk([&](Operation *op) {
      if (!isa<kv::DecodeOp, kv::PrefillOp, kv::MlaDecodeOp>(op) || getConfig(op))
        return;
      std::string whyNot;
      FailureOr<Attribute> config = chooseConfig(op, *target, whyNot, choice);
      if (succeeded(config))
        op->setAttr(KVGPUDialect::getConfigAttrName(), *config);
      if (explain)
        explainChoice(op, *target, config, whyNot, choice);
    });
  }
};
} // namespace
