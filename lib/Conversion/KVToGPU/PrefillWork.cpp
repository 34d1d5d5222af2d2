//===- PrefillWork.cpp - Where a prefill block's work is ------------------===//
//
// Step 1 of the prefill kernel: thread 0 finds the block's query tile
// (QueryTiles, one row per request, or a work schedule's item), reads the
// request's table and derives the keys the tile's rows can see (causal,
// window) and the partition's or chunk's share of them; the block reads
// them back through shared memory. Also the kernel's arguments, packed
// rows and the custom mask's offset.
//
//===----------------------------------------------------------------------===//
#include "PrefillKernelParts.h"

#include "kvir/Codegen/IRBuilder.h"
#include "kvir/Codegen/QueryTiles.h"
#include "kvir/Dialect/KV/Utils/PagedAddressing.h"
#include "kvir/Dialect/KV/Utils/Visibility.h"
#include "kvir/Runtime/WorkSchedule.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <limits>

using namespace mlir;
using namespace kvir;
using namespace kvir::codegen;
using namespace kvir::gpu_lowering;
using namespace kvir::gpu_lowering::prefill;

Arguments prefill::bindArguments(const KernelFunc &kf,
                                 const PrefillKernelSpec &s) {
  Arguments a;
  unsigned index = 0;
  std::optional<unsigned> firstKv;
  listArguments(s, [&](Type, ArgumentBinding binding,
                       Value Arguments::*field) {
    if (binding == ArgumentBinding::single)
      a.*field = kf.getArgument(index);
    else if (binding == ArgumentBinding::kvOperand && !firstKv)
      firstKv = index;
    ++index;
  });
  ValueRange kvArgs = kf.getArguments().slice(*firstKv, s.kvTypes.size());
  if (s.paged)
    a.paged = kv::PagedOperands::fromFlattened(s.paged, kvArgs);
  else
    a.ragged = {kvArgs[0], kvArgs[1], kvArgs[2]};
  return a;
}

/// The request's key count and table base (first K/V row when ragged).
static std::pair<Value, Value> emitKvTable(ImplicitLocOpBuilder &b,
                                           const PrefillKernelSpec &s,
                                           const Arguments &a, Value req) {
  IRBuilder ir{b};
  if (s.paged) {
    kv::RequestTable table = kv::emitRequestTable(b, a.paged, req);
    return {table.kvLen, table.base};
  }
  auto at = [&](Value i) {
    return ir.toIndex(
        memref::LoadOp::create(b, a.ragged.indptr, ValueRange{i}));
  };
  Value first = at(req);
  return {ir.sub(at(ir.add(req, ir.idx(1))), first), first};
}

/// The smallest and largest given position of query rows
/// [first, min(last, lastInRequest)] of the request whose first row is
/// `qoStart` (none when lastInRequest is -1, a request without rows):
/// eight independent loads per step, so that one thread's serial scan
/// waits for a load's latency once per eight rows.
static std::pair<Value, Value> positionBounds(ImplicitLocOpBuilder &b,
                                              const Arguments &a, Value qoStart,
                                              Value first, Value lastInRequest,
                                              Value last) {
  IRBuilder ir{b};
  constexpr int64_t kUnroll = 8;
  Value end = ir.minS(last, lastInRequest);
  auto scan = scf::ForOp::create(
      b, first, ir.add(end, ir.idx(1)), ir.idx(kUnroll),
      ValueRange{ir.idx(std::numeric_limits<int32_t>::max()),
                 ir.idx(std::numeric_limits<int32_t>::min())},
      [&](OpBuilder &nb, Location l, Value row, ValueRange bounds) {
        ImplicitLocOpBuilder ib(l, nb);
        IRBuilder j{ib};
        Value lo = bounds[0], hi = bounds[1];
        for (int64_t u = 0; u < kUnroll; ++u) {
          // Rows past the end repeat the last one.
          Value r = j.minS(j.add(row, j.idx(u)), end);
          Value p = j.toIndex(memref::LoadOp::create(
              ib, a.positions, ValueRange{j.add(qoStart, r)}));
          lo = j.minS(lo, p);
          hi = j.maxS(hi, p);
        }
        scf::YieldOp::create(ib, ValueRange{lo, hi});
      });
  return {scan.getResult(0), scan.getResult(1)};
}

namespace {
/// A work schedule's item (WorkSchedule.h's fields) as block slot `slot`
/// takes it: its tile, the request's (one row each, or its query tile of
/// whole rows, scheduledTileRows) z-th q tile `part`, and the item's chunk,
/// chunk count and partial row.
struct ScheduledItem {
  QueryTile tile;
  Value piece, pieces, partialRow;
};
} // namespace

