//===- InstrumentSm90.cpp - Rewrite sm_90 NVVM ops into runtime calls -----===//
//
// wgmma (fence, mma_async, commit_group, wait_group), mbarriers, proxy
// fences, setmaxnreg, elect.sync and bar.arrive become calls of the runtime
// (RuntimeABI.h; Wgmma.cpp and Barriers.cpp implement them).
//
// A wgmma's result is computed at issue (Wgmma.cpp says why that is exact
// for a kernel without reports); what makes it exact is that no other
// instruction reads the result before the wait that retires it. The call
// returns a ticket for the op; trackWgmmaTickets makes each result carry its
// ticket — through block arguments, where a loop carries an accumulator,
// and through extractvalue / insertvalue, which move no register — and
// checks the ticket at every read that is not the accumulator input of a
// chained wgmma. The RS form's A registers get a ticket slot each.
//
//===----------------------------------------------------------------------===//
#include "Instrumenter.h"
#include "kvir/Emulator/RuntimeABI.h"

#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"

namespace kvir::emu {

static std::optional<uint32_t> wgmmaType(NVVM::WGMMATypes type) {
  switch (type) {
  case NVVM::WGMMATypes::f16:
    return kabi::WF16;
  case NVVM::WGMMATypes::bf16:
    return kabi::WBF16;
  case NVVM::WGMMATypes::e4m3:
    return kabi::WE4M3;
  case NVVM::WGMMATypes::e5m2:
    return kabi::WE5M2;
  case NVVM::WGMMATypes::f32:
    return kabi::WF32;
  default:
    return std::nullopt;
  }
}

LogicalResult Instrumenter::rewriteWgmma(NVVM::WgmmaMmaAsyncOp op) {
  Location loc = op.getLoc();
  builder.setInsertionPoint(op);
  std::optional<uint32_t> a = wgmmaType(op.getTypeA()),
                          b = wgmmaType(op.getTypeB()),
                          d = wgmmaType(op.getTypeD());
  if (!a || !b || d != kabi::WF32 || *a == kabi::WF32)
    return op.emitError("the emulator supports wgmma.mma_async with f16, "
                        "bf16, e4m3 or e5m2 inputs and f32 accumulators");
  NVVM::MMAShapeAttr shape = op.getShape();
  uint32_t n = shape.getN(), k = shape.getK();
  auto type = cast<LLVM::LLVMStructType>(op.getInouts().getType());
  unsigned words = type.getBody().size();
  bool layoutA = op.getLayoutA() == NVVM::MMALayout::col;
  bool layoutB = op.getLayoutB() == NVVM::MMALayout::row;
  uint32_t flags =
      (op.getScaleD() == NVVM::WGMMAScaleOut::one ? kabi::ScaleD : 0) |
      (op.getScaleA() == NVVM::WGMMAScaleIn::neg ? kabi::NegateA : 0) |
      (op.getScaleB() == NVVM::WGMMAScaleIn::neg ? kabi::NegateB : 0) |
      (layoutA ? kabi::TransposeA : 0) | (layoutB ? kabi::TransposeB : 0);
  WgmmaSite record;
  SmallVector<Value> acc;
  for (unsigned i = 0; i < words; ++i) {
    auto element = LLVM::ExtractValueOp::create(builder, loc, op.getInouts(),
                                                ArrayRef<int64_t>{i});
    record.spills.push_back(element);
    acc.push_back(element);
  }
  record.accumulators.push_back(op.getInouts());
  SmallVector<Value> bits = emitWgmmaCall(
      op, acc, {}, op.getDescriptorA(), op.getDescriptorB(), n | k << 16,
      *a | *b << 8 | *d << 16, i32(loc, flags), record);
  Value result = LLVM::PoisonOp::create(builder, loc, type);
  for (unsigned i = 0; i < words; ++i)
    result = LLVM::InsertValueOp::create(
        builder, loc, result, fromI32Bits(loc, bits[i], type.getBody()[i]), i);
  record.results = result;
  op.getResults().replaceAllUsesWith(result);
  op.erase();
  wgmmaSites.push_back(std::move(record));
  return success();
}

SmallVector<Value> Instrumenter::emitWgmmaCall(Operation *op, ValueRange acc,
                                               ValueRange aRegs, Value descA,
                                               Value descB, uint32_t shape,
                                               uint32_t types, Value flags,
                                               WgmmaSite &record) {
  Location loc = op->getLoc();
  Type i32Type = builder.getI32Type();
  auto ptrType = LLVM::LLVMPointerType::get(module.getContext());
  // Spills values into a thread-local array; the op that reads each value
  // is a spill, not a read to check.
  auto spill = [&](ValueRange values) {
    Value array = entryAlloca(op, values.size());
    for (auto [i, v] : llvm::enumerate(values)) {
      Value slot =
          LLVM::GEPOp::create(builder, loc, ptrType, i32Type, array,
                              ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(i)});
      Value bits = toI32Bits(loc, v);
      auto store = LLVM::StoreOp::create(builder, loc, bits, slot);
      record.spills.push_back(bits == v ? store.getOperation()
                                        : bits.getDefiningOp());
    }
    return array;
  };
  Value accArray = spill(acc);
  Value aArray = aRegs.empty() ? LLVM::ZeroOp::create(builder, loc, ptrType)
                               : spill(aRegs);
  if (!descA)
    descA = i64(loc, 0);
  Value ticket = call(loc, kabi::kWgmma, i32Type,
                      {i32(loc, shape), i32(loc, types), flags, descA, aArray,
                       descB, accArray, i32(loc, 0), i64(loc, 0), i64(loc, 0),
                       i32(loc, site(op))});
  record.call = cast<LLVM::CallOp>(ticket.getDefiningOp());
  record.ticket = ticket;
  SmallVector<Value> bits;
  for (unsigned i = 0; i < acc.size(); ++i) {
    Value slot =
        LLVM::GEPOp::create(builder, loc, ptrType, i32Type, accArray,
                            ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(i)});
    bits.push_back(LLVM::LoadOp::create(builder, loc, i32Type, slot));
  }
  return bits;
}

