//===- HostIndependentFloat.cpp - Float code every host runs alike --------===//
//
// llvm-host-independent-float (Passes.td says what and why). Three steps:
// patterns remove every conversion and operation on f16 / bf16 values
// (FloatBits emits the conversions); one walk pins the operations whose
// result LLVM leaves to the backend (fmuladd, fast-math flags, out-of-range
// float-to-int, minnum/maxnum of signed zeros); a last walk proves no f16 /
// bf16 value is converted anywhere.
//
//===----------------------------------------------------------------------===//
#include "kvir/Target/Host/FloatBits.h"
#include "kvir/Target/Host/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kvir::target {
#define GEN_PASS_DEF_LLVMHOSTINDEPENDENTFLOAT
#include "kvir/Target/Host/Passes.h.inc"
} // namespace kvir::target

using namespace mlir;
using namespace kvir::target::host;
using LLVM::FCmpPredicate;

namespace {

bool hasNarrowOperand(Operation *op) {
  return llvm::any_of(op->getOperandTypes(), isNarrowFloat);
}

/// Scalable vectors have no element count to unroll reductions over.
bool isScalable(Value v) {
  auto vector = dyn_cast<VectorType>(v.getType());
  return vector && vector.isScalable();
}

/// fpext from f16 / bf16.
struct ExpandNarrowExtend : OpRewritePattern<LLVM::FPExtOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LLVM::FPExtOp op,
                                PatternRewriter &rewriter) const override {
    if (!isNarrowFloat(op.getArg().getType()))
      return failure();
    FloatBits bits(rewriter, op.getLoc(), op.getType());
    Value f32 = bits.extendToF32(op.getArg());
    if (getElementTypeOrSelf(op.getType()).isF32())
      rewriter.replaceOp(op, f32);
    else
      rewriter.replaceOpWithNewOp<LLVM::FPExtOp>(op, op.getType(), f32);
    return success();
  }
};

/// fptrunc, sitofp, uitofp to f16 / bf16.
template <typename OpTy>
struct ExpandToNarrow : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    Type result = op.getType();
    Type source = getElementTypeOrSelf(op.getArg().getType());
    if (!isNarrowFloat(result) ||
        (isa<IntegerType>(source) && source.getIntOrFloatBitWidth() > 64) ||
        (isa<FloatType>(source) && source.getIntOrFloatBitWidth() > 64))
      return failure();
    FloatBits bits(rewriter, op.getLoc(), result);
    rewriter.replaceOp(op, bits.toNarrow(op.getArg(),
                                         getElementTypeOrSelf(result),
                                         !isa<LLVM::UIToFPOp>(op)));
    return success();
  }
};

/// fptosi / fptoui from f16 / bf16: from the exact f32 instead.
template <typename OpTy>
struct ExtendBeforeToInt : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    if (!isNarrowFloat(op.getArg().getType()))
      return failure();
    FloatBits bits(rewriter, op.getLoc(), op.getArg().getType());
    rewriter.replaceOpWithNewOp<OpTy>(op, op.getType(),
                                      bits.extendToF32(op.getArg()));
    return success();
  }
};

/// fneg, fabs, copysign on f16 / bf16: the sign bit, exactly as LLVM
/// defines them (NaN payloads untouched).
struct NarrowSignBit : RewritePattern {
  NarrowSignBit(MLIRContext *ctx)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {}
  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    if (!isa<LLVM::FNegOp, LLVM::FAbsOp, LLVM::CopySignOp>(op) ||
        !hasNarrowOperand(op))
      return failure();
    Location loc = op->getLoc();
    Type type = op->getResult(0).getType();
    FloatBits bits(rewriter, loc, type);
    Type i16 = bits.shaped(rewriter.getI16Type());
    auto asInt = [&](Value v) {
      return LLVM::BitcastOp::create(rewriter, loc, i16, v).getResult();
    };
    Value x = asInt(op->getOperand(0));
    Value result;
    if (isa<LLVM::FNegOp>(op))
      result = LLVM::XOrOp::create(rewriter, loc, x,
                                   bits.intConstant(16, 0x8000));
    else {
      result = LLVM::AndOp::create(rewriter, loc, x,
                                   bits.intConstant(16, 0x7fff));
      if (isa<LLVM::CopySignOp>(op))
        result = LLVM::OrOp::create(
            rewriter, loc, result,
            LLVM::AndOp::create(rewriter, loc, asInt(op->getOperand(1)),
                                bits.intConstant(16, 0x8000)));
    }
    rewriter.replaceOpWithNewOp<LLVM::BitcastOp>(op, type, result);
    return success();
  }
};

