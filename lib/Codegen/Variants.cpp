//===- Variants.cpp - An attention op's variants in a lowering ------------===//
#include "kvir/Codegen/Variants.h"
#include "kvir/Codegen/IRBuilder.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/ADT/SetVector.h"

#include <cmath>

using namespace mlir;
using namespace kvir;
using namespace kvir::codegen;

/// Whether `value` is a constant a kernel clones rather than takes.
static bool isClonedConstant(Value value) {
  Operation *def = value.getDefiningOp();
  return def && def->hasTrait<OpTrait::ConstantLike>() &&
         def->getNumOperands() == 0;
}

SmallVector<Value> codegen::getVariantOperands(Operation *op) {
  auto variants = cast<kv::AttentionVariantOpInterface>(op);
  llvm::SetVector<Value> values;
  if (Value sinks = variants.getSinks())
    values.insert(sinks);
  if (Value slopes = variants.getAlibiSlopes())
    values.insert(slopes);
  for (Region *region : {&variants.getScoreMod(), &variants.getMaskMod()})
    region->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands())
        if (!region->isAncestor(operand.getParentRegion()) &&
            !isClonedConstant(operand))
          values.insert(operand);
    });
  return values.takeVector();
}

VariantEmitter::VariantEmitter(kv::AttentionVariantOpInterface op,
                               IRMapping operands,
                               AttentionState::Flavor flavor)
    : operands(std::move(operands)), flavor(flavor), sinks(op.getSinks()),
      slopes(op.getAlibiSlopes()), standardAlibi(op.getAlibi()),
      heads(cast<kv::StateType>(op->getResult(0).getType()).getHeads()),
      scoreMod(&op.getScoreMod()), maskMod(&op.getMaskMod()) {}

bool VariantEmitter::modifiesScores() const {
  return slopes || standardAlibi || !scoreMod->empty();
}

Value VariantEmitter::inlineRegion(ImplicitLocOpBuilder &b, Region &region,
                                   ValueRange args) const {
  IRMapping map = operands;
  Block &block = region.front();
  map.map(block.getArguments(), args);
  for (Operation &op : block.without_terminator()) {
    // Constants from above are cloned where the region lands (a kernel
    // has no other copy of them).
    op.walk([&](Operation *nested) {
      for (Value operand : nested->getOperands())
        if (!map.contains(operand) && isClonedConstant(operand) &&
            !region.isAncestor(operand.getParentRegion()))
          b.clone(*operand.getDefiningOp(), map);
    });
    b.clone(op, map);
  }
  return map.lookupOrDefault(block.getTerminator()->getOperand(0));
}

Value VariantEmitter::alibiSlope(ImplicitLocOpBuilder &b, Value qHead) const {
  IRBuilder ir{b};
  if (slopes)
    return memref::LoadOp::create(b, operands.lookupOrDefault(slopes),
                                  ValueRange{qHead});
  if (!standardAlibi)
    return Value();
  // 2^e with e = -8 (h + 1) / n below n, -4 (2 (h - n) + 1) / n above:
  // exact in f32 (n is a power of two), then one exp2.
  int64_t n = int64_t(1) << static_cast<int>(std::floor(std::log2(heads)));
  Value h = arith::SIToFPOp::create(b, b.getF32Type(), ir.toI32(qHead));
  Value low = ir.mul(ir.add(h, ir.f32(1.0)), ir.f32(-8.0 / double(n)));
  Value high = ir.mul(
      ir.add(ir.mul(ir.sub(h, ir.f32(double(n))), ir.f32(2.0)), ir.f32(1.0)),
      ir.f32(-4.0 / double(n)));
  Value e = ir.select(ir.lt(qHead, ir.idx(n)), low, high);
  if (flavor == AttentionState::Flavor::ptxBase2)
    return ir.nvvmUnary("llvm.nvvm.ex2.approx.ftz.f", e);
  return math::Exp2Op::create(b, e);
}

Value VariantEmitter::modifyScore(ImplicitLocOpBuilder &b, Value s,
                                  Value request, Value qHead, Value qPos,
                                  Value kvPos) const {
  IRBuilder ir{b};
  if (Value slope = alibiSlope(b, qHead)) {
    // slope * (j - p), the distance exact as an integer first.
    Value distance = arith::SIToFPOp::create(b, b.getF32Type(),
                                             ir.toI32(ir.sub(kvPos, qPos)));
    s = ir.add(s, ir.mul(slope, distance));
  }
  if (!scoreMod->empty())
    s = inlineRegion(b, *scoreMod, {s, request, qHead, qPos, kvPos});
  return s;
}

Value VariantEmitter::visible(ImplicitLocOpBuilder &b, Value request,
                              Value qHead, Value qPos, Value kvPos) const {
  if (!hasMask())
    return Value();
  return inlineRegion(b, *maskMod, {request, qHead, qPos, kvPos});
}

Value VariantEmitter::sinkLogit(ImplicitLocOpBuilder &b, Value qHead) const {
  if (!sinks)
    return Value();
  return memref::LoadOp::create(b, operands.lookupOrDefault(sinks),
                                ValueRange{qHead});
}

KernelVariants KernelVariants::of(Operation *op) {
  KernelVariants variants;
  auto withVariants = dyn_cast<kv::AttentionVariantOpInterface>(op);
  if (!withVariants || !withVariants.hasVariants())
    return variants;
  variants.op = withVariants;
  for (Value v : getVariantOperands(op))
    variants.types.push_back(v.getType());
  return variants;
}

VariantEmitter KernelVariants::bind(ValueRange kernelArguments) const {
  IRMapping operands;
  operands.map(getVariantOperands(op), kernelArguments.take_back(types.size()));
  return VariantEmitter(op, operands, AttentionState::Flavor::ptxBase2);
}
