//===- ConfigSelection.cpp - Per-op, per-chip GPU configurations ----------===//
#include "kvir/Dialect/KVGPU/Transforms/ConfigSelection.h"

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
kvgpu::chooseDecodeConfig(kv::DecodeOp op, const target::TargetInfo &,
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
  // A tile holds up to 32 tokens and at most 16 KB per K or V tile.
  int64_t rowBytes =
      threadsX * vec * kv.getDtype().getIntOrFloatBitWidth() / 8;
  int64_t tile = std::min<int64_t>(32, (16 * 1024) / rowBytes);
  tile = (std::max(tile, threadsZ) + threadsZ - 1) / threadsZ * threadsZ;
  FailureOr<DecodeConfigAttr> config = getCheckedQuietly<DecodeConfigAttr>(
      whyNot, op.getContext(), vec, threadsX, threadsZ, tile,
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

FailureOr<Attribute> kvgpu::chooseConfig(Operation *op,
                                         const target::TargetInfo &target,
                                         std::string &whyNot) {
  if (auto decode = dyn_cast<kv::DecodeOp>(op))
    return FailureOr<Attribute>(chooseDecodeConfig(decode, target, whyNot));
  whyNot = op->getName().getStringRef().str() + " takes no configuration";
  return failure();
}
