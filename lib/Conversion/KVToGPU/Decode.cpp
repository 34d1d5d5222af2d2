//===- Decode.cpp - kv.decode to batch-decode kernels ---------------------===//
//
// When a kv.decode gets the batch-decode kernel (DecodeKernel.cpp) or the
// tensor-core one (DecodeTensorCore.cpp), and how it is launched: the
// direct kernel (one block per request and KV head) when the plan's work
// schedule (include/kvir/Runtime/WorkSchedule.h) cuts no request, else the
// split kernel (one block per work item and KV head) and the ragged merge
// kernel (Merge.cpp) that reduces each request's rows; fixed grids for
// CUDA graphs.
//
//===----------------------------------------------------------------------===//
#include "DecodeKernel.h"
#include "Patterns.h"

#include "kvir/Codegen/IRBuilder.h"
#include "kvir/Codegen/LaunchEmitter.h"
#include "kvir/Codegen/Variants.h"
#include "kvir/Dialect/KV/Utils/PagedAddressing.h"
#include "kvir/Dialect/KVGPU/Transforms/ConfigSelection.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include <cmath>

using namespace mlir;
using namespace kvir;
using namespace kvir::codegen;
using namespace kvir::gpu_lowering;

namespace {

/// The work schedule's parameters for a decode kernel.
struct DecodeSchedule {
  int64_t targetItems, granule, minChunk;
};
DecodeSchedule decodeSchedule(const DecodeKernelSpec &s,
                              const target::TargetInfo &target) {
  // Items of one KV head: as many blocks as the chip holds at once, so
  // that chunks are small next to an SM's share of the work; ptxas gives
  // these kernels 48-72 registers, 64 is assumed.
  int64_t threads = s.block()[0] * s.block()[1] * s.block()[2];
  int64_t resident = std::max<int64_t>(
      1, target.residentBlocks(threads, 64, decodeSharedLayout(s).getBytes()));
  int64_t hkv = s.kv.getKvHeads();
  // Chunks of 16-token steps, and long enough that a block's fixed costs
  // stay small next to its keys: the f32 partial states it writes and the
  // merge reads back plus q, G x (8 (D + 1) + 2 D) bytes, against 2 D
  // elements of K/V per key: 64 G keys of 2-byte KV (at least 128) keep
  // them under 4%, twice as many of 1-byte (fp8) KV.
  int64_t elementBytes =
      s.kv.getStorageElementType().getIntOrFloatBitWidth() / 8;
  return {(target.smCount * resident + hkv - 1) / hkv, 16,
          std::max<int64_t>(128, 64 * s.group() * 2 / elementBytes)};
}

/// The symbol of the decode kernel of `op` with `spec`.
std::string decodeKernelSymbol(kv::DecodeOp op, const DecodeKernelSpec &s,
                               const target::TargetInfo &target) {
  kv::PagedType kv = s.kv;
  std::string stem =
      "decode_" + kv::stringifyLayoutKind(kv.getLayout()).str() + "_" +
      kv::stringifyStorage(kv.getStorage()).str() + "_" +
      kv::stringifyTableForm(kv.getTable()).str() + "_p" +
      std::to_string(kv.getPageSize()) + "_h" + std::to_string(s.qHeads) +
      "x" + std::to_string(kv.getKvHeads()) + "_d" +
      std::to_string(kv.getHeadDim()) + "_" + typeName(kv.getDtype()) + "_" +
      (kv.isQuantized() ? kv::stringifyQuant(kv.getQuant()).str() + "_"
                        : std::string()) +
      typeName(s.outType.getElementType()) + (s.rope ? "_rope" : "") +
      (s.gathers() ? "_topk" : "") + (s.partitioned ? "_split" : "");
  KernelIdentity id(stem);
  id.add(op.getOperation())
      .add(s.outType)
      .add(s.lseType)
      .add(s.config)
      .add(s.partitioned ? "partial states" : "final state")
      .add(target.chip);
  for (Type t : s.kvTypes)
    id.add(t);
  if (s.gathers())
    id.add(s.topkType);
  if (s.partitioned)
    id.add(s.finalOutType).add(s.finalLseType);
  return id.getSymbol();
}

struct DecodeLowering : OpRewritePattern<kv::DecodeOp> {
  DecodeLowering(MLIRContext *ctx, LoweringContext &context)
      : OpRewritePattern(ctx), context(context) {}

