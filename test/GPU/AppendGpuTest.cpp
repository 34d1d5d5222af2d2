//===- AppendGpuTest.cpp - kv.append kernels in the emulator --------------===//
//
// A serving step on the GPU: new K/V rows (shuffled, so that rows of one
// request are not adjacent) are appended through the page table, optionally
// rotated (RoPE, both styles), then -- where the cache has an attention
// kernel -- a causal kv.prefill over the same cache reads them in the same
// function. The pool is read back and checked element by element against
// the float64 reference (every element the append does not write is
// bitwise unchanged), and the prefill against the reference over the
// stored bytes. Any emulator report fails the test.
//
//===----------------------------------------------------------------------===//
#include "GpuHarness.h"

#include "TestUtil.h"

using namespace kvir::test;
using namespace kvir::test::gpu;

namespace {

struct GpuAppendCase {
  std::string name;
  CacheSpec spec;
  std::optional<ref::Rope> rope;
  /// Attend to the appended cache with a causal prefill of the new rows.
  bool attend = true;
  int64_t qHeads = 4;
  int64_t batch = 5, maxLen = 40, maxNew = 9;
  std::string chip = "sm_80";
  uint64_t seed = 1;
  /// fp8 scales (the filled lengths are the test's).
  CacheOptions cacheOptions;
};

std::ostream &operator<<(std::ostream &os, const GpuAppendCase &c) {
  return os << c.name;
}

void runGpuAppendCase(const GpuAppendCase &c) {
  const CacheSpec &s = c.spec;
  SCOPED_TRACE(describe(s) + " seed " + std::to_string(c.seed));
  Rng rng(c.seed);
  std::vector<int64_t> kvLens = randomLengths(rng, c.batch, c.maxLen);
  std::vector<int64_t> filled(c.batch), fresh(c.batch);
  std::vector<std::pair<int32_t, int32_t>> rows;
  for (int64_t b = 0; b < c.batch; ++b) {
    fresh[b] = kvLens[b] ? rng.integer(1, std::min(c.maxNew, kvLens[b])) : 0;
    filled[b] = kvLens[b] - fresh[b];
    for (int64_t t = filled[b]; t < kvLens[b]; ++t)
      rows.push_back({int32_t(b), int32_t(t)});
  }
  rng.shuffle(rows);
  CacheOptions options = c.cacheOptions;
  options.filledLens = filled;
  PagedCache cache = makeCache(s, kvLens, rng, options);
  PagedCache before = cloneCache(cache);

  ref::AppendInput input;
  int64_t nnz = rows.size();
  input.k = randomTensor(rng, s.dtype, {nnz, s.kvHeads, s.headDim});
  input.v = randomTensor(rng, s.dtype, {nnz, s.kvHeads, s.headDimV});
  for (auto [b, t] : rows) {
    input.batchIndices.push_back(b);
    input.positions.push_back(t);
  }
  input.rope = c.rope;

  KernelSource src;
  std::string kvType;
  std::string kv = emitPagedView(src, cache, "kv", kvType);
  emitAppend(src, input, kv, kvType);
  // The new rows attend, causally, to their requests' keys.
  std::vector<int32_t> qoIndptr = indptrOf(fresh);
  Tensor q =
      randomTensor(rng, s.dtype, {qoIndptr.back(), c.qHeads, s.headDim}, 2.0);
  StateBuffers out =
      makeStateBuffers(qoIndptr.back(), c.qHeads, s.headDimV, s.dtype);
  ref::AttentionParams params;
  params.causal = true;
  std::vector<Tensor> outputs;
  std::vector<std::string> ops{"kv.append"};
  if (c.attend) {
    std::string qs = src.addMemref("q", q);
    std::string qo = src.addMemref("qo_indptr", makeI32(qoIndptr));
    std::string stateType =
        stateTypeText(c.qHeads, s.headDimV, s.dtype, params.base);
    src.addLine("%s = kv.prefill " + qs + ", " + qo + ", " + kv + " " +
                attentionAttrs(params) + " : " + src.typeOf(qs) + ", " +
                src.typeOf(qo) + ", " + kvType + " -> " + stateType);
    emitStore(src, "%s", stateType, out);
    outputs = {out.o, out.lse};
    ops.push_back("kv.prefill");
  }
  RunResult result;
  ASSERT_TRUE(runGpu(src, outputs, c.chip, ops, result));
  EXPECT_TRUE(noReports(result));
  ASSERT_GE(result.kernelNames().size(), 1u);
  EXPECT_EQ(result.kernelNames()[0].rfind("append_", 0), 0u)
      << result.describeLaunches();

  for (const std::string &r : ref::checkAppend(before, cache, input))
    ADD_FAILURE() << r;
  if (c.attend) {
    ref::State expected =
        ref::attention(q, qoIndptr, ref::PagedSource(cache), params);
    EXPECT_TRUE(check(compareGpuState(out, expected, s.dtype)));
  }
}

GpuAppendCase makeCase(std::string name, CacheSpec spec, uint64_t seed) {
  GpuAppendCase c;
  c.name = std::move(name);
  c.spec = spec;
  c.seed = seed;
  return c;
}

std::vector<GpuAppendCase> appendCases() {
  std::vector<GpuAppendCase> cases;
  cases.push_back(makeCase("NhdCombinedCsrP16D128F16",
                           makeSpec(16, 2, 128, DType::F16), 3001));
  {
    GpuAppendCase c = makeCase(
        "HndSplitBlockTableP5D64BF16RopeInterleave",
        makeSpec(5, 2, 64, DType::BF16, Layout::HND, Storage::Split,
                 Table::BlockTable),
        3002);
    c.rope = ref::Rope{ref::RopeStyle::Interleave, 1e4, 1.0};
    cases.push_back(c);
  }
  {
    GpuAppendCase c = makeCase(
        "NhdCombinedTokenTableP8D64F16RopeRotateHalf",
        makeSpec(8, 4, 64, DType::F16, Layout::NHD, Storage::Combined,
                 Table::TokenTable),
        3003);
    c.rope = ref::Rope{ref::RopeStyle::RotateHalf, 5e5, 0.5};
    c.qHeads = 8;
    cases.push_back(c);
  }
  {
    GpuAppendCase c = makeCase("LlamaTokenOffsetP64D128BF16RopeInterleave",
                               makeSpec(64, 2, 128, DType::BF16, Layout::Llama,
                                        Storage::Split, Table::TokenOffset),
                               3004);
    c.rope = ref::Rope{ref::RopeStyle::Interleave, 1e4, 2.0};
    cases.push_back(c);
  }
  {
    // vLLM: K [p, h, d / 8, slot, 8] takes 16-byte chunks, V [p, h, d, slot]
    // one element at a time. No attention kernel reads this cache.
    GpuAppendCase c = makeCase("VllmBlockTableP16D64F16RopeRotateHalf",
                               makeSpec(16, 2, 64, DType::F16, Layout::VLLM,
                                        Storage::Split, Table::BlockTable),
                               3005);
    c.rope = ref::Rope{ref::RopeStyle::RotateHalf, 1e4, 1.0};
    c.attend = false;
    cases.push_back(c);
  }
  {
    CacheSpec spec = makeSpec(5, 2, 64, DType::F16, Layout::PPL2,
                              Storage::Combined, Table::TokenTable);
    spec.layer = 1;
    GpuAppendCase c = makeCase("Ppl2Layer1TokenTableP5D64F16", spec, 3006);
    cases.push_back(c);
  }
  {
    // f32 caches take appends (no tensor-core attention reads them).
    GpuAppendCase c = makeCase("NhdSplitCsrP16D96F32RopeInterleave",
                               makeSpec(16, 2, 96, DType::F32, Layout::NHD,
                                        Storage::Split, Table::CSR),
                               3007);
    c.rope = ref::Rope{ref::RopeStyle::Interleave, 1e4, 1.0};
    c.attend = false;
    cases.push_back(c);
  }
  {
    // Long positions: the RoPE angles reach thousands of radians.
    GpuAppendCase c = makeCase("HndCombinedCsrP16D128F16RopeLong",
                               makeSpec(16, 1, 128, DType::F16, Layout::HND,
                                        Storage::Combined, Table::CSR),
                               3008);
    c.rope = ref::Rope{ref::RopeStyle::RotateHalf, 1e4, 1.0};
    c.batch = 2;
    c.maxLen = 3000;
    c.maxNew = 12;
    c.attend = false;
    cases.push_back(c);
  }
  // Partial rotary (rotary_dim) in both styles, and Llama 3.1's frequency
  // scaling at positions that reach every band of it (wavelengths below,
  // between and above the original context's bounds).
  {
    GpuAppendCase c = makeCase("NhdCombinedCsrP16D128F16RopeLlama31Rotary64",
                               makeSpec(16, 2, 128, DType::F16), 3013);
    c.rope = llama31Rope(ref::RopeStyle::RotateHalf, 64);
    c.batch = 3;
    c.maxLen = 2000;
    c.maxNew = 10;
    c.attend = false;
    cases.push_back(c);
  }
  {
    GpuAppendCase c =
        makeCase("HndSplitBlockTableP8D64BF16RopeInterleaveRotary32",
                 makeSpec(8, 2, 64, DType::BF16, Layout::HND, Storage::Split,
                          Table::BlockTable),
                 3014);
    c.rope = ref::Rope{ref::RopeStyle::Interleave, 1e4, 1.0};
    c.rope->rotaryDim = 32;
    cases.push_back(c);
  }
  {
    GpuAppendCase c = makeCase(
        "Int8G8NhdCombinedCsrP16D128F16RopeRotateHalfRotary96",
        quantized(makeSpec(16, 2, 128, DType::F16), Quant::Int8Group, 8), 3015);
    c.rope = ref::Rope{ref::RopeStyle::RotateHalf, 1e4, 1.0};
    c.rope->rotaryDim = 96;
    c.attend = false;
    cases.push_back(c);
  }
  // fp8 caches quantize on write: codes of x / scale, rounded to nearest
  // even and saturated (vLLM's scaled_convert), from f32 after RoPE;
  // checked bit for bit against the reference's encoding.
  {
    GpuAppendCase c = makeCase(
        "Fp8E4M3NhdCombinedCsrP16D128F16",
        quantized(makeSpec(16, 2, 128, DType::F16), Quant::FP8E4M3), 3009);
    c.attend = false;
    cases.push_back(c);
  }
  {
    // Scales of 1/512: most codes saturate at +-448.
    GpuAppendCase c = makeCase(
        "Fp8E4M3SaturatedHndSplitBlockTableP8D64BF16RopeRotateHalf",
        quantized(makeSpec(8, 2, 64, DType::BF16, Layout::HND, Storage::Split,
                           Table::BlockTable),
                  Quant::FP8E4M3),
        3010);
    c.rope = ref::Rope{ref::RopeStyle::RotateHalf, 1e4, 1.0};
    c.cacheOptions.kScale = c.cacheOptions.vScale = 1.0f / 512;
    c.attend = false;
    cases.push_back(c);
  }
  {
    // vLLM's fp8 layout: K [p, h, d / 16, slot, 16] takes 16-code chunks.
    GpuAppendCase c = makeCase(
        "Fp8E5M2VllmBlockTableP16D128F16RopeInterleave",
        quantized(makeSpec(16, 2, 128, DType::F16, Layout::VLLM,
                           Storage::Split, Table::BlockTable),
                  Quant::FP8E5M2),
        3011);
    c.rope = ref::Rope{ref::RopeStyle::Interleave, 1e4, 1.0};
    c.attend = false;
    cases.push_back(c);
  }
  // int8 groups quantize on write: per (token, head, group) scale
  // max(max|x| / 127, 1e-5) rounded to the activation type and stored in
  // the scale pool, codes of x / stored scale rounded half to even; scales
  // and codes checked bit for bit against the reference's.
  {
    GpuAppendCase c = makeCase(
        "Int8G8NhdCombinedCsrP16D128F16",
        quantized(makeSpec(16, 2, 128, DType::F16), Quant::Int8Group, 8),
        3012);
    c.attend = false;
    cases.push_back(c);
  }
  {
    GpuAppendCase c = makeCase(
        "Int8G16HndSplitBlockTableP8D64BF16RopeRotateHalf",
        quantized(makeSpec(8, 2, 64, DType::BF16, Layout::HND, Storage::Split,
                           Table::BlockTable),
                  Quant::Int8Group, 16),
        3013);
    c.rope = ref::Rope{ref::RopeStyle::RotateHalf, 1e4, 1.0};
    c.attend = false;
    cases.push_back(c);
  }
  {
    GpuAppendCase c = makeCase(
        "Int8G8NhdSplitTokenTableP4D96F16RopeInterleave",
        quantized(makeSpec(4, 3, 96, DType::F16, Layout::NHD, Storage::Split,
                           Table::TokenTable),
                  Quant::Int8Group, 8),
        3014);
    c.rope = ref::Rope{ref::RopeStyle::Interleave, 1e4, 1.0};
    c.attend = false;
    cases.push_back(c);
  }
  return cases;
}

class GpuAppend : public ::testing::TestWithParam<GpuAppendCase> {};

TEST_P(GpuAppend, MatchesReference) { runGpuAppendCase(GetParam()); }

INSTANTIATE_TEST_SUITE_P(
    Matrix, GpuAppend, ::testing::ValuesIn(appendCases()),
    [](const ::testing::TestParamInfo<GpuAppendCase> &info) {
      return info.param.name;
    });

} // namespace
