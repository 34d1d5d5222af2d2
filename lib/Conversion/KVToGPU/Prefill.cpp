//===- Prefill.cpp - kv.prefill to tensor-core prefill kernels ------------===//
//
// Which prefills get a kernel (whyNoPrefillKernel), the kernel's symbol,
// and the launch plan: block slots for the query tiles (QueryTiles) times
// KV heads times KV partitions. Split-KV: when the tiles cannot fill the
// chip, P > 1 partitions each take a share of every tile's keys and write
// base-2 f32 partial states that the merge kernel (Merge.cpp) reduces. The
// kernel itself is PrefillKernel.cpp.
//
//===----------------------------------------------------------------------===//
#include "Patterns.h"
#include "PrefillKernelParts.h"

#include "kvir/Codegen/IRBuilder.h"
#include "kvir/Codegen/LaunchEmitter.h"
#include "kvir/Codegen/QueryTiles.h"
#include "kvir/Codegen/Variants.h"
#include "kvir/Dialect/KV/IR/PoolLayout.h"
#include "kvir/Dialect/KV/Utils/PagedAddressing.h"
#include "kvir/Dialect/KVGPU/Transforms/ConfigSelection.h"
#include "kvir/Runtime/WorkSchedule.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include <cmath>

using namespace mlir;
using namespace kvir;
using namespace kvir::codegen;
using namespace kvir::gpu_lowering;

namespace {


/// Fills the KV part of a spec from the op's view.
void describeKV(kv::PrefillOp op, PrefillKernelSpec &spec) {
  if (auto view = op.getKv().getDefiningOp<kv::PagedViewOp>()) {
    describePagedKV(view, spec);
    return;
  }
  auto view = op.getKv().getDefiningOp<kv::RaggedViewOp>();
  kv::RaggedType type = view.getType();
  spec.kvTypes = {view.getK().getType(), view.getV().getType(),
                  view.getKvIndptr().getType()};
  spec.kvHeads = type.getKvHeads();
  spec.headDim = type.getHeadDim();
  spec.headDimV = type.getHeadDimV();
  spec.kvElementType = type.getDtype();
}

/// The spec of `op`'s direct kernel writing `out` / `lse` (null: the
/// state's own buffer types), or failure with the reason.
FailureOr<PrefillKernelSpec> describePrefill(kv::PrefillOp op,
                                             const target::TargetInfo &target,
                                             MemRefType outType,
                                             MemRefType lseType,
                                             std::string &whyNot) {
  PrefillKernelSpec spec;
  describeKV(op, spec);
  spec.qType = cast<MemRefType>(op.getQ().getType());
  spec.qoIndptrType = cast<MemRefType>(op.getQoIndptr().getType());
  if (Value mask = op.getMask())
    spec.maskType = cast<MemRefType>(mask.getType());
  if (Value positions = op.getPositions())
    spec.positionsType = cast<MemRefType>(positions.getType());
  if (Value framePositions = op.getFramePositions()) {
    spec.frameIndptrType = cast<MemRefType>(op.getFrameIndptr().getType());
    spec.framePositionsType = cast<MemRefType>(framePositions.getType());
  }
  kv::StateType state = op.getType();
  if (failed(describeStateBuffers(state, outType, lseType, spec, whyNot)))
    return failure();
  spec.qHeads = spec.qType.getDimSize(1);
  spec.causal = op.getCausal();
  spec.windowLeft = op.getWindowLeft();
  spec.rope = op.getRopeAttr();
  spec.smScale = op.getSmScale() ? op.getSmScale()->convertToDouble()
                                 : 1.0 / std::sqrt(double(spec.headDim));
  if (auto cap = op.getLogitsSoftCap())
    spec.softCap = cap->convertToDouble();
  spec.variants = KernelVariants::of(op);
  spec.base = state.getBase();
  FailureOr<kvgpu::PrefillConfigAttr> config =
      kvgpu::getOrChoosePrefillConfig(op, target, whyNot);
  if (failed(config))
    return failure();
  spec.config = *config;
  if (std::optional<std::string> why = whyNotPrefillSpec(spec, target)) {
    whyNot = *why;
    return failure();
  }
  return spec;
}

/// The symbol of the prefill kernel of `op` with `spec`.
std::string prefillKernelSymbol(kv::PrefillOp op, const PrefillKernelSpec &s,
                                const target::TargetInfo &target) {
  std::string kvPart =
      s.paged ? kv::stringifyLayoutKind(s.paged.getLayout()).str() + "_" +
                    kv::stringifyStorage(s.paged.getStorage()).str() + "_" +
                    kv::stringifyTableForm(s.paged.getTable()).str() + "_p" +
                    std::to_string(s.paged.getPageSize())
              : std::string("ragged");
  std::string stem =
      "prefill_" + kvPart + "_h" + std::to_string(s.qHeads) + "x" +
      std::to_string(s.kvHeads) + "_d" + std::to_string(s.headDim) + "_" +
      typeName(s.kvElementType) + "_" +
      (s.quantizedKV() ? kv::stringifyQuant(s.paged.getQuant()).str() + "_"
                       : std::string()) +
      typeName(s.outType.getElementType()) + (s.causal ? "_causal" : "") +
      (s.positionsType ? "_positions" : "") +
      (s.framePositionsType ? "_frame" : "") + (s.rope ? "_rope" : "");
  return tensorCoreKernelSymbol(stem, op, s, target);
}

struct PrefillLowering : OpRewritePattern<kv::PrefillOp> {
  PrefillLowering(MLIRContext *ctx, LoweringContext &context)
      : OpRewritePattern(ctx), context(context) {}

