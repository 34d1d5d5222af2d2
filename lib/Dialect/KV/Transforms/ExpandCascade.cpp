//===- ExpandCascade.cpp - kv.cascade -> per-level prefill + merge --------===//
#include "kvir/Dialect/KV/Transforms/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
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
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    unsigned numLevels = op.getKvs().size();
    bool regions = !op.getScoreMod().empty() || !op.getMaskMod().empty();
    // A row sits after its keys of every level: a shared level's rows see
    // its keys from the positions their later levels give them, which the
    // window, RoPE, ALiBi and the regions read (causal hides none of a
    // shared level's keys).
    bool positional = op.getWindowLeft() || op.getRopeAttr() || op.getAlibi() ||
                      op.getAlibiSlopes() || regions;
    SmallVector<Value> positions(numLevels);
    Value concatenated;
    if (positional && numLevels > 1) {
      auto q = cast<MemRefType>(op.getQ().getType());
      auto type = MemRefType::get({q.getDimSize(0)}, b.getI32Type());
      SmallVector<Value> rows;
      if (q.isDynamicDim(0))
        rows.push_back(memref::DimOp::create(b, op.getQ(), 0));
      for (unsigned level = 0; level + 1 < numLevels; ++level) {
        positions[level] = memref::AllocOp::create(b, type, rows);
        CascadePositionsOp::create(b, op.getQoIndptrs().drop_front(level),
                                   op.getKvs().drop_front(level),
                                   positions[level]);
      }
      // The regions see each row as a row of its last-level request at its
      // position in the concatenation of all levels (level 0's positions),
      // and each key at its position there: every level's prefill gets
      // that frame.
      if (regions)
        concatenated = positions[0];
    }
    Value frameIndptr = concatenated ? op.getQoIndptrs().back() : Value();
    SmallVector<Value> levelStates;
    for (unsigned level = 0; level < numLevels; ++level) {
      // Earlier levels are shared prefixes entirely in the past of every
      // query row, so only the last level is causal.
      bool causal = op.getCausal() && level + 1 == numLevels;
      auto prefill = PrefillOp::create(
          b, op.getType(), op.getQ(), op.getQoIndptrs()[level],
          op.getKvs()[level], /*mask=*/Value(), positions[level], frameIndptr,
          concatenated, causal, op.getSmScaleAttr(), op.getLogitsSoftCapAttr(),
          op.getWindowLeftAttr(), op.getRopeAttr(),
          /*sinks=*/Value(), op.getAlibiSlopes(), op.getAlibi());
      // The regions, in every level: captured values stay what they are.
      for (auto [from, to] : {std::pair<Region *, Region *>{
                                  &op.getScoreMod(), &prefill.getScoreMod()},
                              {&op.getMaskMod(), &prefill.getMaskMod()}})
        if (!from->empty())
          rewriter.cloneRegionBefore(*from, *to, to->end());
      // Levels before the last are shared by all their rows' requests.
      if (level + 1 < numLevels)
        prefill->setAttr(KVDialect::getSharedLevelAttrName(),
                         rewriter.getUnitAttr());
      levelStates.push_back(prefill);
    }
    Value merged = MergeOp::create(b, op.getType(), levelStates);
    // Sinks join each row's softmax once, after the levels merge.
    if (Value sinks = op.getSinks())
      merged = MergeSinksOp::create(b, op.getType(), merged, sinks);
    for (Value buffer : positions)
      if (buffer)
        memref::DeallocOp::create(b, buffer);
    rewriter.replaceOp(op, merged);
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
