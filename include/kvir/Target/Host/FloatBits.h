//===- FloatBits.h - Float conversions as integer arithmetic ----*- C++ -*-===//
//
// Emits, in the LLVM dialect, conversions between f32/f64/integers and the
// 16-bit float formats (f16, bf16) as integer operations and exactly rounded
// f32/f64 arithmetic: the same bits on every host CPU, where the backend's
// own lowering of `llvm.fptrunc` to half / bfloat is a native instruction on
// some CPUs (with its own subnormal rules) and a compiler-rt routine on
// others. Rounding is to nearest, ties to even, as IEEE 754 and PTX's
// `cvt.rn` define it; NaNs stay NaNs (made quiet, payload kept where it
// fits); overflow gives infinity. Every function works element-wise on
// vectors.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_TARGET_HOST_FLOATBITS_H
#define KVIR_TARGET_HOST_FLOATBITS_H

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"

namespace kvir::target::host {

/// Whether `type` (or its vector element) is f16 or bf16.
bool isNarrowFloat(mlir::Type type);

/// f16 / bf16 in a function body that only moves them (what is left after
/// the conversions are expanded) become i16 values of the same bits: loads,
/// stores, selects, element moves, phis, constants. The optimizer and the
/// backend then see no narrow float to promote through f32 (x86 moves a
/// bfloat phi through f32 with __truncsfbf2 calls, and LLVM's instcombine
/// turns phis of bitcast bits back into bfloat phis). The signature keeps
/// its types: arguments, call operands and results, and returned values are
/// cast at the boundary. Fails on an aggregate with a narrow float crossing
/// a boundary.
mlir::LogicalResult carryNarrowFloatsAsBits(mlir::LLVM::LLVMFuncOp fn);

class FloatBits {
public:
  /// Builds at `builder`'s insertion point; `like` gives the vector shape
  /// (or none) of every value built.
  FloatBits(mlir::OpBuilder &builder, mlir::Location loc, mlir::Type like);

  /// `element` with the shape of `like`.
  mlir::Type shaped(mlir::Type element) const;
  mlir::Value intConstant(unsigned width, uint64_t value);
  mlir::Value intConstant(const llvm::APInt &value);
  mlir::Value floatConstant(mlir::Type element, double value);

  /// f16 / bf16 -> f32 (exact; a signaling NaN becomes quiet).
  mlir::Value extendToF32(mlir::Value narrow);
  /// f32 -> f16 / bf16 (`narrowElement`), round to nearest even.
  mlir::Value truncateF32(mlir::Value x, mlir::Type narrowElement);
  /// f64 -> f32 rounded to odd (truncated, the last bit set when inexact):
  /// rounding that to any format of at most 22 significand bits rounds the
  /// f64 once, so f64 -> f16 / bf16 is truncateF32(roundToOddF32(x)).
  mlir::Value roundToOddF32(mlir::Value x);
  /// An integer of at most 64 bits -> f64 rounded to odd (exact below 2^53).
  mlir::Value intToF64RoundToOdd(mlir::Value x, bool isSigned);
  /// `x + y` of f64 rounded to odd instead of to nearest (TwoSum's error
  /// term sets the last bit).
  mlir::Value addRoundToOdd(mlir::Value x, mlir::Value y);

  /// Any float or integer (<= 64 bits) `x` -> f16 / bf16 `narrowElement`,
  /// rounded once to nearest even.
  mlir::Value toNarrow(mlir::Value x, mlir::Type narrowElement,
                       bool isSigned = true);

private:
  mlir::Value bitcast(mlir::Value v, mlir::Type element);
  mlir::Value select(mlir::Value c, mlir::Value t, mlir::Value f);
  mlir::Value icmp(mlir::LLVM::ICmpPredicate predicate, mlir::Value a,
                   mlir::Value b);
  mlir::Value fcmp(mlir::LLVM::FCmpPredicate predicate, mlir::Value a,
                   mlir::Value b);
  template <typename OpTy> mlir::Value op(mlir::Value a, mlir::Value b) {
    return OpTy::create(builder, loc, a, b);
  }
  /// `a <op> constant` on integers of a's width.
  template <typename OpTy> mlir::Value op(mlir::Value a, uint64_t constant) {
    return OpTy::create(builder, loc, a, intConstant(widthOf(a), constant));
  }
  static unsigned widthOf(mlir::Value v);
  /// The f32 magnitude bits `a` (no sign, not NaN) as f16 bits.
  mlir::Value f16Magnitude(mlir::Value a);

  mlir::OpBuilder &builder;
  mlir::Location loc;
  mlir::Type like;
};

} // namespace kvir::target::host

#endif // KVIR_TARGET_HOST_FLOATBITS_H