  LogicalResult matchAndRewrite(kv::PrefillOp op,
                                PatternRewriter &rewriter) const override {
    const target::TargetInfo &target = context.getTarget();
    if (std::optional<std::string> why = whyNoPrefillKernel(op, target))
      return rewriter.notifyMatchFailure(op, *why);
    if (kvgpu::prefillTakesQueryRows(op))
      return lowerPrefillQueryRows(op, rewriter, context);
    StateOutputs outputs(rewriter, op, op.getType(), op.getQ());
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Value out = outputs.getOutput(), lse = outputs.getLse();
    // whyNoPrefillKernel described these buffers already.
    std::string whyNot;
    PrefillKernelSpec spec =
        *describePrefill(op, target, cast<MemRefType>(out.getType()),
                         cast<MemRefType>(lse.getType()), whyNot);

    auto addInputs = [&](PlanBuilder &plan,
                         llvm::StringMap<Value> &bindings) {
      using kvgpu::ArgRole;
      plan.addBuffer("q", ArgRole::input, spec.qType, {}, {"nnz"});
      plan.addBuffer("qo_indptr", ArgRole::input, spec.qoIndptrType, {},
                     {"qo_indptr_len"});
      plan.defineSize("batch", kvgpu::SizeExprAttr::add(
                                   plan.sym("qo_indptr_len"), plan.cst(-1)));
      bindings["q"] = op.getQ();
      bindings["qo_indptr"] = op.getQoIndptr();
      SmallVector<StringRef> names{"q", "qo_indptr"};
      if (auto view = op.getKv().getDefiningOp<kv::PagedViewOp>()) {
        kv::PagedOperands kv = kv::PagedOperands::fromView(view);
        SmallVector<StringRef> kvNames = addPagedKVArguments(plan, kv);
        for (auto [name, v] : llvm::zip(kvNames, kv.flatten()))
          bindings[name] = v;
        llvm::append_range(names, kvNames);
      } else {
        auto ragged = op.getKv().getDefiningOp<kv::RaggedViewOp>();
        plan.addBuffer("k", ArgRole::input, cast<MemRefType>(spec.kvTypes[0]),
                       {}, {"nnz_kv"});
        plan.addBuffer("v", ArgRole::input, cast<MemRefType>(spec.kvTypes[1]),
                       {plan.sym("nnz_kv")});
        plan.addBuffer("kv_indptr", ArgRole::input,
                       cast<MemRefType>(spec.kvTypes[2]),
                       {plan.sym("qo_indptr_len")});
        names.append({"k", "v", "kv_indptr"});
        bindings["k"] = ragged.getK();
        bindings["v"] = ragged.getV();
        bindings["kv_indptr"] = ragged.getKvIndptr();
      }
      if (spec.maskType) {
        plan.addBuffer("mask", ArgRole::input, spec.maskType, {},
                       {"mask_size"});
        names.push_back("mask");
        bindings["mask"] = op.getMask();
      }
      if (spec.positionsType) {
        plan.addBuffer("positions", ArgRole::input, spec.positionsType,
                       {plan.sym("nnz")});
        names.push_back("positions");
        bindings["positions"] = op.getPositions();
      }
      if (spec.framePositionsType) {
        plan.addBuffer("frame_indptr", ArgRole::input, spec.frameIndptrType, {},
                       {"frame_indptr_len"});
        plan.addBuffer("frame_positions", ArgRole::input,
                       spec.framePositionsType, {plan.sym("nnz")});
        names.append({"frame_indptr", "frame_positions"});
        bindings["frame_indptr"] = op.getFrameIndptr();
        bindings["frame_positions"] = op.getFramePositions();
      }
      return names;
    };
    if (failed(emitTensorCoreLaunches(
            b, context, op, spec, out, lse,
            {op.getQoIndptr(), op.getKv(), Value()}, addInputs,
            [&](const PrefillKernelSpec &s) {
              return prefillKernelSymbol(op, s, target);
            })))
      return failure();
    return outputs.finish(rewriter);
  }

  LoweringContext &context;
};

} // namespace

void gpu_lowering::describePagedKV(kv::PagedViewOp view,
                                   PrefillKernelSpec &spec) {
  spec.paged = view.getType();
  for (Value v : kv::PagedOperands::fromView(view).flatten())
    spec.kvTypes.push_back(v.getType());
  spec.kvHeads = spec.paged.getKvHeads();
  spec.headDim = spec.paged.getHeadDim();
  spec.headDimV = spec.paged.getHeadDimV();
  spec.kvElementType = spec.paged.getDtype();
  if (spec.paged.getQuant() == kv::Quant::int8_group)
    spec.scaleChunk = int8ScaleChunkElements(view).value_or(0);
  if (spec.paged.isMla()) {
    spec.headDimV = spec.headDim;
    spec.peDim = spec.paged.getPeDim();
  }
}

