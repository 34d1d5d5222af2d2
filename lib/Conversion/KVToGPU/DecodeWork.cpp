//===- DecodeWork.cpp - Where a decode block's keys are -------------------===//
//
// The decode kernel's first steps (DecodeKernelParts.h): the block's
// coordinates and work item, thread 0's reading of the request's table
// into the block's token range, and the group's queries staged in shared
// memory.
//
//===----------------------------------------------------------------------===//
#include "DecodeKernelParts.h"

#include "kvir/Codegen/IRBuilder.h"
#include "kvir/Dialect/KV/Utils/Search.h"
#include "kvir/Dialect/KV/Utils/Visibility.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace kvir;
using namespace kvir::codegen;
using namespace kvir::gpu_lowering;
using namespace kvir::gpu_lowering::decode;

DecodeBlock::DecodeBlock(const DecodeKernelSpec &spec, const KernelFunc &kf,
                         const DecodeBuffers &buf, const DecodeArguments &args)
    : spec(spec), kf(kf), buf(buf), args(args), headDim(spec.kv.getHeadDim()),
      group(spec.group()), vec(spec.config.getVector()),
      tx(spec.config.getThreadsX()), tz(spec.config.getThreadsZ()),
      tile(spec.config.getTileTokens()), numThreads(kf.getNumThreads()),
      padded(tx * vec), elt(spec.kv.getStorageElementType()),
      fp8(spec.kv.isFp8()), int8(spec.int8Groups()),
      quantGroup(spec.int8Groups() ? spec.kv.getQuantGroup() : 0) {}

Value DecodeBlock::metaAt(ImplicitLocOpBuilder &b, int64_t i) const {
  IRBuilder ir{b};
  return ir.toIndex(
      memref::LoadOp::create(b, kf.getShared(buf.meta), ValueRange{ir.idx(i)}));
}

Value DecodeBlock::toVecF32(ImplicitLocOpBuilder &b, Value v) const {
  if (getElementTypeOrSelf(v.getType()).isF32())
    return v;
  return arith::ExtFOp::create(b, VectorType::get({vec}, b.getF32Type()), v);
}

void decode::emitBlockCoordinates(ImplicitLocOpBuilder &b, DecodeBlock &blk) {
  IRBuilder ir{b};
  blk.x = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  blk.y = gpu::ThreadIdOp::create(b, gpu::Dimension::y);
  blk.z = gpu::ThreadIdOp::create(b, gpu::Dimension::z);
  blk.req = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  blk.kvHead = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  blk.lane =
      ir.add(blk.x, ir.mul(ir.idx(blk.tx),
                           ir.add(blk.y, ir.mul(ir.idx(blk.group), blk.z))));
  if (Value workItems = blk.args.workItems) {
    // The block's work item, the same for every thread: lane 0 of each
    // warp loads it (16 bytes) and shuffles it to the warp. Blocks of a
    // fixed grid past the schedule's items (request -1) have nothing to do.
    auto itemType = VectorType::get({4}, b.getI32Type());
    Value laneZero =
        ir.eq(arith::RemUIOp::create(b, blk.lane, ir.idx(32)), ir.idx(0));
    Value item =
        scf::IfOp::create(
            b, laneZero,
            [&](OpBuilder &nb, Location l) {
              auto load = vector::LoadOp::create(
                  nb, l, itemType, workItems, ValueRange{blk.req, ir.idx(0)});
              load.setAlignment(16);
              scf::YieldOp::create(nb, l, ValueRange{load.getResult()});
            },
            [&](OpBuilder &nb, Location l) {
              Value zeros = arith::ConstantOp::create(nb, l, itemType,
                                                      nb.getZeroAttr(itemType));
              scf::YieldOp::create(nb, l, ValueRange{zeros});
            })
            .getResult(0);
    auto field = [&](int64_t i) {
      Value v = vector::ExtractOp::create(b, item, ArrayRef<int64_t>{i});
      return gpu::ShuffleOp::create(b, v, ir.i32(0), ir.i32(32),
                                    gpu::ShuffleMode::IDX)
          .getShuffleResult();
    };
    Value request = field(0);
    blk.req = ir.toIndex(request);
    blk.chunk = ir.toIndex(field(1));
    blk.numChunks = ir.toIndex(field(2));
    blk.partialRow = ir.toIndex(field(3));
    auto hasWork = scf::IfOp::create(
        b,
        arith::CmpIOp::create(b, arith::CmpIPredicate::sge, request, ir.i32(0)),
        /*withElseRegion=*/false);
    b.setInsertionPoint(hasWork.thenBlock()->getTerminator());
  }
  // q and the outputs are indexed by the request (decode) or the row.
  blk.qRow = blk.req;
  if (Value qoIndptr = blk.args.qoIndptr) {
    // Rows past the requests' (buffers of a larger batch: a CUDA graph's
    // padding) belong to none: their blocks write nothing.
    Value rows = ir.toIndex(memref::LoadOp::create(
        b, qoIndptr,
        ValueRange{ir.sub(memref::DimOp::create(b, qoIndptr, 0), ir.idx(1))}));
    auto hasRow = scf::IfOp::create(b, ir.lt(blk.qRow, rows),
                                    /*withElseRegion=*/false);
    b.setInsertionPoint(hasRow.thenBlock()->getTerminator());
  }
  blk.zero = ir.idx(0);
  blk.head = ir.add(ir.mul(blk.kvHead, ir.idx(blk.group)), blk.y);
  blk.dim0 = ir.mul(blk.x, ir.idx(blk.vec));
  blk.activeX = ir.lt(blk.dim0, ir.idx(blk.headDim));
}