  /// The direct kernel of `op` writing `outType` / `lseType`.
  static DecodeKernelSpec describeDecode(kv::DecodeOp op, MemRefType outType,
                                         MemRefType lseType,
                                         const target::TargetInfo &target) {
    DecodeKernelSpec spec = describeDecodeKernel(op, outType, lseType);
    if (Value topk = op.getTopk())
      spec.topkType = cast<MemRefType>(topk.getType());
    if (spec.kv.getQuant() == kv::Quant::int8_group)
      spec.scaleChunk = *int8ScaleChunkElements(
          op.getKv().getDefiningOp<kv::PagedViewOp>());
    std::string whyNot;
    spec.config = *kvgpu::getOrChooseDecodeConfig(op, target, whyNot);
    return spec;
  }

  LogicalResult matchAndRewrite(kv::DecodeOp op,
                                PatternRewriter &rewriter) const override {
    const target::TargetInfo &target = context.getTarget();
    std::string whyNotTensorCores;
    FailureOr<kvgpu::PrefillConfigAttr> tensorCores =
        getTensorCoreDecodeConfig(op, target, whyNotTensorCores);
    if (succeeded(tensorCores))
      return lowerDecodeOnTensorCores(op, *tensorCores, rewriter, context);
    if (std::optional<std::string> why = whyNoDecodeKernel(op, target))
      return rewriter.notifyMatchFailure(op, *why);
    auto view = op.getKv().getDefiningOp<kv::PagedViewOp>();
    kv::PagedOperands kv = kv::PagedOperands::fromView(view);
    kv::StateType stateType = op.getType();
    auto qType = cast<MemRefType>(op.getQ().getType());
    int64_t qHeads = qType.getDimSize(1);
    int64_t headDim = kv.type.getHeadDim();

    StateOutputs outputs(rewriter, op, stateType, op.getQ());
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Value out = outputs.getOutput(), lse = outputs.getLse();

    DecodeKernelSpec spec = describeDecode(op, cast<MemRefType>(out.getType()),
                                           cast<MemRefType>(lse.getType()),
                                           target);

    auto build = [&](const DecodeKernelSpec &s, StringRef symbol) {
      return context.getOrBuildKernel(symbol, [&](gpu::GPUModuleOp module) {
        KernelFunc kf = KernelFunc::create(module, symbol,
                                           decodeArgumentTypes(s), s.block(),
                                           decodeSharedLayout(s), op.getLoc());
        buildDecodeBody(kf, s);
        return kf;
      });
    };
    // CUDA graphs replay launches with the grids they were captured with:
    // a fixed grid for `fixedBatch` requests runs the split kernel and the
    // merge always (unsplit requests are written final by the split
    // kernel), never the direct one.
    int64_t fixedBatch = context.getGraphMaxBatch();
    std::string directName = decodeKernelSymbol(op, spec, target);
    gpu::GPUFuncOp direct = fixedBatch ? nullptr : build(spec, directName);
    DecodeKernelSpec split = spec;
    split.partitioned = true;
    const int64_t dyn = ShapedType::kDynamic;
    split.outType = MemRefType::get({dyn, qHeads, headDim}, b.getF32Type());
    split.lseType = MemRefType::get({dyn, qHeads}, b.getF32Type());
    split.finalOutType = spec.outType;
    split.finalLseType = spec.lseType;
    gpu::GPUFuncOp splitKernel =
        build(split, decodeKernelSymbol(op, split, target));
    MergeKernelSpec merge;
    merge.ragged = true;
    merge.singleRowsFinal = true;
    merge.inOutputType = split.outType;
    merge.inLseType = split.lseType;
    merge.outType = spec.outType;
    merge.lseType = spec.lseType;
    merge.inBase = kv::LseBase::two;
    merge.outBase = spec.base;
    merge.heads = qHeads;
    merge.headDimV = headDim;
    if (Value sinks = op.getSinks())
      merge.sinksType = cast<MemRefType>(sinks.getType());
    gpu::GPUFuncOp mergeKernel = getMergeKernel(context, merge);

    // The launch plan: arguments, sizes, the work schedule, the kernels.
    PlanBuilder plan(op.getContext(), "kv.decode", directName);
    using kvgpu::ArgRole;
    plan.addBuffer("q", ArgRole::input, qType, {}, {"batch"});
    SmallVector<StringRef> kvNames = addPagedKVArguments(plan, kv);
    plan.addBuffer("out", ArgRole::output, spec.outType, {plan.sym("batch")});
    plan.addBuffer("lse", ArgRole::output, spec.lseType, {plan.sym("batch")});
    int64_t hkv = kv.type.getKvHeads();
    DecodeSchedule schedule = decodeSchedule(spec, target);
    WorkSchedulePlan work;
    work.targetItems = schedule.targetItems;
    work.granule = schedule.granule;
    work.minChunk = schedule.minChunk;
    // A window bounds the keys of a range, not the entries of a list.
    work.windowLeft = spec.gathers() ? -1 : spec.windowLeft.value_or(-1);
    work.maxPartitions = spec.config.getMaxPartitions();
    work.blocksPerItem = hkv;
    work.fixedBatch = fixedBatch;
    kvgpu::SizeExprAttr gridBatch = addWorkSchedule(plan, work, target);
    plan.setConfig(spec.config);
    plan.addBuffer("partial_out", ArgRole::workspace, split.outType,
                   {plan.sym("max_work")});
    plan.addBuffer("partial_lse", ArgRole::workspace, split.lseType,
                   {plan.sym("max_work")});
    SmallVector<StringRef> directArgs{"q"}, splitArgs{"q"};
    llvm::append_range(directArgs, kvNames);
    llvm::append_range(splitArgs, kvNames);
    llvm::StringMap<Value> bindings{
        {"q", op.getQ()},
        {"out", out},
        {"lse", lse},
        {"kv_lengths", emitScheduleLengths(b, op.getQ(), kv, op.getTopk())}};
    if (Value topk = op.getTopk()) {
      addTopkArgument(plan, topk, "batch", bindings);
      directArgs.push_back("topk");
      splitArgs.push_back("topk");
    }
    directArgs.append({"out", "lse"});
    splitArgs.append(
        {"work_items", "partial_out", "partial_lse", "out", "lse"});
    for (auto [name, v] : llvm::zip(kvNames, kv.flatten()))
      bindings[name] = v;
    SmallVector<std::string> variantNames =
        addVariantArguments(plan, op, bindings);
    llvm::append_range(directArgs, variantNames);
    llvm::append_range(splitArgs, variantNames);
    SmallVector<StringRef> mergeArgs{"partial_out", "partial_lse",
                                     "merge_indptr", "out", "lse"};
    if (op.getSinks())
      mergeArgs.push_back("sinks");
    if (!fixedBatch)
      plan.addKernel("direct", direct, kvgpu::LaunchCondition::unsplit,
                     {plan.sym("batch"), plan.cst(hkv), plan.cst(1)},
                     directArgs);
    auto splitWhen = fixedBatch ? kvgpu::LaunchCondition::always
                                : kvgpu::LaunchCondition::split;
    plan.addKernel("split", splitKernel, splitWhen,
                   {plan.sym(fixedBatch ? "max_work" : "num_work"),
                    plan.cst(hkv), plan.cst(1)},
                   splitArgs);
    plan.addKernel("merge", mergeKernel, splitWhen,
                   {gridBatch, plan.cst(qHeads), plan.cst(1)}, mergeArgs);
    if (failed(context.launch(b, plan, bindings, op.getLoc())))
      return failure();
    memref::DeallocOp::create(b, bindings["kv_lengths"]);
    return outputs.finish(rewriter);
  }

