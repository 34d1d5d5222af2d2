//===- KVVariants.cpp - Attention variants: sinks, ALiBi, regions ---------===//
//
// The verifier of AttentionVariantOpInterface and kv.merge_sinks, and the
// canonicalization that folds a sink merge into the attention op that made
// the state.
//
//===----------------------------------------------------------------------===//
#include "kvir/Dialect/KV/IR/KVOps.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace kvir::kv;

#include "kvir/Dialect/KV/IR/KVInterfaces.cpp.inc"

/// A per-query-head f32 vector (sinks, ALiBi slopes) of `heads` entries.
static LogicalResult verifyPerHead(Operation *op, Value value, StringRef what,
                                   int64_t heads) {
  auto type = dyn_cast<MemRefType>(value.getType());
  if (!type || type.getRank() != 1 || !type.getElementType().isF32())
    return op->emitOpError() << what << " must be a rank-1 memref of f32 "
                             << "(one per query head), got " << value.getType();
  if (!type.isDynamicDim(0) && type.getDimSize(0) != heads)
    return op->emitOpError()
           << what << " has " << type.getDimSize(0)
           << " entries, expected one per query head (" << heads << ")";
  return success();
}

/// Whether a kernel can take `value`, defined outside a region, as the
/// region sees it: a memref of integers or floats in the default memory
/// space or an f32 (kernel parameters), or a constant (cloned into the
/// kernel).
static bool isKernelCapturable(Value value) {
  Type type = value.getType();
  if (auto memref = dyn_cast<MemRefType>(type)) {
    Type elt = memref.getElementType();
    return isa<IntegerType, FloatType>(elt) && !memref.getMemorySpace();
  }
  if (type.isF32())
    return true;
  Operation *def = value.getDefiningOp();
  return def && def->hasTrait<OpTrait::ConstantLike>() &&
         def->getNumOperands() == 0;
}

/// Checks a score_mod / mask_mod region: its block's arguments, its
/// `kv.yield` of `resultType`, no writes, and what it captures.
static LogicalResult verifyModRegion(Operation *op, Region &region,
                                     StringRef name, TypeRange argTypes,
                                     StringRef argNames, Type resultType) {
  if (region.empty())
    return success();
  Block &block = region.front();
  if (block.getArgumentTypes() != argTypes) {
    std::string got;
    llvm::raw_string_ostream os(got);
    llvm::interleaveComma(block.getArgumentTypes(), os);
    return op->emitOpError()
           << name << " takes (" << argNames << "), got (" << got << ")";
  }
  auto yield = block.empty() ? YieldOp() : dyn_cast<YieldOp>(block.back());
  if (!yield)
    return op->emitOpError() << name << " must end with kv.yield";
  if (yield.getValue().getType() != resultType)
    return op->emitOpError() << name << " must yield " << resultType << ", got "
                             << yield.getValue().getType();
  for (Operation &nested : block.without_terminator()) {
    std::optional<SmallVector<MemoryEffects::EffectInstance>> effects =
        getEffectsRecursively(&nested);
    if (!effects)
      return nested.emitOpError()
             << "has unknown side effects; " << name << " of '" << op->getName()
             << "' may only compute and read memory";
    for (const MemoryEffects::EffectInstance &effect : *effects)
      if (!isa<MemoryEffects::Read>(effect.getEffect()))
        return nested.emitOpError()
               << "writes or allocates memory; " << name << " of '"
               << op->getName() << "' may only compute and read memory";
  }
  WalkResult captured = region.walk([&](Operation *nested) {
    for (Value operand : nested->getOperands()) {
      if (region.isAncestor(operand.getParentRegion()))
        continue;
      if (isKernelCapturable(operand))
        continue;
      nested->emitOpError()
          << "uses a value of type " << operand.getType() << " defined "
          << "outside " << name << " of '" << op->getName()
          << "'; kernels take only memrefs of integers or floats and f32 "
          << "scalars as parameters (and clone constants): pass other "
          << "values in a memref";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(captured.wasInterrupted());
}

LogicalResult kvir::kv::verifyAttentionVariants(Operation *op) {
  auto variants = cast<AttentionVariantOpInterface>(op);
  int64_t heads = cast<StateType>(op->getResult(0).getType()).getHeads();
  if (Value sinks = variants.getSinks())
    if (failed(verifyPerHead(op, sinks, "sinks", heads)))
      return failure();
  if (Value slopes = variants.getAlibiSlopes()) {
    if (variants.getAlibi())
      return op->emitOpError() << "takes either `alibi` (the standard slopes) "
                               << "or alibi_slopes, not both";
    if (failed(verifyPerHead(op, slopes, "alibi_slopes", heads)))
      return failure();
  }
  Builder b(op->getContext());
  Type index = b.getIndexType();
  if (failed(verifyModRegion(op, variants.getScoreMod(), "score_mod",
                             {b.getF32Type(), index, index, index, index},
                             "f32 score, index request, index q_head, index "
                             "q_pos, index kv_pos",
                             b.getF32Type())))
    return failure();
  return verifyModRegion(op, variants.getMaskMod(), "mask_mod",
                         {index, index, index, index},
                         "index request, index q_head, index q_pos, index "
                         "kv_pos",
                         b.getI1Type());
}

LogicalResult MergeSinksOp::verify() {
  StateType type = getInput().getType();
  if (type.isPartitioned())
    return emitOpError() << "applies to a whole state; reduce the partition "
                         << "axis with kv.merge_partitions first";
  return verifyPerHead(getOperation(), getSinks(), "sinks", type.getHeads());
}

namespace {
/// merge_sinks(attention(...), s) -> attention(..., sinks(s)) when the state
/// has no other use, the op has no sinks yet and `s` is defined before it.
struct FoldSinksIntoAttention : OpRewritePattern<MergeSinksOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MergeSinksOp op,
                                PatternRewriter &rewriter) const override {
    auto producer = op.getInput().getDefiningOp<AttentionVariantOpInterface>();
    if (!producer || producer.getSinks() || !op.getInput().hasOneUse())
      return failure();
    Value sinks = op.getSinks();
    if (Operation *def = sinks.getDefiningOp()) {
      bool before = def->getBlock() == producer->getBlock()
                        ? def->isBeforeInBlock(producer)
                        : def->getParentRegion()->isProperAncestor(
                              producer->getParentRegion());
      if (!before)
        return failure();
    }
    rewriter.modifyOpInPlace(producer,
                             [&] { producer.getSinksMutable().assign(sinks); });
    rewriter.replaceOp(op, op.getInput());
    return success();
  }
};
} // namespace

void MergeSinksOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                               MLIRContext *context) {
  patterns.add<FoldSinksIntoAttention>(context);
}