LogicalResult Instrumenter::rewriteMBarrier(Operation *op) {
  Location loc = op->getLoc();
  builder.setInsertionPoint(op);
  Type i64Type = builder.getI64Type();
  // kind, address, a, b, predicate, result to replace.
  auto emit = [&](kabi::MBarrierOp kind, Value addr, Value a, Value b,
                  Value predicate, Value result) {
    Value enabled = predicate
                        ? LLVM::ZExtOp::create(builder, loc,
                                               builder.getI32Type(), predicate)
                              .getResult()
                        : i32(loc, 1);
    Value r = call(loc, kabi::kMBarrier, i64Type,
                   {i32(loc, kind), toGeneric(loc, addr), a ? a : i32(loc, 0),
                    b ? b : i64(loc, 0), enabled, i32(loc, site(op))});
    if (result) {
      if (result.getType() != i64Type)
        r = LLVM::TruncOp::create(builder, loc, result.getType(), r);
      result.replaceAllUsesWith(r);
    }
    op->erase();
    return success();
  };
  auto waitForm = [&](Value stateOrPhase, bool isTry, Value result) {
    bool parity = stateOrPhase.getType().isInteger(32);
    kabi::MBarrierOp kind =
        parity ? (isTry ? kabi::MbTryWaitParity : kabi::MbTestWaitParity)
               : (isTry ? kabi::MbTryWait : kabi::MbTestWait);
    return std::pair<kabi::MBarrierOp, bool>{kind, parity};
  };
  return TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](NVVM::MBarrierInitOp m) {
        return emit(kabi::MbInit, m.getAddr(), m.getCount(), {},
                    m.getPredicate(), {});
      })
      .Case([&](NVVM::MBarrierInvalOp m) {
        return emit(kabi::MbInval, m.getAddr(), {}, {}, {}, {});
      })
      .Case([&](NVVM::MBarrierArriveOp m) {
        return emit(kabi::MbArrive, m.getAddr(),
                    m.getCount() ? m.getCount() : i32(loc, 1), {}, {},
                    m.getRes());
      })
      .Case([&](NVVM::MBarrierArriveDropOp m) {
        return emit(kabi::MbArriveDrop, m.getAddr(),
                    m.getCount() ? m.getCount() : i32(loc, 1), {}, {},
                    m.getRes());
      })
      .Case([&](NVVM::MBarrierArriveExpectTxOp m) {
        return emit(kabi::MbArriveExpectTx, m.getAddr(), m.getTxcount(), {},
                    m.getPredicate(), m.getRes());
      })
      .Case([&](NVVM::MBarrierArriveDropExpectTxOp m) {
        return emit(kabi::MbArriveDropExpectTx, m.getAddr(), m.getTxcount(), {},
                    {}, m.getRes());
      })
      .Case([&](NVVM::MBarrierExpectTxOp m) {
        return emit(kabi::MbExpectTx, m.getAddr(), m.getTxcount(), {}, {}, {});
      })
      .Case([&](NVVM::MBarrierCompleteTxOp m) {
        return emit(kabi::MbCompleteTx, m.getAddr(), m.getTxcount(), {}, {},
                    {});
      })
      .Case([&](NVVM::MBarrierTryWaitParityOp m) {
        // The NVVM op loops until the phase completes.
        return emit(kabi::MbTryWaitParity, m.getAddr(), m.getPhase(), {}, {},
                    {});
      })
      .Case([&](NVVM::MBarrierTestWaitOp m) {
        auto [kind, parity] = waitForm(m.getStateOrPhase(), false, m.getRes());
        return emit(kind, m.getAddr(), parity ? m.getStateOrPhase() : Value(),
                    parity ? Value() : m.getStateOrPhase(), {}, m.getRes());
      })
      .Case([&](NVVM::MBarrierTryWaitOp m) {
        auto [kind, parity] = waitForm(m.getStateOrPhase(), true, m.getRes());
        return emit(kind, m.getAddr(), parity ? m.getStateOrPhase() : Value(),
                    parity ? Value() : m.getStateOrPhase(), {}, m.getRes());
      })
      .Default([&](Operation *other) -> LogicalResult {
        return other->emitError("the emulator cannot execute ")
               << other->getName();
      });
}

