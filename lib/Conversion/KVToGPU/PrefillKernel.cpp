//===- PrefillKernel.cpp - The tensor-core prefill kernel -----------------===//
//
// FlashAttention-2 over paged or ragged KV, one block per (query tile, KV
// head, KV partition):
//   1. thread 0 finds the block's tile (QueryTiles), reads the request's
//      table, and derives the keys the tile's rows can see (causal, window)
//      and the partition's share of them; with a custom mask the block sums
//      the mask blocks of the requests before its own;
//   2. the query tile (GQA heads packed into rows) and the page-table
//      entries of the first two K/V tiles arrive by cp.async; K/V tile 0 is
//      issued;
//   3. per K/V tile i, in a two-stage pipeline: wait for K_i, issue K_{i+1}
//      (with the page entries of tile i + 2), S = Q K_i^T, mask only where
//      a tile crosses the diagonal, the window, the partition's end or a
//      custom mask, the online softmax on the fragments; wait for V_i, issue
//      V_{i+1}, O += P V_i (WarpAttentionTile);
//   4. O / l: 16-bit outputs are staged through the warp's rows of the
//      query tile for 16-byte stores; f32 outputs (and partial states) are
//      stored from the fragments (a quad writes a whole 32-byte sector).
//
//===----------------------------------------------------------------------===//
#include "PrefillKernel.h"

#include "kvir/Codegen/AttentionTile.h"
#include "kvir/Codegen/IRBuilder.h"
#include "kvir/Codegen/PagedTileLoader.h"
#include "kvir/Codegen/QueryTiles.h"
#include "kvir/Codegen/WarpOps.h"
#include "kvir/Dialect/KV/Utils/PagedAddressing.h"
#include "kvir/Dialect/KV/Utils/Visibility.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cmath>

using namespace mlir;
using namespace kvir;
using namespace kvir::codegen;
using namespace kvir::gpu_lowering;

bool PrefillKernelSpec::stagesOutput() const {
  return !partitioned && !scheduled && stagesFinalOutput(outType.getElementType());
}

bool PrefillKernelSpec::stagesFinalOutput(Type outElement) const {
  return outElement.getIntOrFloatBitWidth() == 16;
}

bool PrefillKernelSpec::outputReusesQueryTile() const {
  return headDimV == headDim &&
         outType.getElementType() == qType.getElementType();
}

