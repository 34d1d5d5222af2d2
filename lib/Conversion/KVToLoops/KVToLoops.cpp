//===- KVToLoops.cpp - kv ops to scf loops (CPU reference) ----------------===//
//
// Walks each function in order and replaces every kv op by the loop nest that
// computes it (docs/Semantics.md). States, which have value semantics, are
// given fresh buffers at their producer; paged views dissolve into the memrefs
// they view. A state may not leave the function or cross a region boundary
// as a value: kv.store_state materializes it.
//
//===----------------------------------------------------------------------===//
#include "LoweringUtils.h"

#include "kvir/Conversion/KVToLoops/KVToLoops.h"
#include "kvir/Dialect/KV/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/TypeSwitch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kvir {
#define GEN_PASS_DEF_CONVERTKVTOLOOPS
#include "kvir/Conversion/Passes.h.inc"
} // namespace kvir

using namespace mlir;
using namespace kvir::kv;
using namespace kvir::kv::loops;

namespace {

class FunctionLowering {
public:
  LogicalResult run(Operation *root);

private:
  FailureOr<StateBuffers> lookup(Operation *user, Value state);
  LogicalResult lowerOp(Operation *op);
  void deallocAtBlockEnd(Operation *producer, Value state, StateBuffers bufs);

  DenseMap<Value, StateBuffers> states;
  SmallVector<Operation *> lowered;
};

FailureOr<StateBuffers> FunctionLowering::lookup(Operation *user, Value state) {
  auto it = states.find(state);
  if (it == states.end())
    return user->emitOpError()
           << "kv-to-loops needs this state to be produced by a kv op in the "
           << "same function (import states with kv.load_state)";
  return it->second;
}

/// Frees a state's buffers before the terminator of its producer's block when
/// every use stays inside that block; otherwise they live to the end.
void FunctionLowering::deallocAtBlockEnd(Operation *producer, Value state,
                                         StateBuffers bufs) {
  Block *block = producer->getBlock();
  for (Operation *user : state.getUsers())
    if (!block->findAncestorOpInBlock(*user))
      return;
  Operation *terminator = block->getTerminator();
  if (!terminator)
    return;
  ImplicitLocOpBuilder b(producer->getLoc(), terminator);
  memref::DeallocOp::create(b, bufs.output);
  memref::DeallocOp::create(b, bufs.lse);
}

LogicalResult FunctionLowering::lowerOp(Operation *op) {
  ImplicitLocOpBuilder b(op->getLoc(), op);
  auto record = [&](Value state, FailureOr<StateBuffers> bufs) {
    if (failed(bufs))
      return failure();
    states[state] = *bufs;
    deallocAtBlockEnd(op, state, *bufs);
    return success();
  };
  auto lookupAll = [&](ValueRange values,
                       SmallVectorImpl<StateBuffers> &out) -> LogicalResult {
    for (Value v : values) {
      FailureOr<StateBuffers> bufs = lookup(op, v);
      if (failed(bufs))
        return failure();
      out.push_back(*bufs);
    }
    return success();
  };

  return TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](PagedViewOp) -> LogicalResult { return success(); })
      .Case([&](RaggedViewOp) -> LogicalResult { return success(); })
      .Case([&](DecodeOp d) -> LogicalResult {
        return record(d, lowerDecode(b, d));
      })
      .Case([&](PrefillOp p) -> LogicalResult {
        return record(p, lowerPrefill(b, p));
      })
      .Case([&](MlaDecodeOp m) -> LogicalResult {
        return record(m, lowerMlaDecode(b, m));
      })
      .Case([&](AppendOp a) -> LogicalResult { return lowerAppend(b, a); })
      .Case([&](CascadePositionsOp c) -> LogicalResult {
        return lowerCascadePositions(b, c);
      })
      .Case([&](MergeOp m) -> LogicalResult {
        SmallVector<StateBuffers> inputs;
        if (failed(lookupAll(m.getStates(), inputs)))
          return failure();
        return record(m, lowerMerge(b, m.getType(), inputs));
      })
      .Case([&](MergeSinksOp m) -> LogicalResult {
        FailureOr<StateBuffers> input = lookup(op, m.getInput());
        if (failed(input))
          return failure();
        return record(m, lowerMergeSinks(b, m.getType(), *input, m.getSinks()));
      })
      .Case([&](MergePartitionsOp m) -> LogicalResult {
        FailureOr<StateBuffers> input = lookup(op, m.getInput());
        if (failed(input))
          return failure();
        return record(m, lowerMergePartitions(b, m.getType(), *input));
      })
      .Case([&](RebaseOp r) -> LogicalResult {
        FailureOr<StateBuffers> input = lookup(op, r.getInput());
        if (failed(input))
          return failure();
        return record(r, lowerRebase(b, r.getInput().getType(), r.getType(),
                                     *input));
      })
      .Case([&](EmptyStateOp e) -> LogicalResult {
        StateType type = e.getType();
        ValueRange sizes = e.getDynamicSizes();
        Value partitions, rows;
        unsigned next = 0;
        if (ShapedType::isDynamic(type.getPartitions()))
          partitions = sizes[next++];
        if (ShapedType::isDynamic(type.getRows()))
          rows = sizes[next++];
        StateBuffers bufs = allocState(b, type, rows, partitions);
        fillEmpty(b, bufs);
        return record(e, bufs);
      })
      .Case([&](LoadStateOp l) -> LogicalResult {
        StateType type = l.getType();
        // Value semantics: the state is the buffers' contents now, so copy.
        Value rows = memref::DimOp::create(b, l.getOutput(),
                                           type.isPartitioned() ? 1 : 0);
        Value partitions =
            type.isPartitioned() ? memref::DimOp::create(b, l.getOutput(), 0)
                                 : Value();
        StateBuffers bufs = allocState(b, type, rows, partitions);
        copyState(b, {l.getOutput(), l.getLse()}, bufs);
        return record(l, bufs);
      })
      .Case([&](StoreStateOp s) -> LogicalResult {
        FailureOr<StateBuffers> input = lookup(op, s.getState());
        if (failed(input))
          return failure();
        copyState(b, *input, {s.getOutput(), s.getLse()});
        return success();
      })
      .Case([&](CascadeOp c) -> LogicalResult {
        return c.emitOpError() << "should have been expanded by "
                               << "kv-expand-cascade";
      })
      .Default([&](Operation *other) -> LogicalResult {
        for (Value operand : other->getOperands())
          if (isa<StateType, PagedType, RaggedType>(operand.getType()))
            return other->emitOpError()
                   << "uses a kv value that kv-to-loops cannot lower here; "
                   << "materialize states with kv.store_state";
        return success();
      });
}

