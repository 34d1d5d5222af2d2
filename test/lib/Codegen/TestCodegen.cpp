//===- TestCodegen.cpp - Test passes for lib/Codegen's components ---------===//
//
// -test-kvir-codegen rebuilds every gpu.func (or func.func) that carries a
// `test.component` attribute with the named component, keeping its name and
// signature, so that a lit test can launch it from host code it writes
// itself and compare the results with its own reference:
//
//   warp_reduce      WarpOps: sum and max over groups of `test.lanes` lanes
//   mma_gemm         MmaAtom (MmaSyncAtom): C[16, N] = A[16, K] B[N, K]^T,
//                    ldmatrix.x4 from swizzled shared tiles, mma.sync
//                    m16n8k16, the accumulators stored by the atom's
//                    fragment layout
//   mma_chain        MmaAtom: O = round(A B^T) V, the accumulators rounded to
//                    an A fragment (P V from registers), V by ldmatrix.trans
//   wgmma_gemm,      WgmmaAtom (TestSm90.cpp): the same products by one
//   wgmma_chain      warpgroup's wgmma, SS and RS
//   mbarrier_ring    MBarrierPipeline (TestSm90.cpp): a producer warp and a
//                    consumer warpgroup through an mbarrier ring
//   paged_copy       PagedTileLoader: copies request b's tokens, tile by
//                    tile, through a `test.kv_type` paged cache into
//                    out[b, t, :], synchronously or with a `test.stages`-
//                    stage cp.async pipeline (rows past kv_len zero-filled)
//   paged_gather     PagedTileLoader gathering: copies the rows of the keys
//                    request b lists in topk[b, :] (`test.tile` entries a
//                    tile, cp.async with `test.async`, else loads) into
//                    out[b, e, :]; entries of no key (-1, past kv_len)
//                    zero-filled
//   attention_state  AttentionState (`test.flavor` exact / ptx) on a host
//                    function: merges (o, lse) pairs, an online update,
//                    finalize
//   kernel_func      KernelFunc: a kernel with static shared buffers, and
//                    `<name>_dynamic` with more than 48 KB of them
//   query_tiles      QueryTiles (`test.group`, `test.tile_rows`): block x
//                    writes its slot's (request, qo_start, qo_len,
//                    first row, valid) for qo_indptr
//   rope             Rope, PTX flavor (`test.style`, `test.theta`,
//                    `test.scale`, `test.head_dim`): thread x writes the
//                    cos and sin of pair x % (head_dim / 2) at position
//                    positions[x / (head_dim / 2)]
//   tile_layout      TileLayout (`test.swizzle`, `test.rows`, `test.cols`,
//                    `test.stages`, `test.element_bits`): 128 threads
//                    store each element's logical index (stage, row, col
//                    in row-major order) in a shared tile at the layout's
//                    address, then copy the tile's memory out as it lies
//   tile_rotation    TileRotation (`test.style`, `test.rotary_dim`) of 128
//                    threads: a [16, 64] f16 tile copied into shared
//                    memory (swizzled), row r rotated to positions[r] in
//                    place, copied out
//
//===----------------------------------------------------------------------===//
#include "TestComponents.h"

#include "kvir/Codegen/AttentionState.h"
#include "kvir/Codegen/IRBuilder.h"
#include "kvir/Codegen/KernelFunc.h"
#include "kvir/Codegen/MmaSyncAtom.h"
#include "kvir/Codegen/PagedTileLoader.h"
#include "kvir/Codegen/Pipeline.h"
#include "kvir/Codegen/QueryTiles.h"
#include "kvir/Codegen/Rope.h"
#include "kvir/Codegen/SharedTile.h"
#include "kvir/Codegen/TileLayout.h"
#include "kvir/Codegen/WarpOps.h"
#include "kvir/Codegen/WarpRoles.h"
#include "kvir/Dialect/KV/IR/KVOps.h"
#include "kvir/Dialect/KV/Utils/Quantization.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;
using namespace kvir;
using namespace kvir::codegen;

KernelFunc kvir::test::replaceKernel(gpu::GPUFuncOp stub,
                                     std::array<int64_t, 3> block,
                                     const SharedMemoryLayout &layout) {
  auto module = stub->getParentOfType<gpu::GPUModuleOp>();
  std::string name = stub.getName().str();
  SmallVector<Type> args(stub.getArgumentTypes());
  stub.erase();
  return KernelFunc::create(module, name, args, block, layout);
}

void kvir::test::forStrided(
    ImplicitLocOpBuilder &b, Value thread, int64_t end, int64_t step,
    function_ref<void(ImplicitLocOpBuilder &, Value)> body) {
  IRBuilder ir{b};
  scf::ForOp::create(b, thread, ir.idx(end), ir.idx(step), ValueRange{},
                     [&](OpBuilder &nb, Location l, Value i, ValueRange) {
                       ImplicitLocOpBuilder lb(l, nb);
                       body(lb, i);
                       scf::YieldOp::create(lb);
                     });
}

