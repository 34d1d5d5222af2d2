//===- CanonicalizeVariants.cpp - Regions that are built-in variants ------===//
//
// score_mod / mask_mod regions that compute a built-in variant (soft cap,
// sliding window, causal, nothing) become it, so the region and the
// attribute give the same kernel. A region is rewritten only when its whole
// body is the pattern.
//
//===----------------------------------------------------------------------===//
#include "kvir/Dialect/KV/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kvir::kv {
#define GEN_PASS_DEF_KVCANONICALIZEVARIANTS
#include "kvir/Dialect/KV/Transforms/Passes.h.inc"
} // namespace kvir::kv

using namespace mlir;
using namespace kvir::kv;

namespace {

/// The value a region yields, or null for an empty region.
Value yielded(Region &region) {
  if (region.empty())
    return Value();
  return cast<YieldOp>(region.front().getTerminator()).getValue();
}

/// Whether the region's block holds nothing but what `used` computes (the
/// ops the pattern matched) and constants.
bool onlyOps(Region &region, ArrayRef<Operation *> used) {
  for (Operation &op : region.front().without_terminator())
    if (!llvm::is_contained(used, &op) && !op.hasTrait<OpTrait::ConstantLike>())
      return false;
  return true;
}

/// score_mod `c * tanh(s / c)`: c, or nullopt.
std::optional<double> matchSoftCap(Region &region) {
  Value result = yielded(region);
  auto mul = result ? result.getDefiningOp<arith::MulFOp>() : nullptr;
  if (!mul)
    return std::nullopt;
  Value s = region.front().getArgument(0);
  for (int tanhSide = 0; tanhSide < 2; ++tanhSide) {
    auto tanh = mul->getOperand(tanhSide).getDefiningOp<math::TanhOp>();
    APFloat outer(0.0), inner(0.0);
    if (!tanh ||
        !matchPattern(mul->getOperand(1 - tanhSide), m_ConstantFloat(&outer)))
      continue;
    auto div = tanh.getOperand().getDefiningOp<arith::DivFOp>();
    if (!div || div.getLhs() != s ||
        !matchPattern(div.getRhs(), m_ConstantFloat(&inner)))
      continue;
    double c = outer.convertToDouble();
    if (c > 0.0 && inner.convertToDouble() == c &&
        onlyOps(region, {mul, tanh, div}))
      return c;
  }
  return std::nullopt;
}

/// What a mask_mod computes, if it is a built-in.
struct MaskForm {
  enum Kind { everything, causal, window } kind;
  int64_t windowLeft = 0;
};

/// A constant index `value`.
std::optional<int64_t> constantIndex(Value value) {
  APInt v;
  if (!matchPattern(value, m_ConstantInt(&v)))
    return std::nullopt;
  return v.getSExtValue();
}

std::optional<MaskForm> matchMask(Region &region) {
  Value result = yielded(region);
  if (!result)
    return std::nullopt;
  Block &block = region.front();
  Value p = block.getArgument(2), j = block.getArgument(3);
  APInt one;
  if (matchPattern(result, m_ConstantInt(&one)) && one.isOne())
    return MaskForm{MaskForm::everything};
  auto cmp = result.getDefiningOp<arith::CmpIOp>();
  if (!cmp)
    return std::nullopt;
  using Pred = arith::CmpIPredicate;
  Value lhs = cmp.getLhs(), rhs = cmp.getRhs();
  Pred pred = cmp.getPredicate();
  // Written the other way round: a > b is b < a.
  if (pred == Pred::sge || pred == Pred::sgt) {
    std::swap(lhs, rhs);
    pred = pred == Pred::sge ? Pred::sle : Pred::slt;
  }
  if (pred != Pred::sle && pred != Pred::slt)
    return std::nullopt;
  // j <= p.
  if (pred == Pred::sle && lhs == j && rhs == p && onlyOps(region, {cmp}))
    return MaskForm{MaskForm::causal};
  // p - j <= w, p - j < w + 1.
  if (auto sub = lhs.getDefiningOp<arith::SubIOp>()) {
    std::optional<int64_t> w = constantIndex(rhs);
    if (sub.getLhs() == p && sub.getRhs() == j && w &&
        onlyOps(region, {cmp, sub})) {
      int64_t left = pred == Pred::sle ? *w : *w - 1;
      if (left >= 0)
        return MaskForm{MaskForm::window, left};
    }
  }
  // p - w <= j (j >= p - w).
  if (auto sub = lhs.getDefiningOp<arith::SubIOp>();
      sub && pred == Pred::sle && rhs == j && sub.getLhs() == p) {
    std::optional<int64_t> w = constantIndex(sub.getRhs());
    if (w && *w >= 0 && onlyOps(region, {cmp, sub}))
      return MaskForm{MaskForm::window, *w};
  }
  return std::nullopt;
}

void clearRegion(PatternRewriter &rewriter, Region &region) {
  rewriter.eraseBlock(&region.front());
}

/// The rewrites for one op kind; ops without a soft cap or window attribute
/// (kv.mla_decode) take only the ones that need none.
template <typename OpTy> struct BuiltinRegions : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  static constexpr bool hasSoftCapAndWindow =
      !std::is_same_v<OpTy, MlaDecodeOp>;

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    Region &scoreMod = op.getScoreMod(), &maskMod = op.getMaskMod();
    bool changed = false;
    if (Value s = yielded(scoreMod);
        s && s == scoreMod.front().getArgument(0) && onlyOps(scoreMod, {})) {
      rewriter.modifyOpInPlace(op, [&] { clearRegion(rewriter, scoreMod); });
      changed = true;
    }
    if constexpr (hasSoftCapAndWindow) {
      if (!op.getLogitsSoftCap())
        if (std::optional<double> cap = matchSoftCap(scoreMod)) {
          rewriter.modifyOpInPlace(op, [&] {
            op.setLogitsSoftCapAttr(rewriter.getF32FloatAttr(*cap));
            clearRegion(rewriter, scoreMod);
          });
          changed = true;
        }
    }
    if (std::optional<MaskForm> form = matchMask(maskMod)) {
      switch (form->kind) {
      case MaskForm::everything:
        rewriter.modifyOpInPlace(op, [&] { clearRegion(rewriter, maskMod); });
        changed = true;
        break;
      case MaskForm::causal:
        if constexpr (std::is_same_v<OpTy, DecodeOp>) {
          // A decode's query sits at its last key: every key is j <= p.
          rewriter.modifyOpInPlace(op, [&] { clearRegion(rewriter, maskMod); });
          changed = true;
        } else if constexpr (!std::is_same_v<OpTy, MlaDecodeOp>) {
          rewriter.modifyOpInPlace(op, [&] {
            op.setCausal(true);
            clearRegion(rewriter, maskMod);
          });
          changed = true;
        }
        break;
      case MaskForm::window:
        if constexpr (hasSoftCapAndWindow) {
          int64_t left = form->windowLeft;
          if (std::optional<int64_t> old = op.getWindowLeft())
            left = std::min(left, *old);
          rewriter.modifyOpInPlace(op, [&] {
            op.setWindowLeftAttr(rewriter.getI64IntegerAttr(left));
            clearRegion(rewriter, maskMod);
          });
          changed = true;
        }
        break;
      }
    }
    return success(changed);
  }
};

struct KVCanonicalizeVariantsPass
    : kvir::kv::impl::KVCanonicalizeVariantsBase<KVCanonicalizeVariantsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateCanonicalizeVariantsPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

void kvir::kv::populateCanonicalizeVariantsPatterns(
    RewritePatternSet &patterns) {
  patterns.add<BuiltinRegions<DecodeOp>, BuiltinRegions<PrefillOp>,
               BuiltinRegions<MlaDecodeOp>, BuiltinRegions<CascadeOp>>(
      patterns.getContext());
}
