//===- TestSm90.cpp - Test components of the sm_90a atoms -----------------===//
//
//   wgmma_gemm   one warpgroup computes C[64, N] = A[64, K] B[N, K]^T with
//                SS wgmma: A and B staged into 128-byte-swizzled tiles,
//                K in steps of 16 chained in one group, the accumulator
//                stored by the atom's fragment layout
//   wgmma_chain  O[64, Dv] = round(A B^T) V: S by SS wgmma, P rounded from
//                the accumulator into RS A registers, O += P V by RS wgmma
//                reading V [keys, Dv] MN-major (a 64-column block per
//                128-byte swizzle span)
//   mbarrier_ring MBarrierPipeline: a producer warp streams tiles of
//                in[T, 256] (f32) into a `test.stages`-stage ring with
//                cp.async.bulk completing on the full barriers; a consumer
//                warpgroup writes out[t][j] = ring[j] + t and releases the
//                stage (not with `test.skip_release`: the producer then
//                waits forever, which the emulator reports)
//
//===----------------------------------------------------------------------===//
#include "TestComponents.h"

#include "kvir/Codegen/IRBuilder.h"
#include "kvir/Codegen/Pipeline.h"
#include "kvir/Codegen/WarpRoles.h"
#include "kvir/Codegen/WgmmaAtom.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace kvir;
using namespace kvir::codegen;

namespace {

/// A 128-byte-swizzled tile of `rows` x `cols` 16-bit elements.
TileLayout swizzled(int64_t rows, int64_t cols) {
  TileLayout layout;
  layout.rows = rows;
  layout.cols = cols;
  layout.swizzle = Swizzle::B128;
  return layout;
}

/// Copies global [rows, cols] into `tile` element by element (128 threads),
/// then makes the writes visible to the async proxy wgmma reads through.
void stage(ImplicitLocOpBuilder &b, Value thread, Value global,
           const WgmmaOperandTile &tile) {
  const TileLayout &l = tile.layout;
  test::forStrided(
      b, thread, l.rows * l.cols, 128, [&](ImplicitLocOpBuilder &lb, Value e) {
        IRBuilder ir{lb};
        Value row = ir.divU(e, ir.idx(l.cols));
        Value col = ir.remU(e, ir.idx(l.cols));
        Value v = memref::LoadOp::create(lb, global, ValueRange{row, col});
        memref::StoreOp::create(lb, v, tile.memref,
                                l.emitElementOffset(lb, Value(), row, col));
      });
}

void proxyFenceAndSync(ImplicitLocOpBuilder &b) {
  NVVM::FenceProxyOp::create(
      b, NVVM::ProxyKind::async_shared,
      NVVM::SharedSpaceAttr::get(b.getContext(),
                                 NVVM::SharedSpace::shared_cta));
  gpu::BarrierOp::create(b);
}

/// Stores the warpgroup's accumulator into out[64, N].
void storeAcc(ImplicitLocOpBuilder &b, const WgmmaAtom &atom, Value acc,
              Value out) {
  IRBuilder ir{b};
  const LaneFragment &fragment = atom.getAccFragment();
  Value row0 = atom.warpRow0(b);
  for (int64_t t = 0; t < atom.getN() / 8; ++t)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t j = 0; j < 2; ++j) {
        Value v = LLVM::ExtractValueOp::create(
            b, acc, ArrayRef<int64_t>{WgmmaAtom::accIndex(t, h, j)});
        Value row = ir.add(row0, fragment.atomRow(b, h));
        Value col = ir.add(fragment.atomCol(b, j), ir.idx(8 * t));
        memref::StoreOp::create(b, v, out, ValueRange{row, col});
      }
}

/// S = A B^T over K in steps of 16, one group, retired.
Value gemm(ImplicitLocOpBuilder &b, const WgmmaAtom &atom,
           const WgmmaOperandTile &a, const WgmmaOperandTile &bt) {
  IRBuilder ir{b};
  atom.fence(b);
  Value acc = atom.zeroAcc(b);
  for (int64_t k0 = 0; k0 < a.layout.cols; k0 += WgmmaAtom::kK)
    acc = atom.mma(b, atom.descriptorRows(b, a, Value(), ir.idx(0), k0),
                   atom.descriptorRows(b, bt, Value(), ir.idx(0), k0), acc,
                   /*bColumns=*/false, /*accumulate=*/k0 > 0);
  atom.commit(b);
  atom.wait(b, 0);
  return acc;
}

} // namespace