static ScheduledItem locateScheduledItem(ImplicitLocOpBuilder &ib,
                                         const PrefillKernelSpec &s,
                                         const Arguments &a, Value slot,
                                         Value part) {
  IRBuilder j{ib};
  auto field = [&](int64_t f) {
    return memref::LoadOp::create(ib, a.workItems, ValueRange{slot, j.idx(f)})
        .getResult();
  };
  ScheduledItem item;
  QueryTile &tile = item.tile;
  Value request = field(KVIR_WORK_REQUEST);
  // Items past the schedule's count (fixed grids) have request -1.
  tile.valid =
      arith::CmpIOp::create(ib, arith::CmpIPredicate::sge, request, j.i32(0));
  tile.request = j.toIndex(j.select(tile.valid, request, j.i32(0)));
  tile.qoStart = tile.request;
  tile.qoLen = j.idx(1);
  tile.firstRow = j.mul(part, j.idx(s.config.getQTile()));
  if (!s.oneRowPerRequest()) {
    auto indptrAt = [&](Value i) {
      return j.toIndex(memref::LoadOp::create(ib, a.qoIndptr, ValueRange{i}));
    };
    tile.qoStart = indptrAt(tile.request);
    tile.qoLen = j.sub(indptrAt(j.add(tile.request, j.idx(1))), tile.qoStart);
    tile.firstRow =
        j.add(j.mul(j.toIndex(field(KVIR_WORK_QUERY_TILE)),
                    j.idx(s.scheduledTileRows() * s.rowStride())),
              tile.firstRow);
  }
  item.piece = j.toIndex(field(KVIR_WORK_CHUNK));
  item.pieces = j.toIndex(field(KVIR_WORK_NUM_CHUNKS));
  item.partialRow = j.toIndex(field(KVIR_WORK_PARTIAL_ROW));
  return item;
}

