//===- Merge.cpp - Merging attention states in buffers on the GPU ---------===//
//
// merge((o_a, l_a), (o_b, l_b)) of docs/Semantics.md for any number of
// inputs (kv.merge), or over the partition axis of a split-KV state
// (kv.merge_partitions, and the decode family's split path). Block (row,
// head), one thread per output dim: the input LSEs of the block are read
// from global memory once into shared memory (all of them, or a block-width
// of partitions at a time, merged online kMergeGroup at a step with their
// outputs loaded first), outputs are read and written
// coalesced; the output of a partition whose LSE is -inf (an empty one) is
// not read at all. AttentionState does the math, in base 2.
//
//===----------------------------------------------------------------------===//
#include "Patterns.h"

#include "kvir/Codegen/AttentionState.h"
#include "kvir/Codegen/IRBuilder.h"
#include "kvir/Codegen/LaunchEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <cmath>

using namespace mlir;
using namespace kvir;
using namespace kvir::codegen;
using namespace kvir::gpu_lowering;

namespace {

/// Partitions merged per step of a run-time partition axis. Their LSEs are
/// read from shared memory and their outputs loaded before any is used, so
/// a thread has this many loads in flight: the merge of one long request's
/// ~100 partitions is a chain of dependent loads otherwise (ptxas kept only
/// one or two ahead of the online update).
constexpr int64_t kMergeGroup = 8;

/// `state` merged with partitions j .. j + kMergeGroup - 1 (those below `n`)
/// of the chunk whose LSEs are staged in `lseShared`; `loadOut` loads a
/// partition's output. An empty partition (LSE -inf) and one past `n` join
/// with LSE -inf and are not loaded: split kernels write only an empty
/// partition's LSE.
PartialState mergePartitionGroup(
    ImplicitLocOpBuilder &b, PartialState state, Value lseShared, Value j,
    Value n, llvm::function_ref<Value(ImplicitLocOpBuilder &, Value)> loadOut) {
  IRBuilder ir{b};
  Value negInf = ir.f32(-INFINITY), zero = ir.f32(0.0);
  SmallVector<Value> lses, outs;
  for (int64_t g = 0; g < kMergeGroup; ++g) {
    Value part = ir.add(j, ir.idx(g));
    Value inChunk = ir.lt(part, n);
    Value lse =
        ir.select(inChunk,
                  memref::LoadOp::create(
                      b, lseShared, ValueRange{ir.select(inChunk, part, j)}),
                  negInf);
    Value empty =
        arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, lse, negInf);
    auto out = scf::IfOp::create(
        b, empty,
        [&](OpBuilder &eb, Location l) {
          scf::YieldOp::create(eb, l, ValueRange{zero});
        },
        [&](OpBuilder &eb, Location l) {
          ImplicitLocOpBuilder lb(l, eb);
          scf::YieldOp::create(lb, ValueRange{loadOut(lb, part)});
        });
    lses.push_back(lse);
    outs.push_back(out.getResult(0));
  }
  AttentionState s(b, AttentionState::Flavor::ptxBase2);
  return s.updateTile(state, lses, [&](int64_t g) { return outs[g]; });
}

