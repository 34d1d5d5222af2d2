//===- MlaDecode.cpp - kv.mla_decode to tensor-core MLA kernels -----------===//
//
// Multi-head latent attention is the tensor-core prefill kernel with one KV
// head shared by all H query heads: a query tile packs heads (and, with
// rows(qo_indptr), query rows: packed row r is query row r / H, head r % H),
// so ckv and kpe are read once per (query tile, partition) whatever H is.
// Per K/V tile the kernel computes [rows x (D + pe)] x [(D + pe) x tile]
// (q_nope against ckv plus q_pe against kpe) and [rows x tile] x [tile x D]
// with ckv as the values, both on mma.sync; the config's value_warps split
// the D value columns over warps (PrefillKernel.cpp).
//
// Split-KV with one query row per request (decode) follows the lengths: a
// work schedule (kvir_schedule_work, as kv.decode's) cuts long requests
// into chunks of near-equal size, whole requests of a skewed batch beside
// them, so no block is left with most of the work; the split kernel takes
// one item per block (times the request's query tiles), and the ragged
// merge kernel reduces the chunks. With rows(qo_indptr) the prefill's
// uniform partitions apply (emitTensorCoreLaunches), and so does a config of
// max_partitions = 1 (never split).
//
//===----------------------------------------------------------------------===//
#include "Patterns.h"
#include "PrefillKernel.h"

#include "kvir/Codegen/LaunchEmitter.h"
#include "kvir/Codegen/QueryTiles.h"
#include "kvir/Dialect/KV/Utils/PagedAddressing.h"
#include "kvir/Dialect/KVGPU/Transforms/ConfigSelection.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include <cmath>

using namespace mlir;
using namespace kvir;
using namespace kvir::codegen;
using namespace kvir::gpu_lowering;