namespace {

/// Split-KV never cuts a tile's keys into partitions of fewer keys.
constexpr int64_t kMinPartitionKeys = 256;

/// What thread 0 tells the block, as i64 slots of the `meta` buffer.
enum MetaSlot : int64_t {
  MetaValid,    // 1 if the block's slot holds a tile
  MetaQoStart,  // the request's first query row
  MetaQoLen,    // its query rows
  MetaFirstRow, // the tile's first packed row within the request
  MetaKvLen,    // the request's keys
  MetaBase,     // its table base (CSR / token_offset) or first K/V row
  MetaStart,    // the partition's keys [start, end)
  MetaEnd,
  MetaRequest,
  MetaNumChunks,  // scheduled: the item's chunks of its request
  MetaPartialRow, // and its workspace row
  kMetaSlots
};

/// Indices of the kernel's shared buffers in its layout.
struct Buffers {
  unsigned q = 0, k = 0, meta = 0;
  /// v without MLA; q_pe and kpe with it.
  std::optional<unsigned> v, qPe, kpe, pageIds, maskScratch, outStage;
};

Buffers buildLayout(const PrefillKernelSpec &s, SharedMemoryLayout &layout) {
  MLIRContext *ctx = s.qType.getContext();
  Type i32 = IntegerType::get(ctx, 32), i64 = IntegerType::get(ctx, 64);
  kvgpu::PrefillConfigAttr c = s.config;
  Buffers buf;
  buf.q = layout.add("q_tile", {c.getQTile(), s.headDim},
                     s.qType.getElementType());
  if (s.isMla())
    buf.qPe = layout.add("q_pe_tile", {c.getQTile(), s.peDim},
                         s.qType.getElementType());
  buf.k = layout.add(s.isMla() ? "ckv_tiles" : "k_tiles",
                     {c.getStages(), c.getKvTile(), s.headDim},
                     s.kvElementType);
  if (s.isMla())
    buf.kpe = layout.add("kpe_tiles", {c.getStages(), c.getKvTile(), s.peDim},
                         s.kvElementType);
  else
    buf.v = layout.add("v_tiles", {c.getStages(), c.getKvTile(), s.headDimV},
                       s.kvElementType);
  MemRefType finalOut = s.scheduled ? s.finalOutType : s.outType;
  if (s.stagesFinalOutput(finalOut.getElementType()) &&
      (s.headDimV != s.headDim ||
       finalOut.getElementType() != s.qType.getElementType()))
    buf.outStage = layout.add("o_stage", {c.getQTile(), s.headDimV},
                              finalOut.getElementType());
  if (s.paged && s.paged.getTable() != kv::TableForm::token_offset)
    buf.pageIds = layout.add(
        "page_ids",
        {c.getStages(),
         PagedTileLoader::pagesPerTile(s.paged.getPageSize(), c.getKvTile())},
        i32);
  buf.meta = layout.add("meta", {kMetaSlots}, i64);
  if (s.maskType)
    buf.maskScratch = layout.add("mask_scratch", {c.getNumThreads()}, i64);
  return buf;
}

/// The kernel's arguments, named.
struct Arguments {
  Value q, qPe, qoIndptr, mask, workItems, out, lse, numPartitions, finalOut,
      finalLse;
  kv::PagedOperands paged;
  RaggedOperands ragged;
};

Arguments bindArguments(const KernelFunc &kf, const PrefillKernelSpec &s) {
  Arguments a;
  unsigned next = 0;
  a.q = kf.getArgument(next++);
  if (s.isMla())
    a.qPe = kf.getArgument(next++);
  if (!s.oneRowPerRequest())
    a.qoIndptr = kf.getArgument(next++);
  ValueRange kvArgs = kf.getArguments().slice(next, s.kvTypes.size());
  if (s.paged) {
    kv::PagedOperands shape;
    shape.type = s.paged;
    shape.pools.resize(s.paged.getNumPools());
    shape.tables.resize(s.paged.getNumTables());
    shape.scales.resize(s.paged.getNumScalePools());
    a.paged = shape.withValues(kvArgs);
  } else {
    a.ragged = {kvArgs[0], kvArgs[1], kvArgs[2]};
  }
  next += s.kvTypes.size();
  if (s.maskType)
    a.mask = kf.getArgument(next++);
  if (s.scheduled)
    a.workItems = kf.getArgument(next++);
  a.out = kf.getArgument(next++);
  a.lse = kf.getArgument(next++);
  if (s.partitioned)
    a.numPartitions = kf.getArgument(next++);
  if (s.scheduled) {
    a.finalOut = kf.getArgument(next++);
    a.finalLse = kf.getArgument(next++);
  }
  return a;
}

/// The request's key count and table base (first K/V row when ragged).
std::pair<Value, Value> emitKvTable(ImplicitLocOpBuilder &b,
                                    const PrefillKernelSpec &s,
                                    const Arguments &a, Value req) {
  IRBuilder ir{b};
  if (s.paged) {
    kv::RequestTable table = kv::emitRequestTable(b, a.paged, req);
    return {table.kvLen, table.base};
  }
  auto at = [&](Value i) {
    return ir.toIndex(memref::LoadOp::create(b, a.ragged.indptr, ValueRange{i}));
  };
  Value first = at(req);
  return {ir.sub(at(ir.add(req, ir.idx(1))), first), first};
}

/// Step 1: thread 0 locates the block's tile and keys; the block reads
/// them back after a barrier.
struct Work {
  Value valid, qoStart, qoLen, firstRow, kvLen, base, start, end, request;
  /// Scheduled: the item's chunk count and workspace row.
  Value numChunks, partialRow;
  /// Packed rows of the request, and the positions of the tile's first
  /// and last valid rows.
  Value packedRows, firstPos, lastPos;
};

Work emitBlockWork(ImplicitLocOpBuilder &b, const PrefillKernelSpec &s,
                   const Arguments &a, Value meta, Value thread) {
  IRBuilder ir{b};
  int64_t group = s.group(), tileRows = s.config.getQTile();
  auto positions = [&](ImplicitLocOpBuilder &ib, Value kvLen, Value qoLen,
                       Value firstRow) {
    IRBuilder j{ib};
    Value packedRows = j.mul(qoLen, j.idx(group));
    Value lastRow = j.sub(j.minS(j.add(firstRow, j.idx(tileRows)), packedRows),
                          j.idx(1));
    Value firstPos = kv::emitQueryPosition(ib, kvLen, qoLen,
                                           j.divU(firstRow, j.idx(group)));
    Value lastPos = kv::emitQueryPosition(ib, kvLen, qoLen,
                                          j.divU(lastRow, j.idx(group)));
    return std::make_tuple(packedRows, firstPos, lastPos);
  };
  scf::IfOp::create(b, ir.eq(thread, ir.idx(0)), [&](OpBuilder &nb, Location l) {
    ImplicitLocOpBuilder ib(l, nb);
    IRBuilder j{ib};
    Value slot = gpu::BlockIdOp::create(ib, gpu::Dimension::x);
    Value part = gpu::BlockIdOp::create(ib, gpu::Dimension::z);
    QueryTiles tiles(group, tileRows);
    QueryTile tile;
    // Scheduled: the work item's chunk `piece` of `pieces`.
    Value piece, pieces, partialRow = j.idx(0);
    if (s.scheduled) {
      auto field = [&](int64_t f) {
        return memref::LoadOp::create(ib, a.workItems,
                                      ValueRange{slot, j.idx(f)})
            .getResult();
      };
      Value request = field(0);
      // Items past the schedule's count (fixed grids) have request -1.
      tile.valid = arith::CmpIOp::create(ib, arith::CmpIPredicate::sge,
                                         request, j.i32(0));
      tile.request = j.toIndex(j.select(tile.valid, request, j.i32(0)));
      tile.qoStart = tile.request;
      tile.qoLen = j.idx(1);
      tile.firstRow = j.mul(part, j.idx(tileRows));
      piece = j.toIndex(field(1));
      pieces = j.toIndex(field(2));
      partialRow = j.toIndex(field(3));
    } else if (s.oneRowPerRequest()) {
      tile = tiles.locateOneRowEach(ib, memref::DimOp::create(ib, a.q, 0),
                                    slot);
    } else {
      tile = tiles.locate(
          ib, a.qoIndptr,
          j.sub(memref::DimOp::create(ib, a.qoIndptr, 0), j.idx(1)), slot);
    }
    if (a.numPartitions) {
      piece = part;
      pieces = a.numPartitions;
    }
    auto [kvLen, base] = emitKvTable(ib, s, a, tile.request);
    auto [packedRows, firstPos, lastPos] =
        positions(ib, kvLen, tile.qoLen, tile.firstRow);
    // The keys any row of the tile sees: from the first row's window start
    // to the last row's causal end.
    Value lo = kv::emitVisibleKeyRange(ib, firstPos, kvLen, s.causal,
                                       s.windowLeft)
                   .first;
    Value hi = kv::emitVisibleKeyRange(ib, lastPos, kvLen, s.causal,
                                       s.windowLeft)
                   .second;
    hi = j.maxS(lo, hi);
    Value start = lo, end = hi;
    if (piece) {
      // Pieces of whole K/V tiles; partitions take at least
      // kMinPartitionKeys keys each (a tile with few keys leaves the later
      // partitions empty: they write only an LSE of -inf, which the merge
      // reads instead of the output); a schedule's chunks are long enough.
      int64_t minTiles =
          s.scheduled ? 1
                      : llvm::divideCeil(kMinPartitionKeys, s.config.getKvTile());
      Value kvTile = j.idx(s.config.getKvTile());
      Value numTiles = arith::CeilDivUIOp::create(ib, j.sub(hi, lo), kvTile);
      Value chunk = j.mul(
          j.maxS(arith::CeilDivUIOp::create(ib, numTiles, pieces),
                 j.idx(minTiles)),
          kvTile);
      start = j.minS(j.add(lo, j.mul(piece, chunk)), hi);
      end = j.minS(j.add(start, chunk), hi);
    }
    Value valid = arith::ExtUIOp::create(ib, ib.getI64Type(), tile.valid);
    SmallVector<std::pair<MetaSlot, Value>> values{
        {MetaValid, valid},          {MetaQoStart, tile.qoStart},
        {MetaQoLen, tile.qoLen},     {MetaFirstRow, tile.firstRow},
        {MetaKvLen, kvLen},          {MetaBase, base},
        {MetaStart, start},          {MetaEnd, end},
        {MetaRequest, tile.request}, {MetaNumChunks, pieces ? pieces : j.idx(1)},
        {MetaPartialRow, partialRow}};
    for (auto [slotIndex, v] : values) {
      Value x = v.getType().isIndex()
                    ? arith::IndexCastOp::create(ib, ib.getI64Type(), v)
                    : v;
      memref::StoreOp::create(ib, x, meta, ValueRange{j.idx(slotIndex)});
    }
    scf::YieldOp::create(ib);
  });
  gpu::BarrierOp::create(b);
  auto at = [&](MetaSlot i) {
    return ir.toIndex(memref::LoadOp::create(b, meta, ValueRange{ir.idx(i)}));
  };
  Work w;
  w.valid = ir.eq(at(MetaValid), ir.idx(1));
  w.qoStart = at(MetaQoStart);
  w.qoLen = at(MetaQoLen);
  w.firstRow = at(MetaFirstRow);
  w.kvLen = at(MetaKvLen);
  w.base = at(MetaBase);
  w.start = at(MetaStart);
  w.end = at(MetaEnd);
  w.request = at(MetaRequest);
  w.numChunks = at(MetaNumChunks);
  w.partialRow = at(MetaPartialRow);
  std::tie(w.packedRows, w.firstPos, w.lastPos) =
      positions(b, w.kvLen, w.qoLen, w.firstRow);
  return w;
}

/// Where request `req`'s block of the custom mask starts: the block sums
/// the block sizes of the requests before it (each thread a strided share,
/// then a tree in shared memory).
Value emitMaskOffset(ImplicitLocOpBuilder &b, const PrefillKernelSpec &s,
                     const Arguments &a, Value scratch, Value thread,
                     Value req) {
  IRBuilder ir{b};
  int64_t threads = s.config.getNumThreads();
  auto loop = scf::ForOp::create(
      b, thread, req, ir.idx(threads), ValueRange{ir.idx(0)},
      [&](OpBuilder &nb, Location l, Value r, ValueRange sum) {
        ImplicitLocOpBuilder ib(l, nb);
        IRBuilder j{ib};
        Value qoLen =
            j.sub(j.toIndex(memref::LoadOp::create(
                      ib, a.qoIndptr, ValueRange{j.add(r, j.idx(1))})),
                  j.toIndex(memref::LoadOp::create(ib, a.qoIndptr,
                                                   ValueRange{r})));
        Value kvLen = emitKvTable(ib, s, a, r).first;
        Value size = kv::emitMaskBlockSize(ib, a.mask, qoLen, kvLen);
        scf::YieldOp::create(ib, ValueRange{j.add(sum[0], size)});
      });
  auto toI64 = [&](ImplicitLocOpBuilder &ib, Value v) {
    return arith::IndexCastOp::create(ib, ib.getI64Type(), v);
  };
  memref::StoreOp::create(b, toI64(b, loop.getResult(0)), scratch,
                          ValueRange{thread});
  gpu::BarrierOp::create(b);
  int64_t span = llvm::PowerOf2Ceil(threads) / 2;
  for (; span >= 1; span /= 2) {
    Value other = ir.add(thread, ir.idx(span));
    Value active = arith::AndIOp::create(b, ir.lt(thread, ir.idx(span)),
                                         ir.lt(other, ir.idx(threads)));
    scf::IfOp::create(b, active, [&](OpBuilder &nb, Location l) {
      ImplicitLocOpBuilder ib(l, nb);
      Value x = memref::LoadOp::create(ib, scratch, ValueRange{thread});
      Value y = memref::LoadOp::create(ib, scratch, ValueRange{other});
      memref::StoreOp::create(ib, arith::AddIOp::create(ib, x, y), scratch,
                              ValueRange{thread});
      scf::YieldOp::create(ib);
    });
    gpu::BarrierOp::create(b);
  }
  return ir.toIndex(memref::LoadOp::create(b, scratch, ValueRange{ir.idx(0)}));
}

/// A packed row of the tile: its query row within the request and its head.
struct PackedRow {
  Value valid, queryRow, head;
};

PackedRow unpackRow(ImplicitLocOpBuilder &b, const PrefillKernelSpec &s,
                    const Work &w, Value kvHead, Value rowInTile) {
  IRBuilder ir{b};
  Value r = ir.add(w.firstRow, rowInTile);
  PackedRow p;
  p.valid = ir.lt(r, w.packedRows);
  // Clamped, so that addresses of rows past the request stay inside it.
  Value clamped = ir.minS(r, ir.sub(w.packedRows, ir.idx(1)));
  Value g = ir.idx(s.group());
  p.queryRow = ir.divU(clamped, g);
  p.head = ir.add(ir.mul(kvHead, g), ir.remU(clamped, g));
  return p;
}

/// The K/V tile `index` of the partition: its first key and key count.
std::pair<Value, Value> kvTileRange(ImplicitLocOpBuilder &b,
                                    const PrefillKernelSpec &s, const Work &w,
                                    Value index) {
  IRBuilder ir{b};
  Value t0 = ir.add(w.start, ir.mul(index, ir.idx(s.config.getKvTile())));
  return {t0, ir.minS(ir.idx(s.config.getKvTile()), ir.sub(w.end, t0))};
}

/// Whether K/V tile [t0, t0 + kvTile) needs per-element masks: it crosses
/// the partition's end, the diagonal of the tile's first row, the window
/// of its last row, or a custom mask applies.
Value needsMask(ImplicitLocOpBuilder &b, const PrefillKernelSpec &s,
                const Work &w, Value t0) {
  IRBuilder ir{b};
  if (s.maskType)
    return arith::ConstantIntOp::create(b, 1, 1);
  Value tileEnd = ir.add(t0, ir.idx(s.config.getKvTile()));
  Value need = ir.cmp(arith::CmpIPredicate::sgt, tileEnd, w.end);
  if (s.causal)
    need = arith::OrIOp::create(
        b, need, ir.cmp(arith::CmpIPredicate::sgt, tileEnd,
                        ir.add(w.firstPos, ir.idx(1))));
  if (s.windowLeft)
    need = arith::OrIOp::create(
        b, need, ir.lt(t0, ir.sub(w.lastPos, ir.idx(*s.windowLeft))));
  return need;
}

/// The -inf mask of K/V tile [t0, ...) for the warp's fragment rows: keys
/// in [start, end) of the partition, causal (key <= position), the window
/// (key >= position - w) as per-row bounds; the custom mask bit by bit.
SmallVector<Value> emitMask(ImplicitLocOpBuilder &b, const PrefillKernelSpec &s,
                            const Work &w, const Arguments &a,
                            WarpAttentionTile &tile, ArrayRef<Value> logits,
                            Value maskOffset, Value t0) {
  IRBuilder ir{b};
  int64_t mTiles = tile.getShape().mTiles;
  Value keyBase = ir.add(t0, ir.mul(tile.getMma().getThreadInGroup(), ir.idx(2)));
  auto relative = [&](Value key) { return ir.toI32(ir.sub(key, keyBase)); };
  SmallVector<WarpAttentionTile::RowKeys> rows;
  SmallVector<Value> maskRows, rowValid;
  for (int64_t t = 0; t < mTiles; ++t)
    for (int64_t h = 0; h < 2; ++h) {
      Value r = ir.add(w.firstRow,
                       ir.add(tile.getRowOffset(),
                              ir.add(tile.getMma().getGroup(),
                                     ir.idx(16 * t + 8 * h))));
      Value queryRow = ir.divU(r, ir.idx(s.group()));
      Value pos = kv::emitQueryPosition(b, w.kvLen, w.qoLen, queryRow);
      Value lo = t0, hi = w.end;
      if (s.causal)
        hi = ir.minS(hi, ir.add(pos, ir.idx(1)));
      if (s.windowLeft)
        lo = ir.maxS(lo, ir.sub(pos, ir.idx(*s.windowLeft)));
      rows.push_back({relative(lo), relative(hi)});
      // Clamped into the request's block, so that rows past the request
      // read the mask in bounds (their results are never stored).
      maskRows.push_back(ir.minS(queryRow, ir.sub(w.qoLen, ir.idx(1))));
      rowValid.push_back(ir.lt(r, w.packedRows));
    }
  WarpAttentionTile::CustomVisibility custom;
  if (s.maskType)
    custom = [&](ImplicitLocOpBuilder &vb, int64_t row, int64_t column) {
      IRBuilder j{vb};
      // Keys past the request are rejected by `hi`; clamp their reads.
      Value key = j.minS(j.add(keyBase, j.idx(column)),
                         j.sub(w.kvLen, j.idx(1)));
      Value bit = kv::emitMaskBit(vb, a.mask, maskOffset, maskRows[row], key,
                                  w.kvLen);
      return arith::AndIOp::create(vb, bit, rowValid[row]).getResult();
    };
  return tile.mask(b, logits, rows, custom);
}

/// Where a block writes its rows' states.
struct Destination {
  Value out, lse;
  /// The indices of a packed row's (row, head) in `out` and `lse`.
  std::function<SmallVector<Value>(ImplicitLocOpBuilder &, const PackedRow &)>
      rows;
  /// i1: whether the output is written (null: always). An empty
  /// partition's is not: the merge skips it by its LSE.
  Value writeOutput;
  /// 16-bit outputs go through this tile for 16-byte stores (null: stored
  /// from the fragments).
  const SharedTile *stage = nullptr;
};

/// Step 4: the normalized output and LSE of the warp's valid rows.
void emitEpilogue(ImplicitLocOpBuilder &b, const PrefillKernelSpec &s,
                  const Work &w, MmaTile &mma, WarpAttentionTile &tile,
                  const WarpAttentionTile::Final &fin, Value warpRow0,
                  Value kvHead, const Destination &dest, Value lane) {
  IRBuilder ir{b};
  int64_t mTiles = tile.getShape().mTiles, dv8 = s.valueSlice() / 8;
  Type outElt = cast<MemRefType>(dest.out.getType()).getElementType();
  const SharedTile *stage = dest.stage;
  // The warp's value columns start at `valueOffset`; the warps of the first
  // slice write the LSE.
  Value valueOffset = tile.getValueOffset() ? tile.getValueOffset() : ir.idx(0);
  Value writesLse = ir.eq(valueOffset, ir.idx(0));
  auto rowIndices = [&](const PackedRow &p) { return dest.rows(b, p); };
  for (int64_t t = 0; t < mTiles; ++t)
    for (int64_t h = 0; h < 2; ++h) {
      Value rowInTile = tile.elementCoords(t, h, 0, 0).first;
      PackedRow p = unpackRow(b, s, w, kvHead, rowInTile);
      // The LSE: one lane of the quad.
      Value first = arith::AndIOp::create(
          b, ir.eq(mma.getThreadInGroup(), ir.idx(0)), writesLse);
      emitIf(b, arith::AndIOp::create(b, p.valid, first),
             [&](ImplicitLocOpBuilder &ib) {
               memref::StoreOp::create(ib, fin.lse[2 * t + h], dest.lse,
                                       rowIndices(p));
             });
      if (stage)
        continue;
      // f32: a quad's 8-byte stores cover a whole 32-byte sector.
      Value store = p.valid;
      if (dest.writeOutput)
        store = arith::AndIOp::create(b, store, dest.writeOutput);
      emitIf(b, store, [&](ImplicitLocOpBuilder &ib) {
        for (int64_t d = 0; d < dv8; ++d) {
          Value v = vector::ExtractOp::create(ib, fin.o[t * dv8 + d],
                                              ArrayRef<int64_t>{h});
          if (!outElt.isF32())
            v = arith::TruncFOp::create(ib, VectorType::get({2}, outElt), v);
          SmallVector<Value> idx = rowIndices(p);
          idx.push_back(IRBuilder{ib}.add(tile.elementCoords(t, h, d, 0).second,
                                          valueOffset));
          vector::StoreOp::create(ib, v, dest.out, idx)
              .setAlignment(2 * outElt.getIntOrFloatBitWidth() / 8);
        }
      });
    }
  if (!stage)
    return;
  // 16-bit: the warp's rows through shared memory (its own rows only, so
  // a warp barrier orders the accesses), then 16-byte stores.
  NVVM::SyncWarpOp::create(b, ir.i32(-1));
  auto halfPair = VectorType::get({2}, outElt);
  for (int64_t t = 0; t < mTiles; ++t)
    for (int64_t d = 0; d < dv8; ++d)
      for (int64_t h = 0; h < 2; ++h) {
        auto [row, col] = tile.elementCoords(t, h, d, 0);
        Value v = arith::TruncFOp::create(
            b, halfPair,
            vector::ExtractOp::create(b, fin.o[t * dv8 + d],
                                      ArrayRef<int64_t>{h}));
        vector::StoreOp::create(
            b, v, stage->memref,
            stage->elementIndices(b, Value(), row, ir.add(col, valueOffset)))
            .setAlignment(4);
      }
  NVVM::SyncWarpOp::create(b, ir.i32(-1));
  int64_t chunks = s.valueSlice() / 8, total = 16 * mTiles * chunks;
  auto chunkType = VectorType::get({8}, outElt);
  for (int64_t k = 0; k * 32 < total; ++k) {
    Value i = ir.add(lane, ir.idx(32 * k));
    Value rowInTile = ir.add(warpRow0, ir.divU(i, ir.idx(chunks)));
    Value c = ir.add(ir.remU(i, ir.idx(chunks)),
                     ir.divU(valueOffset, ir.idx(8)));
    PackedRow p = unpackRow(b, s, w, kvHead, rowInTile);
    Value v = vector::LoadOp::create(b, chunkType, stage->memref,
                                     stage->chunkIndices(b, Value(), rowInTile, c));
    emitIf(b, p.valid, [&](ImplicitLocOpBuilder &ib) {
      IRBuilder j{ib};
      SmallVector<Value> idx = rowIndices(p);
      idx.push_back(j.mul(c, j.idx(8)));
      vector::StoreOp::create(ib, v, dest.out, idx).setAlignment(16);
    });
  }
}

/// The LSEs of an empty partition's rows: -inf, one row per thread.
void emitEmptyPartition(ImplicitLocOpBuilder &b, const PrefillKernelSpec &s,
                        const Work &w, Value kvHead, const Destination &dest,
                        Value thread) {
  IRBuilder ir{b};
  scf::ForOp::create(
      b, thread, ir.idx(s.config.getQTile()), ir.idx(s.config.getNumThreads()),
      ValueRange{}, [&](OpBuilder &nb, Location l, Value r, ValueRange) {
        ImplicitLocOpBuilder ib(l, nb);
        PackedRow p = unpackRow(ib, s, w, kvHead, r);
        emitIf(ib, p.valid, [&](ImplicitLocOpBuilder &jb) {
          memref::StoreOp::create(jb, IRBuilder{jb}.f32(-INFINITY), dest.lse,
                                  dest.rows(jb, p));
        });
        scf::YieldOp::create(ib);
      });
}

} // namespace