namespace {

/// Thread 0's part of emitBlockRange: the meta values, stored.
void storeBlockRange(ImplicitLocOpBuilder &ib, const DecodeBlock &blk,
                     const LiveTileMarks *marks) {
  const DecodeKernelSpec &spec = blk.spec;
  const DecodeArguments &a = blk.args;
  IRBuilder k{ib};
  Value request = blk.req, qRow = blk.qRow;
  Value queryRow, qoLen;
  if (Value qoIndptr = a.qoIndptr) {
    // The row's request: the last of the B request starts at or below
    // it (empty requests share their start with the next one; searching
    // the starts only keeps the request and its table reads in bounds).
    auto indptrAt = [&](ImplicitLocOpBuilder &jb, Value i) {
      return IRBuilder{jb}.toIndex(
          memref::LoadOp::create(jb, qoIndptr, ValueRange{i}));
    };
    Value requests = k.sub(memref::DimOp::create(ib, qoIndptr, 0), k.idx(1));
    request = kv::emitLastAtOrBelow(ib, requests, indptrAt, qRow);
    Value qoStart = indptrAt(ib, request);
    qoLen = k.sub(indptrAt(ib, k.add(request, k.idx(1))), qoStart);
    queryRow = k.sub(qRow, qoStart);
  }
  kv::RequestTable table = kv::emitRequestTable(ib, a.kv, request);
  // The query's position: kv_len - 1 (a decode); a query row's is given,
  // or bottom-right.
  Value position = k.sub(table.kvLen, k.idx(1));
  if (a.positions)
    position =
        k.toIndex(memref::LoadOp::create(ib, a.positions, ValueRange{qRow}));
  else if (a.qoIndptr)
    position = kv::emitQueryPosition(ib, table.kvLen, qoLen, queryRow);
  // The visible keys: [position - window_left, position] (causal), or
  // all of [0, kv_len). Gathering: the entries of the request's list
  // (each key is masked on its own).
  Value first = k.idx(0), end = table.kvLen;
  if (a.topk) {
    end = memref::DimOp::create(ib, a.topk, 1);
  } else {
    if (spec.windowLeft)
      first = k.maxS(first, k.sub(position, k.idx(*spec.windowLeft)));
    if (spec.causal)
      end = k.maxS(k.minS(end, k.add(position, k.idx(1))), k.idx(0));
    first = k.minS(first, end);
  }
  Value start = first;
  if (blk.numChunks) {
    // Chunks split the visible keys, not [0, kv_len): with a sliding
    // window, all of them still get work.
    Value limit = end;
    Value chunkTokens =
        arith::CeilDivUIOp::create(ib, k.sub(limit, first), blk.numChunks);
    start = k.minS(k.add(first, k.mul(blk.chunk, chunkTokens)), limit);
    end = k.minS(k.add(start, chunkTokens), limit);
  }
  // Transposed V chunks start on multiples of their tokens (of sectors
  // where tiles are whole sectors): the range starts there, and the
  // tokens before `start` are masked.
  Value visible = start;
  if (int64_t align = spec.transposedVAlignment())
    start = k.sub(start, k.remU(start, k.idx(align)));
  SmallVector<Value> metaValues{start, end, table.base, visible};
  if (spec.needsQueryPosition())
    metaValues.push_back(position);
  if (a.qoIndptr || a.topk || a.framePositions)
    metaValues.push_back(request);
  if (a.topk || a.framePositions)
    metaValues.push_back(table.kvLen);
  if (a.framePositions) {
    kv::FrameRow frame =
        kv::emitFrameRow(ib, a.frameIndptr, a.framePositions, qRow, position);
    metaValues.append({frame.request, frame.position, frame.keyShift});
  }
  Value meta = blk.kf.getShared(blk.buf.meta);
  for (auto [i, v] : llvm::enumerate(metaValues))
    memref::StoreOp::create(ib, k.toI32(v), meta, ValueRange{k.idx(i)});
  // The live-tile slots start below every tile's mark (shared memory
  // starts undefined).
  if (marks)
    marks->clear(ib);
}

/// The z == 0 threads' part: the group's queries into shared memory
/// (zeros past the head dim).
void stageQuery(ImplicitLocOpBuilder &ib, const DecodeBlock &blk) {
  auto qVecType = VectorType::get({blk.vec}, blk.spec.qType.getElementType());
  Value qv =
      scf::IfOp::create(
          ib, blk.activeX,
          [&](OpBuilder &nb2, Location l2) {
            ImplicitLocOpBuilder jb(l2, nb2);
            auto v = vector::LoadOp::create(
                jb, qVecType, blk.args.q,
                ValueRange{blk.qRow, blk.head, blk.dim0});
            // At most 16 bytes: buffers are only promised 16-byte
            // alignment (f32 lanes past head dim 128 read more).
            v.setAlignment(std::min<int64_t>(
                16, blk.vec * blk.spec.qType.getElementTypeBitWidth() / 8));
            scf::YieldOp::create(jb, ValueRange{v.getResult()});
          },
          [&](OpBuilder &nb2, Location l2) {
            ImplicitLocOpBuilder jb(l2, nb2);
            Value zeros = arith::ConstantOp::create(jb, qVecType,
                                                    jb.getZeroAttr(qVecType));
            scf::YieldOp::create(jb, ValueRange{zeros});
          })
          .getResult(0);
  vector::StoreOp::create(ib, qv, blk.kf.getShared(blk.buf.query),
                          ValueRange{blk.y, blk.dim0});
}

} // namespace