LogicalResult Instrumenter::replaceWithHook(Operation *op, StringRef hookName,
                                            SmallVector<Value> args) {
  Location loc = op->getLoc();
  args.push_back(i32(loc, site(op)));
  call(loc, hookName, Type(), args);
  op->erase();
  return success();
}

Value Instrumenter::coordinateArray(Operation *at, ValueRange values) {
  Location loc = at->getLoc();
  auto ptrType = LLVM::LLVMPointerType::get(module.getContext());
  Value array = entryAlloca(at, 5);
  for (auto [i, v] : llvm::enumerate(values)) {
    Value slot =
        LLVM::GEPOp::create(builder, loc, ptrType, builder.getI32Type(), array,
                            ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(i)});
    LLVM::StoreOp::create(builder, loc, v, slot);
  }
  return array;
}

Value Instrumenter::predicateFlag(Location loc, Value predicate) {
  if (!predicate)
    return i32(loc, 1);
  return LLVM::ZExtOp::create(builder, loc, builder.getI32Type(), predicate);
}

std::optional<LogicalResult> Instrumenter::rewriteBulkCopy(Operation *op) {
  Location loc = op->getLoc();
  builder.setInsertionPoint(op);
  auto replaceWithCall = [&](StringRef hookName, SmallVector<Value> args) {
    return replaceWithHook(op, hookName, std::move(args));
  };
  return TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case([&](NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp c)
                -> LogicalResult {
        if (c.getMode() != NVVM::TMALoadMode::TILE ||
            !c.getIm2colOffsets().empty())
          return c.emitError("the emulator models tile-mode tensor copies");
        if (c.getMulticastMask())
          return c.emitError("the emulator does not model TMA multicast");
        Value coords = coordinateArray(c, c.getCoordinates());
        return replaceWithCall(kabi::kTmaLoad,
                               {toGeneric(loc, c.getTmaDescriptor()),
                                toGeneric(loc, c.getDstMem()),
                                toGeneric(loc, c.getMbar()), coords,
                                i32(loc, c.getCoordinates().size()),
                                predicateFlag(loc, c.getPredicate())});
      })
      .Case([&](NVVM::CpAsyncBulkTensorSharedCTAToGlobalOp c) -> LogicalResult {
        if (c.getMode() != NVVM::TMAStoreMode::TILE)
          return c.emitError("the emulator models tile-mode tensor copies");
        Value coords = coordinateArray(c, c.getCoordinates());
        return replaceWithCall(kabi::kTmaStore,
                               {toGeneric(loc, c.getTmaDescriptor()),
                                toGeneric(loc, c.getSrcMem()), coords,
                                i32(loc, c.getCoordinates().size()),
                                predicateFlag(loc, c.getPredicate())});
      })
      .Case([&](NVVM::CpAsyncBulkGlobalToSharedClusterOp c) -> LogicalResult {
        if (c.getMulticastMask())
          return c.emitError("the emulator does not model bulk multicast");
        return replaceWithCall(kabi::kBulkLoad,
                               {toGeneric(loc, c.getDstMem()),
                                toGeneric(loc, c.getSrcMem()), c.getSize(),
                                toGeneric(loc, c.getMbar())});
      })
      .Case([&](NVVM::CpAsyncBulkSharedCTAToGlobalOp c) -> LogicalResult {
        if (c.getByteMask())
          return c.emitError("the emulator does not model byte-masked bulk "
                             "stores");
        return replaceWithCall(kabi::kBulkStore,
                               {toGeneric(loc, c.getDstMem()),
                                toGeneric(loc, c.getSrcMem()), c.getSize()});
      })
      .Case([&](NVVM::CpAsyncBulkCommitGroupOp c) -> LogicalResult {
        call(loc, kabi::kBulkCommit, Type(), {});
        c.erase();
        return success();
      })
      .Case([&](NVVM::CpAsyncBulkWaitGroupOp w) -> LogicalResult {
        call(loc, kabi::kBulkWait, Type(),
             {i32(loc, w.getGroup()), i32(loc, bool(w.getReadAttr()))});
        w.erase();
        return success();
      })
      .Case<NVVM::PrefetchOp, NVVM::CpAsyncBulkTensorPrefetchOp,
            NVVM::CpAsyncBulkPrefetchOp>([&](Operation *p) -> LogicalResult {
        // Prefetches move nothing a kernel can observe.
        p->erase();
        return success();
      })
      .Default([](Operation *) { return std::nullopt; });
}

