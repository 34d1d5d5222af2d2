//===- IRBuilder.cpp - Terse arith for kernel builders --------------------===//
#include "kvir/Codegen/IRBuilder.h"

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