Work prefill::emitBlockWork(ImplicitLocOpBuilder &b, const PrefillKernelSpec &s,
                            const Arguments &a, Value meta, Value thread) {
  IRBuilder ir{b};
  // Packed rows per query row (the group, or padded: rowStride).
  int64_t group = s.rowStride(), tileRows = s.config.getQTile();
  // A scheduled item's tile is scheduledTileRows() whole query rows.
  int64_t scheduledSpan = s.scheduledTileRows() * group;
  bool scheduledRows = s.scheduled && !s.oneRowPerRequest();
  auto positions = [&](ImplicitLocOpBuilder &ib, Value kvLen, Value qoLen,
                       Value firstRow) {
    IRBuilder j{ib};
    Value packedRows = j.mul(qoLen, j.idx(group));
    if (scheduledRows)
      packedRows = j.minS(
          packedRows,
          j.mul(j.add(j.divU(firstRow, j.idx(scheduledSpan)), j.idx(1)),
                j.idx(scheduledSpan)));
    Value lastRow =
        j.sub(j.minS(j.add(firstRow, j.idx(tileRows)), packedRows), j.idx(1));
    Value firstPos =
        kv::emitQueryPosition(ib, kvLen, qoLen, j.divU(firstRow, j.idx(group)));
    Value lastPos =
        kv::emitQueryPosition(ib, kvLen, qoLen, j.divU(lastRow, j.idx(group)));
    return std::make_tuple(packedRows, firstPos, lastPos);
  };
  scf::IfOp::create(
      b, ir.eq(thread, ir.idx(0)), [&](OpBuilder &nb, Location l) {
        ImplicitLocOpBuilder ib(l, nb);
        IRBuilder j{ib};
        Value slot = gpu::BlockIdOp::create(ib, gpu::Dimension::x);
        Value part = gpu::BlockIdOp::create(ib, gpu::Dimension::z);
        QueryTiles tiles(group, tileRows);
        QueryTile tile;
        // Scheduled: the work item's chunk `piece` of `pieces`.
        Value piece, pieces, partialRow = j.idx(0);
        if (s.scheduled) {
          ScheduledItem item = locateScheduledItem(ib, s, a, slot, part);
          tile = item.tile;
          piece = item.piece;
          pieces = item.pieces;
          partialRow = item.partialRow;
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
        // to the last row's causal end; with given positions (in no order),
        // from the smallest one's window start to the largest one's causal
        // end.
        if (s.positionsType && (s.causal || s.windowLeft))
          std::tie(firstPos, lastPos) = positionBounds(
              ib, a, tile.qoStart, j.divU(tile.firstRow, j.idx(group)),
              j.sub(tile.qoLen, j.idx(1)),
              j.divU(j.add(tile.firstRow, j.idx(tileRows - 1)), j.idx(group)));
        Value lo = kv::emitVisibleKeyRange(ib, firstPos, kvLen, s.causal,
                                           s.windowLeft)
                       .first;
        Value hi = kv::emitVisibleKeyRange(ib, lastPos, kvLen, s.causal,
                                           s.windowLeft)
                       .second;
        // The range starts on a unit its copies need (keys before `lo` are
        // hidden from every row by its window, the only reason `lo` is past
        // 0, and are masked): vLLM's V pool is copied in chunks of slots;
        // with copy = tma a tile of whole pages is a run of boxes, so that
        // a window's tiles go by TMA too.
        int64_t unit = s.transposedVChunk();
        if (!unit && s.config.copiesByTma() && s.paged)
          unit = s.paged.getPageSize();
        if (unit)
          lo = j.sub(lo, j.remU(lo, j.idx(unit)));
        hi = j.maxS(lo, hi);
        // Gathering: the entries of the row's list (each key is masked on
        // its own).
        if (a.topk) {
          lo = j.idx(0);
          hi = memref::DimOp::create(ib, a.topk, 1);
        }
        Value start = lo, end = hi;
        if (piece) {
          // Pieces of whole K/V tiles; partitions take at least
          // kMinPartitionKeys keys each (a tile with few keys leaves the later
          // partitions empty: they write only an LSE of -inf, which the merge
          // reads instead of the output); a schedule's chunks are long enough.
          int64_t minTiles =
              s.scheduled
                  ? 1
                  : llvm::divideCeil(kMinPartitionKeys, s.config.getKvTile());
          Value kvTile = j.idx(s.config.getKvTile());
          Value numTiles =
              arith::CeilDivUIOp::create(ib, j.sub(hi, lo), kvTile);
          Value chunk =
              j.mul(j.maxS(arith::CeilDivUIOp::create(ib, numTiles, pieces),
                           j.idx(minTiles)),
                    kvTile);
          start = j.minS(j.add(lo, j.mul(piece, chunk)), hi);
          end = j.minS(j.add(start, chunk), hi);
        }
        Value valid = arith::ExtUIOp::create(ib, ib.getI64Type(), tile.valid);
        SmallVector<std::pair<MetaSlot, Value>> values{
            {MetaValid, valid},
            {MetaQoStart, tile.qoStart},
            {MetaQoLen, tile.qoLen},
            {MetaFirstRow, tile.firstRow},
            {MetaKvLen, kvLen},
            {MetaBase, base},
            {MetaStart, start},
            {MetaEnd, end},
            {MetaRequest, tile.request},
            {MetaNumChunks, pieces ? pieces : j.idx(1)},
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
Value prefill::emitMaskOffset(ImplicitLocOpBuilder &b,
                              const PrefillKernelSpec &s, const Arguments &a,
                              Value scratch, Value thread, Value req) {
  IRBuilder ir{b};
  int64_t threads = s.config.getNumThreads();
  auto loop = scf::ForOp::create(
      b, thread, req, ir.idx(threads), ValueRange{ir.idx(0)},
      [&](OpBuilder &nb, Location l, Value r, ValueRange sum) {
        ImplicitLocOpBuilder ib(l, nb);
        IRBuilder j{ib};
        Value qoLen = j.sub(
            j.toIndex(memref::LoadOp::create(ib, a.qoIndptr,
                                             ValueRange{j.add(r, j.idx(1))})),
            j.toIndex(memref::LoadOp::create(ib, a.qoIndptr, ValueRange{r})));
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

PackedRow prefill::unpackRow(ImplicitLocOpBuilder &b,
                             const PrefillKernelSpec &s, const Work &w,
                             Value kvHead, Value rowInTile) {
  IRBuilder ir{b};
  Value r = ir.add(w.firstRow, rowInTile);
  PackedRow p;
  p.valid = ir.lt(r, w.packedRows);
  // Clamped, so that addresses of rows past the request stay inside it.
  Value clamped = ir.minS(r, ir.sub(w.packedRows, ir.idx(1)));
  p.queryRow = ir.divU(clamped, ir.idx(s.rowStride()));
  p.head = packedRowHead(b, s, kvHead, clamped);
  if (s.rowStride() != s.group())
    p.valid = arith::AndIOp::create(
        b, p.valid,
        ir.lt(ir.remU(clamped, ir.idx(s.rowStride())), ir.idx(s.group())));
  return p;
}

Value prefill::packedRowHead(ImplicitLocOpBuilder &b,
                             const PrefillKernelSpec &s, Value kvHead,
                             Value packedRow) {
  IRBuilder ir{b};
  Value inGroup = ir.remU(packedRow, ir.idx(s.rowStride()));
  if (s.rowStride() != s.group())
    inGroup = ir.minS(inGroup, ir.idx(s.group() - 1));
  return ir.add(ir.mul(kvHead, ir.idx(s.group())), inGroup);
}
