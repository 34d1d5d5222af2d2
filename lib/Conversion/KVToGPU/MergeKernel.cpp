//===- MergeKernel.cpp - Merging attention states on the GPU --------------===//
//
// merge((o_a, l_a), (o_b, l_b)) of DESIGN.md section 2 for any number of
// inputs, or over the partition axis of a split-KV state. Block (row, head),
// one thread per output dim: the LSEs are read by every thread (they hit the
// same cache line), outputs are read and written coalesced.
//
//===----------------------------------------------------------------------===//
#include "KernelBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <cmath>

using namespace mlir;
using namespace kvir::kv;
using namespace kvir::kv::gpu_lowering;

static double log2OfBase(LseBase base) {
  return base == LseBase::e ? M_LOG2E : 1.0;
}

gpu::GPUFuncOp gpu_lowering::buildMergeKernel(gpu::GPUModuleOp module,
                                              const MergeKernelSpec &spec) {
  MLIRContext *ctx = module.getContext();
  Location loc = module.getLoc();
  unsigned pairs = std::max(1u, spec.numInputs);
  SmallVector<Type> argTypes;
  for (unsigned i = 0; i < pairs; ++i)
    argTypes.append({spec.inOutputType, spec.inLseType});
  argTypes.append({spec.outType, spec.lseType});
  OpBuilder ob = OpBuilder::atBlockEnd(module.getBody());
  auto func = gpu::GPUFuncOp::create(ob, loc, spec.name,
                                     FunctionType::get(ctx, argTypes, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), UnitAttr::get(ctx));
  func.setKnownBlockSizeAttr(
      DenseI32ArrayAttr::get(ctx, {int32_t(spec.headDimV), 1, 1}));

  Block &entry = func.getBody().front();
  ImplicitLocOpBuilder b(loc, ctx);
  b.setInsertionPointToStart(&entry);
  auto f32 = [&](double v) -> Value {
    return arith::ConstantOp::create(b, b.getF32FloatAttr(v));
  };
  Value d = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value row = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value head = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  double inScale = log2OfBase(spec.inBase);
  Value out = entry.getArgument(2 * pairs);
  Value lseOut = entry.getArgument(2 * pairs + 1);

  // Visits every input (o, lse) at (row, head), threading f32 values.
  // `part` is the partition index for a partitioned input, else null.
  using Visit = function_ref<SmallVector<Value>(
      ImplicitLocOpBuilder &, Value, Value, Value, ValueRange)>;
  auto forEachInput = [&](ValueRange init, Visit visit) -> SmallVector<Value> {
    if (spec.numInputs) {
      SmallVector<Value> carried(init);
      for (unsigned i = 0; i < spec.numInputs; ++i)
        carried = visit(b, entry.getArgument(2 * i),
                        entry.getArgument(2 * i + 1), Value(), carried);
      return carried;
    }
    Value o = entry.getArgument(0), lse = entry.getArgument(1);
    Value parts = memref::DimOp::create(b, lse, 0);
    auto loop = scf::ForOp::create(
        b, arith::ConstantIndexOp::create(b, 0), parts,
        arith::ConstantIndexOp::create(b, 1), init,
        [&](OpBuilder &nb, Location l, Value p, ValueRange carried) {
          ImplicitLocOpBuilder ib(l, nb);
          scf::YieldOp::create(ib, visit(ib, o, lse, p, carried));
        });
    return SmallVector<Value>(loop.getResults());
  };
  // Index of ([part,] row, head[, d]) in an input.
  auto inputIndex = [&](Value part, bool withDim) {
    SmallVector<Value> idx;
    if (part)
      idx.push_back(part);
    idx.append({row, head});
    if (withDim)
      idx.push_back(d);
    return idx;
  };
  auto lse2 = [&](ImplicitLocOpBuilder &ib, Value lse, Value part) -> Value {
    Value l = memref::LoadOp::create(ib, lse, inputIndex(part, false));
    if (inScale == 1.0)
      return l;
    return arith::MulFOp::create(
        ib, l, arith::ConstantOp::create(ib, ib.getF32FloatAttr(inScale)));
  };

  Value negInf = f32(-INFINITY);
  Value m = forEachInput(
      ValueRange{negInf},
      [&](ImplicitLocOpBuilder &ib, Value, Value lse, Value part,
          ValueRange c) {
        return SmallVector<Value>{
            arith::MaximumFOp::create(ib, c[0], lse2(ib, lse, part))};
      })[0];
  Value empty = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, m, negInf);
  Value ref = arith::SelectOp::create(b, empty, f32(0.0), m);
  SmallVector<Value> sums = forEachInput(
      ValueRange{f32(0.0), f32(0.0)},
      [&](ImplicitLocOpBuilder &ib, Value o, Value lse, Value part,
          ValueRange c) {
        Value delta = arith::SubFOp::create(ib, lse2(ib, lse, part), ref);
        Value w = approx(ib, "llvm.nvvm.ex2.approx.ftz.f", delta);
        Value ov = memref::LoadOp::create(ib, o, inputIndex(part, true));
        if (!ov.getType().isF32())
          ov = arith::ExtFOp::create(ib, ib.getF32Type(), ov);
        return SmallVector<Value>{
            arith::AddFOp::create(ib, c[0], w),
            arith::AddFOp::create(ib, c[1], arith::MulFOp::create(ib, w, ov))};
      });
  Value o = arith::DivFOp::create(b, sums[1], sums[0]);
  o = arith::SelectOp::create(b, empty, f32(0.0), o);
  Type outElt = spec.outType.getElementType();
  if (!outElt.isF32())
    o = arith::TruncFOp::create(b, outElt, o);
  memref::StoreOp::create(b, o, out, ValueRange{row, head, d});
  Value isD0 = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, d,
                                     arith::ConstantIndexOp::create(b, 0));
  scf::IfOp::create(b, isD0, [&](OpBuilder &nb, Location l) {
    ImplicitLocOpBuilder ib(l, nb);
    Value lse = arith::AddFOp::create(
        ib, m, approx(ib, "llvm.nvvm.lg2.approx.ftz.f", sums[0]));
    if (spec.outBase == LseBase::e)
      lse = arith::MulFOp::create(
          ib, lse, arith::ConstantOp::create(ib, ib.getF32FloatAttr(M_LN2)));
    lse = arith::SelectOp::create(
        ib, empty,
        arith::ConstantOp::create(ib, ib.getF32FloatAttr(-INFINITY)), lse);
    memref::StoreOp::create(ib, lse, lseOut, ValueRange{row, head});
    scf::YieldOp::create(ib);
  });
  gpu::ReturnOp::create(b);
  return func;
}