  LoweringContext &context;
};

} // namespace

std::optional<std::string>
gpu_lowering::whyNoDecodeKernel(kv::DecodeOp op,
                                const target::TargetInfo &target) {
  auto view = op.getKv().getDefiningOp<kv::PagedViewOp>();
  if (!view)
    return std::string("its KV is not a kv.paged_view of the same function");
  std::string whyNotTensorCores;
  FailureOr<kvgpu::PrefillConfigAttr> tensorCores =
      getTensorCoreDecodeConfig(op, target, whyNotTensorCores);
  if (succeeded(tensorCores))
    return whyNoTensorCoreDecode(op, target, *tensorCores);
  if (!whyNotTensorCores.empty())
    return "on tensor cores: " + whyNotTensorCores;
  kv::PagedType kv = view.getType();
  if (!kv.getDtype().isF16() && !kv.getDtype().isBF16() &&
      !kv.getDtype().isF32())
    return "KV of type " + typeName(kv.getDtype()) +
           " has no decode kernel (f16, bf16 and f32 do)";
  if (kv.getHeadDim() != kv.getHeadDimV())
    return std::string("head_dim != head_dim_v has no decode kernel");
  if (std::optional<std::string> why = whyNotDecodePools(view))
    return why;
  std::string whyNot;
  FailureOr<kvgpu::DecodeConfigAttr> config =
      kvgpu::getOrChooseDecodeConfig(op, target, whyNot);
  if (failed(config))
    return whyNot;
  DecodeKernelSpec spec;
  spec.kv = kv;
  spec.qType = cast<MemRefType>(op.getQ().getType());
  spec.qHeads = spec.qType.getDimSize(1);
  spec.rope = op.getRopeAttr();
  // What sizes the kernel's shared memory: the selection's key slots and
  // the live-tile marks.
  spec.variants = KernelVariants::of(op);
  if (Value topk = op.getTopk())
    spec.topkType = cast<MemRefType>(topk.getType());
  spec.config = *config;
  if (op.getTopk() && kvgpu::transposedVChunk(kv))
    return std::string("top-k gathers single tokens, and vLLM's transposed V "
                       "pool is read in chunks of consecutive slots");
  return whyNotDecodeKernelSpec(view, spec);
}