namespace {

/// The spec of `op`'s direct kernel writing `out` / `lse` (null: the
/// state's own buffer types), or failure with the reason.
FailureOr<PrefillKernelSpec> describeMla(kv::MlaDecodeOp op,
                                         const target::TargetInfo &target,
                                         MemRefType outType,
                                         MemRefType lseType,
                                         std::string &whyNot) {
  auto view = op.getKv().getDefiningOp<kv::PagedViewOp>();
  PrefillKernelSpec spec;
  spec.paged = view.getType();
  for (Value v : kv::PagedOperands::fromView(view).flatten())
    spec.kvTypes.push_back(v.getType());
  spec.kvHeads = 1;
  spec.headDim = spec.paged.getHeadDim();
  spec.headDimV = spec.headDim;
  spec.peDim = spec.paged.getPeDim();
  spec.kvElementType = spec.paged.getDtype();
  spec.qType = cast<MemRefType>(op.getQNope().getType());
  spec.qPeType = cast<MemRefType>(op.getQPe().getType());
  if (Value qo = op.getQoIndptr())
    spec.qoIndptrType = cast<MemRefType>(qo.getType());
  kv::StateType state = op.getType();
  spec.outType = outType ? outType
                         : MemRefType::get(state.getOutputShape(),
                                           state.getElementType());
  spec.lseType =
      lseType ? lseType
              : MemRefType::get(state.getLseShape(),
                                Float32Type::get(op.getContext()));
  if (std::optional<std::string> why =
          whyNot16ByteRows("output", spec.outType)) {
    whyNot = *why;
    return failure();
  }
  spec.qHeads = spec.qType.getDimSize(1);
  spec.causal = op.getCausal();
  // Scores take both parts: the default scale is 1 / sqrt(D + pe).
  spec.smScale = op.getSmScale()
                     ? op.getSmScale()->convertToDouble()
                     : 1.0 / std::sqrt(double(spec.headDim + spec.peDim));
  spec.base = state.getBase();
  FailureOr<kvgpu::PrefillConfigAttr> config =
      kvgpu::getOrChooseMlaConfig(op, target, whyNot);
  if (failed(config))
    return failure();
  spec.config = *config;
  int64_t shared = prefillSharedLayout(spec).getBytes();
  if (shared > target.maxSharedBytesPerBlock) {
    whyNot = std::to_string(shared) + " bytes of shared memory, over the " +
             std::to_string(target.maxSharedBytesPerBlock) + " a block of " +
             target.chip.str() + " may use";
    return failure();
  }
  return spec;
}

std::string mlaKernelSymbol(kv::MlaDecodeOp op, const PrefillKernelSpec &s,
                            const target::TargetInfo &target) {
  std::string stem =
      "mla_" + kv::stringifyTableForm(s.paged.getTable()).str() + "_p" +
      std::to_string(s.paged.getPageSize()) + "_h" + std::to_string(s.qHeads) +
      "_d" + std::to_string(s.headDim) + "_pe" + std::to_string(s.peDim) +
      "_" + typeName(s.kvElementType) + "_" +
      typeName(s.outType.getElementType()) +
      (s.oneRowPerRequest() ? "" : "_rows") + (s.causal ? "_causal" : "") +
      (s.partitioned || s.scheduled ? "_split" : "");
  KernelIdentity id(stem);
  id.add(op.getOperation())
      .add(s.outType)
      .add(s.lseType)
      .add(s.config)
      .add(s.partitioned   ? "partial states"
           : s.scheduled ? "scheduled partial states"
                         : "final state")
      .add(target.chip);
  for (Type t : s.kvTypes)
    id.add(t);
  if (s.scheduled)
    id.add(s.finalOutType).add(s.finalLseType);
  return id.getSymbol();
}

/// The launches of an MLA decode with one query row per request: the
/// direct kernel (grid: requests x their query tiles) when the work
/// schedule cuts no request, else the scheduled split kernel and the
/// ragged merge.
LogicalResult emitScheduledLaunches(ImplicitLocOpBuilder &b,
                                    LoweringContext &context,
                                    kv::MlaDecodeOp op,
                                    const PrefillKernelSpec &spec, Value out,
                                    Value lse) {
  const target::TargetInfo &target = context.getTarget();
  auto build = [&](const PrefillKernelSpec &s) {
    std::string name = mlaKernelSymbol(op, s, target);
    return context.getOrBuildKernel(name, [&](gpu::GPUModuleOp module) {
      KernelFunc kf = KernelFunc::create(
          module, name, prefillArgumentTypes(s),
          {s.config.getNumThreads(), 1, 1}, prefillSharedLayout(s),
          op.getLoc());
      buildPrefillBody(kf, s);
      return kf;
    });
  };
  // CUDA graphs: fixed grids run the split kernel (which writes whole
  // requests final) and the merge always, never the direct kernel.
  int64_t fixedBatch = context.getGraphMaxBatch();
  std::string directName = mlaKernelSymbol(op, spec, target);
  gpu::GPUFuncOp direct = fixedBatch ? nullptr : build(spec);
  PrefillKernelSpec split = spec;
  split.scheduled = true;
  const int64_t dyn = ShapedType::kDynamic;
  split.outType =
      MemRefType::get({dyn, spec.qHeads, spec.headDimV}, b.getF32Type());
  split.lseType = MemRefType::get({dyn, spec.qHeads}, b.getF32Type());
  split.finalOutType = spec.outType;
  split.finalLseType = spec.lseType;
  gpu::GPUFuncOp splitKernel = build(split);
  MergeKernelSpec merge;
  merge.ragged = true;
  merge.singleRowsFinal = true;
  merge.inOutputType = split.outType;
  merge.inLseType = split.lseType;
  merge.outType = spec.outType;
  merge.lseType = spec.lseType;
  merge.inBase = kv::LseBase::two;
  merge.outBase = spec.base;
  merge.heads = spec.qHeads;
  merge.headDimV = spec.headDimV;
  gpu::GPUFuncOp mergeKernel = getMergeKernel(context, merge);

  PlanBuilder plan(op.getContext(), "kv.mla_decode", directName);
  using kvgpu::ArgRole;
  plan.addBuffer("q_nope", ArgRole::input, spec.qType, {}, {"batch"});
  plan.addBuffer("q_pe", ArgRole::input, spec.qPeType, {plan.sym("batch")});
  auto view = op.getKv().getDefiningOp<kv::PagedViewOp>();
  kv::PagedOperands kv = kv::PagedOperands::fromView(view);
  SmallVector<StringRef> kvNames = addPagedKVArguments(plan, kv);
  plan.addBuffer("out", ArgRole::output, spec.outType, {plan.sym("batch")});
  plan.addBuffer("lse", ArgRole::output, spec.lseType, {plan.sym("batch")});
  // Items of a chunk of keys each: as many as the chip runs blocks at once
  // (a request's query tiles are blocks of one item), chunks of whole K/V
  // tiles, at least 256 keys (as the prefill's partitions).
  int64_t tilesPerRequest =
      llvm::divideCeil(spec.qHeads, spec.config.getQTile());
  int64_t resident = std::max<int64_t>(
      1, target.residentBlocks(spec.config.getNumThreads(), 255,
                               prefillSharedLayout(split).getBytes()));
  WorkSchedulePlan work;
  work.targetItems =
      std::max<int64_t>(1, target.smCount * resident / tilesPerRequest);
  work.granule = spec.config.getKvTile();
  work.minChunk = std::max<int64_t>(256, spec.config.getKvTile());
  work.maxPartitions = spec.config.getMaxPartitions();
  work.blocksPerItem = tilesPerRequest;
  work.fixedBatch = fixedBatch;
  kvgpu::SizeExprAttr gridBatch = addWorkSchedule(plan, work, target);
  QueryTiles tiles(spec.group(), spec.config.getQTile());
  plan.defineSize("num_tile_slots", tiles.numSlotsOneRowEach(plan.sym("batch")));
  plan.setConfig(spec.config);
  plan.addBuffer("partial_out", ArgRole::workspace, split.outType,
                 {plan.sym("max_work")});
  plan.addBuffer("partial_lse", ArgRole::workspace, split.lseType,
                 {plan.sym("max_work")});
  SmallVector<StringRef> inputs{"q_nope", "q_pe"};
  llvm::append_range(inputs, kvNames);
  SmallVector<StringRef> directArgs(inputs), splitArgs(inputs);
  directArgs.append({"out", "lse"});
  splitArgs.append({"work_items", "partial_out", "partial_lse", "out", "lse"});
  if (!fixedBatch)
    plan.addKernel("direct", direct, kvgpu::LaunchCondition::unsplit,
                   {plan.sym("num_tile_slots"), plan.cst(1), plan.cst(1)},
                   directArgs);
  auto splitWhen = fixedBatch ? kvgpu::LaunchCondition::always
                              : kvgpu::LaunchCondition::split;
  plan.addKernel("split", splitKernel, splitWhen,
                 {plan.sym(fixedBatch ? "max_work" : "num_work"), plan.cst(1),
                  plan.cst(tilesPerRequest)},
                 splitArgs);
  plan.addKernel("merge", mergeKernel, splitWhen,
                 {gridBatch, plan.cst(spec.qHeads), plan.cst(1)},
                 {"partial_out", "partial_lse", "merge_indptr", "out", "lse"});
  kvgpu::LaunchPlanAttr planAttr = plan.build(op.getLoc());
  if (!planAttr)
    return failure();
  context.recordPlan(planAttr);

  llvm::StringMap<Value> bindings{
      {"q_nope", op.getQNope()},
      {"q_pe", op.getQPe()},
      {"out", out},
      {"lse", lse},
      {"kv_lengths", kv::emitLengthsBuffer(
                         b, memref::DimOp::create(b, op.getQNope(), 0),
                         [&](ImplicitLocOpBuilder &ib, Value r) {
                           return kv::emitKvLen(ib, kv, r);
                         })}};
  for (auto [name, v] : llvm::zip(kvNames, kv.flatten()))
    bindings[name] = v;
  if (failed(emitLaunches(b, planAttr, bindings, context.getKernelModule())))
    return failure();
  memref::DeallocOp::create(b, bindings["kv_lengths"]);
  return success();
}

struct MlaDecodeLowering : OpRewritePattern<kv::MlaDecodeOp> {
  MlaDecodeLowering(MLIRContext *ctx, LoweringContext &context)
      : OpRewritePattern(ctx), context(context) {}

