//===- DecodeTensorCore.cpp - kv.decode on the tensor-core kernel ---------===//
//
// Decodes the CUDA-core decode kernel (Decode.cpp) cannot run -- head_dim
// != head_dim_v, head-dim rows wider than a warp of vectors (head dim 512)
// -- or that carry a #kvgpu.prefill config run on the prefill kernel with
// one query row per request: a query tile holds the GQA group's heads of
// one request (QueryTiles' one-row mode), K and V tiles of their own
// widths, the value columns split over warps past 128, and split-KV by
// the work schedule over the lengths (emitOneRowTensorCoreLaunches).
//
//===----------------------------------------------------------------------===//
#include "Patterns.h"
#include "PrefillKernel.h"

#include "kvir/Dialect/KVGPU/Transforms/ConfigSelection.h"

#include <cmath>

using namespace mlir;
using namespace kvir;
using namespace kvir::codegen;
using namespace kvir::gpu_lowering;

namespace {

/// The spec of `op`'s direct kernel writing `out` / `lse` (null: the
/// state's own buffer types), or failure with the reason.
FailureOr<PrefillKernelSpec>
describeTensorCoreDecode(kv::DecodeOp op, const target::TargetInfo &target,
                         kvgpu::PrefillConfigAttr config, MemRefType outType,
                         MemRefType lseType, std::string &whyNot) {
  PrefillKernelSpec spec;
  describePagedKV(op.getKv().getDefiningOp<kv::PagedViewOp>(), spec);
  spec.qType = cast<MemRefType>(op.getQ().getType());
  kv::StateType state = op.getType();
  if (std::optional<std::string> why = whyNot16ByteRows("q", spec.qType)) {
    whyNot = *why;
    return failure();
  }
  if (failed(describeStateBuffers(state, outType, lseType, spec, whyNot)))
    return failure();
  spec.qHeads = spec.qType.getDimSize(1);
  spec.windowLeft = op.getWindowLeft();
  spec.rope = op.getRopeAttr();
  spec.smScale = op.getSmScale() ? op.getSmScale()->convertToDouble()
                                 : 1.0 / std::sqrt(double(spec.headDim));
  if (auto cap = op.getLogitsSoftCap())
    spec.softCap = cap->convertToDouble();
  spec.variants = KernelVariants::of(op);
  if (Value topk = op.getTopk())
    spec.topkType = cast<MemRefType>(topk.getType());
  spec.base = state.getBase();
  spec.config = config;
  if (std::optional<std::string> why = whyNotPrefillSpec(spec, target)) {
    whyNot = *why;
    return failure();
  }
  return spec;
}

std::string kernelSymbol(kv::DecodeOp op, const PrefillKernelSpec &s,
                         const target::TargetInfo &target) {
  kv::PagedType kv = s.paged;
  std::string stem =
      "decode_tc_" + kv::stringifyLayoutKind(kv.getLayout()).str() + "_" +
      kv::stringifyStorage(kv.getStorage()).str() + "_" +
      kv::stringifyTableForm(kv.getTable()).str() + "_p" +
      std::to_string(kv.getPageSize()) + "_h" + std::to_string(s.qHeads) +
      "x" + std::to_string(s.kvHeads) + "_d" + std::to_string(s.headDim) +
      "x" + std::to_string(s.headDimV) + "_" + typeName(s.kvElementType) +
      "_" + typeName(s.outType.getElementType()) + (s.rope ? "_rope" : "") +
      (s.gathers() ? "_topk" : "");
  return tensorCoreKernelSymbol(stem, op, s, target);
}

} // namespace

