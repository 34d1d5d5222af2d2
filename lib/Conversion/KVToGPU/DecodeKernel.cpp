//===- DecodeKernel.cpp - The batch-decode gpu.func -----------------------===//
//
// One block per (request, KV head, KV partition); threads (x, y, z) = (16-byte
// vector along the head dim, query head of the GQA group, token in flight).
// Per block, one thread reads the request's table entries (kv_len, page
// range) and the z == 0 threads load the group's queries, both into shared
// memory; per tile, the page ids are read once per page. Each K/V tile is
// staged in shared memory with 16-byte loads by the whole block, once for
// all query heads of the group, then every (y, z) scores its tokens: a
// vector dot product reduced across x with xor-shuffles, and an online
// softmax in base 2 (log2(e) folded into the scale, so exp2 lowers to
// ex2.approx and no libdevice call is needed). The z-partials are merged
// through shared memory at the end. Global memory sees each K/V byte once
// per KV head, q once per block, and no other redundant load.
//
//===----------------------------------------------------------------------===//
#include "KernelBuilders.h"

#include "kvir/Dialect/KV/Utils/PagedAddressing.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <cmath>

using namespace mlir;
using namespace kvir::kv;
using namespace kvir::kv::gpu_lowering;

Value gpu_lowering::approx(ImplicitLocOpBuilder &b, StringRef intrinsic,
                           Value x) {
  return LLVM::CallIntrinsicOp::create(b, x.getType(),
                                       b.getStringAttr(intrinsic), x)
      .getResult(0);
}

namespace {
/// Small IR helpers shared by the kernel bodies.
struct KernelIR {
  ImplicitLocOpBuilder &b;

  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, v); }
  Value f32(double v) {
    return arith::ConstantOp::create(b, b.getF32FloatAttr(v));
  }
  Value i32(int64_t v) {
    return arith::ConstantOp::create(b, b.getI32IntegerAttr(v));
  }
  Value add(Value x, Value y) {
    return isa<IndexType>(x.getType()) ? Value(arith::AddIOp::create(b, x, y))
                                       : Value(arith::AddFOp::create(b, x, y));
  }
  Value mul(Value x, Value y) {
    return isa<IndexType>(x.getType()) ? Value(arith::MulIOp::create(b, x, y))
                                       : Value(arith::MulFOp::create(b, x, y));
  }
  Value sub(Value x, Value y) {
    return isa<IndexType>(x.getType()) ? Value(arith::SubIOp::create(b, x, y))
                                       : Value(arith::SubFOp::create(b, x, y));
  }
  Value cmp(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, p, x, y);
  }
  Value minIdx(Value x, Value y) { return arith::MinSIOp::create(b, x, y); }
  Value maxIdx(Value x, Value y) { return arith::MaxSIOp::create(b, x, y); }
  /// PTX ex2.approx / lg2.approx: fast, and no libdevice call.
  Value exp2(Value x) { return approx(b, "llvm.nvvm.ex2.approx.ftz.f", x); }
  Value log2(Value x) { return approx(b, "llvm.nvvm.lg2.approx.ftz.f", x); }
  Value splat(Value scalar, int64_t n) {
    return vector::BroadcastOp::create(
        b, VectorType::get({n}, scalar.getType()), scalar);
  }
};
} // namespace

namespace {
/// The workgroup (static shared memory) buffers of a decode kernel.
struct DecodeWorkgroup {
  enum Index {
    KTile,   // [tile, padded] K rows of the tile being scored
    VTile,   // [tile, padded] V rows
    Query,   // [group, padded] the group's queries, as stored
    Meta,    // [3] i32: token range start, end, table base of the request
    PageIds, // [pagesPerTile] i32 table entries of the tile's pages
    ZMax,    // [tz * group] f32 partial states of the z-lanes (tz > 1)
    ZSum,    // [tz * group] f32
    ZAcc,    // [tz * group, padded] f32
  };
  SmallVector<Type> types;