LogicalResult gpu_lowering::describeStateBuffers(kv::StateType state,
                                                 MemRefType outType,
                                                 MemRefType lseType,
                                                 PrefillKernelSpec &spec,
                                                 std::string &whyNot) {
  spec.outType = outType ? outType
                         : MemRefType::get(state.getOutputShape(),
                                           state.getElementType());
  spec.lseType = lseType ? lseType
                         : MemRefType::get(state.getLseShape(),
                                           Float32Type::get(state.getContext()));
  if (std::optional<std::string> why =
          whyNot16ByteRows("output", spec.outType)) {
    whyNot = *why;
    return failure();
  }
  return success();
}

std::string gpu_lowering::tensorCoreKernelSymbol(StringRef stem, Operation *op,
                                                 const PrefillKernelSpec &s,
                                                 const target::TargetInfo &target) {
  bool partial = s.partitioned || s.scheduled;
  KernelIdentity id((stem + (partial ? "_split" : "")).str());
  id.add(op)
      .add(s.outType)
      .add(s.lseType)
      .add(s.config)
      .add(s.partitioned   ? "partial states"
           : s.scheduled ? "scheduled partial states"
                         : "final state")
      .add(target.chip);
  for (Type t : s.kvTypes)
    id.add(t);
  if (s.gathers())
    id.add(s.topkType);
  if (s.framePositionsType)
    id.add(s.frameIndptrType).add(s.framePositionsType);
  if (s.scheduled)
    id.add(s.finalOutType).add(s.finalLseType);
  return id.getSymbol();
}

std::optional<std::string> gpu_lowering::whyNot16ByteRows(StringRef what,
                                                         MemRefType type) {
  auto [strides, offset] = type.getStridesAndOffset();
  int64_t elementBytes = type.getElementTypeBitWidth() / 8;
  if (strides.back() != 1)
    return (what + " " + typeName(type) + " has a non-unit innermost stride")
        .str();
  auto notAligned = [&] {
    return (what + " " + typeName(type) +
            " has rows that are not 16-byte aligned (cp.async and the "
            "output stores move 16-byte chunks)")
        .str();
  };
  ArrayRef<int64_t> shape = type.getShape();
  for (int64_t i = 0; i + 1 < type.getRank(); ++i) {
    if (!ShapedType::isDynamic(strides[i])) {
      if ((strides[i] * elementBytes) % 16)
        return notAligned();
      continue;
    }
    // A row-major memref's stride is the product of the inner sizes: its
    // static factors decide.
    if (!type.getLayout().isIdentity())
      return notAligned();
    int64_t known = elementBytes;
    for (int64_t size : shape.drop_front(i + 1))
      if (!ShapedType::isDynamic(size))
        known *= size;
    if (known % 16)
      return notAligned();
  }
  if (ShapedType::isDynamic(offset) || (offset * elementBytes) % 16)
    return (what + " " + typeName(type) + " has an offset that is not 16-byte "
                                          "aligned")
        .str();
  return std::nullopt;
}

/// The tensor-core kernel of `spec` named `name`, built once per module.
static gpu::GPUFuncOp buildTensorCoreKernel(LoweringContext &context,
                                            Operation *op,
                                            const PrefillKernelSpec &spec,
                                            StringRef name) {
  return context.getOrBuildKernel(name, [&](gpu::GPUModuleOp module) {
    WarpRoles roles = spec.roles();
    KernelFunc kf = KernelFunc::create(module, name, prefillArgumentTypes(spec),
                                       {roles.getNumThreads(), 1, 1},
                                       prefillSharedLayout(spec), op->getLoc());
    roles.declareLaunchBounds(kf.getOp());
    buildPrefillBody(kf, spec);
    return kf;
  });
}

/// The merge kernel reducing `split`'s base-2 partial states into the
/// outputs of `spec` (by a work schedule's rows when `ragged`, whose
/// single-row requests the split kernel wrote final).
static gpu::GPUFuncOp getPartialsMerge(LoweringContext &context,
                                       const PrefillKernelSpec &spec,
                                       const PrefillKernelSpec &split,
                                       bool ragged) {
  MergeKernelSpec merge;
  merge.ragged = ragged;
  merge.singleRowsFinal = ragged;
  merge.inOutputType = split.outType;
  merge.inLseType = split.lseType;
  merge.outType = spec.outType;
  merge.lseType = spec.lseType;
  merge.inBase = kv::LseBase::two;
  merge.outBase = spec.base;
  merge.heads = spec.qHeads;
  merge.headDimV = spec.headDimV;
  if (spec.variants)
    if (Value sinks =
            kv::AttentionVariantOpInterface(spec.variants.op).getSinks())
      merge.sinksType = cast<MemRefType>(sinks.getType());
  return getMergeKernel(context, merge);
}

/// Adds `op`'s variant operands to `plan` and `bindings` and, for the
/// sinks, to the arguments of its merge (`mergeArgs`); returns their names.
static SmallVector<std::string>
addVariantLaunchArguments(Operation *op, PlanBuilder &plan,
                          llvm::StringMap<Value> &bindings,
                          SmallVectorImpl<StringRef> &mergeArgs) {
  SmallVector<std::string> names = addVariantArguments(plan, op, bindings);
  if (cast<kv::AttentionVariantOpInterface>(op).getSinks())
    mergeArgs.push_back("sinks");
  return names;
}