void buildMergeBody(const KernelFunc &kf, const MergeKernelSpec &spec) {
  ImplicitLocOpBuilder b = kf.getBuilder();
  IRBuilder ir{b};
  AttentionState state(b, AttentionState::Flavor::ptxBase2);
  unsigned pairs = std::max(1u, spec.numInputs);
  int64_t dv = spec.headDimV;
  Value lseShared = kf.getShared(0);
  Value d = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value row = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value head = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  unsigned outArg = 2 * pairs + (spec.ragged ? 1 : 0);
  Value out = kf.getArgument(outArg), lseOut = kf.getArgument(outArg + 1);

  // An input LSE of (row, head), in the working base. A ragged input's
  // index is its own row (the prefix).
  auto loadLse = [&](ImplicitLocOpBuilder &ib, Value lse, ValueRange prefix) {
    SmallVector<Value> index(prefix);
    if (!spec.ragged)
      index.push_back(row);
    index.push_back(head);
    AttentionState s(ib, AttentionState::Flavor::ptxBase2);
    return s.convertLse(memref::LoadOp::create(ib, lse, index), spec.inBase,
                        s.getWorkingBase());
  };
  auto loadOut = [&](ImplicitLocOpBuilder &ib, Value o, ValueRange prefix) {
    SmallVector<Value> index(prefix);
    if (!spec.ragged)
      index.push_back(row);
    index.append({head, d});
    Value v = memref::LoadOp::create(ib, o, index);
    if (!v.getType().isF32())
      v = arith::ExtFOp::create(ib, ib.getF32Type(), v);
    return v;
  };

  PartialState merged;
  if (spec.numInputs) {
    // kv.merge: stage the LSEs, then merge all inputs at once.
    for (unsigned i = 0; i < spec.numInputs; ++i)
      scf::IfOp::create(
          b, ir.eq(d, ir.idx(int64_t(i) % dv)), [&](OpBuilder &nb, Location l) {
            ImplicitLocOpBuilder ib(l, nb);
            memref::StoreOp::create(ib, loadLse(ib, kf.getArgument(2 * i + 1), {}),
                                    lseShared, ValueRange{IRBuilder{ib}.idx(i)});
            scf::YieldOp::create(ib);
          });
    gpu::BarrierOp::create(b);
    SmallVector<PartialState> inputs;
    for (unsigned i = 0; i < spec.numInputs; ++i)
      inputs.push_back(
          {memref::LoadOp::create(b, lseShared, ValueRange{ir.idx(i)}),
           ir.f32(1.0), loadOut(b, kf.getArgument(2 * i), {})});
    merged = state.merge(inputs);
  } else {
    // A partition axis of run-time length: chunks of blockDim.x partitions,
    // each LSE loaded by one thread into shared memory, merged online.
    Value o = kf.getArgument(0), lse = kf.getArgument(1);
    Value first = ir.idx(0), end = memref::DimOp::create(b, lse, 0);
    if (spec.ragged) {
      Value indptr = kf.getArgument(2);
      first = ir.toIndex(memref::LoadOp::create(b, indptr, ValueRange{row}));
      end = ir.toIndex(memref::LoadOp::create(
          b, indptr, ValueRange{ir.add(row, ir.idx(1))}));
      if (spec.singleRowsFinal) {
        // The rest of the kernel, only for requests of several rows (the
        // condition is the block's: its barriers stay uniform). No rows:
        // a fixed grid's padding past the batch.
        auto several = scf::IfOp::create(
            b, ir.cmp(arith::CmpIPredicate::sgt, ir.sub(end, first), ir.idx(1)),
            /*withElseRegion=*/false);
        b.setInsertionPoint(several.thenBlock()->getTerminator());
      }
    }
    auto chunks = scf::ForOp::create(
        b, first, end, ir.idx(dv),
        ValueRange{ir.f32(-INFINITY), ir.f32(0.0), ir.f32(0.0)},
        [&](OpBuilder &nb, Location l, Value c0, ValueRange carried) {
          ImplicitLocOpBuilder ib(l, nb);
          IRBuilder k{ib};
          // The previous chunk's LSEs have been read by everyone.
          gpu::BarrierOp::create(ib);
          Value p = k.add(c0, d);
          scf::IfOp::create(ib, k.lt(p, end), [&](OpBuilder &nb2, Location l2) {
            ImplicitLocOpBuilder jb(l2, nb2);
            memref::StoreOp::create(jb, loadLse(jb, lse, {p}), lseShared,
                                    ValueRange{d});
            scf::YieldOp::create(jb);
          });
          gpu::BarrierOp::create(ib);
          Value n = k.minS(k.idx(dv), k.sub(end, c0));
          auto inner = scf::ForOp::create(
              ib, k.idx(0), n, k.idx(kMergeGroup), carried,
              [&](OpBuilder &nb2, Location l2, Value j, ValueRange st) {
                ImplicitLocOpBuilder jb(l2, nb2);
                PartialState next = mergePartitionGroup(
                    jb, {st[0], st[1], st[2]}, lseShared, j, n,
                    [&](ImplicitLocOpBuilder &lb, Value part) {
                      return loadOut(lb, o, {IRBuilder{lb}.add(c0, part)});
                    });
                scf::YieldOp::create(jb, ValueRange{next.m, next.l, next.acc});
              });
          scf::YieldOp::create(ib, inner.getResults());
        });
    merged = {chunks.getResult(0), chunks.getResult(1), chunks.getResult(2)};
  }

  // Sinks join each row's whole state once.
  if (spec.sinksType)
    merged = state.withSink(
        merged,
        memref::LoadOp::create(b, kf.getArguments().back(), ValueRange{head}));
  FinalState fin = state.finalize(merged, spec.outBase);
  Value o = fin.o;
  Type outElt = spec.outType.getElementType();
  if (!outElt.isF32())
    o = arith::TruncFOp::create(b, outElt, o);
  memref::StoreOp::create(b, o, out, ValueRange{row, head, d});
  scf::IfOp::create(b, ir.eq(d, ir.idx(0)), [&](OpBuilder &nb, Location l) {
    memref::StoreOp::create(nb, l, fin.lse, lseOut, ValueRange{row, head});
    scf::YieldOp::create(nb, l);
  });
}

