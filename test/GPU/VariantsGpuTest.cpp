//===- VariantsGpuTest.cpp - Attention variants in the GPU kernels ---------===//
//
// Sinks, ALiBi, score_mod and mask_mod regions compiled into the decode
// kernels (direct, split + merge) and run in the emulator against the
// float64 reference (DecodeCases.h): gpt-oss's sliding and full layers,
// ALiBi with the standard and given slopes beside a soft cap, a per-head
// table read by score_mod, a per-request document mask, and everything at
// once with RoPE.
//
//===----------------------------------------------------------------------===//
#include "DecodeCases.h"

#include <cmath>

using namespace kvir::test;
using namespace kvir::test::gpu;

namespace {

std::vector<double> randomPerHead(Rng &rng, int64_t heads, double lo,
                                  double hi) {
  std::vector<double> values;
  for (int64_t h = 0; h < heads; ++h)
    values.push_back(rng.uniform(lo, hi));
  return values;
}

/// The ALiBi paper's slopes for a power-of-two head count: 2^(-8 i / n).
std::vector<double> powerOfTwoAlibiSlopes(int64_t heads) {
  std::vector<double> slopes;
  for (int64_t h = 1; h <= heads; ++h)
    slopes.push_back(std::pow(2.0, -8.0 * double(h) / double(heads)));
  return slopes;
}

/// The longest request and the largest batch of a case's runs.
std::pair<int64_t, int64_t> runBounds(const GpuDecodeCase &c) {
  int64_t batch = 0, len = 0;
  for (const BatchRun &run : c.runs) {
    batch = std::max<int64_t>(batch, run.lengths.empty() ? run.batch + 2
                                                         : run.lengths.size());
    len = std::max({len, run.maxLen, run.firstLen});
    for (int64_t l : run.lengths)
      len = std::max(len, l);
  }
  return {batch, len};
}

std::vector<GpuDecodeCase> variantCases() {
  std::vector<GpuDecodeCase> cases;
  auto withRuns = [](GpuDecodeCase c, int64_t smallBatch, int64_t smallMaxLen,
                     int64_t largeMaxLen) {
    c.runs = bothPaths(c.chip, c.spec.kvHeads, c.qHeads / c.spec.kvHeads,
                       smallBatch, smallMaxLen, largeMaxLen,
                       c.params.windowLeft);
    return c;
  };
  // gpt-oss: bf16, head dim 64, GQA 8, sinks on every layer; a 128-key
  // window on every other layer (no request is cut), none on the rest (the
  // long request is split: sinks join in the merge kernel, once).
  {
    GpuDecodeCase c = makeCase("GptOssSlidingSinksBF16",
                               makeSpec(16, 2, 64, DType::BF16), 16,
                               DType::BF16, "sm_90a", 1701);
    Rng rng(c.seed);
    c.params.sinks = randomPerHead(rng, 16, -1.0, 5.0);
    c.params.windowLeft = 127;
    cases.push_back(withRuns(c, 4, 300, 40));
  }
  {
    GpuDecodeCase c = makeCase("GptOssFullSinksBF16",
                               makeSpec(16, 2, 64, DType::BF16), 16,
                               DType::BF16, "sm_90a", 1702);
    Rng rng(c.seed);
    c.params.sinks = randomPerHead(rng, 16, -1.0, 5.0);
    c.params.base = Base::Two;
    cases.push_back(withRuns(c, 4, 200, 30));
  }
  {
    GpuDecodeCase c = makeCase("AlibiStandardF16Base2",
                               makeSpec(16, 2, 128, DType::F16), 8, DType::F16,
                               "sm_86", 1703);
    c.params.alibiSlopes = powerOfTwoAlibiSlopes(8);
    c.variants.standardAlibi = true;
    c.params.base = Base::Two;
    cases.push_back(withRuns(c, 5, 150, 20));
  }
  {
    GpuDecodeCase c = makeCase("AlibiSlopesSoftCapBF16ToF32",
                               makeSpec(8, 4, 96, DType::BF16, Layout::HND,
                                        Storage::Split, Table::BlockTable),
                               8, DType::F32, "sm_80", 1704);
    Rng rng(c.seed);
    c.params.alibiSlopes = randomPerHead(rng, 8, 0.001, 0.2);
    c.params.softCap = 8.0;
    cases.push_back(withRuns(c, 4, 120, 25));
  }
  // score_mod reads a per-head temperature captured from above.
  {
    GpuDecodeCase c = makeCase("ScoreModPerHeadTableF16",
                               makeSpec(16, 2, 128, DType::F16), 8, DType::F16,
                               "sm_90a", 1705);
    Rng rng(c.seed);
    std::vector<double> temperature = randomPerHead(rng, 8, 0.25, 2.0);
    Tensor table(DType::F32, {8});
    for (int64_t h = 0; h < 8; ++h)
      table.set({h}, temperature[h]);
    c.variants.captures = {{"temperature", table}};
    c.variants.scoreMod =
        R"(^bb0(%s: f32, %b: index, %h: index, %p: index, %j: index):
      %t = memref.load $temperature[%h] : memref<8xf32>
      %r = arith.mulf %s, %t : f32
      kv.yield %r : f32)";
    c.params.scoreMod = [temperature](double s, int64_t, int64_t h, int64_t,
                                      int64_t) {
      return s * double(float(temperature[h]));
    };
    cases.push_back(withRuns(c, 5, 100, 20));
  }
  // A per-request document mask: the query sees its own document's keys.
  {
    GpuDecodeCase c = makeCase("DocumentMaskBF16",
                               makeSpec(16, 2, 64, DType::BF16), 8,
                               DType::BF16, "sm_86", 1706);
    c = withRuns(c, 4, 200, 30);
    auto [batch, len] = runBounds(c);
    Rng rng(c.seed);
    Tensor doc(DType::I32, {batch, len});
    std::vector<std::vector<int32_t>> docs(batch);
    for (int64_t b = 0; b < batch; ++b) {
      int32_t id = 0;
      for (int64_t t = 0; t < len; ++t) {
        if (t > 0 && rng.coin(0.01))
          ++id;
        docs[b].push_back(id);
        doc.set({b, t}, id);
      }
    }
    std::string type =
        "memref<" + std::to_string(batch) + "x" + std::to_string(len) + "xi32>";
    c.variants.captures = {{"doc", doc}};
    c.variants.maskMod =
        "^bb0(%b: index, %h: index, %p: index, %j: index):\n"
        "      %dp = memref.load $doc[%b, %p] : " + type + "\n"
        "      %dj = memref.load $doc[%b, %j] : " + type + "\n"
        "      %same = arith.cmpi eq, %dp, %dj : i32\n"
        "      kv.yield %same : i1";
    c.params.maskMod = [docs](int64_t b, int64_t, int64_t p, int64_t j) {
      return docs[b][p] == docs[b][j];
    };
    cases.push_back(c);
  }
  // Everything at once, with RoPE, a window and a soft cap beside them.
  {
    GpuDecodeCase c = makeCase("AllVariantsRopeWindowF16",
                               makeSpec(16, 2, 128, DType::F16), 8, DType::F16,
                               "sm_90a", 1707);
    Rng rng(c.seed);
    c.params.sinks = randomPerHead(rng, 8, -1.0, 3.0);
    c.params.alibiSlopes = powerOfTwoAlibiSlopes(8);
    c.variants.standardAlibi = true;
    c.params.softCap = 20.0;
    c.params.windowLeft = 300;
    c.params.rope = ref::Rope();
    c.variants.scoreMod =
        R"(^bb0(%s: f32, %b: index, %h: index, %p: index, %j: index):
      %c = arith.constant 2.0e-2 : f32
      %ji = arith.index_cast %j : index to i32
      %jf = arith.sitofp %ji : i32 to f32
      %bias = arith.mulf %jf, %c : f32
      %r = arith.addf %s, %bias : f32
      kv.yield %r : f32)";
    c.params.scoreMod = [](double s, int64_t, int64_t, int64_t, int64_t j) {
      return s + double(j) * double(2.0e-2f);
    };
    c.variants.maskMod =
        R"(^bb0(%b: index, %h: index, %p: index, %j: index):
      %c3 = arith.constant 3 : index
      %r = arith.remui %j, %c3 : index
      %c0 = arith.constant 0 : index
      %keep = arith.cmpi ne, %r, %c0 : index
      kv.yield %keep : i1)";
    c.params.maskMod = [](int64_t, int64_t, int64_t, int64_t j) {
      return j % 3 != 0;
    };
    cases.push_back(withRuns(c, 4, 150, 20));
  }
  return cases;
}

class GpuDecodeVariants : public ::testing::TestWithParam<GpuDecodeCase> {};

TEST_P(GpuDecodeVariants, MatchesReference) { runGpuDecodeCase(GetParam()); }

INSTANTIATE_TEST_SUITE_P(
    Decode, GpuDecodeVariants, ::testing::ValuesIn(variantCases()),
    [](const ::testing::TestParamInfo<GpuDecodeCase> &info) {
      return info.param.name;
    });

} // namespace