/// The scheduled split kernel of `spec`: a work item's chunk gives f32
/// base-2 partial states in [rows, Hq, Dv] / [rows, Hq] workspaces, a
/// whole item its final states in `spec`'s outputs.
static PrefillKernelSpec scheduledSplitSpec(const PrefillKernelSpec &spec) {
  PrefillKernelSpec split = spec;
  split.scheduled = true;
  MLIRContext *ctx = spec.outType.getContext();
  const int64_t dyn = ShapedType::kDynamic;
  split.outType = MemRefType::get({dyn, spec.qHeads, spec.headDimV},
                                  Float32Type::get(ctx));
  split.lseType = MemRefType::get({dyn, spec.qHeads}, Float32Type::get(ctx));
  split.finalOutType = spec.outType;
  split.finalLseType = spec.lseType;
  return split;
}

/// The blocks of kernel `s` an SM holds at the register budget (255 a
/// thread; ptxas may allow more): what a work schedule's slots assume.
static int64_t residentBlocks(const target::TargetInfo &target,
                              const PrefillKernelSpec &s) {
  return std::max<int64_t>(
      1, target.residentBlocks(s.config.getNumThreads(), 255,
                               prefillSharedLayout(s).getBytes()));
}

namespace {

/// What the two launch forms of a tensor-core op with query rows share:
/// the direct kernel, the plan with the op's inputs, tensor maps and
/// outputs, and the variant arguments.
struct TensorCorePlan {
  PlanBuilder plan;
  llvm::StringMap<Value> bindings;
  SmallVector<StringRef> inputs;
  SmallVector<std::string> variantNames;
  /// The variant arguments the merge takes too (the sinks).
  SmallVector<StringRef> mergeVariants;
  /// The direct kernel (none for fixed grids, which always split).
  gpu::GPUFuncOp direct;
  QueryTiles tiles;
};

/// Adds the K and V tensor maps (and the query's) of a copy = tma spec.
void addPrefillTensorMaps(PlanBuilder &plan, Operation *op,
                          const PrefillKernelSpec &spec,
                          const llvm::StringMap<Value> &bindings) {
  // The maps' sources: the plan arguments bound to the K and V buffers.
  auto nameOf = [&](Value buffer) {
    for (const auto &binding : bindings)
      if (binding.getValue() == buffer)
        return binding.getKey();
    llvm_unreachable("the K/V buffers are plan arguments");
  };
  Value kv = cast<kv::PrefillOp>(op).getKv();
  Value k, v;
  if (auto view = kv.getDefiningOp<kv::PagedViewOp>()) {
    kv::PagedOperands operands = kv::PagedOperands::fromView(view);
    k = operands.pool(kv::PoolRole::K);
    v = operands.pool(kv::PoolRole::V);
  } else {
    auto ragged = kv.getDefiningOp<kv::RaggedViewOp>();
    k = ragged.getK();
    v = ragged.getV();
  }
  for (auto [name, map] : llvm::zip_equal(
           kTensorMapNames, prefillTensorMaps(spec, nameOf(k), nameOf(v))))
    plan.addTensorMap(name, map);
  if (copiesQueryByTma(spec))
    plan.addTensorMap(kQueryMapName, prefillQueryMap(spec));
}

} // namespace

/// The partitioned form (grids from the sizes alone, no host schedule):
/// block slots of the query tiles times KV heads times partitions, partitions
/// while the tiles of all KV heads do not give every SM a block (one
/// block of 8 warps and ~100 KB fills an SM: more partitions would only
/// add partial states).
static LogicalResult emitPartitionedLaunches(
    ImplicitLocOpBuilder &b, LoweringContext &context, Operation *op,
    const PrefillKernelSpec &spec, TensorCorePlan &tc,
    llvm::function_ref<gpu::GPUFuncOp(const PrefillKernelSpec &)> build) {
  const target::TargetInfo &target = context.getTarget();
  PrefillKernelSpec split = spec;
  split.partitioned = true;
  const int64_t dyn = ShapedType::kDynamic;
  split.outType = MemRefType::get({dyn, dyn, spec.qHeads, spec.headDimV},
                                  b.getF32Type());
  split.lseType = MemRefType::get({dyn, dyn, spec.qHeads}, b.getF32Type());
  gpu::GPUFuncOp splitKernel = build(split);
  gpu::GPUFuncOp mergeKernel =
      getPartialsMerge(context, spec, split, /*ragged=*/false);
  PlanBuilder &plan = tc.plan;
  using kvgpu::ArgRole;
  using kvgpu::SizeExprAttr;
  int64_t hkv = spec.kvHeads;
  // A selection's entries bound the partitions worth launching: each takes
  // at least kMinPartitionKeys of them.
  SizeExprAttr maxPartitions = plan.cst(spec.config.getMaxPartitions());
  if (spec.gathers())
    maxPartitions = SizeExprAttr::min(
        {maxPartitions,
         SizeExprAttr::max(
             {plan.cst(1), SizeExprAttr::ceilDiv(
                               plan.sym("topk_len"),
                               plan.cst(prefill::kMinPartitionKeys))})});
  plan.defineSize(
      "num_partitions",
      SizeExprAttr::min(
          {maxPartitions,
           SizeExprAttr::max(
               {plan.cst(1),
                SizeExprAttr::floorDiv(
                    plan.cst(target.smCount),
                    SizeExprAttr::max(
                        {plan.cst(1),
                         SizeExprAttr::mul(plan.sym("num_tile_slots"),
                                           plan.cst(hkv))}))})}));
  plan.setPartitions("num_partitions");
  plan.addBuffer("partial_out", ArgRole::workspace, split.outType,
                 {plan.sym("num_partitions"), plan.sym("nnz")});
  plan.addBuffer("partial_lse", ArgRole::workspace, split.lseType,
                 {plan.sym("num_partitions"), plan.sym("nnz")});
  SmallVector<StringRef> mergeArgs{"partial_out", "partial_lse", "out", "lse"};
  llvm::append_range(mergeArgs, tc.mergeVariants);
  plan.addKernel("direct", tc.direct, kvgpu::LaunchCondition::unsplit,
                 {plan.sym("num_tile_slots"), plan.cst(hkv), plan.cst(1)},
                 prefillArgumentNames(spec, tc.inputs, tc.variantNames));
  plan.addKernel("split", splitKernel, kvgpu::LaunchCondition::split,
                 {plan.sym("num_tile_slots"), plan.cst(hkv),
                  plan.sym("num_partitions")},
                 prefillArgumentNames(split, tc.inputs, tc.variantNames));
  plan.addKernel("merge", mergeKernel, kvgpu::LaunchCondition::split,
                 {plan.sym("nnz"), plan.cst(spec.qHeads), plan.cst(1)},
                 mergeArgs);
  return context.launch(b, plan, tc.bindings, op->getLoc());
}