codegen::SharedMemoryLayout
gpu_lowering::prefillSharedLayout(const PrefillKernelSpec &spec) {
  SharedMemoryLayout layout;
  buildLayout(spec, layout);
  return layout;
}

SmallVector<Type>
gpu_lowering::prefillArgumentTypes(const PrefillKernelSpec &s) {
  SmallVector<Type> types{s.qType};
  if (s.isMla())
    types.push_back(s.qPeType);
  if (!s.oneRowPerRequest())
    types.push_back(s.qoIndptrType);
  llvm::append_range(types, s.kvTypes);
  if (s.maskType)
    types.push_back(s.maskType);
  if (s.scheduled)
    types.push_back(MemRefType::get({ShapedType::kDynamic, 4},
                                    IntegerType::get(s.qType.getContext(), 32)));
  types.append({s.outType, s.lseType});
  if (s.partitioned)
    types.push_back(IndexType::get(s.qType.getContext()));
  if (s.scheduled)
    types.append({s.finalOutType, s.finalLseType});
  return types;
}

void gpu_lowering::buildPrefillBody(const KernelFunc &kf,
                                    const PrefillKernelSpec &s) {
  ImplicitLocOpBuilder b = kf.getBuilder();
  SharedMemoryLayout layout;
  Buffers buf = buildLayout(s, layout);
  Arguments a = bindArguments(kf, s);
  kvgpu::PrefillConfigAttr cfg = s.config;
  int64_t threads = cfg.getNumThreads(), kvTile = cfg.getKvTile();
  int64_t mTiles = cfg.getWarpRowTiles();

  Value thread = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value kvHead = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  Value part = s.partitioned
                   ? gpu::BlockIdOp::create(b, gpu::Dimension::z).getResult()
                   : Value();
  Work w = emitBlockWork(b, s, a, kf.getShared(buf.meta), thread);

  // A row's state goes to (query row, head) of the outputs, behind the
  // partition for partial states of a partition; a scheduled item's
  // partial state to its workspace row.
  auto requestRows = [&](ImplicitLocOpBuilder &ib, const PackedRow &p) {
    SmallVector<Value> idx{IRBuilder{ib}.add(w.qoStart, p.queryRow), p.head};
    if (part)
      idx.insert(idx.begin(), part);
    return idx;
  };
  auto itemRows = [&](ImplicitLocOpBuilder &, const PackedRow &p) {
    return SmallVector<Value>{w.partialRow, p.head};
  };
  Value work = w.valid;
  if (part || s.scheduled) {
    // An empty partition only tells the merge so: an LSE of -inf per row.
    // (A scheduled item that is a whole request writes its final state.)
    IRBuilder ir{b};
    Value empty = ir.cmp(arith::CmpIPredicate::sge, w.start, w.end);
    if (s.scheduled)
      empty = arith::AndIOp::create(b, empty,
                                    ir.cmp(arith::CmpIPredicate::sgt,
                                           w.numChunks, ir.idx(1)));
    Destination partial;
    partial.out = a.out;
    partial.lse = a.lse;
    if (part)
      partial.rows = requestRows;
    else
      partial.rows = itemRows;
    emitIf(b, arith::AndIOp::create(b, w.valid, empty),
           [&](ImplicitLocOpBuilder &ib) {
             emitEmptyPartition(ib, s, w, kvHead, partial, thread);
           });
    work = arith::AndIOp::create(b, w.valid,
                                 arith::XOrIOp::create(
                                     b, empty,
                                     arith::ConstantIntOp::create(b, 1, 1)));
  }

  emitIf(b, work, [&](ImplicitLocOpBuilder &b) {
    IRBuilder ir{b};
    Value maskOffset;
    if (s.maskType)
      maskOffset = emitMaskOffset(b, s, a, kf.getShared(*buf.maskScratch),
                                  thread, w.request);
    SharedTile qTile{kf.getShared(buf.q), cfg.getQTile(), s.headDim};
    SharedTile kTiles{kf.getShared(buf.k), kvTile, s.headDim};
    std::optional<SharedTile> qPeTile, kpeTiles;
    if (s.isMla()) {
      qPeTile = SharedTile{kf.getShared(*buf.qPe), cfg.getQTile(), s.peDim};
      kpeTiles = SharedTile{kf.getShared(*buf.kpe), kvTile, s.peDim};
    }
    // MLA's values are its latent keys: the ckv tile.
    SharedTile vTiles = s.isMla()
                            ? kTiles
                            : SharedTile{kf.getShared(*buf.v), kvTile, s.headDimV};
    PagedTileLoader loader =
        s.paged ? PagedTileLoader(a.paged, w.request, w.base, kvHead, kvTile,
                                  buf.pageIds ? kf.getShared(*buf.pageIds)
                                              : Value())
                : PagedTileLoader(a.ragged, w.base, kvHead, kvTile);
    Value numTiles =
        arith::CeilDivUIOp::create(b, ir.sub(w.end, w.start), ir.idx(kvTile));
    auto ifTile = [&](ImplicitLocOpBuilder &ib, Value index,
                      llvm::function_ref<void(ImplicitLocOpBuilder &, Value,
                                              Value)>
                          body) {
      emitIf(ib, IRBuilder{ib}.lt(index, numTiles),
             [&](ImplicitLocOpBuilder &jb) {
               auto [t0, count] = kvTileRange(jb, s, w, index);
               body(jb, t0, count);
             });
    };
    auto stageIds = [&](ImplicitLocOpBuilder &ib, Value index, Value slot) {
      if (buf.pageIds)
        ifTile(ib, index, [&](ImplicitLocOpBuilder &jb, Value t0, Value count) {
          loader.stagePageIdsAsync(jb, slot, t0, count, thread, threads);
        });
    };
    auto issue = [&](ImplicitLocOpBuilder &ib, Value index, kv::PoolRole role) {
      ifTile(ib, index, [&](ImplicitLocOpBuilder &jb, Value t0, Value count) {
        IRBuilder j{jb};
        Value stage = j.remU(index, j.idx(2));
        // MLA's K tile is ckv (the K pool) and kpe (the V pool).
        SmallVector<TileCopy> copies;
        if (role == kv::PoolRole::K)
          copies.push_back({kv::PoolRole::K, kTiles, s.headDim});
        if (role == kv::PoolRole::K && s.isMla())
          copies.push_back({kv::PoolRole::V, *kpeTiles, s.peDim});
        if (role == kv::PoolRole::V)
          copies.push_back({kv::PoolRole::V, vTiles, s.headDimV});
        loader.copyTileAsync(jb, copies, stage, t0, count, thread, threads);
      });
    };

    // Step 2: the query tile and the page entries of tiles 0 and 1, then
    // K_0 and V_0 (one commit group each; MLA: one K/V tile).
    auto copyQuery = [&](const SharedTile &tile, Value source, int64_t width) {
      copyRowsAsync(
          b, tile, Value(), width, thread, threads,
          [&](ImplicitLocOpBuilder &jb, Value r, Value dim) {
            PackedRow p = unpackRow(jb, s, w, kvHead, r);
            Value row = IRBuilder{jb}.add(w.qoStart, p.queryRow);
            return std::make_pair(source, SmallVector<Value>{row, p.head, dim});
          },
          [&](ImplicitLocOpBuilder &jb, Value r) {
            return unpackRow(jb, s, w, kvHead, r).valid;
          });
    };
    copyQuery(qTile, a.q, s.headDim);
    if (s.isMla())
      copyQuery(*qPeTile, a.qPe, s.peDim);
    stageIds(b, ir.idx(0), ir.idx(0));
    stageIds(b, ir.idx(1), ir.idx(1));
    commitAsyncCopies(b);
    waitAsyncCopies(b, 0);
    gpu::BarrierOp::create(b);

    // Warp w owns rows of row warp w % rowWarps and the value columns of
    // slice w / rowWarps.
    Value lane = ir.remU(thread, ir.idx(32));
    Value warp = ir.divU(thread, ir.idx(32));
    int64_t rowWarps = cfg.getRowWarps();
    Value warpRow0 = ir.mul(ir.remU(warp, ir.idx(rowWarps)), ir.idx(16 * mTiles));
    Value valueOffset;
    if (cfg.getValueWarps() > 1)
      valueOffset =
          ir.mul(ir.divU(warp, ir.idx(rowWarps)), ir.idx(s.valueSlice()));
    MmaTile mma(b, s.kvElementType, lane);
    WarpAttentionTile tile(b, mma,
                           {mTiles, kvTile, s.headDim, s.valueSlice()},
                           warpRow0, valueOffset);
    SmallVector<Value> qFrags;
    if (cfg.getQInRegisters())
      qFrags = tile.loadQuery(qTile);
    issue(b, ir.idx(0), kv::PoolRole::K);
    commitAsyncCopies(b);
    if (!s.isMla()) {
      issue(b, ir.idx(0), kv::PoolRole::V);
      commitAsyncCopies(b);
    }

    // Step 3: the K/V tiles. Groups in flight at the top of iteration i:
    // K_i, V_i (MLA: K/V tile i, whose ckv part is V).
    auto loop = scf::ForOp::create(
        b, ir.idx(0), numTiles, ir.idx(1), tile.initialState().flatten(),
        [&](OpBuilder &nb, Location l, Value i, ValueRange carried) {
          ImplicitLocOpBuilder lb(l, nb);
          IRBuilder j{lb};
          WarpAttentionTile::State state =
              WarpAttentionTile::State::unflatten(carried, tile.getShape());
          Value stage = j.remU(i, j.idx(2));
          Value next = j.add(i, j.idx(1));
          waitAsyncCopies(lb, s.isMla() ? 0 : 1);
          gpu::BarrierOp::create(lb);
          // Everyone is done with tile i - 1: its K/V stage and page-entry
          // slot take tile i + 1 and the entries of tile i + 2.
          issue(lb, next, kv::PoolRole::K);
          stageIds(lb, j.add(i, j.idx(2)), stage);
          commitAsyncCopies(lb);

          Value t0 = kvTileRange(lb, s, w, i).first;
          SmallVector<Value> scores = tile.scores(qFrags, qTile, kTiles, stage);
          if (s.isMla())
            scores = tile.scores({}, *qPeTile, *kpeTiles, stage, scores);
          SmallVector<Value> logits =
              tile.logits(scores, s.smScale, s.softCap);
          SmallVector<Type> types(logits.size(), mma.getAccType());
          auto masked = scf::IfOp::create(
              lb, needsMask(lb, s, w, t0),
              [&](OpBuilder &mb, Location ml) {
                ImplicitLocOpBuilder ib(ml, mb);
                scf::YieldOp::create(ib, emitMask(ib, s, w, a, tile, logits,
                                                  maskOffset, t0));
              },
              [&](OpBuilder &mb, Location ml) {
                scf::YieldOp::create(mb, ml, logits);
              });
          auto [stepped, p] = tile.softmax(
              state, SmallVector<Value>(masked.getResults()));

          if (!s.isMla()) {
            waitAsyncCopies(lb, 1);
            gpu::BarrierOp::create(lb);
            issue(lb, next, kv::PoolRole::V);
            commitAsyncCopies(lb);
          }
          state = tile.accumulate(stepped, p, vTiles, stage);
          scf::YieldOp::create(lb, state.flatten());
        });
    waitAsyncCopies(b, 0);
    // Warps of other value slices may still read the query tile that
    // stages the output.
    if (cfg.getValueWarps() > 1)
      gpu::BarrierOp::create(b);

    // Step 4.
    WarpAttentionTile::State state =
        WarpAttentionTile::State::unflatten(loop.getResults(), tile.getShape());
    std::optional<SharedTile> outStage;
    if (s.stagesFinalOutput(
            (s.scheduled ? s.finalOutType : s.outType).getElementType()))
      outStage = buf.outStage
                     ? SharedTile{kf.getShared(*buf.outStage), cfg.getQTile(),
                                  s.headDimV}
                     : qTile;
    auto epilogue = [&](ImplicitLocOpBuilder &eb, kv::LseBase base,
                        const Destination &dest) {
      WarpAttentionTile::Final fin = tile.finalize(state, base);
      emitEpilogue(eb, s, w, mma, tile, fin, warpRow0, kvHead, dest, lane);
    };
    Destination final{s.scheduled ? a.finalOut : a.out,
                      s.scheduled ? a.finalLse : a.lse, requestRows, Value(),
                      outStage ? &*outStage : nullptr};
    if (part) {
      epilogue(b, kv::LseBase::two,
               {a.out, a.lse, requestRows, ir.lt(w.start, w.end)});
    } else if (!s.scheduled) {
      epilogue(b, s.base, final);
    } else {
      // A whole request is final; a chunk of one a partial state. (`b`
      // moves into each branch: the tile and fragments build through it.)
      auto whole = scf::IfOp::create(b, ir.eq(w.numChunks, ir.idx(1)),
                                     /*withElseRegion=*/true);
      b.setInsertionPoint(whole.thenBlock()->getTerminator());
      epilogue(b, s.base, final);
      b.setInsertionPoint(whole.elseBlock()->getTerminator());
      epilogue(b, kv::LseBase::two, {a.out, a.lse, itemRows, Value()});
      b.setInsertionPointAfter(whole);
    }
  });
}
