//===- Pipeline.cpp - Rings of shared-memory stages -----------------------===//
#include "kvir/Codegen/Pipeline.h"
#include "kvir/Codegen/IRBuilder.h"
#include "kvir/Codegen/PagedTileLoader.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <cassert>

using namespace mlir;
using namespace kvir::codegen;

CpAsyncPipeline::CpAsyncPipeline(int64_t stages, int64_t groupsPerTile,
                                 Refill refill, Readers readers)
    : stages(stages), groupsPerTile(groupsPerTile), refill(refill),
      readers(readers) {
  assert(stages >= 1 && groupsPerTile >= 1 && "a ring of at least one stage");
  assert((stages > 1 || (groupsPerTile == 2 && refill == Refill::afterWait)) &&
         "one buffer per part: K and V, each refilled after its wait");
}

Value CpAsyncPipeline::stageOf(ImplicitLocOpBuilder &b, Value index) const {
  IRBuilder ir{b};
  return ir.remU(index, ir.idx(stages));
}

void CpAsyncPipeline::commit(ImplicitLocOpBuilder &b) const {
  commitAsyncCopies(b);
}

int64_t CpAsyncPipeline::pendingAtWait() const {
  // One buffer per part: only the part waited on is in flight.
  if (isSingleBuffered())
    return 0;
  // In flight at the wait: the oldest tile's groups from the one waited on,
  // the groups of tiles i + 1 ... i + stages - 2, and the refill of tile
  // i + stages - 1 up to the group waited on (afterWait: the groups before
  // it; beforeWait: those and the group itself).
  int64_t younger = (stages - 1) * groupsPerTile - 1;
  return refill == Refill::beforeWait ? younger + 1 : younger;
}

void CpAsyncPipeline::wait(ImplicitLocOpBuilder &b) const {
  waitAsyncCopies(b, pendingAtWait());
  publish(b);
  gpu::BarrierOp::create(b);
}

void CpAsyncPipeline::drain(ImplicitLocOpBuilder &b) const {
  waitAsyncCopies(b, 0);
  publish(b);
}

void CpAsyncPipeline::publish(ImplicitLocOpBuilder &b) const {
  if (readers == Readers::asyncProxy)
    NVVM::FenceProxyOp::create(
        b, NVVM::ProxyKind::async_shared,
        NVVM::SharedSpaceAttr::get(b.getContext(),
                                   NVVM::SharedSpace::shared_cta));
}

MBarrierPipeline::MBarrierPipeline(int64_t stages, int64_t consumerArrivals,
                                   int64_t producerArrivals)
    : stages(stages), consumerArrivals(consumerArrivals),
      producerArrivals(producerArrivals) {
  assert(stages >= 2 && consumerArrivals >= 1 && producerArrivals >= 1 &&
         "a ring of at least two stages, filled and released by someone");
}

namespace {
enum BarrierKind : int64_t { Full = 0, Empty = 1 };

Value i32(ImplicitLocOpBuilder &b, int64_t v) {
  return arith::ConstantIntOp::create(b, v, 32);
}
} // namespace

Value MBarrierPipeline::barrier(ImplicitLocOpBuilder &b, Value barriers,
                                int64_t kind, Value stage) const {
  IRBuilder ir{b};
  Value index = ir.add(ir.idx(kind * stages), stage);
  return ir.sharedPointer(barriers, ir.mul(index, ir.idx(8)));
}

Value MBarrierPipeline::barrierAfterRing(ImplicitLocOpBuilder &b,
                                         Value barriers, int64_t i) const {
  IRBuilder ir{b};
  return ir.sharedPointer(barriers, ir.idx(8 * (barrierCount() + i)));
}

void MBarrierPipeline::init(ImplicitLocOpBuilder &b, Value barriers,
                            Value leader) const {
  auto ifOp = scf::IfOp::create(b, leader, /*withElseRegion=*/false);
  ImplicitLocOpBuilder tb =
      ImplicitLocOpBuilder::atBlockBegin(b.getLoc(), ifOp.thenBlock());
  tb.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  IRBuilder ir{tb};
  for (int64_t s = 0; s < stages; ++s) {
    // full: the producer's arrivals (with transactions, the copies');
    // empty: every consumer's.
    NVVM::MBarrierInitOp::create(tb, barrier(tb, barriers, Full, ir.idx(s)),
                                 i32(tb, producerArrivals), Value());
    NVVM::MBarrierInitOp::create(tb, barrier(tb, barriers, Empty, ir.idx(s)),
                                 i32(tb, consumerArrivals), Value());
  }
  NVVM::FenceMbarrierInitOp::create(tb);
}

std::pair<Value, Value> MBarrierPipeline::slot(ImplicitLocOpBuilder &b,
                                               Value index) const {
  IRBuilder ir{b};
  Value stage = ir.remU(index, ir.idx(stages));
  Value round = ir.divU(index, ir.idx(stages));
  Value parity = arith::IndexCastUIOp::create(b, b.getI32Type(),
                                              ir.remU(round, ir.idx(2)));
  return {stage, parity};
}

Value MBarrierPipeline::fullBarrier(ImplicitLocOpBuilder &b, Value barriers,
                                    Value stage) const {
  return barrier(b, barriers, Full, stage);
}

void MBarrierPipeline::waitPhase(ImplicitLocOpBuilder &b, Value barriers,
                                 int64_t kind, Value stage,
                                 Value parity) const {
  NVVM::MBarrierTryWaitParityOp::create(b, barrier(b, barriers, kind, stage),
                                        parity, i32(b, 0));
}

void MBarrierPipeline::arrive(ImplicitLocOpBuilder &b, Value barriers,
                              int64_t kind, Value stage) const {
  NVVM::MBarrierArriveOp::create(
      b, b.getI64Type(), barrier(b, barriers, kind, stage), Value(),
      NVVM::MemScopeKindAttr::get(b.getContext(), NVVM::MemScopeKind::CTA));
}

void MBarrierPipeline::producerWaitEmpty(ImplicitLocOpBuilder &b,
                                         Value barriers, Value stage,
                                         Value parity) const {
  Value freed = arith::XOrIOp::create(b, parity, i32(b, 1));
  waitPhase(b, barriers, Empty, stage, freed);
}

void MBarrierPipeline::producerArrive(ImplicitLocOpBuilder &b, Value barriers,
                                      Value stage) const {
  arrive(b, barriers, Full, stage);
}

void MBarrierPipeline::producerArriveExpecting(ImplicitLocOpBuilder &b,
                                               Value barriers, Value stage,
                                               Value bytes) const {
  NVVM::MBarrierArriveExpectTxOp::create(
      b, b.getI64Type(), barrier(b, barriers, Full, stage), bytes,
      NVVM::MemScopeKindAttr::get(b.getContext(), NVVM::MemScopeKind::CTA),
      /*relaxed=*/nullptr, /*predicate=*/Value());
}

void MBarrierPipeline::producerAcquire(ImplicitLocOpBuilder &b, Value barriers,
                                       Value stage, Value parity,
                                       Value bytes) const {
  assert(producerArrivals == 1 && "one arrival announces the transactions");
  producerWaitEmpty(b, barriers, stage, parity);
  producerArriveExpecting(b, barriers, stage, bytes);
}

void MBarrierPipeline::consumerWait(ImplicitLocOpBuilder &b, Value barriers,
                                    Value stage, Value parity) const {
  waitPhase(b, barriers, Full, stage, parity);
}

void MBarrierPipeline::consumerRelease(ImplicitLocOpBuilder &b, Value barriers,
                                       Value stage) const {
  arrive(b, barriers, Empty, stage);
}