LogicalResult FunctionLowering::run(Operation *root) {
  WalkResult result = root->walk<WalkOrder::PreOrder>([&](Operation *op) {
    for (Region &region : op->getRegions())
      for (BlockArgument arg : region.getArguments())
        if (isa<StateType, PagedType, RaggedType>(arg.getType())) {
          op->emitOpError() << "has a kv-typed block argument, which "
                            << "kv-to-loops cannot lower; pass buffers instead";
          return WalkResult::interrupt();
        }
    if (failed(lowerOp(op)))
      return WalkResult::interrupt();
    if (isa<KVDialect>(op->getDialect()))
      lowered.push_back(op);
    // An attention op's regions were cloned into its loops; they go with it.
    if (isa<AttentionVariantOpInterface>(op))
      return WalkResult::skip();
    return WalkResult::advance();
  });
  if (result.wasInterrupted())
    return failure();
  for (Operation *op : llvm::reverse(lowered)) {
    op->dropAllUses();
    op->erase();
  }
  return success();
}

struct ConvertKVToLoopsPass
    : kvir::impl::ConvertKVToLoopsBase<ConvertKVToLoopsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateExpandCascadePatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    for (Region &region : getOperation()->getRegions())
      for (Operation &op : llvm::make_early_inc_range(region.getOps())) {
        FunctionLowering lowering;
        if (failed(lowering.run(&op)))
          return signalPassFailure();
      }
  }
};
} // namespace