std::optional<LogicalResult> Instrumenter::rewriteSm90(Operation *op) {
  Location loc = op->getLoc();
  builder.setInsertionPoint(op);
  auto replaceWithCall = [&](StringRef hookName, SmallVector<Value> args) {
    return replaceWithHook(op, hookName, std::move(args));
  };
  if (isa<NVVM::MBarrierInitOp, NVVM::MBarrierInvalOp, NVVM::MBarrierArriveOp,
          NVVM::MBarrierArriveDropOp, NVVM::MBarrierArriveExpectTxOp,
          NVVM::MBarrierArriveDropExpectTxOp, NVVM::MBarrierExpectTxOp,
          NVVM::MBarrierCompleteTxOp, NVVM::MBarrierTryWaitParityOp,
          NVVM::MBarrierTestWaitOp, NVVM::MBarrierTryWaitOp,
          NVVM::MBarrierArriveNocompleteOp,
          NVVM::MBarrierArriveDropNocompleteOp>(op))
    return rewriteMBarrier(op);
  if (std::optional<LogicalResult> copy = rewriteBulkCopy(op))
    return *copy;
  return TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case([&](NVVM::WgmmaMmaAsyncOp w) { return rewriteWgmma(w); })
      .Case([&](NVVM::WgmmaFenceAlignedOp) {
        return replaceWithCall(kabi::kWgmmaFence, {});
      })
      .Case([&](NVVM::WgmmaGroupSyncAlignedOp) {
        return replaceWithCall(kabi::kWgmmaCommit, {});
      })
      .Case([&](NVVM::WgmmaWaitGroupSyncOp w) {
        return replaceWithCall(kabi::kWgmmaWait,
                               {i32(loc, int64_t(w.getGroup()))});
      })
      .Case([&](NVVM::SetMaxRegisterOp s) {
        bool inc = s.getAction() == NVVM::SetMaxRegisterAction::increase;
        return replaceWithCall(kabi::kSetMaxNReg,
                               {i32(loc, s.getRegCount()), i32(loc, inc)});
      })
      .Case([&](NVVM::FenceProxyOp f) -> LogicalResult {
        switch (f.getKind()) {
        case NVVM::ProxyKind::async:
        case NVVM::ProxyKind::async_global:
        case NVVM::ProxyKind::async_shared:
          return replaceWithCall(kabi::kFenceProxyAsync, {});
        case NVVM::ProxyKind::alias:
          // Aliasing proxies are not modeled: every access of the emulator
          // goes through the same bytes.
          f.erase();
          return success();
        default:
          return f.emitError("the emulator cannot execute fence.proxy.")
                 << NVVM::stringifyProxyKind(f.getKind());
        }
      })
      .Case([&](NVVM::FenceProxyAcquireOp f) -> LogicalResult {
        if (f.getFromProxy() != NVVM::ProxyKind::GENERIC ||
            f.getToProxy() != NVVM::ProxyKind::TENSORMAP)
          return f.emitError("the emulator models fence.proxy.acquire from "
                             "the generic to the tensormap proxy");
        return replaceWithCall(kabi::kFenceProxyTensorMap,
                               {toGeneric(loc, f.getAddr())});
      })
      .Case([&](NVVM::FenceMbarrierInitOp) {
        return replaceWithCall(kabi::kFenceMBarrierInit, {});
      })
      .Case([&](NVVM::BarrierArriveOp a) {
        Value id = a.getBarrierId() ? a.getBarrierId() : i32(loc, 0);
        return replaceWithCall(kabi::kBarrierArrive,
                               {id, a.getNumberOfThreads()});
      })
      .Case([&](NVVM::ElectSyncOp e) -> LogicalResult {
        // elect.sync: the same leader for the same membermask — the lowest
        // lane of the mask that executes it, as on hardware.
        Type i32Type = builder.getI32Type();
        Value mask = e.getMembermask() ? e.getMembermask() : i32(loc, -1);
        uint32_t id = site(e);
        Value ballot =
            call(loc, kabi::kVote, i32Type,
                 {i32(loc, kabi::Ballot), mask, i32(loc, 1), i32(loc, id)});
        Value leader = LLVM::CountTrailingZerosOp::create(
            builder, loc, i32Type, ballot, /*is_zero_poison=*/false);
        Value lane = call(loc, kabi::kSreg, i32Type, {i32(loc, kabi::LaneId)});
        Value elected = LLVM::ICmpOp::create(
            builder, loc, LLVM::ICmpPredicate::eq, lane, leader);
        e.getPred().replaceAllUsesWith(elected);
        e.erase();
        return success();
      })
      .Case([&](NVVM::StMatrixOp m) -> LogicalResult {
        if (m.getShape().getM() != 8 || m.getShape().getN() != 8 ||
            m.getEltType() != NVVM::LdStMatrixEltType::B16)
          return m.emitError("the emulator supports stmatrix .m8n8 .b16");
        Type i32Type = builder.getI32Type();
        auto ptrType = LLVM::LLVMPointerType::get(module.getContext());
        uint32_t id = site(m);
        Value regs = entryAlloca(m, 4);
        for (auto [i, v] : llvm::enumerate(m.getSources())) {
          Value slot = LLVM::GEPOp::create(
              builder, loc, ptrType, i32Type, regs,
              ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(i)});
          LLVM::StoreOp::create(builder, loc, v, slot);
        }
        bool trans = m.getLayout() == NVVM::MMALayout::col;
        call(loc, kabi::kStMatrix, Type(),
             {i32(loc, m.getSources().size()), i32(loc, trans),
              toGeneric(loc, m.getPtr()), regs, i32(loc, id)});
        m.erase();
        return success();
      })
      .Case([&](NVVM::ClusterArriveOp) {
        return replaceWithCall(kabi::kClusterArrive, {i32(loc, 0)});
      })
      .Case([&](NVVM::ClusterArriveRelaxedOp) {
        return replaceWithCall(kabi::kClusterArrive, {i32(loc, 1)});
      })
      .Case([&](NVVM::ClusterWaitOp) {
        return replaceWithCall(kabi::kClusterWait, {});
      })
      .Case([&](NVVM::MapaOp m) -> LogicalResult {
        auto ptrType = LLVM::LLVMPointerType::get(module.getContext());
        Value mapped =
            call(loc, kabi::kMapa, ptrType,
                 {toGeneric(loc, m.getA()), m.getB(), i32(loc, site(m))});
        if (m.getRes().getType() != ptrType)
          mapped = LLVM::AddrSpaceCastOp::create(builder, loc,
                                                 m.getRes().getType(), mapped);
        m.getRes().replaceAllUsesWith(mapped);
        m.erase();
        return success();
      })
      .Case([&](NVVM::GriddepcontrolOp g) -> LogicalResult {
        // Grids run one after another here; what a programmatic dependent
        // does before its wait is checked (DependentLaunch.h).
        // launch_dependents only lets the dependent start early.
        result.usesGridDependencyControl = true;
        if (g.getKind() == NVVM::GridDepActionKind::wait)
          return replaceWithCall(kabi::kGridDependencyWait, {});
        g.erase();
        return success();
      })
      .Default([](Operation *) { return std::nullopt; });
}