  LogicalResult matchAndRewrite(kv::MlaDecodeOp op,
                                PatternRewriter &rewriter) const override {
    const target::TargetInfo &target = context.getTarget();
    if (std::optional<std::string> why = whyNoMlaKernel(op, target))
      return rewriter.notifyMatchFailure(op, *why);
    StateOutputs outputs(rewriter, op, op.getType(), op.getQNope());
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Value out = outputs.getOutput(), lse = outputs.getLse();
    // whyNoMlaKernel described these buffers already.
    std::string whyNot;
    PrefillKernelSpec spec =
        *describeMla(op, target, cast<MemRefType>(out.getType()),
                     cast<MemRefType>(lse.getType()), whyNot);

    // (A config of one partition never splits: no schedule.)
    if (spec.oneRowPerRequest() && spec.config.getMaxPartitions() > 1) {
      if (failed(emitScheduledLaunches(b, context, op, spec, out, lse)))
        return failure();
      return outputs.finish(rewriter);
    }
    auto addInputs = [&](PlanBuilder &plan, llvm::StringMap<Value> &bindings) {
      using kvgpu::ArgRole;
      SmallVector<StringRef> names{"q_nope", "q_pe"};
      if (spec.oneRowPerRequest()) {
        plan.addBuffer("q_nope", ArgRole::input, spec.qType, {}, {"batch"});
        plan.defineSize("nnz", plan.sym("batch"));
      } else {
        plan.addBuffer("q_nope", ArgRole::input, spec.qType, {}, {"nnz"});
      }
      plan.addBuffer("q_pe", ArgRole::input, spec.qPeType, {plan.sym("nnz")});
      bindings["q_nope"] = op.getQNope();
      bindings["q_pe"] = op.getQPe();
      if (!spec.oneRowPerRequest()) {
        plan.addBuffer("qo_indptr", ArgRole::input, spec.qoIndptrType, {},
                       {"qo_indptr_len"});
        plan.defineSize("batch", kvgpu::SizeExprAttr::add(
                                     plan.sym("qo_indptr_len"), plan.cst(-1)));
        bindings["qo_indptr"] = op.getQoIndptr();
        names.push_back("qo_indptr");
      }
      kv::PagedOperands kv = kv::PagedOperands::fromView(
          op.getKv().getDefiningOp<kv::PagedViewOp>());
      SmallVector<StringRef> kvNames = addPagedKVArguments(plan, kv);
      for (auto [name, v] : llvm::zip(kvNames, kv.flatten()))
        bindings[name] = v;
      llvm::append_range(names, kvNames);
      return names;
    };
    if (failed(emitTensorCoreLaunches(b, context, op, spec, out, lse,
                                      addInputs,
                                      [&](const PrefillKernelSpec &s) {
                                        return mlaKernelSymbol(op, s, target);
                                      })))
      return failure();
    return outputs.finish(rewriter);
  }