std::optional<std::string>
gpu_lowering::whyNotDecodePools(kv::PagedViewOp view) {
  for (Value pool : view.getPools()) {
    auto [strides, offset] =
        cast<MemRefType>(pool.getType()).getStridesAndOffset();
    if (strides.back() != 1)
      return "pool " + typeName(pool.getType()) +
             " has a non-unit innermost stride";
  }
  return std::nullopt;
}

std::optional<std::string>
gpu_lowering::whyNotDecodeKernelSpec(kv::PagedViewOp view,
                                     const DecodeKernelSpec &spec) {
  kv::PagedType kv = view.getType();
  kvgpu::DecodeConfigAttr config = spec.config;
  if (std::optional<std::string> why = whyNoTransposedV(view, "decode"))
    return why;
  if (spec.rope)
    if (std::optional<std::string> why =
            whyNotDecodeRope(spec.rope, kv.getHeadDim(), config.getVector()))
      return why;
  if (kv.getQuant() == kv::Quant::int8_group) {
    // Codes and scales arrive by cp.async only.
    if (config.getVector() != 16)
      return "int8 codes in " + std::to_string(config.getVector()) +
             "-element vectors: the int8 decode kernel copies 16-byte "
             "chunks of codes (the pool layout must prove the head dim "
             "contiguous in 16 bytes)";
    if (!int8ScaleChunkElements(view))
      return "int8 scale rows of " +
             std::to_string(kv.getHeadDim() / kv.getQuantGroup()) + " / " +
             std::to_string(kv.getHeadDimV() / kv.getQuantGroup()) +
             " scales not contiguous in chunks of at least 4 bytes (the "
             "decode kernel copies scales with cp.async)";
  }
  return whyNotDecodeConfig(spec);
}

void gpu_lowering::populateDecodePatterns(RewritePatternSet &patterns,
                                          LoweringContext &context) {
  patterns.add<DecodeLowering>(patterns.getContext(), context);
}
