//===- MergeKernel.cpp - Merging attention states on the GPU --------------===//
//
// merge((o_a, l_a), (o_b, l_b)) of DESIGN.md section 2 for any number of
// inputs, or over the partition axis of a split-KV state. Block (row, head),
// one thread per output dim: each input LSE is read from global memory once
// per block into shared memory, outputs are read and written coalesced.
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
  int64_t dv = spec.headDimV;
  SmallVector<Type> argTypes;
  for (unsigned i = 0; i < pairs; ++i)
    argTypes.append({spec.inOutputType, spec.inLseType});
  argTypes.append({spec.outType, spec.lseType});
  // The inputs' LSEs of this (row, head), read once per block and shared:
  // all of them for kv.merge, a chunk of up to blockDim.x partitions at a
  // time for kv.merge_partitions.
  auto wg = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  Type f32Type = Float32Type::get(ctx);
  int64_t lseSlots = spec.numInputs ? int64_t(spec.numInputs) : dv;
  Type lseSharedType = MemRefType::get({lseSlots}, f32Type, nullptr, wg);
  OpBuilder ob = OpBuilder::atBlockEnd(module.getBody());
  auto func = gpu::GPUFuncOp::create(ob, loc, spec.name,
                                     FunctionType::get(ctx, argTypes, {}),
                                     TypeRange{lseSharedType});
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), UnitAttr::get(ctx));
  // Kernels always launch with exactly this block: .reqntid (rather than
  // known_block_size's .maxntid) keeps ptxas from capping registers for an
  // occupancy it cannot get, which made it spill (head_dim 256, group 8 on
  // sm_90a).
  func->setAttr("nvvm.reqntid", DenseI32ArrayAttr::get(ctx, {int32_t(dv), 1, 1}));
  func.setWorkgroupAttributionAttr(
      0, LLVM::LLVMDialect::getAlignAttrName(),
      IntegerAttr::get(IntegerType::get(ctx, 64), 16));

  Block &entry = func.getBody().front();
  ImplicitLocOpBuilder b(loc, ctx);
  b.setInsertionPointToStart(&entry);
  auto f32 = [&](ImplicitLocOpBuilder &ib, double v) -> Value {
    return arith::ConstantOp::create(ib, ib.getF32FloatAttr(v));
  };
  auto idx = [&](ImplicitLocOpBuilder &ib, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(ib, v);
  };
  auto exp2 = [&](ImplicitLocOpBuilder &ib, Value v) {
    return approx(ib, "llvm.nvvm.ex2.approx.ftz.f", v);
  };
  Value lseShared = func.getWorkgroupAttributions()[0];
  Value d = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value row = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value head = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  double inScale = log2OfBase(spec.inBase);
  Value out = entry.getArgument(2 * pairs);
  Value lseOut = entry.getArgument(2 * pairs + 1);
  Value negInf = f32(b, -INFINITY);

  // An input LSE of (row, head) in base 2.
  auto loadLse2 = [&](ImplicitLocOpBuilder &ib, Value lse,
                      ValueRange prefix) -> Value {
    SmallVector<Value> index(prefix);
    index.append({row, head});
    Value l = memref::LoadOp::create(ib, lse, index);
    if (inScale == 1.0)
      return l;
    return arith::MulFOp::create(ib, l, f32(ib, inScale));
  };
  auto loadOut = [&](ImplicitLocOpBuilder &ib, Value o,
                     ValueRange prefix) -> Value {
    SmallVector<Value> index(prefix);
    index.append({row, head, d});
    Value v = memref::LoadOp::create(ib, o, index);
    if (!v.getType().isF32())
      v = arith::ExtFOp::create(ib, ib.getF32Type(), v);
    return v;
  };
  // The reference point of weights: the running max, or 0 while it is -inf
  // (then every weight is exp2(-inf) = 0 rather than NaN).
  auto refOf = [&](ImplicitLocOpBuilder &ib, Value m) -> Value {
    Value empty = arith::CmpFOp::create(ib, arith::CmpFPredicate::OEQ, m,
                                        f32(ib, -INFINITY));
    return arith::SelectOp::create(ib, empty, f32(ib, 0.0), m);
  };

  Value m, sum, acc;
  if (spec.numInputs) {
    // kv.merge: stage the LSEs, then the max and the weighted sums.
    for (unsigned i = 0; i < spec.numInputs; ++i) {
      Value mine = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, d,
                                         idx(b, int64_t(i) % dv));
      scf::IfOp::create(b, mine, [&](OpBuilder &nb, Location l) {
        ImplicitLocOpBuilder ib(l, nb);
        memref::StoreOp::create(ib,
                                loadLse2(ib, entry.getArgument(2 * i + 1), {}),
                                lseShared, ValueRange{idx(ib, i)});
        scf::YieldOp::create(ib);
      });
    }
    gpu::BarrierOp::create(b);
    SmallVector<Value> lses;
    m = negInf;
    for (unsigned i = 0; i < spec.numInputs; ++i) {
      lses.push_back(
          memref::LoadOp::create(b, lseShared, ValueRange{idx(b, i)}));
      m = arith::MaximumFOp::create(b, m, lses.back());
    }
    Value ref = refOf(b, m);
    sum = f32(b, 0.0);
    acc = f32(b, 0.0);
    for (unsigned i = 0; i < spec.numInputs; ++i) {
      Value w = exp2(b, arith::SubFOp::create(b, lses[i], ref));
      sum = arith::AddFOp::create(b, sum, w);
      acc = arith::AddFOp::create(
          b, acc,
          arith::MulFOp::create(b, w,
                                loadOut(b, entry.getArgument(2 * i), {})));
    }
  } else {
    // kv.merge_partitions over a runtime count P: chunks of blockDim.x
    // partitions, each LSE loaded by one thread into shared memory, merged
    // online (rescaling the running sums when the max grows).
    Value o = entry.getArgument(0), lse = entry.getArgument(1);
    Value parts = memref::DimOp::create(b, lse, 0);
    auto chunks = scf::ForOp::create(
        b, idx(b, 0), parts, idx(b, dv),
        ValueRange{negInf, f32(b, 0.0), f32(b, 0.0)},
        [&](OpBuilder &nb, Location l, Value c0, ValueRange carried) {
          ImplicitLocOpBuilder ib(l, nb);
          // The previous chunk's LSEs have been read by everyone.
          gpu::BarrierOp::create(ib);
          Value p = arith::AddIOp::create(ib, c0, d);
          Value inRange =
              arith::CmpIOp::create(ib, arith::CmpIPredicate::slt, p, parts);
          scf::IfOp::create(ib, inRange, [&](OpBuilder &nb2, Location l2) {
            ImplicitLocOpBuilder jb(l2, nb2);
            memref::StoreOp::create(jb, loadLse2(jb, lse, {p}), lseShared,
                                    ValueRange{d});
            scf::YieldOp::create(jb);
          });
          gpu::BarrierOp::create(ib);
          Value n = arith::MinSIOp::create(
              ib, idx(ib, dv), arith::SubIOp::create(ib, parts, c0));
          auto inner = scf::ForOp::create(
              ib, idx(ib, 0), n, idx(ib, 1), carried,
              [&](OpBuilder &nb2, Location l2, Value j, ValueRange st) {
                ImplicitLocOpBuilder jb(l2, nb2);
                Value lj = memref::LoadOp::create(jb, lseShared, ValueRange{j});
                Value mNew = arith::MaximumFOp::create(jb, st[0], lj);
                Value ref = refOf(jb, mNew);
                Value alpha = exp2(jb, arith::SubFOp::create(jb, st[0], ref));
                Value w = exp2(jb, arith::SubFOp::create(jb, lj, ref));
                Value ov = loadOut(jb, o, {arith::AddIOp::create(jb, c0, j)});
                Value s = arith::AddFOp::create(
                    jb, arith::MulFOp::create(jb, st[1], alpha), w);
                Value a = arith::AddFOp::create(
                    jb, arith::MulFOp::create(jb, st[2], alpha),
                    arith::MulFOp::create(jb, w, ov));
                scf::YieldOp::create(jb, ValueRange{mNew, s, a});
              });
          scf::YieldOp::create(ib, inner.getResults());
        });
    m = chunks.getResult(0);
    sum = chunks.getResult(1);
    acc = chunks.getResult(2);
  }

  Value empty = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, m, negInf);
  Value o = arith::DivFOp::create(b, acc, sum);
  o = arith::SelectOp::create(b, empty, f32(b, 0.0), o);
  Type outElt = spec.outType.getElementType();
  if (!outElt.isF32())
    o = arith::TruncFOp::create(b, outElt, o);
  memref::StoreOp::create(b, o, out, ValueRange{row, head, d});
  Value isD0 = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, d, idx(b, 0));
  scf::IfOp::create(b, isD0, [&](OpBuilder &nb, Location l) {
    ImplicitLocOpBuilder ib(l, nb);
    Value lse = arith::AddFOp::create(
        ib, m, approx(ib, "llvm.nvvm.lg2.approx.ftz.f", sum));
    if (spec.outBase == LseBase::e)
      lse = arith::MulFOp::create(ib, lse, f32(ib, M_LN2));
    lse = arith::SelectOp::create(ib, empty, f32(ib, -INFINITY), lse);
    memref::StoreOp::create(ib, lse, lseOut, ValueRange{row, head});
    scf::YieldOp::create(ib);
  });
  gpu::ReturnOp::create(b);
  return func;
}