/// The values that carry a wgmma's result: the results themselves, the
/// block arguments that receive one of them from a branch, and what
/// extractvalue and insertvalue make of them — register plumbing, not
/// reads (`spills` excepted: they hand a wgmma its accumulators).
static llvm::SetVector<Value>
ticketedValues(ModuleOp module, ArrayRef<Value> results,
               const llvm::SmallPtrSetImpl<Operation *> &spills) {
  llvm::SetVector<Value> ticketed(results.begin(), results.end());
  bool changed = true;
  while (changed) {
    changed = false;
    module.walk([&](Operation *op) {
      if (spills.contains(op))
        return;
      if (auto branch = dyn_cast<BranchOpInterface>(op)) {
        for (unsigned s = 0; s < branch->getNumSuccessors(); ++s) {
          Block *dest = branch->getSuccessor(s);
          OperandRange forwarded =
              branch.getSuccessorOperands(s).getForwardedOperands();
          for (auto [i, v] : llvm::enumerate(forwarded))
            if (ticketed.contains(v) && ticketed.insert(dest->getArgument(i)))
              changed = true;
        }
      } else if (isa<LLVM::ExtractValueOp, LLVM::InsertValueOp>(op) &&
                 llvm::any_of(op->getOperands(),
                              [&](Value v) { return ticketed.contains(v); })) {
        changed |= ticketed.insert(op->getResult(0));
      }
    });
  }
  return ticketed;
}

