//===- KVToGPU.cpp - convert-kv-to-gpu: kv ops to kernels and launches ----===//
//
// Applies each op family's pattern (Decode.cpp, Merge.cpp) once per op, in
// program order, so that a decode's state is in buffers before the merge
// that reads it is matched. Under kv-to-nvvm / kv-to-ptx nothing may stay on
// the host: every kv op that touches data and did not become a kernel is an
// error naming the op and the reason. Only allow-host-loops (kvir-runner,
// where device memory is host memory) leaves such ops to kv-to-loops.
//
//===----------------------------------------------------------------------===//
#include "Patterns.h"

#include "kvir/Conversion/KVToGPU/KVToGPU.h"
#include "kvir/Dialect/KV/IR/KVDialect.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Rewrite/PatternApplicator.h"
#include "llvm/ADT/TypeSwitch.h"

namespace kvir {
#define GEN_PASS_DEF_CONVERTKVTOGPU
#include "kvir/Conversion/Passes.h.inc"
} // namespace kvir

using namespace mlir;
using namespace kvir;
using namespace kvir::gpu_lowering;

std::optional<std::string>
kvir::whyNoGpuKernel(Operation *op, const target::TargetInfo &target) {
  return TypeSwitch<Operation *, std::optional<std::string>>(op)
      .Case([&](kv::DecodeOp decode) {
        return whyNoDecodeKernel(decode, target);
      })
      .Case([&](kv::PrefillOp prefill) {
        return whyNoPrefillKernel(prefill, target);
      })
      .Case([&](kv::MlaDecodeOp mla) { return whyNoMlaKernel(mla, target); })
      .Case([](kv::AppendOp append) { return whyNoAppendKernel(append); })
      .Case([](kv::CascadePositionsOp positions) {
        return whyNoCascadePositionsKernel(positions);
      })
      .Case<kv::MergeOp, kv::MergePartitionsOp, kv::MergeSinksOp>(
          [](Operation *merge) { return whyNoMergeKernel(merge); })
      .Case([](kv::CascadeOp) {
        return std::string("kv.cascade is lowered per level: run "
                           "kv-expand-cascade first");
      })
      // Views are no computation; a region's yield is its op's.
      .Case<kv::PagedViewOp, kv::RaggedViewOp, kv::YieldOp>(
          [](Operation *) { return std::nullopt; })
      .Case([](kv::StoreStateOp store) -> std::optional<std::string> {
        if (store.getState().getDefiningOp<kv::LoadStateOp>())
          return std::string("it copies a state between buffers, which has "
                             "no kernel");
        return std::string("the state it stores was not computed by a kernel");
      })
      .Default([](Operation *other) {
        return other->getName().getStringRef().str() +
               " has no GPU kernel yet";
      });
}

namespace {

/// Ops whose failure another report already covers: a state's plumbing
/// (kv.load_state feeding, kv.store_state of another op's state) is named
/// through the op that computes or consumes it.
bool isReportedThroughOthers(Operation *op) {
  if (isa<kv::LoadStateOp>(op))
    return !op->use_empty();
  if (auto store = dyn_cast<kv::StoreStateOp>(op)) {
    Operation *producer = store.getState().getDefiningOp();
    return producer && !isa<kv::LoadStateOp>(producer);
  }
  return false;
}

/// Applies the patterns once to every kv op, in program order. A pattern may
/// erase ops besides its root (the kv.store_state it writes through, the
/// kv.load_state inputs it consumes); those are skipped.
void applyInProgramOrder(ModuleOp module,
                         const FrozenRewritePatternSet &patterns) {
  struct ErasureTracker : RewriterBase::Listener {
    DenseSet<Operation *> erased;
    void notifyOperationErased(Operation *op) override { erased.insert(op); }
  } tracker;
  struct Rewriter : PatternRewriter {
    using PatternRewriter::PatternRewriter;
  } rewriter(module.getContext());
  rewriter.setListener(&tracker);
  PatternApplicator applicator(patterns);
  applicator.applyDefaultCostModel();
  SmallVector<Operation *> ops;
  module.walk([&](Operation *op) {
    if (isa<kv::KVDialect>(op->getDialect()))
      ops.push_back(op);
  });
  for (Operation *op : ops) {
    if (tracker.erased.contains(op))
      continue;
    rewriter.setInsertionPoint(op);
    (void)applicator.matchAndRewrite(op, rewriter);
  }
}

struct ConvertKVToGPUPass
    : kvir::impl::ConvertKVToGPUBase<ConvertKVToGPUPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    const target::TargetInfo *target = target::TargetInfo::get(
        chip, [&] { return module.emitError("convert-kv-to-gpu: "); });
    if (!target)
      return signalPassFailure();
    if (graphMaxBatch < 0) {
      module.emitError("convert-kv-to-gpu: graph-max-batch must be >= 0 (0: "
                       "grids sized per call), got ")
          << static_cast<int64_t>(graphMaxBatch);
      return signalPassFailure();
    }
    // The module may carry its fixed grids (a spec's); the option, where
    // given, must agree.
    int64_t maxBatch = graphMaxBatch;
    if (auto fixed = module->getAttrOfType<IntegerAttr>(
            kvgpu::KVGPUDialect::getGraphMaxBatchAttrName())) {
      if (maxBatch && maxBatch != fixed.getInt()) {
        module.emitError("convert-kv-to-gpu: graph-max-batch=")
            << maxBatch << " but the module's "
            << kvgpu::KVGPUDialect::getGraphMaxBatchAttrName() << " is "
            << fixed.getInt();
        return signalPassFailure();
      }
      maxBatch = fixed.getInt();
    }
    LoweringContext context(module, *target, maxBatch);
    RewritePatternSet patterns(&getContext());
    populateDecodePatterns(patterns, context);
    populatePrefillPatterns(patterns, context);
    populateMlaDecodePatterns(patterns, context);
    populateAppendPatterns(patterns, context);
    populateCascadePositionsPatterns(patterns, context);
    populateMergePatterns(patterns, context);
    applyInProgramOrder(module, FrozenRewritePatternSet(std::move(patterns)));
    if (allowHostLoops)
      return;
    bool failed = false;
    module.walk([&](Operation *op) {
      if (!isa<kv::KVDialect>(op->getDialect()) || isReportedThroughOthers(op))
        return;
      std::optional<std::string> why = whyNoGpuKernel(op, *target);
      if (!why)
        return;
      op->emitOpError() << "has no GPU kernel: " << *why
                        << " (kv-to-nvvm and kv-to-ptx lower every kv op to "
                           "kernels; host loops are allowed only with "
                           "allow-host-loops, as kvir-runner does)";
      failed = true;
    });
    if (failed)
      signalPassFailure();
  }
};
} // namespace