namespace {
using test::forStrided;
using test::replaceKernel;

int64_t intAttr(Operation *op, StringRef name, int64_t fallback) {
  if (auto a = op->getAttrOfType<IntegerAttr>(name))
    return a.getInt();
  return fallback;
}

void buildWarpReduce(gpu::GPUFuncOp stub) {
  int64_t lanes = intAttr(stub, "test.lanes", 32);
  KernelFunc kf = replaceKernel(stub, {32, 1, 1}, {});
  ImplicitLocOpBuilder b = kf.getBuilder();
  Value lane = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value x = memref::LoadOp::create(b, kf.getArgument(0), lane);
  memref::StoreOp::create(b, warpReduce(b, x, lanes, WarpReduction::sum),
                          kf.getArgument(1), lane);
  memref::StoreOp::create(b, warpReduce(b, x, lanes, WarpReduction::max),
                          kf.getArgument(2), lane);
}

/// WarpRoles: roles of `test.role_warps` warps (and `test.role_registers`
/// budgets, if given); every thread stores 1000 role + 32 (its warp in the
/// role) + lane at out[thread], every role through its own branch.
void buildWarpRoles(gpu::GPUFuncOp stub) {
  SmallVector<WarpRole> list;
  auto budgets = stub->getAttrOfType<DenseI64ArrayAttr>("test.role_registers");
  for (auto [i, warps] :
       llvm::enumerate(stub->getAttrOfType<DenseI64ArrayAttr>("test.role_warps")
                           .asArrayRef()))
    list.push_back(
        {"role" + std::to_string(i), warps, budgets ? budgets[i] : 0});
  WarpRoles roles(list);
  KernelFunc kf = replaceKernel(stub, {roles.getNumThreads(), 1, 1}, {});
  roles.declareLaunchBounds(kf.getOp());
  ImplicitLocOpBuilder b = kf.getBuilder();
  IRBuilder ir{b};
  Value thread = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value lane = ir.remU(thread, ir.idx(32));
  roles.emit(b, ir.divU(thread, ir.idx(32)),
             [&](ImplicitLocOpBuilder &rb, unsigned role, Value warp) {
               IRBuilder r{rb};
               Value code = r.add(r.idx(1000 * int64_t(role)),
                                  r.add(r.mul(warp, r.idx(32)), lane));
               memref::StoreOp::create(rb, r.toI32(code), kf.getArgument(0),
                                       thread);
             });
}

/// Copies a [rows, cols] global matrix into a swizzled shared tile, one
/// 16-byte chunk per lane at a time.
void stageMatrix(ImplicitLocOpBuilder &b, Value lane, Value global,
                 const SharedTile &tile) {
  IRBuilder ir{b};
  auto type = cast<MemRefType>(tile.memref.getType());
  int64_t ce = tile.chunkElements(), chunks = tile.chunksPerRow();
  for (int64_t i0 = 0; i0 < tile.rows * chunks; i0 += 32) {
    Value i = ir.add(lane, ir.idx(i0));
    Value r = ir.divU(i, ir.idx(chunks)), c = ir.remU(i, ir.idx(chunks));
    Value v = vector::LoadOp::create(
        b, VectorType::get({ce}, type.getElementType()), global,
        ValueRange{r, ir.mul(c, ir.idx(ce))});
    vector::StoreOp::create(b, v, tile.memref,
                            tile.chunkIndices(b, Value(), r, c));
  }
}

/// Stores an accumulator pair (n [n0, n0 + 16)) into out[16, N].
void storeAccPair(ImplicitLocOpBuilder &b, const MmaAtom &mma, Value out,
                  ArrayRef<Value> accs, int64_t n0) {
  IRBuilder ir{b};
  const LaneFragment &fragment = mma.getAccFragment();
  const FragmentLayout &layout = fragment.getLayout();
  for (auto [half, acc] : llvm::enumerate(accs))
    for (int64_t i = 0; i < layout.rowsPerLane; ++i)
      for (int64_t j = 0; j < layout.colsPerLane; ++j) {
        Value row = fragment.atomRow(b, i), col = fragment.atomCol(b, j);
        Value v = vector::ExtractOp::create(b, acc, ArrayRef<int64_t>{i, j});
        memref::StoreOp::create(
            b, v, out,
            ValueRange{row, ir.add(col, ir.idx(n0 + layout.atomCols *
                                                        int64_t(half)))});
      }
}

void buildMmaGemm(gpu::GPUFuncOp stub) {
  auto aType = cast<MemRefType>(stub.getArgumentTypes()[0]);
  auto bType = cast<MemRefType>(stub.getArgumentTypes()[1]);
  Type elt = aType.getElementType();
  int64_t k = aType.getDimSize(1), n = bType.getDimSize(0);
  SharedMemoryLayout layout;
  layout.add("a", {16, k}, elt);
  layout.add("b", {n, k}, elt);
  KernelFunc kf = replaceKernel(stub, {32, 1, 1}, layout);
  ImplicitLocOpBuilder b = kf.getBuilder();
  IRBuilder ir{b};
  Value lane = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  SharedTile aTile{kf.getShared(0), 16, k, Swizzle::XorChunks};
  SharedTile bTile{kf.getShared(1), n, k, Swizzle::XorChunks};
  stageMatrix(b, lane, kf.getArgument(0), aTile);
  stageMatrix(b, lane, kf.getArgument(1), bTile);
  gpu::BarrierOp::create(b);
  MmaSyncAtom atom(b, elt, lane);
  const MmaAtom &mma = atom;
  for (int64_t n0 = 0; n0 < n; n0 += 2 * mma.getN()) {
    Value acc0 = mma.zeroAcc(b), acc1 = mma.zeroAcc(b);
    for (int64_t k0 = 0; k0 < k; k0 += mma.getK()) {
      Value a = mma.loadA(b, aTile, Value(), ir.idx(0), k0);
      auto [b0, b1] = mma.loadBRows(b, bTile, Value(), ir.idx(n0), k0);
      acc0 = mma.mma(b, a, b0, acc0);
      acc1 = mma.mma(b, a, b1, acc1);
    }
    storeAccPair(b, mma, kf.getArgument(2), {acc0, acc1}, n0);
  }
}

void buildMmaChain(gpu::GPUFuncOp stub) {
  // A [16, 16], B [16 keys, 16], V [16 keys, Dv], O [16, Dv].
  auto vType = cast<MemRefType>(stub.getArgumentTypes()[2]);
  Type elt = vType.getElementType();
  int64_t dv = vType.getDimSize(1);
  SharedMemoryLayout layout;
  layout.add("a", {16, 16}, elt);
  layout.add("b", {16, 16}, elt);
  layout.add("v", {16, dv}, elt);
  KernelFunc kf = replaceKernel(stub, {32, 1, 1}, layout);
  ImplicitLocOpBuilder b = kf.getBuilder();
  IRBuilder ir{b};
  Value lane = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  SharedTile aTile{kf.getShared(0), 16, 16, Swizzle::XorChunks};
  SharedTile bTile{kf.getShared(1), 16, 16, Swizzle::XorChunks};
  SharedTile vTile{kf.getShared(2), 16, dv, Swizzle::XorChunks};
  stageMatrix(b, lane, kf.getArgument(0), aTile);
  stageMatrix(b, lane, kf.getArgument(1), bTile);
  stageMatrix(b, lane, kf.getArgument(2), vTile);
  gpu::BarrierOp::create(b);
  MmaSyncAtom atom(b, elt, lane);
  const MmaAtom &mma = atom;
  Value a = mma.loadA(b, aTile, Value(), ir.idx(0), 0);
  auto [b0, b1] = mma.loadBRows(b, bTile, Value(), ir.idx(0), 0);
  Value p = mma.accumulatorsToA(b, mma.mma(b, a, b0, mma.zeroAcc(b)),
                                mma.mma(b, a, b1, mma.zeroAcc(b)));
  for (int64_t n0 = 0; n0 < dv; n0 += 2 * mma.getN()) {
    auto [v0, v1] = mma.loadBCols(b, vTile, Value(), ir.idx(0), n0);
    storeAccPair(b, mma, kf.getArgument(3),
                 {mma.mma(b, p, v0, mma.zeroAcc(b)),
                  mma.mma(b, p, v1, mma.zeroAcc(b))},
                 n0);
  }
}

/// Arguments: the paged operands (as PagedOperands::flatten()), topk[B, K]
/// i32, out[B, K, D] of the cache's dtype. Grid (B), 128 threads.
void buildPagedGather(gpu::GPUFuncOp stub) {
  auto type = cast<kv::PagedType>(
      cast<TypeAttr>(stub->getAttr("test.kv_type")).getValue());
  bool async = stub->hasAttr("test.async");
  int64_t tile = intAttr(stub, "test.tile", 16);
  int64_t d = type.getHeadDim(), threads = 128;
  Type elt = type.getDtype(), i32 = IntegerType::get(stub.getContext(), 32);
  SharedMemoryLayout layout;
  layout.add("k", {1, tile, d}, elt);
  layout.add("page_ids",
             {1, PagedTileLoader::idEntriesPerTile(type.getPageSize(), tile,
                                                   /*gathers=*/true)},
             i32);
  layout.add("key_ids", {1, tile}, i32);
  unsigned numKvArgs = stub.getNumArguments() - 2;
  KernelFunc kf = replaceKernel(stub, {threads, 1, 1}, layout);
  ImplicitLocOpBuilder b = kf.getBuilder();
  IRBuilder ir{b};
  kv::PagedOperands kv = kv::PagedOperands::fromFlattened(
      type, kf.getArguments().take_front(numKvArgs));
  Value topk = kf.getArgument(numKvArgs), out = kf.getArgument(numKvArgs + 1);
  Value thread = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value req = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  kv::RequestTable table = kv::emitRequestTable(b, kv, req);
  PagedTileLoader loader(kv, req, table.base, ir.idx(0), tile,
                         kf.getShared(1));
  loader.setGather({topk, req, table.kvLen, kf.getShared(2)});
  Value shared = kf.getShared(0), zero = ir.idx(0);
  SharedTile sharedTile{shared, tile, d,
                        async ? Swizzle::XorChunks : Swizzle::None};
  Value entries = memref::DimOp::create(b, topk, 1);
  scf::ForOp::create(
      b, zero, entries, ir.idx(tile), ValueRange{},
      [&](OpBuilder &nb, Location l, Value tile0, ValueRange) {
        ImplicitLocOpBuilder ib(l, nb);
        IRBuilder j{ib};
        Value count = j.minS(j.idx(tile), j.sub(entries, tile0));
        loader.stagePageIdsAsync(ib, zero, tile0, count, thread, threads);
        gpu::BarrierOp::create(ib);
        TileCopy copy{kv::PoolRole::K, sharedTile, d};
        if (async) {
          loader.copyTileAsync(ib, {copy}, zero, tile0, count, thread,
                               threads);
          commitAsyncCopies(ib);
          waitAsyncCopies(ib, 0);
        } else {
          loader.copyTile(ib, {copy}, zero, tile0, count, thread, threads,
                          128 / elt.getIntOrFloatBitWidth());
        }
        gpu::BarrierOp::create(ib);
        scf::ForOp::create(
            ib, thread, j.mul(count, j.idx(d)), j.idx(threads), ValueRange{},
            [&](OpBuilder &nb2, Location l2, Value i, ValueRange) {
              ImplicitLocOpBuilder jb(l2, nb2);
              IRBuilder k{jb};
              Value r = k.divU(i, k.idx(d)), c = k.remU(i, k.idx(d));
              Value v = memref::LoadOp::create(
                  jb, shared, sharedTile.elementIndices(jb, zero, r, c));
              memref::StoreOp::create(jb, v, out,
                                      ValueRange{req, k.add(tile0, r), c});
              scf::YieldOp::create(jb);
            });
        gpu::BarrierOp::create(ib);
        scf::YieldOp::create(ib);
      });
}

/// Arguments: the paged operands (as PagedOperands::flatten()), then
/// out[B, T, D] of the cache's dtype. Grid (B), 128 threads.
void buildPagedCopy(gpu::GPUFuncOp stub) {
  auto type = cast<kv::PagedType>(
      cast<TypeAttr>(stub->getAttr("test.kv_type")).getValue());
  int64_t stages = intAttr(stub, "test.stages", 0);
  int64_t tile = intAttr(stub, "test.tile", 16);
  int64_t d = type.getHeadDim(), threads = 128;
  Type elt = type.getDtype();
  SharedMemoryLayout layout;
  layout.add("k", stages ? SmallVector<int64_t>{stages, tile, d}
                         : SmallVector<int64_t>{tile, d},
             elt);
  layout.add("page_ids",
             {PagedTileLoader::pagesPerTile(type.getPageSize(), tile)},
             IntegerType::get(stub.getContext(), 32));
  unsigned numKvArgs = stub.getNumArguments() - 1;
  KernelFunc kf = replaceKernel(stub, {threads, 1, 1}, layout);
  ImplicitLocOpBuilder b = kf.getBuilder();
  IRBuilder ir{b};
  kv::PagedOperands kv = kv::PagedOperands::fromFlattened(
      type, kf.getArguments().take_front(numKvArgs));
  Value out = kf.getArgument(numKvArgs);
  Value thread = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value req = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  kv::RequestTable table = kv::emitRequestTable(b, kv, req);
  PagedTileLoader loader(kv, req, table.base, ir.idx(0), tile,
                         kf.getShared(1));
  Value shared = kf.getShared(0);
  SharedTile sharedTile{shared, tile, d,
                        stages > 0 ? Swizzle::XorChunks : Swizzle::None};
  // Writes the tile's rows [0, rows) of stage `stage` to out[req, tile0 + r].
  auto writeBack = [&](ImplicitLocOpBuilder &ib, Value stage, Value tile0,
                       Value rows) {
    IRBuilder j{ib};
    scf::ForOp::create(
        ib, thread, j.mul(rows, j.idx(d)), j.idx(threads), ValueRange{},
        [&](OpBuilder &nb, Location l, Value i, ValueRange) {
          ImplicitLocOpBuilder jb(l, nb);
          IRBuilder k{jb};
          Value r = k.divU(i, k.idx(d)), c = k.remU(i, k.idx(d));
          SmallVector<Value> at =
              stages ? sharedTile.elementIndices(jb, stage, r, c)
                     : SmallVector<Value>{r, c};
          Value v = memref::LoadOp::create(jb, shared, at);
          memref::StoreOp::create(jb, v, out,
                                  ValueRange{req, k.add(tile0, r), c});
          scf::YieldOp::create(jb);
        });
  };
  if (!stages) {
    scf::ForOp::create(
        b, ir.idx(0), table.kvLen, ir.idx(tile), ValueRange{},
        [&](OpBuilder &nb, Location l, Value tile0, ValueRange) {
          ImplicitLocOpBuilder ib(l, nb);
          IRBuilder j{ib};
          Value count = j.minS(j.idx(tile), j.sub(table.kvLen, tile0));
          loader.stagePageIds(ib, tile0, count, thread, threads);
          gpu::BarrierOp::create(ib);
          loader.copyTile(ib, {TileCopy{kv::PoolRole::K, sharedTile, d}},
                          Value(), tile0, count, thread, threads,
                          128 / elt.getIntOrFloatBitWidth());
          gpu::BarrierOp::create(ib);
          writeBack(ib, Value(), tile0, count);
          gpu::BarrierOp::create(ib);
          scf::YieldOp::create(ib);
        });
    return;
  }
  // The pipeline: tile i's copies are committed `stages - 1` tiles ahead of
  // its use; its rows [count, tile) are zero-filled, and the write-back
  // copies them too (a tile past kv_len is all zeros).
  Value numTiles = arith::CeilDivSIOp::create(b, table.kvLen, ir.idx(tile));
  // The refill comes first: it takes the stage the previous iteration's
  // last barrier released.
  CpAsyncPipeline pipeline(stages, /*groupsPerTile=*/1,
                           CpAsyncPipeline::Refill::beforeWait);
  auto issue = [&](ImplicitLocOpBuilder &ib, Value t) {
    IRBuilder j{ib};
    Value tile0 = j.mul(t, j.idx(tile));
    Value inRange = j.lt(t, numTiles);
    scf::IfOp::create(ib, inRange, [&](OpBuilder &nb, Location l) {
      ImplicitLocOpBuilder jb(l, nb);
      IRBuilder k{jb};
      Value count = k.minS(k.idx(tile), k.sub(table.kvLen, tile0));
      // The page-id buffer is single-buffered: stage, sync, copy, sync.
      loader.stagePageIds(jb, tile0, count, thread, threads);
      gpu::BarrierOp::create(jb);
      loader.copyTileAsync(jb, {TileCopy{kv::PoolRole::K, sharedTile, d}},
                           pipeline.stageOf(jb, t), tile0, count, thread,
                           threads);
      gpu::BarrierOp::create(jb);
      scf::YieldOp::create(jb);
    });
    pipeline.commit(ib);
  };
  for (int64_t s = 0; s < pipeline.tilesAhead(); ++s)
    issue(b, ir.idx(s));
  scf::ForOp::create(
      b, ir.idx(0), numTiles, ir.idx(1), ValueRange{},
      [&](OpBuilder &nb, Location l, Value t, ValueRange) {
        ImplicitLocOpBuilder ib(l, nb);
        IRBuilder j{ib};
        issue(ib, j.add(t, j.idx(pipeline.tilesAhead())));
        pipeline.wait(ib);
        writeBack(ib, pipeline.stageOf(ib, t), j.mul(t, j.idx(tile)),
                  j.idx(tile));
        gpu::BarrierOp::create(ib);
        scf::YieldOp::create(ib);
      });
}

/// func(o_a, lse_a, o_b, lse_b: f32, s: f32, v: f32) -> (o, lse, o2, lse2):
/// merge of two normalized states in base e, and the one-key state (s, v)
/// updated into the empty state then finalized in base 2.
void buildAttentionState(func::FuncOp fn) {
  bool ptx = false;
  if (auto flavor = fn->getAttrOfType<StringAttr>("test.flavor"))
    ptx = flavor.getValue() == "ptx";
  fn.getBody().getBlocks().clear();
  Block *entry = fn.addEntryBlock();
  ImplicitLocOpBuilder b(fn.getLoc(), fn.getContext());
  b.setInsertionPointToStart(entry);
  IRBuilder ir{b};
  AttentionState state(b, ptx ? AttentionState::Flavor::ptxBase2
                              : AttentionState::Flavor::exactBaseE);
  auto arg = [&](unsigned i) { return entry->getArgument(i); };
  PartialState a = state.fromNormalized(arg(0), arg(1), kv::LseBase::e);
  PartialState c = state.fromNormalized(arg(2), arg(3), kv::LseBase::e);
  FinalState merged = state.finalize(state.merge({a, c}), kv::LseBase::e);
  PartialState empty{ir.f32(-INFINITY), ir.f32(0.0), ir.f32(0.0)};
  FinalState one =
      state.finalize(state.update(empty, arg(4), arg(5)), kv::LseBase::two);
  func::ReturnOp::create(b, ValueRange{merged.o, merged.lse, one.o, one.lse});
}

void buildKernelFunc(gpu::GPUFuncOp stub) {
  auto module = stub->getParentOfType<gpu::GPUModuleOp>();
  std::string name = stub.getName().str();
  SmallVector<Type> args(stub.getArgumentTypes());
  MLIRContext *ctx = stub.getContext();
  stub.erase();
  SharedMemoryLayout small;
  small.add("tile", {32, 128}, Float16Type::get(ctx));
  small.add("meta", {3}, IntegerType::get(ctx, 32), /*alignment=*/4);
  small.add("acc", {8, 128}, Float32Type::get(ctx));
  KernelFunc::create(module, name, args, {16, 4, 2}, small);
  SharedMemoryLayout big;
  big.add("k", {2, 64, 128}, Float16Type::get(ctx));
  big.add("v", {2, 64, 128}, Float16Type::get(ctx));
  big.add("ids", {5}, IntegerType::get(ctx, 32));
  KernelFunc::create(module, name + "_dynamic", args, {128, 1, 1}, big);
}

/// tile_layout: (out: memref<?xi32>) holding the shared tile's elements
/// zero-extended, in memory order.
void buildTileLayout(gpu::GPUFuncOp stub) {
  TileLayout layout;
  layout.rows = intAttr(stub, "test.rows", 8);
  layout.cols = intAttr(stub, "test.cols", 64);
  layout.stages = intAttr(stub, "test.stages", 1);
  layout.elementBits = intAttr(stub, "test.element_bits", 16);
  auto name = stub->getAttrOfType<StringAttr>("test.swizzle");
  std::optional<Swizzle> swizzle =
      symbolizeSwizzle(name ? name.getValue() : "none");
  if (!swizzle)
    return (void)stub.emitError("unknown test.swizzle");
  layout.swizzle = *swizzle;
  if (std::string why = layout.whyInvalid(); !why.empty())
    return (void)stub.emitError(why);
  Type elt = IntegerType::get(stub.getContext(), layout.elementBits);
  int64_t total = layout.stages * layout.rows * layout.cols;
  SharedMemoryLayout shared;
  shared.add("tile", {total}, elt, layout.alignment());
  KernelFunc kf = replaceKernel(stub, {128, 1, 1}, shared);
  ImplicitLocOpBuilder b = kf.getBuilder();
  Value tile = kf.getShared(0), out = kf.getArgument(0);
  Value thread = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  forStrided(b, thread, total, 128, [&](ImplicitLocOpBuilder &lb, Value e) {
    IRBuilder ir{lb};
    Value stage = ir.divU(e, ir.idx(layout.rows * layout.cols));
    Value row = ir.remU(ir.divU(e, ir.idx(layout.cols)), ir.idx(layout.rows));
    Value col = ir.remU(e, ir.idx(layout.cols));
    Value at = layout.emitElementOffset(lb, stage, row, col);
    Value v = arith::IndexCastOp::create(lb, elt, e);
    memref::StoreOp::create(lb, v, tile, at);
  });
  gpu::BarrierOp::create(b);
  forStrided(b, thread, total, 128, [&](ImplicitLocOpBuilder &lb, Value i) {
    Value v = memref::LoadOp::create(lb, tile, i);
    if (layout.elementBits < 32)
      v = arith::ExtUIOp::create(lb, lb.getI32Type(), v);
    memref::StoreOp::create(lb, v, out, i);
  });
}

/// query_tiles: (qo_indptr: memref<?xi32>, out: memref<?x5xi32>), one
/// thread per block.
void buildQueryTiles(gpu::GPUFuncOp stub) {
  int64_t group = intAttr(stub, "test.group", 1);
  int64_t rows = intAttr(stub, "test.tile_rows", 128);
  KernelFunc kf = replaceKernel(stub, {1, 1, 1}, SharedMemoryLayout());
  ImplicitLocOpBuilder b = kf.getBuilder();
  IRBuilder ir{b};
  Value indptr = kf.getArgument(0), out = kf.getArgument(1);
  Value slot = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value batch = ir.sub(memref::DimOp::create(b, indptr, 0), ir.idx(1));
  QueryTile tile = QueryTiles(group, rows).locate(b, indptr, batch, slot);
  Value valid = ir.select(tile.valid, ir.idx(1), ir.idx(0));
  // Named: an ArrayRef of a braced list would dangle inside the range-for.
  SmallVector<Value> fields{tile.request, tile.qoStart, tile.qoLen,
                            tile.firstRow, valid};
  for (auto [i, v] : llvm::enumerate(fields))
    memref::StoreOp::create(b, ir.toI32(v), out,
                            ValueRange{slot, ir.idx(int64_t(i))});
}

/// rope: (positions: memref<?xi32>, out: memref<?x2xf32>), launched with
/// one thread per (position, pair).
void buildRope(gpu::GPUFuncOp stub) {
  int64_t headDim = intAttr(stub, "test.head_dim", 128);
  auto styleName = stub->getAttrOfType<StringAttr>("test.style");
  auto style = kv::symbolizeRopeStyle(styleName ? styleName.getValue()
                                                : "rotate_half");
  auto theta = stub->getAttrOfType<FloatAttr>("test.theta");
  auto scale = stub->getAttrOfType<FloatAttr>("test.scale");
  MLIRContext *ctx = stub.getContext();
  auto rope = kv::RopeAttr::get(
      ctx, *style, APFloat(theta ? theta.getValueAsDouble() : 1e4),
      APFloat(scale ? scale.getValueAsDouble() : 1.0));
  KernelFunc kf = replaceKernel(stub, {128, 1, 1}, SharedMemoryLayout());
  ImplicitLocOpBuilder b = kf.getBuilder();
  IRBuilder ir{b};
  Value positions = kf.getArgument(0), out = kf.getArgument(1);
  Value i = ir.add(ir.mul(gpu::BlockIdOp::create(b, gpu::Dimension::x),
                          ir.idx(128)),
                   gpu::ThreadIdOp::create(b, gpu::Dimension::x));
  Value pairs = ir.idx(headDim / 2);
  Value total = ir.mul(memref::DimOp::create(b, positions, 0), pairs);
  scf::IfOp::create(b, ir.lt(i, total), [&](OpBuilder &nb, Location l) {
    ImplicitLocOpBuilder ib(l, nb);
    IRBuilder j{ib};
    Value position = j.toIndex(memref::LoadOp::create(
        ib, positions, ValueRange{j.divU(i, pairs)}));
    Rope r(ib, rope, headDim, Rope::Flavor::ptx);
    auto [c, sn] = r.cosSin(j.remU(i, pairs), position);
    memref::StoreOp::create(ib, c, out, ValueRange{i, j.idx(0)});
    memref::StoreOp::create(ib, sn, out, ValueRange{i, j.idx(1)});
    scf::YieldOp::create(ib);
  });
}

/// tile_rotation: (in: memref<16x64xf16>, positions: memref<16xi32>,
/// out: memref<16x64xf16>), one block of 128 threads.
void buildTileRotation(gpu::GPUFuncOp stub) {
  auto styleName = stub->getAttrOfType<StringAttr>("test.style");
  auto style = kv::symbolizeRopeStyle(styleName ? styleName.getValue()
                                                : "rotate_half");
  MLIRContext *ctx = stub.getContext();
  auto rope = kv::RopeAttr::get(ctx, *style, APFloat(1e4), APFloat(1.0),
                                intAttr(stub, "test.rotary_dim", 0),
                                APFloat(0.0), APFloat(0.0), APFloat(0.0),
                                APFloat(0.0));
  const int64_t rows = 16, dims = 64, threads = 128;
  SharedMemoryLayout layout;
  layout.add("tile", {rows, dims}, Float16Type::get(ctx));
  KernelFunc kf = replaceKernel(stub, {threads, 1, 1}, layout);
  ImplicitLocOpBuilder b = kf.getBuilder();
  IRBuilder ir{b};
  Value in = kf.getArgument(0), positions = kf.getArgument(1),
        out = kf.getArgument(2);
  SharedTile tile{kf.getShared(0), rows, dims};
  Value thread = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  auto forElements = [&](function_ref<void(ImplicitLocOpBuilder &, Value,
                                           Value)>
                             body) {
    scf::ForOp::create(
        b, thread, ir.idx(rows * dims), ir.idx(threads), ValueRange{},
        [&](OpBuilder &nb, Location l, Value i, ValueRange) {
          ImplicitLocOpBuilder jb(l, nb);
          IRBuilder j{jb};
          body(jb, j.divU(i, j.idx(dims)), j.remU(i, j.idx(dims)));
          scf::YieldOp::create(jb);
        });
  };
  forElements([&](ImplicitLocOpBuilder &jb, Value r, Value d) {
    Value v = memref::LoadOp::create(jb, in, ValueRange{r, d});
    memref::StoreOp::create(jb, v, tile.memref,
                            tile.elementIndices(jb, Value(), r, d));
  });
  gpu::BarrierOp::create(b);
  TileRotation rotation(b, rope, dims, thread, threads);
  rotation.apply(b, tile, Value(), [&](ImplicitLocOpBuilder &jb, Value r) {
    return RopeRowPosition{
        Value(), IRBuilder{jb}.toIndex(
                     memref::LoadOp::create(jb, positions, ValueRange{r}))};
  });
  gpu::BarrierOp::create(b);
  forElements([&](ImplicitLocOpBuilder &jb, Value r, Value d) {
    Value v = memref::LoadOp::create(jb, tile.memref,
                                     tile.elementIndices(jb, Value(), r, d));
    memref::StoreOp::create(jb, v, out, ValueRange{r, d});
  });
}

/// fp8_decode: (codes: memref<256xi8>, vectors: memref<256xf32>,
/// scalars: memref<256xf32>), 64 threads: thread t decodes codes 4t .. 4t+3
/// (test.format e4m3 or e5m2: kv::fp8ToF32; int8: kv::int8ToF16, extended)
/// as one 4-element vector and one at a time.
void buildFp8Decode(gpu::GPUFuncOp stub) {
  auto format = stub->getAttrOfType<StringAttr>("test.format");
  MLIRContext *ctx = stub.getContext();
  bool int8 = format && format.getValue() == "int8";
  Type fp8 = int8 ? Type(IntegerType::get(ctx, 8))
             : format && format.getValue() == "e5m2"
                 ? Type(Float8E5M2Type::get(ctx))
                 : Type(Float8E4M3FNType::get(ctx));
  auto decode = [&](ImplicitLocOpBuilder &b, Value codes) -> Value {
    if (!int8)
      return kv::fp8ToF32(b, codes);
    Value halves = kv::int8ToF16(b, codes);
    Type f32 = b.getF32Type();
    if (auto vec = dyn_cast<VectorType>(halves.getType()))
      f32 = VectorType::get(vec.getShape(), f32);
    return arith::ExtFOp::create(b, f32, halves);
  };
  KernelFunc kf = replaceKernel(stub, {64, 1, 1}, SharedMemoryLayout());
  ImplicitLocOpBuilder b = kf.getBuilder();
  IRBuilder ir{b};
  Value codes = kf.getArgument(0), vectors = kf.getArgument(1),
        scalars = kf.getArgument(2);
  Value first = ir.mul(gpu::ThreadIdOp::create(b, gpu::Dimension::x),
                       ir.idx(4));
  Value raw = vector::LoadOp::create(
      b, VectorType::get({4}, b.getI8Type()), codes, ValueRange{first});
  Value packed =
      int8 ? raw : arith::BitcastOp::create(b, VectorType::get({4}, fp8), raw);
  vector::StoreOp::create(b, decode(b, packed), vectors, ValueRange{first});
  for (int64_t k = 0; k < 4; ++k) {
    Value at = ir.add(first, ir.idx(k));
    Value code = memref::LoadOp::create(b, codes, ValueRange{at});
    if (!int8)
      code = arith::BitcastOp::create(b, fp8, code);
    memref::StoreOp::create(b, decode(b, code), scalars, ValueRange{at});
  }
}

struct TestCodegenPass
    : PassWrapper<TestCodegenPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestCodegenPass)
  StringRef getArgument() const final { return "test-kvir-codegen"; }
  StringRef getDescription() const final {
    return "Rebuild functions marked test.component with lib/Codegen";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, gpu::GPUDialect, LLVM::LLVMDialect,
                    NVVM::NVVMDialect, kv::KVDialect,
                    math::MathDialect, memref::MemRefDialect,
                    nvgpu::NVGPUDialect, scf::SCFDialect,
                    vector::VectorDialect>();
  }
  void runOnOperation() override {
    SmallVector<Operation *> marked;
    getOperation().walk([&](Operation *op) {
      if (op->hasAttr("test.component"))
        marked.push_back(op);
    });
    for (Operation *op : marked) {
      StringRef component =
          op->getAttrOfType<StringAttr>("test.component").getValue();
      auto kernel = dyn_cast<gpu::GPUFuncOp>(op);
      if (component == "attention_state" && isa<func::FuncOp>(op)) {
        buildAttentionState(cast<func::FuncOp>(op));
        continue;
      }
      if (!kernel) {
        op->emitError("test.component '") << component
                                          << "' needs a gpu.func";
        return signalPassFailure();
      }
      if (component == "warp_reduce")
        buildWarpReduce(kernel);
      else if (component == "mma_gemm")
        buildMmaGemm(kernel);
      else if (component == "mma_chain")
        buildMmaChain(kernel);
      else if (component == "wgmma_gemm")
        test::buildWgmmaGemm(kernel);
      else if (component == "wgmma_chain")
        test::buildWgmmaChain(kernel);
      else if (component == "shared_softmax")
        test::buildSharedSoftmax(kernel);
      else if (component == "mbarrier_ring")
        test::buildMBarrierRing(kernel);
      else if (component == "paged_copy")
        buildPagedCopy(kernel);
      else if (component == "paged_gather")
        buildPagedGather(kernel);
      else if (component == "kernel_func")
        buildKernelFunc(kernel);
      else if (component == "query_tiles")
        buildQueryTiles(kernel);
      else if (component == "rope")
        buildRope(kernel);
      else if (component == "fp8_decode")
        buildFp8Decode(kernel);
      else if (component == "tile_layout")
        buildTileLayout(kernel);
      else if (component == "tile_rotation")
        buildTileRotation(kernel);
      else if (component == "warp_roles")
        buildWarpRoles(kernel);
      else {
        op->emitError("unknown test.component '") << component << "'";
        return signalPassFailure();
      }
    }
  }
};
} // namespace

namespace kvir::test {
void registerTestCodegenPass() { PassRegistration<TestCodegenPass>(); }
} // namespace kvir::test