/// Vector operations that move no register: an element at a constant
/// index (extract, insert) and a bitcast between types of the same bits.
static bool isVectorPlumbing(Operation *op) {
  if (auto extract = dyn_cast_or_null<LLVM::ExtractElementOp>(op))
    return matchPattern(extract.getPosition(), m_Constant());
  if (auto insert = dyn_cast_or_null<LLVM::InsertElementOp>(op))
    return matchPattern(insert.getPosition(), m_Constant());
  return isa_and_nonnull<LLVM::BitcastOp>(op);
}

static bool isPlumbing(Operation *op) {
  return isa<BranchOpInterface, LLVM::ExtractValueOp, LLVM::InsertValueOp>(op);
}

Value Instrumenter::unsignedMax(Location loc, Value x, Value y) {
  if (!x || !y)
    return x ? x : y;
  return LLVM::UMaxOp::create(builder, loc, x, y);
}

LogicalResult Instrumenter::trackWgmmaTickets() {
  if (wgmmaSites.empty())
    return success();
  Type i32Type = builder.getI32Type();
  DenseMap<Value, Value> ticketOf;
  SmallVector<Value> results;
  llvm::SmallPtrSet<Operation *, 32> spills;
  for (WgmmaSite &s : wgmmaSites) {
    ticketOf[s.results] = s.ticket;
    results.push_back(s.results);
    spills.insert(s.spills.begin(), s.spills.end());
  }
  llvm::SetVector<Value> ticketed = ticketedValues(module, results, spills);

  // A ticket argument next to each block argument that carries a result,
  // appended per block in argument order.
  llvm::MapVector<Block *, SmallVector<BlockArgument>> carried;
  for (Value v : ticketed)
    if (auto arg = dyn_cast<BlockArgument>(v))
      carried[arg.getOwner()].push_back(arg);
  for (auto &[block, args] : carried) {
    llvm::sort(args, [](BlockArgument x, BlockArgument y) {
      return x.getArgNumber() < y.getArgNumber();
    });
    for (BlockArgument arg : args)
      ticketOf[arg] = block->addArgument(i32Type, arg.getLoc());
  }
  // The ticket of a carried value (null: no wgmma produced it): an
  // aggregate built from several results carries the newest, as one
  // warpgroup's wgmmas retire in issue order.
  std::function<Value(Value)> ticketFor = [&](Value v) -> Value {
    if (Value known = ticketOf.lookup(v))
      return known;
    if (!ticketed.contains(v))
      return {};
    Operation *def = v.getDefiningOp();
    Value ticket;
    if (auto extract = dyn_cast<LLVM::ExtractValueOp>(def)) {
      ticket = ticketFor(extract.getContainer());
    } else if (auto insert = dyn_cast<LLVM::InsertValueOp>(def)) {
      Value x = ticketFor(insert.getContainer()),
            y = ticketFor(insert.getValue());
      OpBuilder::InsertionGuard guard(builder);
      builder.setInsertionPointAfter(insert);
      ticket = unsignedMax(insert.getLoc(), x, y);
    }
    ticketOf[v] = ticket;
    return ticket;
  };
  // Every branch passes the ticket of what it forwards (0: none).
  module.walk([&](BranchOpInterface branch) {
    for (unsigned s = 0; s < branch->getNumSuccessors(); ++s) {
      auto it = carried.find(branch->getSuccessor(s));
      if (it == carried.end())
        continue;
      SuccessorOperands operands = branch.getSuccessorOperands(s);
      SmallVector<Value> forwarded(operands.getForwardedOperands());
      for (BlockArgument arg : it->second) {
        Value ticket = ticketFor(forwarded[arg.getArgNumber()]);
        builder.setInsertionPoint(branch);
        operands.append(ticket ? ticket : i32(branch->getLoc(), 0));
      }
    }
  });

  for (WgmmaSite &s : wgmmaSites) {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointAfter(s.results.getDefiningOp());
    clockOf[s.results] = i64(s.call.getLoc(), 0);
  }
  for (WgmmaSite &s : wgmmaSites)
    patchWgmmaCall(s, ticketFor);
  // Every other read of a carried result checks its ticket.
  for (Value v : ticketed) {
    Value ticket = ticketFor(v);
    for (OpOperand &use : llvm::make_early_inc_range(v.getUses())) {
      Operation *user = use.getOwner();
      if (spills.contains(user) || isPlumbing(user))
        continue;
      builder.setInsertionPoint(user);
      call(user->getLoc(), kabi::kWgmmaRead, Type(),
           {ticket, i32(user->getLoc(), site(user))});
    }
  }
  checkARegisterReads(spills);
  return success();
}

