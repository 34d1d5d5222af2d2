//===- PrefillHandoff.cpp - Producer and consumer warpgroups --------------===//
//
// roles = producer (PrefillKernelParts.h, StageHandoff): the mbarrier ring
// between the producer warpgroup and the consumers, and the consumers'
// turns at issuing their products.
//
//===----------------------------------------------------------------------===//
#include "PrefillKernelParts.h"

#include "kvir/Codegen/IRBuilder.h"
#include "kvir/Codegen/WgmmaAtom.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace kvir;
using namespace kvir::codegen;
using namespace kvir::gpu_lowering;
using namespace kvir::gpu_lowering::prefill;

namespace {
/// Named barrier ids (0 is the block's __syncthreads).
constexpr int64_t kProducerBarrier = 1;
constexpr int64_t kFirstTurnBarrier = 2;
constexpr int64_t kWarpgroupThreads = 32 * WgmmaAtom::kWarps;

Value i32(ImplicitLocOpBuilder &b, int64_t v) {
  return arith::ConstantIntOp::create(b, v, 32);
}

/// bar.sync `id`, `threads` (a named barrier, PTX ISA 9.7.13.1).
void syncNamed(ImplicitLocOpBuilder &b, int64_t id, int64_t threads) {
  NVVM::BarrierOp::create(b, TypeRange{}, i32(b, id), i32(b, threads),
                          /*reductionOp=*/nullptr,
                          /*reductionPredicate=*/Value());
}

/// bar.arrive `id`, `threads`.
void arriveNamed(ImplicitLocOpBuilder &b, int64_t id, int64_t threads) {
  NVVM::BarrierArriveOp::create(b, i32(b, id), i32(b, threads));
}

/// Builds `body(b, g)` for the warpgroup's `group` under a branch per
/// group, so that each named barrier id is a constant (ptxas reserves all
/// 16 barriers for an id it cannot see).
void forGroup(ImplicitLocOpBuilder &b, Value group, int64_t groups,
              function_ref<void(ImplicitLocOpBuilder &, int64_t)> body) {
  IRBuilder ir{b};
  for (int64_t g = 0; g < groups; ++g)
    emitIf(b, ir.eq(group, ir.idx(g)),
           [&](ImplicitLocOpBuilder &ib) { body(ib, g); });
}
} // namespace

StageHandoff::StageHandoff(const PrefillKernelSpec &s, Value barriers,
                           bool queryLanding)
    : consumerGroups(s.config.getWarps() / WgmmaAtom::kWarps),
      ring(s.config.getStages(), /*consumerArrivals=*/32 * s.config.getWarps(),
           /*producerArrivals=*/s.copyThreads()),
      barriers(barriers), queryLanding(queryLanding) {}

void StageHandoff::init(ImplicitLocOpBuilder &b, Value leader) const {
  // (The ring's init fences this one's too: same thread, before it.)
  if (queryLanding)
    emitIf(b, leader, [&](ImplicitLocOpBuilder &ib) {
      NVVM::MBarrierInitOp::create(ib, queryBarrier(ib), i32(ib, 1), Value());
    });
  ring.init(b, barriers, leader);
}

Value StageHandoff::queryBarrier(ImplicitLocOpBuilder &b) const {
  assert(queryLanding && "the query comes by TMA");
  return ring.barrierAfterRing(b, barriers, 0);
}

void StageHandoff::queryExpecting(ImplicitLocOpBuilder &b, Value bytes) const {
  NVVM::MBarrierArriveExpectTxOp::create(
      b, b.getI64Type(), queryBarrier(b), bytes,
      NVVM::MemScopeKindAttr::get(b.getContext(), NVVM::MemScopeKind::CTA),
      /*relaxed=*/nullptr, /*predicate=*/Value());
}

void StageHandoff::queryArrived(ImplicitLocOpBuilder &b) const {
  NVVM::MBarrierArriveOp::create(
      b, b.getI64Type(), queryBarrier(b), Value(),
      NVVM::MemScopeKindAttr::get(b.getContext(), NVVM::MemScopeKind::CTA));
}

void StageHandoff::waitQuery(ImplicitLocOpBuilder &b) const {
  NVVM::MBarrierTryWaitParityOp::create(b, queryBarrier(b), i32(b, 0),
                                        i32(b, 0));
}

void StageHandoff::waitEmpty(ImplicitLocOpBuilder &b, Value index) const {
  auto [stage, parity] = ring.slot(b, index);
  ring.producerWaitEmpty(b, barriers, stage, parity);
}

void StageHandoff::filled(ImplicitLocOpBuilder &b, Value index) const {
  ring.producerArrive(b, barriers, ring.slot(b, index).first);
}

void StageHandoff::filledExpecting(ImplicitLocOpBuilder &b, Value index,
                                   Value bytes) const {
  ring.producerArriveExpecting(b, barriers, ring.slot(b, index).first, bytes);
}

Value StageHandoff::fullBarrier(ImplicitLocOpBuilder &b, Value index) const {
  return ring.fullBarrier(b, barriers, ring.slot(b, index).first);
}

void StageHandoff::producerSync(ImplicitLocOpBuilder &b) const {
  syncNamed(b, kProducerBarrier, kWarpgroupThreads);
}

void StageHandoff::waitFull(ImplicitLocOpBuilder &b, Value index) const {
  auto [stage, parity] = ring.slot(b, index);
  ring.consumerWait(b, barriers, stage, parity);
}

void StageHandoff::release(ImplicitLocOpBuilder &b, Value index) const {
  ring.consumerRelease(b, barriers, ring.slot(b, index).first);
}

void StageHandoff::beginTurns(ImplicitLocOpBuilder &b, Value group) const {
  if (consumerGroups < 2)
    return;
  IRBuilder ir{b};
  emitIf(b, ir.eq(group, ir.idx(consumerGroups - 1)),
         [&](ImplicitLocOpBuilder &ib) {
           arriveNamed(ib, kFirstTurnBarrier, 2 * kWarpgroupThreads);
         });
}

void StageHandoff::awaitTurn(ImplicitLocOpBuilder &b, Value group) const {
  if (consumerGroups < 2)
    return;
  // This group's threads and the arrivals of the group before.
  forGroup(b, group, consumerGroups, [&](ImplicitLocOpBuilder &gb, int64_t g) {
    syncNamed(gb, kFirstTurnBarrier + g, 2 * kWarpgroupThreads);
  });
}

void StageHandoff::passTurn(ImplicitLocOpBuilder &b, Value group) const {
  if (consumerGroups < 2)
    return;
  forGroup(b, group, consumerGroups, [&](ImplicitLocOpBuilder &gb, int64_t g) {
    int64_t next = (g + 1) % consumerGroups;
    arriveNamed(gb, kFirstTurnBarrier + next, 2 * kWarpgroupThreads);
  });
}