/// Each request's keys as the schedule counts them, in a new host buffer:
/// kv_len, or the entries of a selection's lists.
static Value emitRequestKeyCounts(ImplicitLocOpBuilder &b,
                                  const QueryRowsKV &rows) {
  IRBuilder ir{b};
  Value batch =
      ir.sub(memref::DimOp::create(b, rows.qoIndptr, 0), ir.idx(1));
  auto paged = rows.kv.getDefiningOp<kv::PagedViewOp>();
  auto ragged = rows.kv.getDefiningOp<kv::RaggedViewOp>();
  return kv::emitLengthsBuffer(
      b, batch, [&](ImplicitLocOpBuilder &ib, Value r) -> Value {
        IRBuilder j{ib};
        if (rows.topk)
          return memref::DimOp::create(ib, rows.topk, 1);
        if (paged)
          return kv::emitKvLen(ib, kv::PagedOperands::fromView(paged), r);
        auto at = [&](Value i) {
          return j.toIndex(memref::LoadOp::create(ib, ragged.getKvIndptr(),
                                                  ValueRange{i}));
        };
        return j.sub(at(j.add(r, j.idx(1))), at(r));
      });
}

/// The scheduled form: kvir_schedule_prefill_work over the requests' query
/// rows and keys cuts the query tiles with the most keys into chunks; the
/// direct kernel runs when no tile is cut, else the scheduled split kernel
/// (a block per item, KV head and q tile of a row; whole tiles written
/// final) and the ragged merge of the cut tiles' rows. With `fixedGrids`
/// (CUDA graphs: a captured graph replays its launches, grids and buffers
/// as captured) the grids and the workspace follow the sizes alone: the
/// split kernel and the merge always run, over the most items the batch's
/// shapes allow (blocks past the schedule's count have no work), and the
/// schedule takes at most the workspace's `max_partial_rows` rows.
static LogicalResult emitScheduledLaunches(
    ImplicitLocOpBuilder &b, LoweringContext &context, Operation *op,
    const PrefillKernelSpec &spec, TensorCorePlan &tc,
    const QueryRowsKV &rows, bool fixedGrids,
    llvm::function_ref<gpu::GPUFuncOp(const PrefillKernelSpec &)> build) {
  const target::TargetInfo &target = context.getTarget();
  PrefillKernelSpec split = scheduledSplitSpec(spec);
  gpu::GPUFuncOp splitKernel = build(split);
  gpu::GPUFuncOp mergeKernel =
      getPartialsMerge(context, spec, split, /*ragged=*/true);
  PlanBuilder &plan = tc.plan;
  using kvgpu::ArgRole;
  using kvgpu::SizeExprAttr;
  MLIRContext *ctx = op->getContext();
  Type i32 = IntegerType::get(ctx, 32);
  const int64_t dyn = ShapedType::kDynamic;
  int64_t hkv = spec.kvHeads, tileRows = split.scheduledTileRows();
  int64_t blocksPerItem = hkv * split.blocksPerScheduledRow();
  int64_t resident = residentBlocks(target, split);
  // The items the chip runs at once (at the register budget's residency;
  // the schedule also weighs twice as many).
  int64_t targetItems =
      std::max<int64_t>(1, target.smCount * resident / blocksPerItem);
  // kvir_schedule_prefill_max_items, as a size.
  plan.defineSize(
      "max_work",
      SizeExprAttr::add(
          SizeExprAttr::add(
              SizeExprAttr::floorDiv(plan.sym("nnz"), plan.cst(tileRows)),
              plan.sym("batch")),
          plan.cst(KVIR_PREFILL_MAX_WAVES * targetItems)));
  plan.addBuffer("kv_lengths", ArgRole::host, MemRefType::get({dyn}, i32),
                 {plan.sym("batch")});
  plan.addBuffer("qo_indptr_host", ArgRole::host, MemRefType::get({dyn}, i32),
                 {SizeExprAttr::add(plan.sym("batch"), plan.cst(1))});
  plan.addBuffer("work_items", ArgRole::schedule,
                 workItemsType(ctx, KVIR_PREFILL_WORK_FIELDS),
                 {plan.sym("max_work"), plan.cst(KVIR_PREFILL_WORK_FIELDS)});
  plan.addBuffer("merge_indptr", ArgRole::schedule,
                 MemRefType::get({dyn}, i32),
                 {SizeExprAttr::add(plan.sym("nnz"), plan.cst(1))});
  // The rows the cut tiles' partial states take, which the schedule
  // defines. A fixed workspace holds the most any schedule takes, so it
  // never limits the schedule and does not grow with the batch.
  StringRef workspaceRows = "partial_rows";
  if (fixedGrids) {
    workspaceRows = "max_partial_rows";
    plan.defineSize(workspaceRows,
                    plan.cst(kvir_schedule_prefill_max_partial_rows(
                        tileRows, targetItems)));
  }
  plan.addBuffer("partial_out", ArgRole::workspace, split.outType,
                 {plan.sym(workspaceRows)});
  plan.addBuffer("partial_lse", ArgRole::workspace, split.lseType,
                 {plan.sym(workspaceRows)});
  // Costs the host cannot see are counted whole: given positions and
  // frames (rows in no order) and selections (their entries).
  bool costsCausal = spec.causal && !spec.positionsType &&
                     !spec.framePositionsType && !spec.gathers();
  std::optional<int64_t> window =
      spec.positionsType || spec.framePositionsType || spec.gathers()
          ? std::nullopt
          : spec.windowLeft;
  plan.setSchedule(kvgpu::WorkScheduleAttr::get(
      ctx, "kv_lengths", "work_items", "merge_indptr", "num_work", "batch",
      /*uniform_chunks=*/"", targetItems, spec.config.getKvTile(),
      std::max<int64_t>(prefill::kMinPartitionKeys, spec.config.getKvTile()),
      window.value_or(-1), /*max_batch=*/"", "qo_indptr_host",
      "num_query_tiles", "partial_rows", tileRows, costsCausal,
      fixedGrids ? workspaceRows : StringRef()));
  SmallVector<StringRef> mergeArgs{"partial_out", "partial_lse", "merge_indptr",
                                   "out", "lse"};
  llvm::append_range(mergeArgs, tc.mergeVariants);
  if (!fixedGrids)
    plan.addKernel("direct", tc.direct, kvgpu::LaunchCondition::unsplit,
                   {plan.sym("num_tile_slots"), plan.cst(hkv), plan.cst(1)},
                   prefillArgumentNames(spec, tc.inputs, tc.variantNames));
  auto splitWhen = fixedGrids ? kvgpu::LaunchCondition::always
                              : kvgpu::LaunchCondition::split;
  plan.addKernel("split", splitKernel, splitWhen,
                 {plan.sym(fixedGrids ? "max_work" : "num_work"), plan.cst(hkv),
                  plan.cst(split.blocksPerScheduledRow())},
                 prefillArgumentNames(split, tc.inputs, tc.variantNames));
  plan.addKernel("merge", mergeKernel, splitWhen,
                 {plan.sym("nnz"), plan.cst(spec.qHeads), plan.cst(1)},
                 mergeArgs);
  // The schedule's host copies: each request's keys, and the row offsets
  // as i32 (OpenPPL's are i64).
  Value keyCounts = emitRequestKeyCounts(b, rows);
  Value rowOffsets = kv::emitLengthsBuffer(
      b, memref::DimOp::create(b, rows.qoIndptr, 0),
      [&](ImplicitLocOpBuilder &ib, Value i) -> Value {
        return IRBuilder{ib}.toIndex(
            memref::LoadOp::create(ib, rows.qoIndptr, ValueRange{i}));
      });
  tc.bindings["kv_lengths"] = keyCounts;
  tc.bindings["qo_indptr_host"] = rowOffsets;
  if (failed(context.launch(b, plan, tc.bindings, op->getLoc())))
    return failure();
  memref::DeallocOp::create(b, keyCounts);
  memref::DeallocOp::create(b, rowOffsets);
  return success();
}

