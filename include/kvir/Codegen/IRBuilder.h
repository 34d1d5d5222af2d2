//===- IRBuilder.h - Terse arith for kernel builders ------------*- C++ -*-===//
//
// The few constructors every kernel component writes over and over: index,
// f32 and i32 constants, type-directed add / sub / mul, index min / max and
// comparisons, vector splats. A thin layer over an ImplicitLocOpBuilder.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_CODEGEN_IRBUILDER_H
#define KVIR_CODEGEN_IRBUILDER_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace kvir::codegen {

struct IRBuilder {
  mlir::ImplicitLocOpBuilder &b;

  mlir::Value idx(int64_t v) { return mlir::arith::ConstantIndexOp::create(b, v); }
  mlir::Value f32(double v) {
    return mlir::arith::ConstantOp::create(b, b.getF32FloatAttr(v));
  }
  mlir::Value i32(int64_t v) {
    return mlir::arith::ConstantOp::create(b, b.getI32IntegerAttr(v));
  }
  /// Integer (index or iN) or float arithmetic by the operands' type.
  mlir::Value add(mlir::Value x, mlir::Value y);
  mlir::Value sub(mlir::Value x, mlir::Value y);
  mlir::Value mul(mlir::Value x, mlir::Value y);
  mlir::Value divU(mlir::Value x, mlir::Value y) {
    return mlir::arith::DivUIOp::create(b, x, y);
  }
  mlir::Value remU(mlir::Value x, mlir::Value y) {
    return mlir::arith::RemUIOp::create(b, x, y);
  }
  mlir::Value cmp(mlir::arith::CmpIPredicate p, mlir::Value x, mlir::Value y) {
    return mlir::arith::CmpIOp::create(b, p, x, y);
  }
  mlir::Value lt(mlir::Value x, mlir::Value y) {
    return cmp(mlir::arith::CmpIPredicate::slt, x, y);
  }
  mlir::Value eq(mlir::Value x, mlir::Value y) {
    return cmp(mlir::arith::CmpIPredicate::eq, x, y);
  }
  mlir::Value minS(mlir::Value x, mlir::Value y) {
    return mlir::arith::MinSIOp::create(b, x, y);
  }
  mlir::Value maxS(mlir::Value x, mlir::Value y) {
    return mlir::arith::MaxSIOp::create(b, x, y);
  }
  mlir::Value select(mlir::Value c, mlir::Value x, mlir::Value y) {
    return mlir::arith::SelectOp::create(b, c, x, y);
  }
  mlir::Value toIndex(mlir::Value v) {
    return mlir::arith::IndexCastOp::create(b, b.getIndexType(), v);
  }
  mlir::Value toI32(mlir::Value v) {
    return mlir::arith::IndexCastOp::create(b, b.getI32Type(), v);
  }
  /// x * y + z rounded once (llvm.fma: PTX fma.rn.f32), element-wise on
  /// vectors; a scalar operand is broadcast to the others' shape.
  mlir::Value fma(mlir::Value x, mlir::Value y, mlir::Value z);
  /// The f32 dot product of two vectors as a chain of fmas, element 0
  /// first: one rounding per element, nothing left for the backend to
  /// contract or reassociate.
  mlir::Value dot(mlir::Value x, mlir::Value y);
  /// `scalar` broadcast to a vector of `n` (`scalar` itself if n == 0).
  mlir::Value splat(mlir::Value scalar, int64_t n);
  /// `scalar` broadcast to the shape of `like` if that is a vector, or
  /// itself.
  mlir::Value splatLike(mlir::Value scalar, mlir::Value like);
  /// The shared-memory address (i64) `byteOffset` (an index) bytes into
  /// the buffer of the workgroup memref `memref`, and the same as a
  /// shared pointer (!llvm.ptr<3>): what descriptors, mbarriers and bulk
  /// copies take.
  mlir::Value sharedAddress(mlir::Value memref, mlir::Value byteOffset);
  mlir::Value sharedPointer(mlir::Value memref, mlir::Value byteOffset);
  /// An NVVM f32 intrinsic (e.g. "llvm.nvvm.ex2.approx.ftz.f") applied to
  /// `x`, element by element on vectors. No libdevice call is involved.
  mlir::Value nvvmUnary(llvm::StringRef intrinsic, mlir::Value x);
};

/// Builds `body` under an scf.if on `cond` (no results, no else).
void emitIf(mlir::ImplicitLocOpBuilder &b, mlir::Value cond,
            llvm::function_ref<void(mlir::ImplicitLocOpBuilder &)> body);
/// Builds `then` and `otherwise` under an scf.if / else on `cond` (no
/// results).
void emitIfElse(
    mlir::ImplicitLocOpBuilder &b, mlir::Value cond,
    llvm::function_ref<void(mlir::ImplicitLocOpBuilder &)> then,
    llvm::function_ref<void(mlir::ImplicitLocOpBuilder &)> otherwise);

/// Spreads items [0, total) over a block's `numThreads` threads (`thread`
/// is this one): `body` for item k * numThreads + thread of every round k,
/// unrolled; only a last, partial round is guarded.
void emitStrided(
    mlir::ImplicitLocOpBuilder &b, mlir::Value thread, int64_t numThreads,
    int64_t total,
    llvm::function_ref<void(mlir::ImplicitLocOpBuilder &, mlir::Value item)>
        body);

} // namespace kvir::codegen

#endif // KVIR_CODEGEN_IRBUILDER_H