Value Instrumenter::definitionClock(Value v) {
  if (Value known = clockOf.lookup(v))
    return known;
  OpBuilder::InsertionGuard guard(builder);
  Location loc = v.getLoc();
  Operation *def = v.getDefiningOp();
  Value clock;
  if (isa_and_nonnull<LLVM::PoisonOp, LLVM::UndefOp>(def)) {
    builder.setInsertionPointAfter(def);
    clock = i64(loc, 0);
  } else if (auto extract = dyn_cast_or_null<LLVM::ExtractValueOp>(def)) {
    clock = definitionClock(extract.getContainer());
  } else if (auto insert = dyn_cast_or_null<LLVM::InsertValueOp>(def)) {
    Value x = definitionClock(insert.getContainer());
    Value y = definitionClock(insert.getValue());
    builder.setInsertionPointAfter(insert);
    clock = unsignedMax(loc, x, y);
  } else if (isVectorPlumbing(def)) {
    // An element of a vector at a constant index, or a vector's bits as
    // another type, is the same register: no instruction defines it.
    SmallVector<Value, 2> moved{def->getOperand(0)};
    if (auto insert = dyn_cast<LLVM::InsertElementOp>(def))
      moved.push_back(insert.getValue());
    for (Value operand : moved) {
      Value c = definitionClock(operand);
      builder.setInsertionPointAfter(def);
      clock = unsignedMax(loc, clock, c);
    }
  } else {
    if (def)
      builder.setInsertionPointAfter(def);
    else
      builder.setInsertionPointToStart(cast<BlockArgument>(v).getOwner());
    clock = call(loc, kabi::kRegDefined, builder.getI64Type(), {});
  }
  clockOf[v] = clock;
  return clock;
}