LogicalResult gpu_lowering::emitTensorCoreLaunches(
    ImplicitLocOpBuilder &b, LoweringContext &context, Operation *op,
    const PrefillKernelSpec &spec, Value out, Value lse,
    const QueryRowsKV &rows,
    llvm::function_ref<SmallVector<StringRef>(PlanBuilder &,
                                              llvm::StringMap<Value> &)>
        addInputs,
    llvm::function_ref<std::string(const PrefillKernelSpec &)> symbol) {
  auto build = [&](const PrefillKernelSpec &s) {
    return buildTensorCoreKernel(context, op, s, symbol(s));
  };
  std::string directName = symbol(spec);
  // The partitioned form (grids from the sizes alone) is that of ops
  // without query rows here (whose config allows one partition: it never
  // splits) and of configs of one partition. CUDA graphs replay the grids
  // they were captured with: the scheduled form's fixed grids, which have
  // no direct kernel.
  bool partitioned = !rows.qoIndptr || spec.config.getMaxPartitions() == 1;
  bool fixedGrids = !partitioned && context.getGraphMaxBatch() != 0;
  TensorCorePlan tc{
      PlanBuilder(op->getContext(), op->getName().getStringRef(), directName),
      {{"out", out}, {"lse", lse}},
      {},
      {},
      {},
      fixedGrids ? nullptr : build(spec),
      QueryTiles(spec.rowStride(), spec.config.getQTile())};
  PlanBuilder &plan = tc.plan;
  tc.inputs = addInputs(plan, tc.bindings);
  if (spec.config.copiesByTma())
    addPrefillTensorMaps(plan, op, spec, tc.bindings);
  plan.addBuffer("out", kvgpu::ArgRole::output, spec.outType, {plan.sym("nnz")});
  plan.addBuffer("lse", kvgpu::ArgRole::output, spec.lseType, {plan.sym("nnz")});
  plan.defineSize("num_tile_slots",
                  spec.oneRowPerRequest()
                      ? tc.tiles.numSlotsOneRowEach(plan.sym("batch"))
                      : tc.tiles.numSlots(plan.sym("nnz"), plan.sym("batch")));
  plan.setConfig(spec.config);
  tc.variantNames =
      addVariantLaunchArguments(op, plan, tc.bindings, tc.mergeVariants);
  if (partitioned)
    return emitPartitionedLaunches(b, context, op, spec, tc, build);
  return emitScheduledLaunches(b, context, op, spec, tc, rows, fixedGrids,
                               build);
}

