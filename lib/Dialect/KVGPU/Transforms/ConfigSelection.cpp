//===- ConfigSelection.cpp - Per-op, per-chip GPU configurations ----------===//
#include "kvir/Dialect/KVGPU/Transforms/ConfigSelection.h"

#include <cmath>
#include <algorithm>
#include <numeric>

using namespace mlir;
using namespace kvir;
using namespace kvir::kvgpu;

Attribute kvgpu::getConfig(Operation *op) {
  return op->getAttr(KVGPUDialect::getConfigAttrName());
}

static int64_t nextPowerOf2(int64_t v) {
  int64_t p = 1;
  while (p < v)
    p *= 2;
  return p;
}

FailureOr<DecodeConfigAttr>
kvgpu::chooseDecodeConfig(kv::DecodeOp op, const target::TargetInfo &target,
                          std::string &whyNot) {
  auto view = op.getKv().getDefiningOp<kv::PagedViewOp>();
  if (!view) {
    whyNot = "its KV is not a kv.paged_view of the same function";
    return failure();
  }
  kv::PagedType kv = view.getType();
  int64_t headDim = kv.getHeadDim();
  int64_t vec = view.getVectorWidth();
  while (headDim % vec)
    vec /= 2;
  int64_t threadsX = nextPowerOf2(headDim / vec);
  int64_t qHeads = cast<MemRefType>(op.getQ().getType()).getDimSize(1);
  int64_t group = qHeads / kv.getKvHeads();
  // About 128 threads per block; more tokens in flight when the group is
  // small; whole warps only, since shuffles use the full membermask.
  int64_t threadsZ = std::clamp<int64_t>(128 / (threadsX * group), 1, 8);
  int64_t step = 32 / std::gcd<int64_t>(threadsX * group, 32);
  threadsZ = (threadsZ + step - 1) / step * step;
  // The stage ring takes at most 32 KB (room for several blocks per SM
  // under the 48 KB a kernel may declare): tiles of up to 32 tokens, small
  // enough for three stages.
  int64_t rowBytes =
      threadsX * vec * kv.getDtype().getIntOrFloatBitWidth() / 8;
  const int64_t ringBytes = 32 * 1024, minStages = 3;
  int64_t tile = 32;
  while (tile > 1 && minStages * 2 * tile * rowBytes > ringBytes)
    tile /= 2;
  tile = (std::max(tile, threadsZ) + threadsZ - 1) / threadsZ * threadsZ;
  // Little's law for one block per SM (small batches): the stage-1 tiles
  // in flight carry the SM's share of bandwidth x latency.
  int64_t stageBytes = 2 * tile * rowBytes;
  int64_t need = int64_t(std::ceil(target.bytesInFlightPerSM()));
  int64_t stages = std::clamp<int64_t>((need + stageBytes - 1) / stageBytes + 1,
                                       minStages,
                                       std::max(minStages, ringBytes / stageBytes));
  stages = std::min<int64_t>(stages, 8);
  FailureOr<DecodeConfigAttr> config = getCheckedQuietly<DecodeConfigAttr>(
      whyNot, op.getContext(), vec, threadsX, threadsZ, tile, stages,
      /*max_partitions=*/int64_t(32));
  if (failed(config))
    whyNot = "no decode configuration fits head_dim " +
             std::to_string(headDim) + " in " + std::to_string(vec) +
             "-element vectors: " + whyNot;
  return config;
}

FailureOr<DecodeConfigAttr>
kvgpu::getOrChooseDecodeConfig(kv::DecodeOp op,
                               const target::TargetInfo &target,
                               std::string &whyNot) {
  if (auto config = dyn_cast_or_null<DecodeConfigAttr>(getConfig(op)))
    return config;
  return chooseDecodeConfig(op, target, whyNot);
}

/// Head dims and element type of the KV a prefill reads.
static std::tuple<int64_t, int64_t, Type> prefillKVShape(kv::PrefillOp op) {
  Type kvType = op.getKv().getType();
  if (auto paged = dyn_cast<kv::PagedType>(kvType))
    return {paged.getHeadDim(), paged.getHeadDimV(), paged.getDtype()};
  auto ragged = cast<kv::RaggedType>(kvType);
  return {ragged.getHeadDim(), ragged.getHeadDimV(), ragged.getDtype()};
}