/// The buffers of a merge whose inputs and result live in memory: every
/// input state a kv.load_state of the same buffer types, the only user a
/// kv.store_state with an LSE buffer. Sinks merged into the result (a
/// kv.merge_sinks, the op itself or its only user) join in the kernel.
struct MergeOperands {
  SmallVector<kv::LoadStateOp> inputs;
  kv::StoreStateOp store;
  kv::MergeSinksOp sinks;
};

FailureOr<MergeOperands> getMergeOperands(Operation *op, std::string &whyNot) {
  MergeOperands m;
  Operation *last = op;
  if (auto sinks = dyn_cast<kv::MergeSinksOp>(op)) {
    m.sinks = sinks;
  } else if (op->hasOneUse()) {
    if (auto sinks = dyn_cast<kv::MergeSinksOp>(*op->getUsers().begin())) {
      m.sinks = sinks;
      last = sinks;
    }
  }
  if (!last->hasOneUse() ||
      !(m.store = dyn_cast<kv::StoreStateOp>(*last->getUsers().begin()))) {
    whyNot = "its state is not stored by a kv.store_state (its only user)";
    return failure();
  }
  if (!m.store.getLse()) {
    whyNot = "its kv.store_state keeps no LSE buffer";
    return failure();
  }
  ValueRange states = op->getOperands();
  if (auto sinks = dyn_cast<kv::MergeSinksOp>(op))
    states = sinks->getOperands().take_front();
  for (Value operand : states) {
    auto load = operand.getDefiningOp<kv::LoadStateOp>();
    if (!load) {
      whyNot = "an input state is not in buffers (a kv.load_state)";
      return failure();
    }
    m.inputs.push_back(load);
  }
  for (kv::LoadStateOp in : m.inputs)
    if (in.getOutput().getType() != m.inputs[0].getOutput().getType() ||
        in.getLse().getType() != m.inputs[0].getLse().getType()) {
      whyNot = "its input buffers have different types";
      return failure();
    }
  return m;
}

template <typename OpTy>
struct MergeLowering : OpRewritePattern<OpTy> {
  MergeLowering(MLIRContext *ctx, LoweringContext &context)
      : OpRewritePattern<OpTy>(ctx), context(context) {}

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    // (The pass reports why an op kept no kernel: whyNoMergeKernel.)
    if (std::optional<std::string> why = whyNoMergeKernel(op))
      return rewriter.notifyMatchFailure(op, *why);
    std::string whyNot;
    FailureOr<MergeOperands> m = getMergeOperands(op, whyNot);
    if (failed(m))
      return rewriter.notifyMatchFailure(op, whyNot);
    auto inType = cast<kv::StateType>(op->getOperand(0).getType());
    auto outState = cast<kv::StateType>(op->getResult(0).getType());
    MergeKernelSpec spec;
    spec.numInputs = std::is_same_v<OpTy, kv::MergePartitionsOp>
                         ? 0
                         : unsigned(m->inputs.size());
    spec.inOutputType = cast<MemRefType>(m->inputs[0].getOutput().getType());
    spec.inLseType = cast<MemRefType>(m->inputs[0].getLse().getType());
    spec.outType = cast<MemRefType>(m->store.getOutput().getType());
    spec.lseType = cast<MemRefType>(m->store.getLse().getType());
    spec.inBase = inType.getBase();
    spec.outBase = outState.getBase();
    spec.heads = outState.getHeads();
    spec.headDimV = outState.getHeadDimV();
    if (m->sinks)
      spec.sinksType = cast<MemRefType>(m->sinks.getSinks().getType());
    gpu::GPUFuncOp kernel = getMergeKernel(context, spec);

