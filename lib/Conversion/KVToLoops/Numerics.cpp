//===- Numerics.cpp - Scalar building blocks of kv-to-loops ---------------===//
#include "LoweringUtils.h"

#include <cmath>

using namespace mlir;
using namespace kvir::kv;
using namespace kvir::kv::loops;

Value loops::indexConst(ImplicitLocOpBuilder &b, int64_t value) {
  return arith::ConstantIndexOp::create(b, value);
}

Value loops::f32Const(ImplicitLocOpBuilder &b, double value) {
  return arith::ConstantOp::create(b, b.getF32FloatAttr(value));
}

StateBuffers loops::allocState(ImplicitLocOpBuilder &b, StateType type,
                               Value rows, Value partitions) {
  SmallVector<Value> dynSizes;
  if (ShapedType::isDynamic(type.getPartitions()))
    dynSizes.push_back(partitions);
  if (ShapedType::isDynamic(type.getRows()))
    dynSizes.push_back(rows);
  auto outType = MemRefType::get(type.getOutputShape(), type.getElementType());
  auto lseType = MemRefType::get(type.getLseShape(), b.getF32Type());
  return {memref::AllocOp::create(b, outType, dynSizes),
          memref::AllocOp::create(b, lseType, dynSizes)};
}

/// Builds a loop nest over every index of `shape` (memref dims of `memref`)
/// and calls `body` with the induction variables.
static void forEachIndex(
    ImplicitLocOpBuilder &b, Value memref,
    function_ref<void(ImplicitLocOpBuilder &, ValueRange)> body) {
  auto type = cast<MemRefType>(memref.getType());
  SmallVector<Value> lbs, ubs, steps;
  for (int64_t i = 0; i < type.getRank(); ++i) {
    lbs.push_back(indexConst(b, 0));
    ubs.push_back(memref::DimOp::create(b, memref, i));
    steps.push_back(indexConst(b, 1));
  }
  scf::buildLoopNest(b, b.getLoc(), lbs, ubs, steps,
                     [&](OpBuilder &nested, Location loc, ValueRange ivs) {
                       ImplicitLocOpBuilder ib(loc, nested);
                       body(ib, ivs);
                     });
}

void loops::fillEmpty(ImplicitLocOpBuilder &b, StateBuffers buffers) {
  Type outElt = cast<MemRefType>(buffers.output.getType()).getElementType();
  forEachIndex(b, buffers.output, [&](ImplicitLocOpBuilder &ib, ValueRange iv) {
    Value zero = arith::ConstantOp::create(ib, ib.getFloatAttr(outElt, 0.0));
    memref::StoreOp::create(ib, zero, buffers.output, iv);
  });
  forEachIndex(b, buffers.lse, [&](ImplicitLocOpBuilder &ib, ValueRange iv) {
    memref::StoreOp::create(ib, f32Const(ib, -INFINITY), buffers.lse, iv);
  });
}

void loops::copyState(ImplicitLocOpBuilder &b, StateBuffers from,
                      StateBuffers to) {
  forEachIndex(b, from.output, [&](ImplicitLocOpBuilder &ib, ValueRange iv) {
    Value v = memref::LoadOp::create(ib, from.output, iv);
    memref::StoreOp::create(ib, v, to.output, iv);
  });
  if (!to.lse)
    return;
  forEachIndex(b, from.lse, [&](ImplicitLocOpBuilder &ib, ValueRange iv) {
    Value v = memref::LoadOp::create(ib, from.lse, iv);
    memref::StoreOp::create(ib, v, to.lse, iv);
  });
}

ValueRange loops::forLoop(
    ImplicitLocOpBuilder &b, Value lb, Value ub, ValueRange inits,
    function_ref<SmallVector<Value>(ImplicitLocOpBuilder &, Value, ValueRange)>
        body) {
  auto loop = scf::ForOp::create(
      b, lb, ub, indexConst(b, 1), inits,
      [&](OpBuilder &nested, Location loc, Value iv, ValueRange args) {
        ImplicitLocOpBuilder ib(loc, nested);
        scf::YieldOp::create(ib, body(ib, iv, args));
      });
  return loop.getResults();
}

void loops::forLoop(ImplicitLocOpBuilder &b, Value lb, Value ub,
                    function_ref<void(ImplicitLocOpBuilder &, Value)> body) {
  forLoop(b, lb, ub, ValueRange{},
          [&](ImplicitLocOpBuilder &ib, Value iv, ValueRange) {
            body(ib, iv);
            return SmallVector<Value>{};
          });
}