/// (a: memref<64xKxT>, b: memref<NxKxT>, c: memref<64xNxf32>).
void kvir::test::buildWgmmaGemm(gpu::GPUFuncOp stub) {
  auto aType = cast<MemRefType>(stub.getArgumentTypes()[0]);
  auto bType = cast<MemRefType>(stub.getArgumentTypes()[1]);
  Type elt = aType.getElementType();
  int64_t k = aType.getDimSize(1), n = bType.getDimSize(0);
  TileLayout la = swizzled(64, k), lb = swizzled(n, k);
  for (const TileLayout &l : {la, lb})
    if (std::optional<std::string> why = WgmmaAtom::whyNotOperand(l))
      return (void)stub.emitError(*why);
  SharedMemoryLayout shared;
  shared.add("a", {64 * k}, elt, la.alignment());
  shared.add("b", {n * k}, elt, lb.alignment());
  KernelFunc kf = replaceKernel(stub, {128, 1, 1}, shared);
  ImplicitLocOpBuilder b = kf.getBuilder();
  Value thread = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  WgmmaOperandTile a{kf.getShared(0), la}, bt{kf.getShared(1), lb};
  stage(b, thread, kf.getArgument(0), a);
  stage(b, thread, kf.getArgument(1), bt);
  proxyFenceAndSync(b);
  WgmmaAtom atom(b, elt, n, thread);
  storeAcc(b, atom, gemm(b, atom, a, bt), kf.getArgument(2));
}

/// (a: memref<64xDxT>, b: memref<KEYSxDxT>, v: memref<KEYSxDvxT>,
///  o: memref<64xDvxf32>).
void kvir::test::buildWgmmaChain(gpu::GPUFuncOp stub) {
  auto aType = cast<MemRefType>(stub.getArgumentTypes()[0]);
  auto vType = cast<MemRefType>(stub.getArgumentTypes()[2]);
  Type elt = aType.getElementType();
  int64_t d = aType.getDimSize(1), keys = vType.getDimSize(0),
          dv = vType.getDimSize(1);
  TileLayout la = swizzled(64, d), lb = swizzled(keys, d),
             lv = swizzled(keys, dv);
  for (const TileLayout &l : {la, lb, lv})
    if (std::optional<std::string> why = WgmmaAtom::whyNotOperand(l))
      return (void)stub.emitError(*why);
  SharedMemoryLayout shared;
  shared.add("a", {64 * d}, elt, la.alignment());
  shared.add("b", {keys * d}, elt, lb.alignment());
  shared.add("v", {keys * dv}, elt, lv.alignment());
  KernelFunc kf = replaceKernel(stub, {128, 1, 1}, shared);
  ImplicitLocOpBuilder b = kf.getBuilder();
  IRBuilder ir{b};
  Value thread = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  WgmmaOperandTile a{kf.getShared(0), la}, bt{kf.getShared(1), lb},
      v{kf.getShared(2), lv};
  stage(b, thread, kf.getArgument(0), a);
  stage(b, thread, kf.getArgument(1), bt);
  stage(b, thread, kf.getArgument(2), v);
  proxyFenceAndSync(b);
  WgmmaAtom sAtom(b, elt, keys, thread), oAtom(b, elt, dv, thread);
  Value s = gemm(b, sAtom, a, bt);
  // P's registers are written by threads: a fence orders them before the
  // wgmmas that read them.
  SmallVector<Value> p;
  for (int64_t j = 0; j < keys / WgmmaAtom::kK; ++j)
    p.push_back(sAtom.accumulatorToA(b, s, j));
  oAtom.fence(b);
  Value o = oAtom.zeroAcc(b);
  for (int64_t j = 0; j < keys / WgmmaAtom::kK; ++j)
    o = oAtom.mmaRegisters(b, p[j],
                           oAtom.descriptorCols(b, v, Value(),
                                                ir.idx(WgmmaAtom::kK * j),
                                                ir.idx(0)),
                           o,
                           /*bColumns=*/true, /*accumulate=*/j > 0);
  oAtom.commit(b);
  oAtom.wait(b, 0);
  storeAcc(b, oAtom, o, kf.getArgument(3));
}