    PlanBuilder plan(op->getContext(), op->getName().getStringRef(),
                     kernel.getName());
    SmallVector<StringRef> args;
    SmallVector<std::string> names;
    unsigned pairs = std::max(1u, spec.numInputs);
    for (unsigned i = 0; i < pairs; ++i) {
      names.push_back(pairs == 1 ? "in_out" : "in" + std::to_string(i) + "_out");
      names.push_back(pairs == 1 ? "in_lse" : "in" + std::to_string(i) + "_lse");
    }
    for (unsigned i = 0; i < pairs; ++i) {
      plan.addBuffer(names[2 * i], kvgpu::ArgRole::input, spec.inOutputType);
      plan.addBuffer(names[2 * i + 1], kvgpu::ArgRole::input, spec.inLseType);
    }
    plan.addBuffer("out", kvgpu::ArgRole::output, spec.outType, {}, {"rows"});
    plan.addBuffer("lse", kvgpu::ArgRole::output, spec.lseType,
                   {plan.sym("rows")});
    for (const std::string &n : names)
      args.push_back(n);
    args.append({"out", "lse"});
    if (m->sinks) {
      plan.addBuffer("sinks", kvgpu::ArgRole::input, spec.sinksType);
      args.push_back("sinks");
    }
    plan.addKernel("merge", kernel, kvgpu::LaunchCondition::always,
                   {plan.sym("rows"), plan.cst(spec.heads), plan.cst(1)}, args);
    rewriter.setInsertionPoint(m->store);
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    llvm::StringMap<Value> bindings{{"out", m->store.getOutput()},
                                    {"lse", m->store.getLse()}};
    for (auto [i, in] : llvm::enumerate(m->inputs)) {
      bindings[names[2 * i]] = in.getOutput();
      bindings[names[2 * i + 1]] = in.getLse();
    }
    if (m->sinks)
      bindings["sinks"] = m->sinks.getSinks();
    if (failed(context.launch(b, plan, bindings, op.getLoc())))
      return failure();
    rewriter.eraseOp(m->store);
    if (m->sinks && m->sinks != op.getOperation())
      rewriter.eraseOp(m->sinks);
    rewriter.eraseOp(op);
    for (kv::LoadStateOp in : m->inputs)
      if (in->use_empty())
        rewriter.eraseOp(in);
    return success();
  }

  LoweringContext &context;
};

} // namespace

gpu::GPUFuncOp gpu_lowering::getMergeKernel(LoweringContext &context,
                                            const MergeKernelSpec &spec) {
  std::string stem =
      (spec.numInputs  ? "merge" + std::to_string(spec.numInputs)
       : spec.ragged ? std::string("merge_rows")
                     : std::string("merge_partitions")) +
      "_h" + std::to_string(spec.heads) + "_d" + std::to_string(spec.headDimV) +
      "_" + typeName(spec.outType.getElementType()) +
      (spec.outBase == kv::LseBase::e ? "_base_e" : "_base_2");
  KernelIdentity id(stem);
  id.add(spec.inOutputType)
      .add(spec.inLseType)
      .add(spec.outType)
      .add(spec.lseType)
      .add(kv::stringifyLseBase(spec.inBase))
      .add(kv::stringifyLseBase(spec.outBase))
      .add(int64_t(spec.numInputs))
      .add(spec.ragged ? "ragged" : "dense")
      .add(spec.singleRowsFinal ? "single rows final" : "every row merged")
      .add(context.getTarget().chip);
  if (spec.sinksType)
    id.add("sinks").add(spec.sinksType);
  std::string symbol = id.getSymbol();
  return context.getOrBuildKernel(symbol, [&](gpu::GPUModuleOp module) {
    unsigned pairs = std::max(1u, spec.numInputs);
    SmallVector<Type> argTypes;
    for (unsigned i = 0; i < pairs; ++i)
      argTypes.append({spec.inOutputType, spec.inLseType});
    if (spec.ragged)
      argTypes.push_back(MemRefType::get({ShapedType::kDynamic},
                                         IntegerType::get(module.getContext(), 32)));
    argTypes.append({spec.outType, spec.lseType});
    if (spec.sinksType)
      argTypes.push_back(spec.sinksType);
    SharedMemoryLayout layout;
    layout.add("lses",
               {spec.numInputs ? int64_t(spec.numInputs) : spec.headDimV},
               Float32Type::get(module.getContext()));
    KernelFunc kf = KernelFunc::create(module, symbol, argTypes,
                                       {spec.headDimV, 1, 1}, layout);
    buildMergeBody(kf, spec);
    return kf;
  });
}

std::optional<std::string> gpu_lowering::whyNoMergeKernel(Operation *op) {
  std::string whyNot;
  if (failed(getMergeOperands(op, whyNot)))
    return whyNot;
  auto state = cast<kv::StateType>(op->getResult(0).getType());
  if (state.getHeadDimV() > target::TargetInfo::kMaxThreadsPerBlock)
    return "head_dim_v " + std::to_string(state.getHeadDimV()) +
           " needs more than 1024 threads";
  return std::nullopt;
}

void gpu_lowering::populateMergePatterns(RewritePatternSet &patterns,
                                         LoweringContext &context) {
  patterns.add<MergeLowering<kv::MergeOp>, MergeLowering<kv::MergePartitionsOp>,
               MergeLowering<kv::MergeSinksOp>>(patterns.getContext(), context);
}
