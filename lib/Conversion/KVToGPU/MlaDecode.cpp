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
  PrefillKernelSpec spec;
  describePagedKV(op.getKv().getDefiningOp<kv::PagedViewOp>(), spec);
  spec.qType = cast<MemRefType>(op.getQNope().getType());
  spec.qPeType = cast<MemRefType>(op.getQPe().getType());
  if (Value qo = op.getQoIndptr())
    spec.qoIndptrType = cast<MemRefType>(qo.getType());
  kv::StateType state = op.getType();
  if (failed(describeStateBuffers(state, outType, lseType, spec, whyNot)))
    return failure();
  spec.qHeads = spec.qType.getDimSize(1);
  spec.causal = op.getCausal();
  // Scores take both parts: the default scale is 1 / sqrt(D + pe).
  spec.smScale = op.getSmScale()
                     ? op.getSmScale()->convertToDouble()
                     : 1.0 / std::sqrt(double(spec.headDim + spec.peDim));
  spec.variants = KernelVariants::of(op);
  if (Value topk = op.getTopk())
    spec.topkType = cast<MemRefType>(topk.getType());
  spec.base = state.getBase();
  FailureOr<kvgpu::PrefillConfigAttr> config =
      kvgpu::getOrChooseMlaConfig(op, target, whyNot);
  if (failed(config))
    return failure();
  spec.config = *config;
  if (std::optional<std::string> why = whyNotPrefillSpec(spec, target)) {
    whyNot = *why;
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
      (s.gathers() ? "_topk" : "");
  return tensorCoreKernelSymbol(stem, op, s, target);
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
      auto view = op.getKv().getDefiningOp<kv::PagedViewOp>();
      if (failed(emitOneRowTensorCoreLaunches(
              b, context, op, spec,
              {{"q_nope", op.getQNope()}, {"q_pe", op.getQPe()}},
              kv::PagedOperands::fromView(view), op.getTopk(), out, lse,
              [&](const PrefillKernelSpec &s) {
                return mlaKernelSymbol(op, s, target);
              })))
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
      if (Value topk = op.getTopk()) {
        addTopkArgument(plan, topk, "nnz", bindings);
        names.push_back("topk");
      }
      return names;
    };
    if (failed(emitTensorCoreLaunches(b, context, op, spec, out, lse,
                                      {op.getQoIndptr(), op.getKv(),
                                       op.getTopk()},
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
  if (std::string why = target.whyNoMmaSyncKernels(); !why.empty())
    return why;
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