namespace {
/// The address of `memref`'s element `offset` (elements of `bytes`), as a
/// pointer of address space `space`.
Value pointerTo(ImplicitLocOpBuilder &b, Value memref, Value offset,
                int64_t bytes, unsigned space) {
  IRBuilder ir{b};
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, memref);
  Value address = arith::IndexCastUIOp::create(
      b, b.getI64Type(), ir.add(base, ir.mul(offset, ir.idx(bytes))));
  return LLVM::IntToPtrOp::create(
      b, LLVM::LLVMPointerType::get(b.getContext(), space), address);
}

/// `body(builder, i)` for i in [0, n), sequentially.
void forEach(ImplicitLocOpBuilder &b, int64_t n,
             function_ref<void(ImplicitLocOpBuilder &, Value)> body) {
  test::forStrided(b, IRBuilder{b}.idx(0), n, 1, body);
}
} // namespace

/// (in: memref<Tx256xf32>, out: memref<Tx256xf32>).
void kvir::test::buildMBarrierRing(gpu::GPUFuncOp stub) {
  auto type = cast<MemRefType>(stub.getArgumentTypes()[0]);
  int64_t tiles = type.getDimSize(0), width = type.getDimSize(1);
  int64_t stages = 3;
  if (auto a = stub->getAttrOfType<IntegerAttr>("test.stages"))
    stages = a.getInt();
  bool release = !stub->hasAttr("test.skip_release");
  WarpRoles roles({{"producer", 1, 0}, {"consumer", 4, 0}});
  MBarrierPipeline pipeline(stages, /*consumerArrivals=*/128);
  SharedMemoryLayout shared;
  shared.add("ring", {stages * width}, Float32Type::get(stub.getContext()),
             128);
  shared.add("barriers", {pipeline.barrierCount()},
             IntegerType::get(stub.getContext(), 64), 8);
  KernelFunc kf = replaceKernel(stub, {roles.getNumThreads(), 1, 1}, shared);
  ImplicitLocOpBuilder b = kf.getBuilder();
  IRBuilder ir{b};
  Value ring = kf.getShared(0), barriers = kf.getShared(1);
  Value in = kf.getArgument(0), out = kf.getArgument(1);
  Value thread = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  pipeline.init(b, barriers, ir.eq(thread, ir.idx(0)));
  gpu::BarrierOp::create(b);
  int64_t tileBytes = width * 4;
  roles.emit(
      b, ir.divU(thread, ir.idx(32)),
      [&](ImplicitLocOpBuilder &rb, unsigned role, Value warp) {
        IRBuilder r{rb};
        Value lane = r.remU(thread, r.idx(32));
        if (role == 0) {
          auto leader = scf::IfOp::create(rb, r.eq(lane, r.idx(0)), false);
          ImplicitLocOpBuilder pb(rb.getLoc(), leader.thenBlock(),
                                  leader.thenBlock()->begin());
          forEach(pb, tiles, [&](ImplicitLocOpBuilder &lb, Value t) {
            IRBuilder l{lb};
            auto [stage, parity] = pipeline.slot(lb, t);
            pipeline.producerAcquire(
                lb, barriers, stage, parity,
                arith::ConstantIntOp::create(lb, tileBytes, 32));
            Value dst = LLVM::AddrSpaceCastOp::create(
                lb, LLVM::LLVMPointerType::get(lb.getContext(), 7),
                pointerTo(lb, ring, l.mul(stage, l.idx(width)), 4, 3));
            Value src = pointerTo(lb, in, l.mul(t, l.idx(width)), 4, 1);
            NVVM::CpAsyncBulkGlobalToSharedClusterOp::create(
                lb, dst, src, pipeline.fullBarrier(lb, barriers, stage),
                arith::ConstantIntOp::create(lb, tileBytes, 32), Value(),
                Value());
          });
          return;
        }
        Value c = r.sub(thread, r.idx(32));
        forEach(rb, tiles, [&](ImplicitLocOpBuilder &lb, Value t) {
          IRBuilder l{lb};
          auto [stage, parity] = pipeline.slot(lb, t);
          pipeline.consumerWait(lb, barriers, stage, parity);
          Value tf = arith::UIToFPOp::create(lb, lb.getF32Type(), l.toI32(t));
          for (int64_t j0 = 0; j0 < width; j0 += 128) {
            Value j = l.add(c, l.idx(j0));
            Value v = memref::LoadOp::create(
                lb, ring, ValueRange{l.add(l.mul(stage, l.idx(width)), j)});
            memref::StoreOp::create(lb, arith::AddFOp::create(lb, v, tf), out,
                                    ValueRange{t, j});
          }
          if (release)
            pipeline.consumerRelease(lb, barriers, stage);
        });
      });
}