  LoweringContext &context;
};

} // namespace

std::optional<std::string>
gpu_lowering::whyNoMlaKernel(kv::MlaDecodeOp op,
                             const target::TargetInfo &target) {
  auto view = op.getKv().getDefiningOp<kv::PagedViewOp>();
  if (!view)
    return std::string("its KV is not a kv.paged_view of the same function");
  kv::PagedType kv = view.getType();
  if (kv.isQuantized())
    return std::string("quantized MLA caches (") +
           kv::stringifyQuant(kv.getQuant()).str() + ") have no kernel yet";
  Type dtype = kv.getDtype();
  if (!dtype.isF16() && !dtype.isBF16())
    return "MLA caches of type " + typeName(dtype) +
           " have no kernel (f16 and bf16 do: mma.sync)";
  for (Value pool : view.getPools()) {
    auto type = cast<MemRefType>(pool.getType());
    if (type.getStridesAndOffset().first.back() != 1)
      return "pool " + typeName(type) + " has a non-unit innermost stride";
  }
  if (view.getVectorWidth() * dtype.getIntOrFloatBitWidth() < 128)
    return std::string("the ckv / kpe rows are not contiguous in 16-byte "
                       "chunks (the kernel copies them with 16-byte cp.async)");
  for (auto [what, v] : {std::pair<StringRef, Value>{"q_nope", op.getQNope()},
                         {"q_pe", op.getQPe()}})
    if (std::optional<std::string> why =
            whyNot16ByteRows(what, cast<MemRefType>(v.getType())))
      return why;
  if (!target.hasMmaSync || !target.hasCpAsync)
    return target.chip.str() + " has no mma.sync / cp.async";
  MemRefType outType, lseType;
  if (kv::StoreStateOp store = findStateDestination(op).store) {
    outType = cast<MemRefType>(store.getOutput().getType());
    if (Value lse = store.getLse())
      lseType = cast<MemRefType>(lse.getType());
  }
  std::string whyNot;
  if (failed(describeMla(op, target, outType, lseType, whyNot)))
    return whyNot;
  return std::nullopt;
}

void gpu_lowering::populateMlaDecodePatterns(RewritePatternSet &patterns,
                                             LoweringContext &context) {
  patterns.add<MlaDecodeLowering>(patterns.getContext(), context);
}
