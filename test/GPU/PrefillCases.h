//===- PrefillCases.h - GPU prefill cases in the emulator -------*- C++ -*-===//
//
// A prefill case: a kv.prefill configuration (paged or ragged KV, heads,
// output type, attributes, variants, chip) run on explicit batches through
// kv-to-nvvm's kv-level pipeline and the emulator, compared with the
// float64 reference (PrefillCases.cpp says what is checked). Shared by the
// prefill matrices (PrefillGpuTest.cpp) and the variants
// (VariantsGpuTest.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_TEST_GPU_PREFILLCASES_H
#define KVIR_TEST_GPU_PREFILLCASES_H

#include "GpuHarness.h"

#include "TestUtil.h"

#include <ostream>
#include <string>
#include <vector>

namespace kvir::test::gpu {

/// One batch: request b has qo[b] query rows over kv[b] keys.
struct PrefillBatch {
  std::vector<int64_t> qo, kv;
};

struct GpuPrefillCase {
  std::string name;
  CacheSpec spec;
  bool ragged = false;
  int64_t qHeads = 8;
  DType outType = DType::F16;
  ref::AttentionParams params;
  MaskKind mask = MaskKind::None;
  /// Random positions per query row (kv.prefill positions(...)).
  bool positions = false;
  /// Sinks and slopes come from params; the rest of the variants here.
  VariantSource variants;
  std::string chip = "sm_80";
  std::string config;
  /// Text the chosen configuration must contain (e.g. "copy = tma").
  std::string expectConfig;
  /// Whether every batch runs TMA copies (on the case's own chip, not its
  /// mma.sync twin).
  bool expectTmaCopies = false;
  std::vector<PrefillBatch> batches;
  /// Lower with fixed grids (CUDA graphs: convert-kv-to-gpu's
  /// graph-max-batch), or 0.
  int64_t graphMaxBatch = 0;
  /// Query and output rows past the requests' (a CUDA graph's padding):
  /// they belong to no request and must stay unwritten.
  int64_t paddingRows = 0;
  uint64_t seed = 1;
};

std::ostream &operator<<(std::ostream &os, const GpuPrefillCase &c);

void runGpuPrefillCase(const GpuPrefillCase &c);

GpuPrefillCase makePrefillCase(std::string name, CacheSpec spec, int64_t qHeads,
                               DType outType, std::string chip, uint64_t seed);

} // namespace kvir::test::gpu

#endif // KVIR_TEST_GPU_PREFILLCASES_H