void decode::emitBlockRange(ImplicitLocOpBuilder &b, DecodeBlock &blk,
                            const LiveTileMarks *marks) {
  IRBuilder ir{b};
  scf::IfOp::create(b, ir.eq(blk.lane, blk.zero),
                    [&](OpBuilder &nb, Location l) {
                      ImplicitLocOpBuilder ib(l, nb);
                      storeBlockRange(ib, blk, marks);
                      scf::YieldOp::create(ib);
                    });
  scf::IfOp::create(b, ir.eq(blk.z, blk.zero), [&](OpBuilder &nb, Location l) {
    ImplicitLocOpBuilder ib(l, nb);
    stageQuery(ib, blk);
    scf::YieldOp::create(ib);
  });
  gpu::BarrierOp::create(b);
  blk.start = blk.metaAt(b, 0);
  blk.end = blk.metaAt(b, 1);
  blk.tableBase = blk.metaAt(b, 2);
  blk.visibleStart = blk.metaAt(b, 3);
  if (blk.spec.queryRows())
    blk.req = blk.metaAt(b, kMetaRequest);
  if (blk.spec.needsQueryPosition())
    blk.queryPosition = blk.metaAt(b, kMetaPosition);
  blk.variantRequest = blk.req;
  blk.variantPosition = blk.queryPosition;
  if (blk.args.framePositions) {
    blk.variantRequest = blk.metaAt(b, kMetaFrameRequest);
    blk.variantPosition = blk.metaAt(b, kMetaFramePosition);
    blk.keyShift = blk.metaAt(b, kMetaKeyShift);
  }
}
