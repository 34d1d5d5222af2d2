//===- IRBuilder.cpp - Terse arith for kernel builders --------------------===//
#include "kvir/Codegen/IRBuilder.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace kvir::codegen;

static bool isIntegerLike(Type t) {
  return isa<IndexType, IntegerType>(getElementTypeOrSelf(t));
}

Value IRBuilder::add(Value x, Value y) {
  if (isIntegerLike(x.getType()))
    return arith::AddIOp::create(b, x, y);
  return arith::AddFOp::create(b, x, y);
}

Value IRBuilder::sub(Value x, Value y) {
  if (isIntegerLike(x.getType()))
    return arith::SubIOp::create(b, x, y);
  return arith::SubFOp::create(b, x, y);
}

Value IRBuilder::mul(Value x, Value y) {
  if (isIntegerLike(x.getType()))
    return arith::MulIOp::create(b, x, y);
  return arith::MulFOp::create(b, x, y);
}

Value IRBuilder::splat(Value scalar, int64_t n) {
  if (n == 0)
    return scalar;
  return vector::BroadcastOp::create(
      b, VectorType::get({n}, scalar.getType()), scalar);
}

Value IRBuilder::splatLike(Value scalar, Value like) {
  auto type = dyn_cast<VectorType>(like.getType());
  if (!type || isa<VectorType>(scalar.getType()))
    return scalar;
  return vector::BroadcastOp::create(
      b, VectorType::get(type.getShape(), scalar.getType()), scalar);
}

Value IRBuilder::nvvmUnary(StringRef intrinsic, Value x) {
  auto apply = [&](Value scalar) -> Value {
    return LLVM::CallIntrinsicOp::create(b, scalar.getType(),
                                         b.getStringAttr(intrinsic), scalar)
        .getResult(0);
  };
  auto type = dyn_cast<VectorType>(x.getType());
  if (!type)
    return apply(x);
  auto flat = VectorType::get({type.getNumElements()}, type.getElementType());
  Value v = vector::ShapeCastOp::create(b, flat, x);
  SmallVector<Value> elements;
  for (int64_t i = 0; i < type.getNumElements(); ++i)
    elements.push_back(apply(vector::ExtractOp::create(b, v, i)));
  Value r = vector::FromElementsOp::create(b, flat, elements);
  return vector::ShapeCastOp::create(b, type, r);
}
