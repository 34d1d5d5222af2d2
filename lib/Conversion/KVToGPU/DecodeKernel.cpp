//===- DecodeKernel.cpp - The batch-decode kernel -------------------------===//
//
// One block per (request, KV head, KV partition); threads (x, y, z) =
// (vector along the head dim, query head of the GQA group, token in
// flight), as the op's #kvgpu.decode says. Per block, thread 0 reads the
// request's table entries (kv_len and the table base) and the z == 0
// threads stage the group's queries, both through shared memory. Per tile,
// PagedTileLoader stages the page ids (once per page) and copies the K/V
// rows into shared memory with vector loads, once for the whole GQA group
// (vLLM's V pool transposed, then written as rows; fp8 / int8 codes as
// stored, converted in registers or once per tile for a group); every
// (y, z) then scores its tokens: a vector dot product reduced across x
// (WarpOps) and AttentionState's online update in base 2 (log2(e) folded
// into the query scale, ex2.approx, no libdevice). The z-lanes' partial
// states merge through shared memory. Split-KV: the split kernel takes one
// work item per block (blockIdx.x), a chunk of a request's visible keys,
// whose base-2 f32 partial state goes to the item's workspace row.
//
// buildDecodeBody composes the parts (DecodeKernelParts.h): the block's
// coordinates and range (DecodeWork.cpp), the K/V stream
// (DecodeKVStream.cpp), the rows the scores read (DecodeKeyRows.cpp), the
// mainloop (DecodeMainloop.cpp) and the epilogue (here).
//
//===----------------------------------------------------------------------===//
#include "DecodeKernelParts.h"

#include "kvir/Codegen/AttentionState.h"
#include "kvir/Codegen/IRBuilder.h"
#include "kvir/Dialect/KV/Utils/Quantization.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cmath>

using namespace mlir;
using namespace kvir;
using namespace kvir::codegen;
using namespace kvir::gpu_lowering;
using namespace kvir::gpu_lowering::decode;

namespace {

/// The z-lanes' partial states of (request, head), merged through shared
/// memory.
PartialState mergeZLanes(ImplicitLocOpBuilder &b, const DecodeBlock &blk,
                         PartialState result) {
  IRBuilder ir{b};
  const KernelFunc &kf = blk.kf;
  Value mShared = kf.getShared(*blk.buf.zMax);
  Value lShared = kf.getShared(*blk.buf.zSum);
  Value accShared = kf.getShared(*blk.buf.zAcc);
  Value slot = ir.add(ir.mul(blk.z, ir.idx(blk.group)), blk.y);
  scf::IfOp::create(b, ir.eq(blk.x, blk.zero), [&](OpBuilder &nb, Location l) {
    memref::StoreOp::create(nb, l, result.m, mShared, ValueRange{slot});
    memref::StoreOp::create(nb, l, result.l, lShared, ValueRange{slot});
    scf::YieldOp::create(nb, l);
  });
  vector::StoreOp::create(b, result.acc, accShared,
                          ValueRange{slot, blk.dim0});
  gpu::BarrierOp::create(b);
  auto vecF32 = VectorType::get({blk.vec}, b.getF32Type());
  SmallVector<PartialState> lanes;
  for (int64_t zz = 0; zz < blk.tz; ++zz) {
    Value slotZ = ir.add(ir.idx(zz * blk.group), blk.y);
    lanes.push_back({memref::LoadOp::create(b, mShared, ValueRange{slotZ}),
                     memref::LoadOp::create(b, lShared, ValueRange{slotZ}),
                     vector::LoadOp::create(b, vecF32, accShared,
                                            ValueRange{slotZ, blk.dim0})});
  }
  return AttentionState(b, AttentionState::Flavor::ptxBase2).merge(lanes);
}

/// Writes `result` as the state of row `rowIdx` of `outBuf` / `lseBuf` in
/// `base` from the lanes holding real dims; a sink joins a final state.
void writeState(ImplicitLocOpBuilder &ib, const DecodeBlock &blk,
                const PartialState &result, Value outBuf, Value lseBuf,
                kv::LseBase base, SmallVector<Value> rowIdx, bool final) {
  IRBuilder k{ib};
  AttentionState finalState(ib, AttentionState::Flavor::ptxBase2);
  // A sink joins a row's whole state once: final states only.
  PartialState whole = result;
  if (final && blk.variants)
    if (Value sink = blk.variants->sinkLogit(ib, blk.head))
      whole = finalState.withSink(result, sink);
  FinalState fin = finalState.finalize(whole, base);
  Type outElt = cast<MemRefType>(outBuf.getType()).getElementType();
  int64_t vec = blk.vec;
  emitIf(ib, blk.activeX, [&](ImplicitLocOpBuilder &jb) {
    Value v = fin.o;
    if (!outElt.isF32())
      v = arith::TruncFOp::create(jb, VectorType::get({vec}, outElt), v);
    SmallVector<Value> idx(rowIdx);
    idx.push_back(blk.dim0);
    // At most 16 bytes: buffers are only promised 16-byte alignment.
    vector::StoreOp::create(jb, v, outBuf, idx)
        .setAlignment(
            std::min<int64_t>(16, vec * outElt.getIntOrFloatBitWidth() / 8));
  });
  emitIf(ib, k.eq(blk.x, k.idx(0)), [&](ImplicitLocOpBuilder &jb) {
    memref::StoreOp::create(jb, fin.lse, lseBuf, rowIdx);
  });
}

/// The query of the thread's head and dims in f32, scaled so that scores
/// come out in the working base's units (and by fp8's k_scale: scores are
/// dot products with the codes, read 1 / fp8HalfScale of their value).
Value loadScaledQuery(ImplicitLocOpBuilder &b, const DecodeBlock &blk) {
  IRBuilder ir{b};
  AttentionState state(b, AttentionState::Flavor::ptxBase2);
  int64_t vec = blk.vec;
  double qScale = blk.spec.smScale *
                  state.logitPrescale(blk.spec.softCap.has_value(),
                                      blk.natural);
  double codeScale = blk.fp8 ? kv::fp8HalfScale(blk.elt) : 1.0;
  Value qScaleVec = ir.splat(ir.f32(qScale * codeScale), vec);
  if (blk.fp8)
    qScaleVec = ir.mul(qScaleVec, ir.splat(blk.args.kv.kScale, vec));
  auto qVecType = VectorType::get({vec}, blk.spec.qType.getElementType());
  return ir.mul(
      blk.toVecF32(b, vector::LoadOp::create(
                          b, qVecType, blk.kf.getShared(blk.buf.query),
                          ValueRange{blk.y, blk.dim0})
                          .getResult()),
      qScaleVec);
}

} // namespace

