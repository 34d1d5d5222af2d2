//===- IRBuilder.cpp - Terse arith for kernel builders --------------------===//
#include "kvir/Codegen/IRBuilder.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace kvir::codegen;

static bool isIntegerLike(Type t) {
  return isa<IndexType, IntegerType>(getElementTypeOrSelf(t));
}

Value IRBuilder::sharedAddress(Value memref, Value byteOffset) {
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, memref);
  return arith::IndexCastUIOp::create(b, b.getI64Type(), add(base, byteOffset));
}

Value IRBuilder::sharedPointer(Value memref, Value byteOffset) {
  return LLVM::IntToPtrOp::create(b,
                                  LLVM::LLVMPointerType::get(b.getContext(), 3),
                                  sharedAddress(memref, byteOffset));
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

Value IRBuilder::fma(Value x, Value y, Value z) {
  Value like = isa<VectorType>(x.getType())   ? x
               : isa<VectorType>(y.getType()) ? y
                                              : z;
  auto shape = dyn_cast<VectorType>(like.getType());
  if (!shape || shape.getRank() == 1)
    return LLVM::FMAOp::create(b, splatLike(x, like), splatLike(y, like),
                               splatLike(z, like));
  // llvm.fma takes scalars and 1-d vectors: an n-d one goes flat.
  auto flat = VectorType::get({shape.getNumElements()}, shape.getElementType());
  auto flatten = [&](Value v) {
    return vector::ShapeCastOp::create(b, flat, splatLike(v, like));
  };
  Value r = LLVM::FMAOp::create(b, flatten(x), flatten(y), flatten(z));
  return vector::ShapeCastOp::create(b, shape, r);
}

Value IRBuilder::dot(Value x, Value y) {
  auto type = cast<VectorType>(x.getType());
  assert(type.getRank() == 1 && type == y.getType() && "dot of two 1-D vectors");
  auto at = [&](Value v, int64_t i) -> Value {
    return vector::ExtractOp::create(b, v, ArrayRef<int64_t>{i});
  };
  Value sum = mul(at(x, 0), at(y, 0));
  for (int64_t i = 1; i < type.getNumElements(); ++i)
    sum = fma(at(x, i), at(y, i), sum);
  return sum;
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

void kvir::codegen::emitStrided(
    ImplicitLocOpBuilder &b, Value thread, int64_t numThreads, int64_t total,
    function_ref<void(ImplicitLocOpBuilder &, Value)> body) {
  IRBuilder ir{b};
  for (int64_t k = 0; k * numThreads < total; ++k) {
    Value item = ir.add(thread, ir.idx(k * numThreads));
    if ((k + 1) * numThreads <= total) {
      body(b, item);
      continue;
    }
    emitIf(b, ir.lt(item, ir.idx(total)),
           [&](ImplicitLocOpBuilder &jb) { body(jb, item); });
  }
}

void kvir::codegen::emitIf(ImplicitLocOpBuilder &b, Value cond,
                           function_ref<void(ImplicitLocOpBuilder &)> body) {
  scf::IfOp::create(b, cond, [&](OpBuilder &nb, Location l) {
    ImplicitLocOpBuilder ib(l, nb);
    body(ib);
    scf::YieldOp::create(ib);
  });
}

void kvir::codegen::emitIfElse(
    ImplicitLocOpBuilder &b, Value cond,
    function_ref<void(ImplicitLocOpBuilder &)> then,
    function_ref<void(ImplicitLocOpBuilder &)> otherwise) {
  auto branch = [](function_ref<void(ImplicitLocOpBuilder &)> body) {
    return [body](OpBuilder &nb, Location l) {
      ImplicitLocOpBuilder ib(l, nb);
      body(ib);
      scf::YieldOp::create(ib);
    };
  };
  scf::IfOp::create(b, cond, branch(then), branch(otherwise));
}