/// fma / fmuladd on f16 / bf16: the product is exact in f64, the sum is
/// rounded to odd there, then once to the narrow type.
struct NarrowFma : RewritePattern {
  NarrowFma(MLIRContext *ctx)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {}
  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    if (!isa<LLVM::FMAOp, LLVM::FMulAddOp>(op) || !hasNarrowOperand(op))
      return failure();
    Location loc = op->getLoc();
    Type type = op->getResult(0).getType();
    FloatBits bits(rewriter, loc, type);
    Type f64 = bits.shaped(rewriter.getF64Type());
    SmallVector<Value> wide;
    for (Value v : op->getOperands())
      wide.push_back(
          LLVM::FPExtOp::create(rewriter, loc, f64, bits.extendToF32(v)));
    Value product = LLVM::FMulOp::create(rewriter, loc, wide[0], wide[1]);
    Value sum = bits.addRoundToOdd(product, wide[2]);
    rewriter.replaceOp(op, bits.toNarrow(sum, getElementTypeOrSelf(type)));
    return success();
  }
};

/// Element-wise float operations and comparisons on f16 / bf16, computed
/// in f32 and rounded back once. For +, -, *, /, sqrt and the roundings
/// this is the correctly rounded narrow result (f32's 24 bits >= 2 * 11 +
/// 2); min / max and comparisons are exact.
struct PromoteNarrow : RewritePattern {
  PromoteNarrow(MLIRContext *ctx)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {}
  static bool promotable(Operation *op) {
    return isa<LLVM::FAddOp, LLVM::FSubOp, LLVM::FMulOp, LLVM::FDivOp,
               LLVM::FRemOp, LLVM::FCmpOp, LLVM::SqrtOp, LLVM::MaximumOp,
               LLVM::MinimumOp, LLVM::MaxNumOp, LLVM::MinNumOp,
               LLVM::FFloorOp, LLVM::FCeilOp, LLVM::FTruncOp, LLVM::RoundOp,
               LLVM::RoundEvenOp, LLVM::RintOp, LLVM::NearbyintOp,
               LLVM::ExpOp, LLVM::Exp2Op, LLVM::LogOp, LLVM::Log2Op,
               LLVM::Log10Op, LLVM::SinOp, LLVM::CosOp, LLVM::TanOp,
               LLVM::TanhOp, LLVM::PowOp>(op);
  }
  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    if (!promotable(op) || !hasNarrowOperand(op))
      return failure();
    Location loc = op->getLoc();
    OperationState state(loc, op->getName());
    for (Value v : op->getOperands()) {
      FloatBits bits(rewriter, loc, v.getType());
      state.operands.push_back(isNarrowFloat(v.getType())
                                   ? bits.extendToF32(v)
                                   : v);
    }
    for (Type t : op->getResultTypes()) {
      FloatBits bits(rewriter, loc, t);
      state.types.push_back(isNarrowFloat(t) ? bits.shaped(rewriter.getF32Type())
                                             : t);
    }
    state.propertiesAttr = op->getPropertiesAsAttribute();
    state.addAttributes(llvm::to_vector(op->getDiscardableAttrs()));
    Operation *wide = rewriter.create(state);
    SmallVector<Value> results;
    for (auto [old, now] : llvm::zip(op->getResults(), wide->getResults())) {
      FloatBits bits(rewriter, loc, old.getType());
      results.push_back(isNarrowFloat(old.getType())
                            ? bits.truncateF32(now,
                                               getElementTypeOrSelf(old.getType()))
                            : now);
    }
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// Folds the elements of `vector` into `start` (or the first element) one
/// by one, first to last.
Value reduceInOrder(OpBuilder &b, Location loc, Value vector, Value start,
                    function_ref<Value(Value, Value)> combine) {
  auto type = cast<VectorType>(vector.getType());
  Value acc = start;
  for (int64_t i = 0; i < type.getNumElements(); ++i) {
    Value index = LLVM::ConstantOp::create(b, loc, b.getI64Type(),
                                           b.getI64IntegerAttr(i));
    Value element = LLVM::ExtractElementOp::create(b, loc, vector, index);
    acc = acc ? combine(acc, element) : element;
  }
  return acc;
}

/// Vector float reductions over f16 / bf16: element by element, each
/// step a narrow operation (then promoted).
struct NarrowReduction : RewritePattern {
  NarrowReduction(MLIRContext *ctx)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {}
  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    if (!isa<LLVM::vector_reduce_fadd, LLVM::vector_reduce_fmul,
             LLVM::vector_reduce_fmax, LLVM::vector_reduce_fmin,
             LLVM::vector_reduce_fmaximum, LLVM::vector_reduce_fminimum>(op) ||
        !hasNarrowOperand(op) || isScalable(op->getOperands().back()))
      return failure();
    Location loc = op->getLoc();
    Value start, vector = op->getOperands().back();
    if (op->getNumOperands() == 2)
      start = op->getOperand(0);
    auto combine = [&](Value a, Value b) -> Value {
      OperationState state(loc, elementOpName(op));
      state.addOperands({a, b});
      state.addTypes(a.getType());
      return rewriter.create(state)->getResult(0);
    };
    rewriter.replaceOp(op, reduceInOrder(rewriter, loc, vector, start, combine));
    return success();
  }
  static StringRef elementOpName(Operation *op) {
    if (isa<LLVM::vector_reduce_fadd>(op))
      return LLVM::FAddOp::getOperationName();
    if (isa<LLVM::vector_reduce_fmul>(op))
      return LLVM::FMulOp::getOperationName();
    if (isa<LLVM::vector_reduce_fmax>(op))
      return LLVM::MaxNumOp::getOperationName();
    if (isa<LLVM::vector_reduce_fmin>(op))
      return LLVM::MinNumOp::getOperationName();
    if (isa<LLVM::vector_reduce_fmaximum>(op))
      return LLVM::MaximumOp::getOperationName();
    return LLVM::MinimumOp::getOperationName();
  }
};

