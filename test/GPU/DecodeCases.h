//===- DecodeCases.h - GPU decode cases in the emulator ---------*- C++ -*-===//
//
// A decode case: a kv.decode configuration (cache, heads, output type,
// attributes, variants, chip) run on batches on both sides of the split-KV
// heuristic through convert-kv-to-gpu and the emulator, compared with the
// float64 reference (DecodeCases.cpp says what is checked). Shared by the
// decode matrices (DecodeGpuTest.cpp) and the variants (VariantsGpuTest.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_TEST_GPU_DECODECASES_H
#define KVIR_TEST_GPU_DECODECASES_H

#include "GpuHarness.h"

#include "TestUtil.h"

#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace kvir::test::gpu {

/// One batch of a case: `batch` requests of random lengths in [2, maxLen]
/// (plus a 0- and a 1-token request), or exactly `lengths`.
struct BatchRun {
  int64_t batch = 0;
  int64_t maxLen = 0;
  std::vector<int64_t> lengths;
  /// Whether the batch is meant to take the split-KV path (the work
  /// schedule cuts some request).
  std::optional<bool> expectSplit = std::nullopt;
  /// If non-zero, the first request's kv_len (a long one among random).
  int64_t firstLen = 0;
};

struct GpuDecodeCase {
  std::string name;
  CacheSpec spec;
  DType outType = DType::F16;
  int64_t qHeads = 8;
  ref::AttentionParams params;
  /// Sinks and slopes come from params; the rest of the variants here.
  VariantSource variants;
  std::string chip = "sm_86";
  std::vector<BatchRun> runs;
  uint64_t seed = 1;
  /// A #kvgpu.decode to use instead of kv-tile's choice, or "".
  std::string config;
  /// Lower with fixed grids for this many requests (CUDA graphs), or 0.
  int64_t graphMaxBatch = 0;
  /// fp8 scales and value ranges.
  CacheOptions cacheOptions;
  /// > 0: a random sparse selection of this many entries per request
  /// (randomTopk); the work schedule then sees `topk` entries per request.
  int64_t topk = 0;
};

std::ostream &operator<<(std::ostream &os, const GpuDecodeCase &c);

void runGpuDecodeCase(const GpuDecodeCase &c);

/// The shortest chunk the decode schedule cuts for GQA group `group` (twice
/// as long for 1-byte fp8 / int8 KV).
int64_t minChunk(int64_t group, bool oneByte = false);

/// A small batch with one request long enough to be cut and a large batch
/// of short requests, which no schedule cuts.
std::vector<BatchRun> bothPaths(const std::string &chip, int64_t kvHeads,
                                int64_t group, int64_t smallBatch,
                                int64_t smallMaxLen, int64_t largeMaxLen,
                                std::optional<int64_t> windowLeft,
                                bool oneByte = false);

GpuDecodeCase makeCase(std::string name, CacheSpec spec, int64_t qHeads,
                       DType outType, std::string chip, uint64_t seed);

} // namespace kvir::test::gpu

#endif // KVIR_TEST_GPU_DECODECASES_H