  DecodeWorkgroup(MLIRContext *ctx, PagedType kv, Type q, const DecodeTiling &t,
                  int64_t group) {
    auto wg = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
    Type elt = kv.getDtype(), f32 = Float32Type::get(ctx),
         i32 = IntegerType::get(ctx, 32);
    int64_t padded = t.threadsX * t.vec, tile = t.tileTokens;
    types = {MemRefType::get({tile, padded}, elt, nullptr, wg),
             MemRefType::get({tile, padded}, elt, nullptr, wg),
             MemRefType::get({group, padded}, q, nullptr, wg),
             MemRefType::get({3}, i32, nullptr, wg),
             MemRefType::get({pagesPerTile(kv, t)}, i32, nullptr, wg)};
    if (t.threadsZ > 1) {
      int64_t slots = t.threadsZ * group;
      types.append({MemRefType::get({slots}, f32, nullptr, wg),
                    MemRefType::get({slots}, f32, nullptr, wg),
                    MemRefType::get({slots, padded}, f32, nullptr, wg)});
    }
  }

  /// The most pages `tile` consecutive tokens can touch, wherever they start.
  static int64_t pagesPerTile(PagedType kv, const DecodeTiling &t) {
    int64_t p = kv.getPageSize(), tile = t.tileTokens;
    return std::min(tile, (tile - 1 + p - 1) / p + 1);
  }

  /// The bytes of the buffers, each 16-byte aligned.
  int64_t bytes() const {
    int64_t total = 0;
    for (Type type : types) {
      auto m = cast<MemRefType>(type);
      total = llvm::alignTo(total, 16) +
              m.getNumElements() * m.getElementTypeBitWidth() / 8;
    }
    return total;
  }
};
} // namespace

int64_t gpu_lowering::decodeSharedBytes(PagedType kv, const DecodeTiling &t,
                                        int64_t group) {
  // q has the KV's element type (the verifier's rule).
  return DecodeWorkgroup(kv.getContext(), kv, kv.getDtype(), t, group).bytes();
}

std::optional<std::string>
gpu_lowering::whyNotDecodeKernel(PagedType kv, const DecodeTiling &t,
                                 int64_t group) {
  // A row's dot product is reduced with xor-shuffles across the x-threads
  // of one warp, one vector each.
  if (t.threadsX > 32)
    return "head_dim " + std::to_string(kv.getHeadDim()) + " in " +
           std::to_string(t.vec) + "-element vectors needs " +
           std::to_string(t.threadsX) + " threads per row, more than a warp";
  if (t.vec * t.threadsX < kv.getHeadDim())
    return "the tiling does not cover head_dim";
  int64_t threads = t.threadsX * group * t.threadsZ;
  // Shuffles use the full membermask: whole warps only.
  if (threads % 32)
    return "a block of " + std::to_string(threads) +
           " threads, not whole warps";
  if (threads > 1024)
    return "a block of " + std::to_string(threads) + " threads";
  int64_t shared = decodeSharedBytes(kv, t, group);
  if (shared > 48 * 1024)
    return std::to_string(shared) +
           " bytes of static shared memory, over the 48 KB limit";
  return std::nullopt;
}