/// IEEE 754-2019 maximumNumber / minimumNumber: a NaN operand gives the
/// other, -0.0 < +0.0 (LLVM's maxnum / minnum allow either zero).
Value pinnedMinMax(OpBuilder &b, Location loc, Value x, Value y, bool max) {
  FloatBits bits(b, loc, x.getType());
  Type element = getElementTypeOrSelf(x.getType());
  Type intType = bits.shaped(b.getIntegerType(element.getIntOrFloatBitWidth()));
  auto isNan = [&](Value v) {
    return LLVM::FCmpOp::create(b, loc, FCmpPredicate::uno, v, v);
  };
  // Equal operands: +0 and -0 differ only in the sign bit, which AND (max)
  // or OR (min) of the bits settles.
  Value xb = LLVM::BitcastOp::create(b, loc, intType, x);
  Value yb = LLVM::BitcastOp::create(b, loc, intType, y);
  Value merged = max ? LLVM::AndOp::create(b, loc, xb, yb).getResult()
                     : LLVM::OrOp::create(b, loc, xb, yb).getResult();
  Value equal = LLVM::BitcastOp::create(b, loc, x.getType(), merged);
  Value xWins = LLVM::FCmpOp::create(
      b, loc, max ? FCmpPredicate::ogt : FCmpPredicate::olt, x, y);
  Value ordered = LLVM::SelectOp::create(
      b, loc, LLVM::FCmpOp::create(b, loc, FCmpPredicate::oeq, x, y), equal,
      LLVM::SelectOp::create(b, loc, xWins, x, y));
  return LLVM::SelectOp::create(
      b, loc, isNan(y), x,
      LLVM::SelectOp::create(b, loc, isNan(x), y, ordered));
}