LogicalResult gpu_lowering::emitOneRowTensorCoreLaunches(
    ImplicitLocOpBuilder &b, LoweringContext &context, Operation *op,
    const PrefillKernelSpec &spec,
    ArrayRef<std::pair<StringRef, Value>> queries, kv::PagedOperands kv,
    Value topk, Value out, Value lse,
    llvm::function_ref<std::string(const PrefillKernelSpec &)> symbol) {
  const target::TargetInfo &target = context.getTarget();
  auto build = [&](const PrefillKernelSpec &s) {
    return buildTensorCoreKernel(context, op, s, symbol(s));
  };
  // CUDA graphs: fixed grids run the split kernel (which writes whole
  // requests final) and the merge always, never the direct kernel.
  int64_t fixedBatch = context.getGraphMaxBatch();
  std::string directName = symbol(spec);
  gpu::GPUFuncOp direct = fixedBatch ? nullptr : build(spec);
  PrefillKernelSpec split = scheduledSplitSpec(spec);
  gpu::GPUFuncOp splitKernel = build(split);
  gpu::GPUFuncOp mergeKernel =
      getPartialsMerge(context, spec, split, /*ragged=*/true);

  PlanBuilder plan(op->getContext(), op->getName().getStringRef(),
                   directName);
  using kvgpu::ArgRole;
  // The queries' rows are the batch.
  llvm::StringMap<Value> bindings{{"out", out}, {"lse", lse}};
  SmallVector<StringRef> inputs;
  for (auto [name, value] : queries) {
    if (inputs.empty())
      plan.addBuffer(name, ArgRole::input, cast<MemRefType>(value.getType()),
                     {}, {"batch"});
    else
      plan.addBuffer(name, ArgRole::input, cast<MemRefType>(value.getType()),
                     {plan.sym("batch")});
    inputs.push_back(name);
    bindings[name] = value;
  }
  SmallVector<StringRef> kvNames = addPagedKVArguments(plan, kv);
  plan.addBuffer("out", ArgRole::output, spec.outType, {plan.sym("batch")});
  plan.addBuffer("lse", ArgRole::output, spec.lseType, {plan.sym("batch")});
  // Items of a chunk of keys each: as many as the chip runs blocks at once
  // (a request's query tiles are blocks of one item), chunks of whole K/V
  // tiles, at least 256 keys (as the prefill's partitions).
  // A query tile holds rows of one KV head's group: a request has
  // ceil(group / q_tile) tiles per KV head (not qHeads / q_tile per head,
  // which counted each tile kv_heads times and cut the target that often).
  int64_t tilesPerRequest =
      llvm::divideCeil(spec.group(), spec.config.getQTile());
  int64_t resident = residentBlocks(target, split);
  // Each item is a block per query tile of its request and KV head.
  int64_t blocksPerItem = tilesPerRequest * spec.kvHeads;
  WorkSchedulePlan work;
  work.targetItems =
      std::max<int64_t>(1, target.smCount * resident / blocksPerItem);
  work.granule = spec.config.getKvTile();
  work.minChunk = std::max<int64_t>(256, spec.config.getKvTile());
  work.maxPartitions = spec.config.getMaxPartitions();
  work.blocksPerItem = blocksPerItem;
  work.fixedBatch = fixedBatch;
  kvgpu::SizeExprAttr gridBatch = addWorkSchedule(plan, work, target);
  QueryTiles tiles(spec.rowStride(), spec.config.getQTile());
  plan.defineSize("num_tile_slots", tiles.numSlotsOneRowEach(plan.sym("batch")));
  plan.setConfig(spec.config);
  plan.addBuffer("partial_out", ArgRole::workspace, split.outType,
                 {plan.sym("max_work")});
  plan.addBuffer("partial_lse", ArgRole::workspace, split.lseType,
                 {plan.sym("max_work")});
  llvm::append_range(inputs, kvNames);
  if (topk) {
    addTopkArgument(plan, topk, "batch", bindings);
    inputs.push_back("topk");
  }
  SmallVector<StringRef> mergeArgs{"partial_out", "partial_lse", "merge_indptr",
                                   "out", "lse"};
  SmallVector<std::string> variantNames =
      addVariantLaunchArguments(op, plan, bindings, mergeArgs);
  SmallVector<StringRef> directArgs =
      prefillArgumentNames(spec, inputs, variantNames);
  SmallVector<StringRef> splitArgs =
      prefillArgumentNames(split, inputs, variantNames);
  if (!fixedBatch)
    plan.addKernel("direct", direct, kvgpu::LaunchCondition::unsplit,
                   {plan.sym("num_tile_slots"), plan.cst(spec.kvHeads),
                    plan.cst(1)},
                   directArgs);
  auto splitWhen = fixedBatch ? kvgpu::LaunchCondition::always
                              : kvgpu::LaunchCondition::split;
  plan.addKernel("split", splitKernel, splitWhen,
                 {plan.sym(fixedBatch ? "max_work" : "num_work"),
                  plan.cst(spec.kvHeads), plan.cst(tilesPerRequest)},
                 splitArgs);
  plan.addKernel("merge", mergeKernel, splitWhen,
                 {gridBatch, plan.cst(spec.qHeads), plan.cst(1)}, mergeArgs);
  bindings["kv_lengths"] =
      emitScheduleLengths(b, queries.front().second, kv, topk);
  for (auto [name, v] : llvm::zip(kvNames, kv.flatten()))
    bindings[name] = v;
  if (failed(context.launch(b, plan, bindings, op->getLoc())))
    return failure();
  memref::DeallocOp::create(b, bindings["kv_lengths"]);
  return success();
}