void decode::emitDecodeEpilogue(ImplicitLocOpBuilder &b,
                                const DecodeBlock &blk, PartialState result) {
  IRBuilder ir{b};
  if (blk.tz > 1)
    result = mergeZLanes(b, blk, result);
  // Write the state of (request, head): z-lane 0, lanes holding real dims.
  // Partial states stay f32 in base 2 for the merge kernel; an item that
  // is a whole request is final.
  const DecodeArguments &a = blk.args;
  emitIf(b, ir.eq(blk.z, blk.zero), [&](ImplicitLocOpBuilder &ib) {
    if (!blk.spec.partitioned) {
      writeState(ib, blk, result, a.out, a.lse, blk.spec.base,
                 {blk.qRow, blk.head}, /*final=*/true);
      return;
    }
    auto wholeRequest = scf::IfOp::create(
        ib, IRBuilder{ib}.eq(blk.numChunks, IRBuilder{ib}.idx(1)),
        /*withElseRegion=*/true);
    {
      ImplicitLocOpBuilder tb = ImplicitLocOpBuilder::atBlockTerminator(
          ib.getLoc(), wholeRequest.thenBlock());
      writeState(tb, blk, result, a.finalOut, a.finalLse, blk.spec.base,
                 {blk.qRow, blk.head}, /*final=*/true);
    }
    ImplicitLocOpBuilder eb = ImplicitLocOpBuilder::atBlockTerminator(
        ib.getLoc(), wholeRequest.elseBlock());
    writeState(eb, blk, result, a.out, a.lse, kv::LseBase::two,
               {blk.partialRow, blk.head}, /*final=*/false);
  });
}

void gpu_lowering::buildDecodeBody(const KernelFunc &kf,
                                   const DecodeKernelSpec &spec) {
  ImplicitLocOpBuilder b = kf.getBuilder();
  IRBuilder ir{b};
  SharedMemoryLayout layout;
  DecodeBuffers buf = buildLayout(spec, layout);
  DecodeArguments args = bindDecodeArguments(kf, spec);
  DecodeBlock blk(spec, kf, buf, args);
  emitBlockCoordinates(b, blk);
  if (spec.variants)
    blk.variants.emplace(spec.variants.bind(kf.getArguments()));
  blk.natural = blk.variants && blk.variants->modifiesScores();
  // Tile skipping's marks: slots for the tiles from the one scored to the
  // one marked, `stages` tiles ahead.
  std::optional<LiveTileMarks> marks;
  if (buf.liveTiles)
    marks.emplace(kf.getShared(*buf.liveTiles), spec.config.getStages() + 1);
  const LiveTileMarks *liveMarks = marks ? &*marks : nullptr;
  emitBlockRange(b, blk, liveMarks);

  Value zeroVec = ir.splat(ir.f32(0.0), blk.vec);
  Value qVec = loadScaledQuery(b, blk);
  DecodeKVStream stream(b, blk, liveMarks);
  stream.emitPrologue(b);
  Value negInf = ir.f32(-INFINITY);
  DecodeKeyRows rows(b, blk, stream, zeroVec);
  PartialState result =
      emitDecodeMainloop(b, blk, stream, rows, qVec, zeroVec, negInf);
  // fp8: V was accumulated as scaled codes; v_scale applies once.
  if (blk.fp8)
    result.acc = ir.mul(
        result.acc,
        ir.splat(ir.mul(args.kv.vScale, ir.f32(kv::fp8HalfScale(blk.elt))),
                 blk.vec));
  emitDecodeEpilogue(b, blk, result);
}