/// fptosi / fptoui of an f32 / f64 with PTX cvt.rzi's saturation: NaN
/// gives 0, values past the range its nearest end.
Value saturatingToInt(OpBuilder &b, Location loc, Operation *op) {
  bool isSigned = isa<LLVM::FPToSIOp>(op);
  Value x = op->getOperand(0);
  Type result = op->getResult(0).getType();
  unsigned width = getElementTypeOrSelf(result).getIntOrFloatBitWidth();
  FloatBits bits(b, loc, x.getType());
  Type element = getElementTypeOrSelf(x.getType());
  APInt maxInt = isSigned ? APInt::getSignedMaxValue(width)
                          : APInt::getMaxValue(width);
  APInt minInt = isSigned ? APInt::getSignedMinValue(width)
                          : APInt::getZero(width);
  // 2^(width - 1) (signed) or 2^width (unsigned): the first value past the
  // range, a power of two every float type holds (or infinity).
  double limit = std::ldexp(1.0, isSigned ? width - 1 : width);
  Value raw = isSigned
                  ? LLVM::FPToSIOp::create(b, loc, result, x).getResult()
                  : LLVM::FPToUIOp::create(b, loc, result, x).getResult();
  Value tooHigh = LLVM::FCmpOp::create(b, loc, FCmpPredicate::oge, x,
                                       bits.floatConstant(element, limit));
  // Below the range, or NaN (unordered).
  Value tooLow =
      isSigned
          ? LLVM::FCmpOp::create(b, loc, FCmpPredicate::olt, x,
                                 bits.floatConstant(element, -limit))
                .getResult()
          : LLVM::FCmpOp::create(b, loc, FCmpPredicate::ule, x,
                                 bits.floatConstant(element, -1.0))
                .getResult();
  Value isNan = LLVM::FCmpOp::create(b, loc, FCmpPredicate::uno, x, x);
  Value value = LLVM::SelectOp::create(
      b, loc, tooHigh, bits.intConstant(maxInt),
      LLVM::SelectOp::create(b, loc, tooLow, bits.intConstant(minInt), raw));
  return LLVM::SelectOp::create(b, loc, isNan, bits.intConstant(width, 0),
                                value);
}

