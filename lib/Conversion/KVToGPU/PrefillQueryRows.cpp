//===- PrefillQueryRows.cpp - f32 prefills on the decode kernel -----------===//
//
// mma.sync takes no f32, so a kv.prefill over f32 paged KV runs its query
// rows on the decode kernel (DecodeKernel.cpp in query-rows mode): one
// block per (query row, KV head), the row's request found by a binary
// search of qo_indptr, its visible keys [position - window_left, position]
// (causal) or [0, kv_len), every query head of the KV head's group in the
// block, K/V tiles through the same cp.async ring in f32. Each row reads
// its request's keys once: the bytes a prefill moves grow with its query
// rows, which f32 (a precision reference more than a serving format)
// accepts in exchange for one kernel that computes every variant.
//
//===----------------------------------------------------------------------===//
#include "DecodeKernel.h"
#include "Patterns.h"

#include "kvir/Codegen/LaunchEmitter.h"
#include "kvir/Dialect/KVGPU/Transforms/ConfigSelection.h"

#include <cmath>

using namespace mlir;
using namespace kvir;
using namespace kvir::codegen;
using namespace kvir::gpu_lowering;

namespace {

/// The kernel of `op`'s query rows writing `out` / `lse`.
DecodeKernelSpec describeQueryRows(kv::PrefillOp op, kvgpu::DecodeConfigAttr config,
                                   MemRefType outType, MemRefType lseType) {
  DecodeKernelSpec spec = describeDecodeKernel(op, outType, lseType);
  spec.qoIndptrType = cast<MemRefType>(op.getQoIndptr().getType());
  if (Value positions = op.getPositions())
    spec.positionsType = cast<MemRefType>(positions.getType());
  if (Value framePositions = op.getFramePositions()) {
    spec.frameIndptrType = cast<MemRefType>(op.getFrameIndptr().getType());
    spec.framePositionsType = cast<MemRefType>(framePositions.getType());
  }
  spec.causal = op.getCausal();
  spec.config = config;
  return spec;
}

std::string queryRowsKernelSymbol(kv::PrefillOp op, const DecodeKernelSpec &s,
                                  const target::TargetInfo &target) {
  kv::PagedType kv = s.kv;
  std::string stem =
      "prefill_rows_" + kv::stringifyLayoutKind(kv.getLayout()).str() + "_" +
      kv::stringifyStorage(kv.getStorage()).str() + "_" +
      kv::stringifyTableForm(kv.getTable()).str() + "_p" +
      std::to_string(kv.getPageSize()) + "_h" + std::to_string(s.qHeads) + "x" +
      std::to_string(kv.getKvHeads()) + "_d" + std::to_string(kv.getHeadDim()) +
      "_" + typeName(kv.getDtype()) + "_" +
      typeName(s.outType.getElementType()) + (s.causal ? "_causal" : "") +
      (s.positionsType ? "_positions" : "") +
      (s.framePositionsType ? "_frame" : "") + (s.rope ? "_rope" : "");
  KernelIdentity id(stem);
  id.add(op.getOperation())
      .add(s.outType)
      .add(s.lseType)
      .add(s.qoIndptrType)
      .add(s.config)
      .add(target.chip);
  if (s.positionsType)
    id.add(s.positionsType);
  if (s.framePositionsType)
    id.add(s.frameIndptrType).add(s.framePositionsType);
  for (Type t : s.kvTypes)
    id.add(t);
  return id.getSymbol();
}

} // namespace

std::optional<std::string>
gpu_lowering::whyNoQueryRowsKernel(kv::PrefillOp op,
                                   const target::TargetInfo &target) {
  auto view = op.getKv().getDefiningOp<kv::PagedViewOp>();
  if (!view)
    return std::string("its KV is not a kv.paged_view of the same function");
  kv::PagedType kv = view.getType();
  if (op.getMask())
    return std::string("an f32 prefill (on the decode kernel, one block per "
                       "query row) takes no custom mask");
  if (kv.getHeadDim() != kv.getHeadDimV())
    return std::string("an f32 prefill (on the decode kernel) needs "
                       "head_dim == head_dim_v");
  if (std::optional<std::string> why = whyNotDecodePools(view))
    return why;
  std::string whyNot;
  FailureOr<kvgpu::DecodeConfigAttr> config =
      kvgpu::getOrChooseQueryRowsConfig(op, target, whyNot);
  if (failed(config))
    return "an f32 prefill's query rows (on the decode kernel): " + whyNot;
  // (The outputs' buffer types change no check.)
  return whyNotDecodeKernelSpec(
      view, describeQueryRows(op, *config, MemRefType(), MemRefType()));
}

