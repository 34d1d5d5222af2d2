//===- Cases.h - Reusable decode / prefill test cases ------------*- C++ -*-===//
//
// A case is a kernel configuration (cache type, heads, attributes) run on
// several random batches: the kernel text does not depend on the batch, so
// it is compiled once and reused.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_TEST_UNIT_HARNESS_CASES_H
#define KVIR_TEST_UNIT_HARNESS_CASES_H

#include "Harness.h"

#include <optional>

namespace kvir::test {

struct DecodeCase {
  CacheSpec spec;
  /// The state's output type; the cache dtype when unset.
  std::optional<DType> outType;
  int64_t qHeads = 8;
  ref::AttentionParams params;
  VariantSource variants;
  CacheOptions cacheOptions;
  int64_t batch = 5;
  int64_t maxLen = 40;
  /// > 0: a random sparse selection of this many entries per request
  /// (randomTopk).
  int64_t topk = 0;
  /// Random batches run through the one compiled kernel.
  int repeats = 3;
  uint64_t seed = 1;
};

/// Decode over a random paged cache, compared with the reference.
void runDecodeCase(const DecodeCase &c);

enum class MaskKind { None, Bool, Packed };

struct PrefillCase {
  CacheSpec spec;
  /// Ragged KV (kv.ragged_view) instead of a paged cache; spec gives the
  /// heads, dims and dtype.
  bool ragged = false;
  int64_t qHeads = 8;
  ref::AttentionParams params;
  VariantSource variants;
  MaskKind mask = MaskKind::None;
  /// Random positions per query row (kv.prefill positions(...)).
  bool positions = false;
  CacheOptions cacheOptions;
  int64_t batch = 4;
  int64_t maxLen = 40;
  int64_t maxQo = 8;
  int repeats = 3;
  uint64_t seed = 1;
};

/// Prefill (append attention) over a random paged or ragged KV.
void runPrefillCase(const PrefillCase &c);

} // namespace kvir::test

#endif // KVIR_TEST_UNIT_HARNESS_CASES_H