/// Pins what LLVM leaves to the backend (see the pass description).
void pinBackendChoices(Operation *root) {
  SmallVector<Operation *> ops;
  root->walk([&](Operation *op) {
    if (auto fmf = dyn_cast<LLVM::FastmathFlagsInterface>(op))
      if (fmf.getFastmathAttr() &&
          fmf.getFastmathAttr().getValue() != LLVM::FastmathFlags::none)
        op->setAttr(fmf.getFastmathAttrName(),
                    LLVM::FastmathFlagsAttr::get(op->getContext(),
                                                 LLVM::FastmathFlags::none));
    if (isa<LLVM::vector_reduce_fmax, LLVM::vector_reduce_fmin>(op) &&
        isScalable(op->getOperand(0)))
      return;
    if (isa<LLVM::FMulAddOp, LLVM::MaxNumOp, LLVM::MinNumOp,
            LLVM::vector_reduce_fmax, LLVM::vector_reduce_fmin,
            LLVM::FPToSIOp, LLVM::FPToUIOp>(op))
      ops.push_back(op);
  });
  for (Operation *op : ops) {
    OpBuilder b(op);
    Location loc = op->getLoc();
    Value result;
    if (isa<LLVM::FMulAddOp>(op))
      result = LLVM::FMAOp::create(b, loc, op->getOperand(0),
                                   op->getOperand(1), op->getOperand(2));
    else if (isa<LLVM::MaxNumOp, LLVM::MinNumOp>(op))
      result = pinnedMinMax(b, loc, op->getOperand(0), op->getOperand(1),
                            isa<LLVM::MaxNumOp>(op));
    else if (isa<LLVM::vector_reduce_fmax, LLVM::vector_reduce_fmin>(op)) {
      bool max = isa<LLVM::vector_reduce_fmax>(op);
      result = reduceInOrder(b, loc, op->getOperand(0), Value(),
                             [&](Value x, Value y) {
                               return pinnedMinMax(b, loc, x, y, max);
                             });
    } else
      result = saturatingToInt(b, loc, op);
    op->getResult(0).replaceAllUsesWith(result);
    op->erase();
  }
}

/// Operations that move f16 / bf16 values without converting them.
bool movesOnly(Operation *op) {
  return isa<LLVM::BitcastOp, LLVM::LoadOp, LLVM::StoreOp, LLVM::SelectOp,
             LLVM::ExtractElementOp, LLVM::InsertElementOp,
             LLVM::ShuffleVectorOp, LLVM::ExtractValueOp,
             LLVM::InsertValueOp, LLVM::ConstantOp, LLVM::PoisonOp,
             LLVM::UndefOp, LLVM::ZeroOp, LLVM::CallOp, LLVM::ReturnOp,
             LLVM::BrOp, LLVM::CondBrOp, LLVM::SwitchOp, LLVM::FreezeOp,
             LLVM::MaskedLoadOp, LLVM::MaskedStoreOp>(op);
}

struct LLVMHostIndependentFloat
    : kvir::target::impl::LLVMHostIndependentFloatBase<
          LLVMHostIndependentFloat> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    patterns.add<ExpandNarrowExtend, ExpandToNarrow<LLVM::FPTruncOp>,
                 ExpandToNarrow<LLVM::SIToFPOp>, ExpandToNarrow<LLVM::UIToFPOp>,
                 ExtendBeforeToInt<LLVM::FPToSIOp>,
                 ExtendBeforeToInt<LLVM::FPToUIOp>, NarrowSignBit, NarrowFma,
                 PromoteNarrow, NarrowReduction>(ctx);
    FrozenRewritePatternSet frozen(std::move(patterns));
    // Top-level functions only: a gpu.module's kernels are the GPU's.
    for (auto fn : getOperation().getOps<LLVM::LLVMFuncOp>()) {
      if (failed(applyPatternsGreedily(fn, frozen)))
        return signalPassFailure();
      pinBackendChoices(fn);
      WalkResult left = fn.walk([](Operation *op) {
        bool narrow = llvm::any_of(op->getOperandTypes(), isNarrowFloat) ||
                      llvm::any_of(op->getResultTypes(), isNarrowFloat);
        if (!narrow || movesOnly(op))
          return WalkResult::advance();
        op->emitError("llvm-host-independent-float: '")
            << op->getName()
            << "' on f16/bf16 values would compile to code that depends on "
               "the host CPU, and the pass has no exact rewrite for it "
               "(supported: conversions from and to f32, f64 and integers "
               "of up to 64 bits, arithmetic, comparisons, fma, min/max, "
               "roundings, sqrt and math intrinsics, vector reductions)";
        return WalkResult::interrupt();
      });
      if (left.wasInterrupted() || failed(carryNarrowFloatsAsBits(fn)))
        return signalPassFailure();
    }
  }
};

} // namespace