FailureOr<kvgpu::PrefillConfigAttr>
gpu_lowering::getTensorCoreDecodeConfig(kv::DecodeOp op,
                                        const target::TargetInfo &target,
                                        std::string &whyNot) {
  Attribute given = kvgpu::getConfig(op);
  auto config = dyn_cast_or_null<kvgpu::PrefillConfigAttr>(given);
  if (given && !config)
    return failure();
  if (kvgpu::decodeNeedsTensorCores(op, target))
    return config ? FailureOr<kvgpu::PrefillConfigAttr>(config)
                  : kvgpu::chooseTensorCoreDecodeConfig(op, target, whyNot);
  if (!kvgpu::decodePrefersTensorCores(op, target)) {
    if (config)
      return config;
    return failure();
  }
  // Preferred, not needed: the configuration kv-tile picks for it (given or
  // not) goes back to the decode kernel where the tensor-core kernel
  // cannot take this decode (e.g. its output buffers); a configuration
  // the user wrote stays, and its diagnostic with it.
  std::string ignored;
  FailureOr<kvgpu::PrefillConfigAttr> automatic =
      kvgpu::chooseTensorCoreDecodeConfig(op, target, ignored);
  if (config && (failed(automatic) || config != *automatic))
    return config;
  if (failed(automatic) || whyNoTensorCoreDecode(op, target, *automatic))
    return failure();
  return automatic;
}

std::optional<std::string>
gpu_lowering::whyNoTensorCoreDecode(kv::DecodeOp op,
                                    const target::TargetInfo &target,
                                    kvgpu::PrefillConfigAttr config) {
  auto view = op.getKv().getDefiningOp<kv::PagedViewOp>();
  if (!view)
    return std::string("its KV is not a kv.paged_view of the same function");
  kv::PagedType kv = view.getType();
  std::string prefix = "on tensor cores (";
  if (kv.getHeadDim() != kv.getHeadDimV())
    prefix += "head_dim != head_dim_v): ";
  else
    prefix += "head dim " + std::to_string(kv.getHeadDim()) + "): ";
  Type dtype = kv.getDtype();
  if (!dtype.isF16() && !dtype.isBF16())
    return prefix + "KV of type " + typeName(dtype) +
           " has no kernel (f16 and bf16 do: mma.sync)";
  for (Value pool : view.getPools()) {
    auto type = cast<MemRefType>(pool.getType());
    if (type.getStridesAndOffset().first.back() != 1)
      return prefix + "pool " + typeName(type) +
             " has a non-unit innermost stride";
  }
  if (view.getVectorWidth() *
          kv.getStorageElementType().getIntOrFloatBitWidth() <
      128)
    return prefix + "the head dim of the pool layout is not contiguous in "
                    "16-byte chunks";
  if (kv.getQuant() == kv::Quant::int8_group && !int8ScaleChunkElements(view))
    return prefix + "int8 scale rows not contiguous in chunks of at least 4 "
                    "bytes (the kernel copies scales with cp.async)";
  if (std::string why = target.whyNoMmaSyncKernels(); !why.empty())
    return prefix + why;
  MemRefType outType, lseType;
  if (kv::StoreStateOp store = findStateDestination(op).store) {
    outType = cast<MemRefType>(store.getOutput().getType());
    if (Value lse = store.getLse())
      lseType = cast<MemRefType>(lse.getType());
  }
  std::string whyNot;
  if (failed(describeTensorCoreDecode(op, target, config, outType, lseType,
                                      whyNot)))
    return prefix + whyNot;
  return std::nullopt;
}

LogicalResult gpu_lowering::lowerDecodeOnTensorCores(
    kv::DecodeOp op, kvgpu::PrefillConfigAttr config,
    PatternRewriter &rewriter, LoweringContext &context) {
  const target::TargetInfo &target = context.getTarget();
  if (std::optional<std::string> why =
          whyNoTensorCoreDecode(op, target, config))
    return rewriter.notifyMatchFailure(op, *why);
  StateOutputs outputs(rewriter, op, op.getType(), op.getQ());
  ImplicitLocOpBuilder b(op.getLoc(), rewriter);
  Value out = outputs.getOutput(), lse = outputs.getLse();
  // whyNoTensorCoreDecode described these buffers already.
  std::string whyNot;
  PrefillKernelSpec spec = *describeTensorCoreDecode(
      op, target, config, cast<MemRefType>(out.getType()),
      cast<MemRefType>(lse.getType()), whyNot);
  auto view = op.getKv().getDefiningOp<kv::PagedViewOp>();
  if (failed(emitOneRowTensorCoreLaunches(
          b, context, op, spec, {{"q", op.getQ()}},
          kv::PagedOperands::fromView(view), op.getTopk(), out, lse,
          [&](const PrefillKernelSpec &s) {
            return kernelSymbol(op, s, target);
          })))
    return failure();
  return outputs.finish(rewriter);
}