void Instrumenter::patchWgmmaCall(WgmmaSite &s,
                                  llvm::function_ref<Value(Value)> ticketFor) {
  Location loc = s.call.getLoc();
  Value ticket, accClock, aClock;
  for (Value v : s.accumulators) {
    Value t = ticketFor(v), c = definitionClock(v);
    builder.setInsertionPoint(s.call);
    ticket = unsignedMax(loc, ticket, t);
    accClock = unsignedMax(loc, accClock, c);
  }
  for (Value v : s.aRegisters) {
    Value c = definitionClock(v);
    builder.setInsertionPoint(s.call);
    aClock = unsignedMax(loc, aClock, c);
  }
  builder.setInsertionPoint(s.call);
  s.call->setOperand(7, ticket ? ticket : i32(loc, 0));
  s.call->setOperand(8, accClock);
  s.call->setOperand(9, aClock ? aClock : i64(loc, 0));
}

void Instrumenter::checkARegisterReads(
    const llvm::SmallPtrSetImpl<Operation *> &spills) {
  // Per A register: a thread-local slot with the ticket of the newest
  // wgmma that read this instance of it (0 from its definition on).
  llvm::MapVector<Value, Value> slotOf;
  for (WgmmaSite &s : wgmmaSites)
    for (Value v : s.aRegisters) {
      Location loc = v.getLoc();
      Value &slot = slotOf[v];
      if (!slot) {
        slot = entryAlloca(s.call, 1);
        OpBuilder::InsertionGuard guard(builder);
        auto arg = dyn_cast<BlockArgument>(v);
        if (!arg)
          builder.setInsertionPointAfter(v.getDefiningOp());
        else if (arg.getOwner()->isEntryBlock())
          builder.setInsertionPointAfter(slot.getDefiningOp());
        else
          builder.setInsertionPointToStart(arg.getOwner());
        LLVM::StoreOp::create(builder, loc, i32(loc, 0), slot);
      }
      builder.setInsertionPointAfter(s.call);
      LLVM::StoreOp::create(builder, loc, s.ticket, slot);
    }
  for (auto &[v, slot] : slotOf)
    for (OpOperand &use : llvm::make_early_inc_range(v.getUses())) {
      Operation *user = use.getOwner();
      if (spills.contains(user))
        continue;
      Location loc = user->getLoc();
      builder.setInsertionPoint(user);
      Value ticket =
          LLVM::LoadOp::create(builder, loc, builder.getI32Type(), slot);
      call(loc, kabi::kWgmmaRead, Type(), {ticket, i32(loc, site(user))});
    }
}

} // namespace kvir::emu