std::optional<std::string>
gpu_lowering::whyNoPrefillKernel(kv::PrefillOp op,
                                 const target::TargetInfo &target) {
  Operation *viewOp = op.getKv().getDefiningOp();
  if (!isa_and_nonnull<kv::PagedViewOp, kv::RaggedViewOp>(viewOp))
    return std::string(
        "its KV is not a kv.paged_view or kv.ragged_view of the same function");
  if (kvgpu::prefillTakesQueryRows(op))
    return whyNoQueryRowsKernel(op, target);
  if (auto view = dyn_cast<kv::PagedViewOp>(viewOp)) {
    kv::PagedType kv = view.getType();
    // The layout's proven vector width covers the pools' strides too.
    for (Value pool : view.getPools()) {
      auto type = cast<MemRefType>(pool.getType());
      if (type.getStridesAndOffset().first.back() != 1)
        return "pool " + typeName(type) + " has a non-unit innermost stride";
    }
    // vLLM's V pool is staged transposed: K's rows must be contiguous.
    int64_t codeBits = kv.getStorageElementType().getIntOrFloatBitWidth();
    int64_t width =
        kvgpu::transposedVChunk(kv)
            ? kv::getDimVectorWidth(
                  kv, kv::PoolRole::K,
                  cast<MemRefType>(view.getPools()[0].getType()),
                  128 / codeBits)
            : view.getVectorWidth();
    if (width * codeBits < 128)
      return std::string("the head dim of the pool layout is not contiguous "
                         "in 16-byte chunks (the prefill kernel copies K/V "
                         "rows with 16-byte cp.async)");
    if (std::optional<std::string> why = whyNoTransposedV(view, "prefill"))
      return why;
    if (kv.getQuant() == kv::Quant::int8_group && !int8ScaleChunkElements(view))
      return "int8 scale rows of " +
             std::to_string(kv.getHeadDim() / kv.getQuantGroup()) + " / " +
             std::to_string(kv.getHeadDimV() / kv.getQuantGroup()) +
             " scales not contiguous in chunks of at least 4 bytes (the "
             "prefill kernel copies scales with cp.async)";
  } else {
    auto ragged = cast<kv::RaggedViewOp>(viewOp);
    for (auto [what, v] : {std::pair<StringRef, Value>{"k", ragged.getK()},
                           {"v", ragged.getV()}})
      if (std::optional<std::string> why =
              whyNot16ByteRows(what, cast<MemRefType>(v.getType())))
        return why;
  }
  PrefillKernelSpec spec;
  describeKV(op, spec);
  Type dtype = spec.kvElementType;
  if (!dtype.isF16() && !dtype.isBF16())
    return "ragged KV of type " + typeName(dtype) +
           " has no prefill kernel (f16 and bf16 do: mma.sync; paged f32 KV "
           "runs on the decode kernel)";
  // (The verifier makes q's element type the KV's.)
  auto qType = cast<MemRefType>(op.getQ().getType());
  if (std::optional<std::string> why = whyNot16ByteRows("q", qType))
    return why;
  if (std::string why = target.whyNoMmaSyncKernels(); !why.empty())
    return why;
  // The buffers the kernel would write: those of the kv.store_state it
  // writes through, if any.
  MemRefType outType, lseType;
  if (kv::StoreStateOp store = findStateDestination(op).store) {
    outType = cast<MemRefType>(store.getOutput().getType());
    if (Value lse = store.getLse())
      lseType = cast<MemRefType>(lse.getType());
  }
  std::string whyNot;
  if (failed(describePrefill(op, target, outType, lseType, whyNot)))
    return whyNot;
  return std::nullopt;
}

void gpu_lowering::populatePrefillPatterns(RewritePatternSet &patterns,
                                           LoweringContext &context) {
  patterns.add<PrefillLowering>(patterns.getContext(), context);
}
