//===- ExpandCascade.cpp - kv.cascade -> per-level prefill + merge --------===//
#include "kvir/Dialect/KV/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kvir::kv {
#define GEN_PASS_DEF_KVEXPANDCASCADE
#include "kvir/Dialect/KV/Transforms/Passes.h.inc"
} // namespace kvir::kv

using namespace mlir;
using namespace kvir::kv;

namespace {
struct ExpandCascade : OpRewritePattern<CascadeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CascadeOp op,
                                PatternRewriter &rewriter) const override {
    SmallVector<Value> levelStates;
    unsigned numLevels = op.getKvs().size();
    for (unsigned level = 0; level < numLevels; ++level) {
      // Earlier levels are shared prefixes entirely in the past of every
      // query row, so only the last level is causal.
      bool causal = op.getCausal() && level + 1 == numLevels;
      auto prefill = PrefillOp::create(
          rewriter, op.getLoc(), op.getType(), op.getQ(),
          op.getQoIndptrs()[level], op.getKvs()[level], /*mask=*/Value(),
          causal, op.getSmScaleAttr(), op.getLogitsSoftCapAttr(),
          op.getWindowLeftAttr(), op.getRopeAttr());
      // Levels before the last are shared by all their rows' requests.
      if (level + 1 < numLevels)
        prefill->setAttr(KVDialect::getSharedLevelAttrName(),
                         rewriter.getUnitAttr());
      levelStates.push_back(prefill);
    }
    rewriter.replaceOpWithNewOp<MergeOp>(op, op.getType(), levelStates);
    return success();
  }
};

struct KVExpandCascadePass
    : kvir::kv::impl::KVExpandCascadeBase<KVExpandCascadePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateExpandCascadePatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

void kvir::kv::populateExpandCascadePatterns(RewritePatternSet &patterns) {
  patterns.add<ExpandCascade>(patterns.getContext());
}
