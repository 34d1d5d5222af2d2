//===- KVCanonicalize.cpp - The merge algebra as canonicalization ---------===//
//
// Merge is commutative and associative with the empty state as identity
// (docs/Semantics.md), so nested merges flatten, empty states drop out and
// a one-operand merge is its operand. Rebases compose.
//
//===----------------------------------------------------------------------===//
#include "kvir/Dialect/KV/IR/KVOps.h"

#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace kvir::kv;

OpFoldResult MergeOp::fold(FoldAdaptor) {
  if (getStates().size() == 1)
    return getStates()[0];
  return {};
}

namespace {
/// merge(merge(a, b), c) -> merge(a, b, c) when the inner merge has no other
/// use and sits in the same block (otherwise flattening would duplicate its
/// work: once per other use, or once per iteration of a loop around the outer
/// merge).
struct FlattenNestedMerge : OpRewritePattern<MergeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MergeOp op,
                                PatternRewriter &rewriter) const override {
    SmallVector<Value> operands;
    bool changed = false;
    for (Value state : op.getStates()) {
      auto inner = state.getDefiningOp<MergeOp>();
      if (inner && inner->hasOneUse() &&
          inner->getBlock() == op->getBlock()) {
        llvm::append_range(operands, inner.getStates());
        changed = true;
      } else {
        operands.push_back(state);
      }
    }
    if (!changed)
      return failure();
    rewriter.replaceOpWithNewOp<MergeOp>(op, op.getType(), operands);
    return success();
  }
};

/// merge(a, empty) -> merge(a): the empty state is the identity.
struct DropEmptyMergeOperand : OpRewritePattern<MergeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MergeOp op,
                                PatternRewriter &rewriter) const override {
    SmallVector<Value> operands;
    for (Value state : op.getStates())
      if (!state.getDefiningOp<EmptyStateOp>())
        operands.push_back(state);
    if (operands.size() == op.getStates().size())
      return failure();
    if (operands.empty()) // All empty: the result is any one of them.
      operands.push_back(op.getStates()[0]);
    rewriter.replaceOpWithNewOp<MergeOp>(op, op.getType(), operands);
    return success();
  }
};
} // namespace

void MergeOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                          MLIRContext *context) {
  patterns.add<FlattenNestedMerge, DropEmptyMergeOperand>(context);
}

/// Whether `state` is produced by an op that never yields a +inf LSE, so a
/// same-base rebase of it has nothing to normalize.
static bool isNormalizedState(Value state) {
  Operation *def = state.getDefiningOp();
  return def && isa<DecodeOp, PrefillOp, MlaDecodeOp, CascadeOp, MergeOp,
                    MergePartitionsOp, EmptyStateOp, RebaseOp>(def);
}

OpFoldResult RebaseOp::fold(FoldAdaptor) {
  // rebase(rebase(x)) -> rebase(x): bases compose and one rebase normalizes.
  if (auto inner = getInput().getDefiningOp<RebaseOp>()) {
    getInputMutable().assign(inner.getInput());
    return getResult();
  }
  if (getInput().getType() == getType() && isNormalizedState(getInput()))
    return getInput();
  return {};
}