LogicalResult gpu_lowering::lowerPrefillQueryRows(kv::PrefillOp op,
                                                  PatternRewriter &rewriter,
                                                  LoweringContext &context) {
  const target::TargetInfo &target = context.getTarget();
  StateOutputs outputs(rewriter, op, op.getType(), op.getQ());
  ImplicitLocOpBuilder b(op.getLoc(), rewriter);
  Value out = outputs.getOutput(), lse = outputs.getLse();
  std::string whyNot;
  DecodeKernelSpec spec = describeQueryRows(
      op, *kvgpu::getOrChooseQueryRowsConfig(op, target, whyNot),
      cast<MemRefType>(out.getType()), cast<MemRefType>(lse.getType()));
  std::string name = queryRowsKernelSymbol(op, spec, target);
  gpu::GPUFuncOp kernel =
      context.getOrBuildKernel(name, [&](gpu::GPUModuleOp module) {
        KernelFunc kf = KernelFunc::create(
            module, name, decodeArgumentTypes(spec), spec.block(),
            decodeSharedLayout(spec), op.getLoc());
        buildDecodeBody(kf, spec);
        return kf;
      });

  // The plan: one block per query row and KV head.
  PlanBuilder plan(op.getContext(), op->getName().getStringRef(), name);
  using kvgpu::ArgRole;
  auto view = op.getKv().getDefiningOp<kv::PagedViewOp>();
  kv::PagedOperands kv = kv::PagedOperands::fromView(view);
  plan.addBuffer("q", ArgRole::input, spec.qType, {}, {"nnz"});
  plan.addBuffer("qo_indptr", ArgRole::input, spec.qoIndptrType, {},
                 {"qo_indptr_len"});
  plan.defineSize("batch", kvgpu::SizeExprAttr::add(plan.sym("qo_indptr_len"),
                                                    plan.cst(-1)));
  llvm::StringMap<Value> bindings{{"q", op.getQ()},
                                  {"qo_indptr", op.getQoIndptr()},
                                  {"out", out},
                                  {"lse", lse}};
  SmallVector<StringRef> args{"q", "qo_indptr"};
  SmallVector<StringRef> kvNames = addPagedKVArguments(plan, kv);
  for (auto [n, v] : llvm::zip(kvNames, kv.flatten()))
    bindings[n] = v;
  llvm::append_range(args, kvNames);
  if (spec.positionsType) {
    plan.addBuffer("positions", ArgRole::input, spec.positionsType,
                   {plan.sym("nnz")});
    bindings["positions"] = op.getPositions();
    args.push_back("positions");
  }
  if (spec.framePositionsType) {
    plan.addBuffer("frame_indptr", ArgRole::input, spec.frameIndptrType, {},
                   {"frame_indptr_len"});
    plan.addBuffer("frame_positions", ArgRole::input, spec.framePositionsType,
                   {plan.sym("nnz")});
    bindings["frame_indptr"] = op.getFrameIndptr();
    bindings["frame_positions"] = op.getFramePositions();
    args.append({"frame_indptr", "frame_positions"});
  }
  plan.addBuffer("out", ArgRole::output, spec.outType, {plan.sym("nnz")});
  plan.addBuffer("lse", ArgRole::output, spec.lseType, {plan.sym("nnz")});
  args.append({"out", "lse"});
  SmallVector<std::string> variantNames =
      addVariantArguments(plan, op, bindings);
  llvm::append_range(args, variantNames);
  plan.setConfig(spec.config);
  plan.addKernel("rows", kernel, kvgpu::LaunchCondition::always,
                 {plan.sym("nnz"), plan.cst(kv.type.getKvHeads()), plan.cst(1)},
                 args);
  if (failed(context.launch(b, plan, bindings, op.getLoc())))
    return failure();
  return outputs.finish(rewriter);
}