gpu::GPUFuncOp gpu_lowering::buildDecodeKernel(gpu::GPUModuleOp module,
                                               const DecodeKernelSpec &spec) {
  MLIRContext *ctx = module.getContext();
  Location loc = module.getLoc();
  const DecodeTiling &tl = spec.tiling;
  PagedType kvType = spec.kv;
  int64_t headDim = kvType.getHeadDim(), pageSize = kvType.getPageSize();
  int64_t group = spec.qHeads / kvType.getKvHeads();
  int64_t vec = tl.vec, tx = tl.threadsX, tz = tl.threadsZ;
  int64_t tile = tl.tileTokens;
  Type elt = kvType.getDtype(), f32Type = Float32Type::get(ctx);
  int64_t vecBytes = vec * elt.getIntOrFloatBitWidth() / 8;
  TableForm table = kvType.getTable();

  SmallVector<Type> argTypes{spec.qType};
  llvm::append_range(argTypes, spec.kvTypes);
  argTypes.append({spec.outType, spec.lseType});
  if (spec.partitioned)
    argTypes.push_back(IndexType::get(ctx));
  DecodeWorkgroup workgroup(ctx, kvType, spec.qType.getElementType(), tl,
                            group);

  OpBuilder ob = OpBuilder::atBlockEnd(module.getBody());
  auto func = gpu::GPUFuncOp::create(ob, loc, spec.name,
                                     FunctionType::get(ctx, argTypes, {}),
                                     workgroup.types);
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), UnitAttr::get(ctx));
  // Kernels always launch with exactly this block: .reqntid (rather than
  // known_block_size's .maxntid) keeps ptxas from capping registers for an
  // occupancy it cannot get, which made it spill (head_dim 256, group 8 on
  // sm_90a).
  func->setAttr("nvvm.reqntid", DenseI32ArrayAttr::get(ctx, {int32_t(tx), int32_t(group), int32_t(tz)}));
  // Shared buffers are accessed with 16-byte vectors: without an explicit
  // alignment they would get their element type's, and ptxas may place
  // them at any such offset.
  for (unsigned i = 0; i < workgroup.types.size(); ++i)
    func.setWorkgroupAttributionAttr(
        i, LLVM::LLVMDialect::getAlignAttrName(),
        IntegerAttr::get(IntegerType::get(ctx, 64), 16));

  Block &entry = func.getBody().front();
  ImplicitLocOpBuilder b(loc, ctx);
  b.setInsertionPointToStart(&entry);
  KernelIR ir{b};
  Value q = entry.getArgument(0);
  PagedOperands kv;
  kv.type = kvType;
  {
    // Rebuild the paged operands from the kernel arguments.
    PagedOperands shape;
    shape.type = kvType;
    unsigned pools = kvType.getNumPools(), tables = kvType.getNumTables();
    shape.pools.resize(pools);
    shape.tables.resize(tables);
    shape.scales.resize(kvType.getNumScalePools());
    if (kvType.isFp8()) {
      shape.kScale = q;
      shape.vScale = q;
    }
    kv = shape.withValues(entry.getArguments().slice(1, spec.kvTypes.size()));
  }
  unsigned next = 1 + spec.kvTypes.size();
  Value out = entry.getArgument(next), lseOut = entry.getArgument(next + 1);
  Value numPartitions =
      spec.partitioned ? entry.getArgument(next + 2) : Value();
  auto shared = [&](DecodeWorkgroup::Index i) {
    return func.getWorkgroupAttributions()[i];
  };
  Value kTile = shared(DecodeWorkgroup::KTile);
  Value vTile = shared(DecodeWorkgroup::VTile);
  Value qShared = shared(DecodeWorkgroup::Query);
  Value meta = shared(DecodeWorkgroup::Meta);
  Value pageIds = shared(DecodeWorkgroup::PageIds);

  Value x = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value y = gpu::ThreadIdOp::create(b, gpu::Dimension::y);
  Value z = gpu::ThreadIdOp::create(b, gpu::Dimension::z);
  Value req = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value kvHead = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  Value part = gpu::BlockIdOp::create(b, gpu::Dimension::z);
  Value zero = ir.idx(0);
  Value head = ir.add(ir.mul(kvHead, ir.idx(group)), y);
  Value dim0 = ir.mul(x, ir.idx(vec));
  Value activeX = ir.cmp(arith::CmpIPredicate::slt, dim0, ir.idx(headDim));
  Value lane =
      ir.add(x, ir.mul(ir.idx(tx), ir.add(y, ir.mul(ir.idx(group), z))));
  int64_t numThreads = tx * group * tz;
  Type i32 = b.getI32Type();
  auto toI32 = [&](ImplicitLocOpBuilder &ib, Value v) -> Value {
    return arith::IndexCastOp::create(ib, i32, v);
  };
  auto toIndex = [&](ImplicitLocOpBuilder &ib, Value v) -> Value {
    return arith::IndexCastOp::create(ib, ib.getIndexType(), v);
  };

  auto vecType = VectorType::get({vec}, elt);
  auto vecF32 = VectorType::get({vec}, f32Type);
  Value zeroVec = ir.splat(ir.f32(0.0), vec);
  double log2e = M_LOG2E;
  // The query vector, scaled so that scores come out in log2 units.
  double qScale = spec.softCap ? spec.smScale : spec.smScale * log2e;

  // Block setup, once per block rather than per thread: thread 0 reads the
  // request's table entries (kv_len; the CSR page range or the token base)
  // and derives this block's token range -- the partition's share of the
  // visible keys -- and the z == 0 threads stage the group's queries.
  // Everyone picks both up from shared memory.
  Value isThread0 = ir.cmp(arith::CmpIPredicate::eq, lane, zero);
  scf::IfOp::create(b, isThread0, [&](OpBuilder &nb, Location l) {
    ImplicitLocOpBuilder ib(l, nb);
    KernelIR k{ib};
    Value kvLen, base = k.idx(0);
    if (table == TableForm::csr) {
      // kv_len = page_size * (n - 1) + last_page_len for n > 0 pages.
      base = loadIndexValue(ib, kv.tables[0], req);
      Value endPage = loadIndexValue(ib, kv.tables[0], k.add(req, k.idx(1)));
      Value n = k.sub(endPage, base);
      Value last = loadIndexValue(ib, kv.tables[2], req);
      Value len = k.add(k.mul(k.sub(n, k.idx(1)), k.idx(pageSize)), last);
      kvLen = arith::SelectOp::create(
          ib, k.cmp(arith::CmpIPredicate::sle, n, k.idx(0)), k.idx(0), len);
    } else {
      kvLen = emitKvLen(ib, kv, req);
      if (table == TableForm::token_offset)
        base = loadIndexValue(ib, kv.tables[0], req);
    }
    // The visible keys: [kv_len - 1 - window_left, kv_len), or all.
    Value first = k.idx(0);
    if (spec.windowLeft)
      first = k.maxIdx(first,
                       k.sub(k.sub(kvLen, k.idx(1)), k.idx(*spec.windowLeft)));
    Value start = first, end = kvLen;
    if (numPartitions) {
      // Partitions split the visible keys, not [0, kv_len): with a sliding
      // window, all of them still get work.
      Value chunk =
          arith::CeilDivUIOp::create(ib, k.sub(kvLen, first), numPartitions);
      start = k.minIdx(k.add(first, k.mul(part, chunk)), kvLen);
      end = k.minIdx(k.add(start, chunk), kvLen);
    }
    memref::StoreOp::create(ib, toI32(ib, start), meta, ValueRange{k.idx(0)});
    memref::StoreOp::create(ib, toI32(ib, end), meta, ValueRange{k.idx(1)});
    memref::StoreOp::create(ib, toI32(ib, base), meta, ValueRange{k.idx(2)});
    scf::YieldOp::create(ib);
  });
  Value isZ0 = ir.cmp(arith::CmpIPredicate::eq, z, zero);
  auto qVecType = VectorType::get({vec}, spec.qType.getElementType());
  scf::IfOp::create(b, isZ0, [&](OpBuilder &nb, Location l) {
    ImplicitLocOpBuilder ib(l, nb);
    Value qv =
        scf::IfOp::create(
            ib, activeX,
            [&](OpBuilder &nb2, Location l2) {
              ImplicitLocOpBuilder jb(l2, nb2);
              auto v = vector::LoadOp::create(jb, qVecType, q,
                                              ValueRange{req, head, dim0});
              v.setAlignment(vec * spec.qType.getElementTypeBitWidth() / 8);
              scf::YieldOp::create(jb, ValueRange{v.getResult()});
            },
            [&](OpBuilder &nb2, Location l2) {
              ImplicitLocOpBuilder jb(l2, nb2);
              Value zeros = arith::ConstantOp::create(jb, qVecType,
                                                      jb.getZeroAttr(qVecType));
              scf::YieldOp::create(jb, ValueRange{zeros});
            })
            .getResult(0);
    vector::StoreOp::create(ib, qv, qShared, ValueRange{y, dim0});
    scf::YieldOp::create(ib);
  });
  gpu::BarrierOp::create(b);
  Value start =
      toIndex(b, memref::LoadOp::create(b, meta, ValueRange{ir.idx(0)}));
  Value end =
      toIndex(b, memref::LoadOp::create(b, meta, ValueRange{ir.idx(1)}));
  Value tableBase =
      toIndex(b, memref::LoadOp::create(b, meta, ValueRange{ir.idx(2)}));
  Value qStored =
      vector::LoadOp::create(b, qVecType, qShared, ValueRange{y, dim0});
  Value qVec =
      arith::MulFOp::create(b, arith::ExtFOp::create(b, vecF32, qStored),
                            ir.splat(ir.f32(qScale), vec));

  // (page, slot) of token `token` whose logical page is entry `lp` of the
  // tile's page ids (the table entry: a page id, or for token tables the
  // token index the page starts at).
  auto locate = [&](ImplicitLocOpBuilder &jb, Value token,
                    Value lp) -> std::pair<Value, Value> {
    KernelIR j{jb};
    Value p = j.idx(pageSize);
    Value slot = arith::RemUIOp::create(jb, token, p);
    if (table == TableForm::token_offset) {
      Value t = j.add(tableBase, token);
      return {arith::DivUIOp::create(jb, t, p),
              arith::RemUIOp::create(jb, t, p)};
    }
    Value entry = toIndex(jb, memref::LoadOp::create(jb, pageIds, lp));
    if (table == TableForm::token_table) {
      Value t = j.add(entry, slot);
      return {arith::DivUIOp::create(jb, t, p),
              arith::RemUIOp::create(jb, t, p)};
    }
    return {entry, slot};
  };

  auto loadTileVec = [&](ImplicitLocOpBuilder &ib, Value tileMem, Value t) {
    Value v = vector::LoadOp::create(ib, vecType, tileMem, ValueRange{t, dim0});
    Value f = arith::ExtFOp::create(ib, vecF32, v);
    return arith::SelectOp::create(ib, activeX, f, zeroVec).getResult();
  };

  Value negInf = ir.f32(-INFINITY);
  auto tileLoop = scf::ForOp::create(
      b, start, end, ir.idx(tile), ValueRange{negInf, ir.f32(0.0), zeroVec},
      [&](OpBuilder &nb, Location l, Value tile0, ValueRange state) {
        ImplicitLocOpBuilder ib(l, nb);
        KernelIR k{ib};
        int64_t vecsPerRow = headDim / vec;
        Value count = k.minIdx(k.idx(tile), k.sub(end, tile0));
        Value p = k.idx(pageSize);
        Value page0 = arith::DivUIOp::create(ib, tile0, p);
        // The table entries of the tile's pages, one load per page.
        if (table != TableForm::token_offset) {
          Value lastPage = arith::DivUIOp::create(
              ib, k.sub(k.add(tile0, count), k.idx(1)), p);
          Value pages = k.add(k.sub(lastPage, page0), k.idx(1));
          scf::ForOp::create(
              ib, lane, pages, k.idx(numThreads), ValueRange{},
              [&](OpBuilder &nb2, Location l2, Value i, ValueRange) {
                ImplicitLocOpBuilder jb(l2, nb2);
                KernelIR j{jb};
                Value logical = j.add(page0, i);
                Value entry =
                    table == TableForm::csr
                        ? loadIndexValue(jb, kv.tables[1],
                                         j.add(tableBase, logical))
                        : loadIndexValue(jb, kv.tables[0], {req, logical});
                memref::StoreOp::create(jb, toI32(jb, entry), pageIds, i);
                scf::YieldOp::create(jb);
              });
          gpu::BarrierOp::create(ib);
        }
        // Stage the tile: every thread loads vectors of K and V rows.
        Value total = k.mul(count, k.idx(vecsPerRow));
        scf::ForOp::create(
            ib, lane, total, k.idx(numThreads), ValueRange{},
            [&](OpBuilder &nb2, Location l2, Value i, ValueRange) {
              ImplicitLocOpBuilder jb(l2, nb2);
              KernelIR j{jb};
              Value t = arith::DivUIOp::create(jb, i, j.idx(vecsPerRow));
              Value c = j.mul(arith::RemUIOp::create(jb, i, j.idx(vecsPerRow)),
                              j.idx(vec));
              Value token = j.add(tile0, t);
              Value lp = j.sub(arith::DivUIOp::create(jb, token, p), page0);
              auto [page, slot] = locate(jb, token, lp);
              for (auto [role, tileMem] : {std::pair{PoolRole::K, kTile},
                                           std::pair{PoolRole::V, vTile}}) {
                auto load = vector::LoadOp::create(
                    jb, vecType, kv.pool(role),
                    emitPoolIndices(jb, kvType, role, page, slot, kvHead, c));
                load.setAlignment(vecBytes);
                auto store = vector::StoreOp::create(jb, load, tileMem,
                                                     ValueRange{t, c});
                store.setAlignment(vecBytes);
              }
              scf::YieldOp::create(jb);
            });
        gpu::BarrierOp::create(ib);
        // Score this lane's tokens of the tile. The trip count is the same
        // for every z-lane (t = t0 + z, masked past the tile's end) because
        // the shuffles below need the whole warp.
        auto tokenLoop = scf::ForOp::create(
            ib, zero, count, k.idx(tz), state,
            [&](OpBuilder &nb2, Location l2, Value t0, ValueRange st) {
              ImplicitLocOpBuilder jb(l2, nb2);
              KernelIR j{jb};
              Value t = j.add(t0, z);
              Value valid = j.cmp(arith::CmpIPredicate::slt, t, count);
              Value kVec = loadTileVec(jb, kTile, t);
              Value partial = vector::ReductionOp::create(
                  jb, vector::CombiningKind::ADD,
                  arith::MulFOp::create(jb, qVec, kVec));
              for (int64_t off = tx / 2; off >= 1; off /= 2) {
                Value other = gpu::ShuffleOp::create(jb, partial, off, 32,
                                                     gpu::ShuffleMode::XOR)
                                  .getShuffleResult();
                partial = j.add(partial, other);
              }
              Value s = partial;
              if (spec.softCap) {
                // c * tanh(s / c) = c * (1 - 2 / (exp(2 s / c) + 1)).
                double c = *spec.softCap;
                Value e = j.exp2(j.mul(s, j.f32(2.0 * log2e / c)));
                Value t2 =
                    arith::DivFOp::create(jb, j.f32(2.0), j.add(e, j.f32(1.0)));
                s = j.mul(j.sub(j.f32(1.0), t2), j.f32(c * log2e));
              }
              Value m = st[0], lsum = st[1], acc = st[2];
              Value mNew = arith::MaximumFOp::create(jb, m, s);
              Value alpha = j.exp2(j.sub(m, mNew));
              Value pr = j.exp2(j.sub(s, mNew));
              Value lNew = j.add(j.mul(lsum, alpha), pr);
              Value vVec = loadTileVec(jb, vTile, t);
              Value accNew = arith::AddFOp::create(
                  jb, arith::MulFOp::create(jb, acc, j.splat(alpha, vec)),
                  arith::MulFOp::create(jb, vVec, j.splat(pr, vec)));
              scf::YieldOp::create(
                  jb,
                  ValueRange{arith::SelectOp::create(jb, valid, mNew, m),
                             arith::SelectOp::create(jb, valid, lNew, lsum),
                             arith::SelectOp::create(jb, valid, accNew, acc)});
            });
        gpu::BarrierOp::create(ib);
        scf::YieldOp::create(ib, tokenLoop.getResults());
      });
  Value m = tileLoop.getResult(0), lsum = tileLoop.getResult(1);
  Value acc = tileLoop.getResult(2);

  // Merge the z-lanes' partial states through shared memory.
  if (tz > 1) {
    Value mShared = shared(DecodeWorkgroup::ZMax);
    Value lShared = shared(DecodeWorkgroup::ZSum);
    Value accShared = shared(DecodeWorkgroup::ZAcc);
    Value slotIdx = ir.add(ir.mul(z, ir.idx(group)), y);
    Value isX0 = ir.cmp(arith::CmpIPredicate::eq, x, zero);
    scf::IfOp::create(b, isX0, [&](OpBuilder &nb, Location l) {
      memref::StoreOp::create(nb, l, m, mShared, ValueRange{slotIdx});
      memref::StoreOp::create(nb, l, lsum, lShared, ValueRange{slotIdx});
      scf::YieldOp::create(nb, l);
    });
    vector::StoreOp::create(b, acc, accShared, ValueRange{slotIdx, dim0});
    gpu::BarrierOp::create(b);
    Value mAll = negInf;
    for (int64_t zz = 0; zz < tz; ++zz)
      mAll = arith::MaximumFOp::create(
          b, mAll,
          memref::LoadOp::create(b, mShared,
                                 ValueRange{ir.add(ir.idx(zz * group), y)}));
    // An empty row has mAll = -inf: weigh by exp2(m - 0) = 0 instead of NaN.
    Value isEmpty =
        arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, mAll, negInf);
    Value ref = arith::SelectOp::create(b, isEmpty, ir.f32(0.0), mAll);
    Value lAll = ir.f32(0.0), accAll = zeroVec;
    for (int64_t zz = 0; zz < tz; ++zz) {
      Value slotZ = ir.add(ir.idx(zz * group), y);
      Value w = ir.exp2(
          ir.sub(memref::LoadOp::create(b, mShared, ValueRange{slotZ}), ref));
      lAll = ir.add(lAll, ir.mul(w, memref::LoadOp::create(b, lShared,
                                                           ValueRange{slotZ})));
      Value a =
          vector::LoadOp::create(b, vecF32, accShared, ValueRange{slotZ, dim0});
      accAll = arith::AddFOp::create(
          b, accAll, arith::MulFOp::create(b, a, ir.splat(w, vec)));
    }
    m = mAll;
    lsum = lAll;
    acc = accAll;
  }

  // Write the state of (request, head): z-lane 0, lanes holding real dims.
  scf::IfOp::create(b, isZ0, [&](OpBuilder &nb, Location l) {
    ImplicitLocOpBuilder ib(l, nb);
    KernelIR k{ib};
    Value empty =
        arith::CmpFOp::create(ib, arith::CmpFPredicate::OEQ, lsum, k.f32(0.0));
    Value inv = arith::DivFOp::create(ib, k.f32(1.0), lsum);
    Value o = arith::MulFOp::create(ib, acc, k.splat(inv, vec));
    o = arith::SelectOp::create(ib, empty, zeroVec, o);
    // lse in base 2 is m + log2(l); base e multiplies by ln 2. Partial
    // states stay in base 2 for the merge kernel.
    Value lse = k.add(m, k.log2(lsum));
    if (!spec.partitioned && spec.base == LseBase::e)
      lse = k.mul(lse, k.f32(M_LN2));
    lse = arith::SelectOp::create(ib, empty, k.f32(-INFINITY), lse);
    SmallVector<Value> rowIdx{req, head};
    if (spec.partitioned)
      rowIdx.insert(rowIdx.begin(), part);
    Type outElt = spec.outType.getElementType();
    scf::IfOp::create(ib, activeX, [&](OpBuilder &nb2, Location l2) {
      ImplicitLocOpBuilder jb(l2, nb2);
      Value v = o;
      if (!outElt.isF32())
        v = arith::TruncFOp::create(jb, VectorType::get({vec}, outElt), o);
      SmallVector<Value> idx(rowIdx);
      idx.push_back(dim0);
      // At most 16 bytes: buffers are only promised 16-byte alignment.
      vector::StoreOp::create(jb, v, out, idx)
          .setAlignment(
              std::min<int64_t>(16, vec * outElt.getIntOrFloatBitWidth() / 8));
      scf::YieldOp::create(jb);
    });
    Value isX0 = k.cmp(arith::CmpIPredicate::eq, x, k.idx(0));
    scf::IfOp::create(ib, isX0, [&](OpBuilder &nb2, Location l2) {
      memref::StoreOp::create(nb2, l2, lse, lseOut, rowIdx);
      scf::YieldOp::create(nb2, l2);
    });
    scf::YieldOp::create(ib);
  });
  gpu::ReturnOp::create(b);
  return func;
}