int64_t kvgpu::prefillSharedBytesBound(PrefillConfigAttr config,
                                       kv::PrefillOp op) {
  auto [headDim, headDimV, dtype] = prefillKVShape(op);
  int64_t elementBytes = dtype.getIntOrFloatBitWidth() / 8;
  int64_t qTile = config.getQTile(), kvTile = config.getKvTile();
  int64_t bytes = elementBytes * (qTile * headDim + config.getStages() *
                                                        kvTile *
                                                        (headDim + headDimV));
  // 16-bit outputs are staged for 16-byte stores, in the query tile when it
  // has the output's shape and type.
  Type outType = op.getType().getElementType();
  if (outType.getIntOrFloatBitWidth() == 16 &&
      (headDimV != headDim || outType != dtype))
    bytes += 2 * qTile * headDimV;
  // Page ids (at most one per key of each stage), the mask's per-thread
  // scratch, the block's bookkeeping and each buffer's alignment.
  bytes += 4 * config.getStages() * kvTile;
  if (op.getMask())
    bytes += 8 * config.getNumThreads();
  return bytes + 512;
}

FailureOr<PrefillConfigAttr>
kvgpu::choosePrefillConfig(kv::PrefillOp op, const target::TargetInfo &target,
                           std::string &whyNot) {
  auto [headDim, headDimV, dtype] = prefillKVShape(op);
  if (headDim % 16 || headDimV % 16) {
    whyNot = "no prefill configuration: head dims " + std::to_string(headDim) +
             " and " + std::to_string(headDimV) +
             " must be multiples of 16 (the k and n of mma m16n8k16)";
    return failure();
  }
  if (std::max(headDim, headDimV) > 256) {
    whyNot = "no prefill configuration for head dims over 256 (the output "
             "accumulators of a 16-row tile would not fit in registers)";
    return failure();
  }
  // FlashInfer's shapes: 128 query rows against 64 keys up to D = 128, one
  // 16-row mma tile per warp so that S, O and Q's fragments stay in
  // registers; D = 256 halves both tiles and reloads Q per K tile.
  bool wide = std::max(headDim, headDimV) > 128;
  int64_t qTile = wide ? 64 : 128, kvTile = wide ? 32 : 64;
  auto build = [&](int64_t q) {
    return getCheckedQuietly<PrefillConfigAttr>(
        whyNot, op.getContext(), q, kvTile, /*warps=*/q / 16, /*stages=*/int64_t(2),
        /*q_in_registers=*/!wide, /*max_partitions=*/int64_t(16));
  };
  FailureOr<PrefillConfigAttr> config = build(qTile);
  // Smaller query tiles where the chip's shared memory per block is short.
  while (succeeded(config) && qTile > 16 &&
         prefillSharedBytesBound(*config, op) > target.maxSharedBytesPerBlock)
    config = build(qTile /= 2);
  return config;
}

FailureOr<PrefillConfigAttr>
kvgpu::getOrChoosePrefillConfig(kv::PrefillOp op,
                                const target::TargetInfo &target,
                                std::string &whyNot) {
  if (auto config = dyn_cast_or_null<PrefillConfigAttr>(getConfig(op)))
    return config;
  return choosePrefillConfig(op, target, whyNot);
}

FailureOr<Attribute> kvgpu::chooseConfig(Operation *op,
                                         const target::TargetInfo &target,
                                         std::string &whyNot) {
  if (auto decode = dyn_cast<kv::DecodeOp>(op))
    return FailureOr<Attribute>(chooseDecodeConfig(decode, target, whyNot));
  if (auto prefill = dyn_cast<kv::PrefillOp>(op))
    return FailureOr<Attribute>(choosePrefillConfig(prefill, target, whyNot));
  whyNot = op->getName().getStringRef().str() + " takes no configuration";
  return failure();
}
