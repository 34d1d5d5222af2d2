//===- PrefillGpuTest.cpp - GPU prefill kernels in the emulator -----------===//
//
// Each configuration is a kv.prefill over a random paged cache (pages
// scattered over a pool whose unowned slots are NaN) or ragged K/V, lowered
// by kv-to-nvvm's kv-level pipeline (the test fails if the prefill is not a
// kernel launch), run in kvir's emulator with NaN-poisoned outputs and
// compared with the float64 reference: outputs within the harness's bound
// for the output type, LSE within 1e-3, rows that see no key exactly
// (0, -inf), nothing NaN. Batches are explicit (qo_len, kv_len) pairs
// covering qo_len 0, 1, 7, 64, 65, 300 (and 8192) and kv_len 0, 1, 17, 1000;
// which kernels ran (direct, or split + merge) and with how many partitions
// is checked against the launch plan's own rule. Any emulator report
// (out-of-bounds access, shared-memory race, barrier divergence) fails the
// test.
//
//===----------------------------------------------------------------------===//
#include "GpuHarness.h"

#include "TestUtil.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

using namespace kvir::test;
using namespace kvir::test::gpu;

namespace {

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
  std::string chip = "sm_80";
  std::string config;
  std::vector<PrefillBatch> batches;
  uint64_t seed = 1;
};

std::ostream &operator<<(std::ostream &os, const GpuPrefillCase &c) {
  return os << c.name;
}

bool isSplitKernel(const std::string &name) {
  std::string stem = name.substr(0, name.rfind('_'));
  return stem.size() >= 6 && stem.compare(stem.size() - 6, 6, "_split") == 0;
}

void runGpuPrefillCase(const GpuPrefillCase &c) {
  Rng rng(c.seed);
  const CacheSpec &s = c.spec;
  SCOPED_TRACE((c.ragged ? std::string("ragged KV") : describe(s)) +
               " q_heads " + std::to_string(c.qHeads) + " out " +
               mlirName(c.outType) + " chip " + c.chip + " seed " +
               std::to_string(c.seed));
  for (const PrefillBatch &batch : c.batches) {
    int64_t numRequests = batch.qo.size();
    SCOPED_TRACE("batch of " + std::to_string(numRequests));
    std::vector<int32_t> qoIndptr = indptrOf(batch.qo);
    int64_t rows = qoIndptr.back();
    Tensor q = randomTensor(rng, s.dtype, {rows, c.qHeads, s.headDim}, 2.0);
    StateBuffers out = makeStateBuffers(rows, c.qHeads, s.headDimV, c.outType);
    Tensor mask;
    if (c.mask != MaskKind::None)
      mask = randomMask(rng, batch.qo, batch.kv, c.mask == MaskKind::Packed);

    KernelSource src;
    std::string kv, kvType;
    PagedCache cache;
    Tensor rk, rv;
    std::vector<int32_t> kvIndptr = indptrOf(batch.kv);
    if (c.ragged) {
      int64_t nnz = kvIndptr.back();
      rk = randomTensor(rng, s.dtype, {nnz, s.kvHeads, s.headDim});
      rv = randomTensor(rng, s.dtype, {nnz, s.kvHeads, s.headDimV});
      std::string ks = src.addMemref("k", rk), vs = src.addMemref("v", rv);
      std::string is = src.addMemref("kv_indptr", makeI32(kvIndptr));
      std::ostringstream t;
      t << "!kv.ragged<kv_heads = " << s.kvHeads << ", head_dim = " << s.headDim
        << ", head_dim_v = " << s.headDimV << ", dtype = " << mlirName(s.dtype)
        << ">";
      kvType = src.addAlias("kv_t", t.str());
      kv = "%kv";
      src.addLine(kv + " = kv.ragged_view " + ks + ", " + vs + ", " + is +
                  " : " + src.typeOf(ks) + ", " + src.typeOf(vs) + ", " +
                  src.typeOf(is) + " -> " + kvType);
    } else {
      cache = makeCache(s, batch.kv, rng);
      kv = emitPagedView(src, cache, "kv", kvType);
    }
    std::string qs = src.addMemref("q", q);
    std::string qo = src.addMemref("qo_indptr", makeI32(qoIndptr));
    std::string maskClause;
    if (c.mask != MaskKind::None) {
      std::string ms = src.addMemref("mask", mask);
      maskClause = " mask(" + ms + " : " + src.typeOf(ms) + ")";
    }
    std::string stateType =
        stateTypeText(c.qHeads, s.headDimV, c.outType, c.params.base);
    std::string attrs = attentionAttrs(c.params);
    if (!c.config.empty()) {
      std::string cfg = "kvgpu.config = " + c.config;
      attrs = attrs.empty() ? "{" + cfg + "}"
                            : attrs.substr(0, attrs.size() - 1) + ", " + cfg +
                                  "}";
    }
    src.addLine("%s = kv.prefill " + qs + ", " + qo + ", " + kv + maskClause +
                " " + attrs + " : " + src.typeOf(qs) + ", " + src.typeOf(qo) +
                ", " + kvType + " -> " + stateType);
    emitStore(src, "%s", stateType, out);

    ref::AttentionParams params = asKernelSees(c.params);
    if (c.mask != MaskKind::None)
      params.mask = &mask;
    ref::State expected =
        c.ragged
            ? ref::attention(q, qoIndptr, ref::RaggedSource(rk, rv, kvIndptr),
                             params)
            : ref::attention(q, qoIndptr, ref::PagedSource(cache), params);
    RunResult result;
    auto start = std::chrono::steady_clock::now();
    ASSERT_TRUE(runGpu(src, {out.o, out.lse}, c.chip, {"kv.prefill"}, result));
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    EXPECT_TRUE(noReports(result));

    std::optional<int64_t> parts = result.planSize(
        "kv.prefill", "num_partitions",
        {{"nnz", rows}, {"qo_indptr_len", numRequests + 1}});
    ASSERT_TRUE(parts.has_value()) << "no kv.prefill launch plan";
    std::vector<std::string> names = result.kernelNames();
    if (*parts == 1) {
      ASSERT_LE(names.size(), 1u) << result.describeLaunches();
      if (!names.empty())
        EXPECT_FALSE(isSplitKernel(names[0])) << names[0];
    } else {
      ASSERT_EQ(names.size(), 2u) << result.describeLaunches();
      EXPECT_TRUE(isSplitKernel(names[0])) << names[0];
      EXPECT_EQ(result.launches[0].grid.z, uint32_t(*parts));
      EXPECT_EQ(names[1].rfind("merge_partitions", 0), 0u) << names[1];
    }
    EXPECT_TRUE(check(compareGpuState(out, expected, c.outType)));
    if (std::getenv("KVIR_UNIT_VERBOSE"))
      std::printf("%s    %lld requests, %lld rows, P = %lld: %.2f s\n",
                  result.describeLaunches().c_str(),
                  (long long)numRequests, (long long)rows, (long long)*parts,
                  seconds);
  }
}

GpuPrefillCase makeCase(std::string name, CacheSpec spec, int64_t qHeads,
                        DType outType, std::string chip, uint64_t seed) {
  GpuPrefillCase c;
  c.name = std::move(name);
  c.spec = spec;
  c.qHeads = qHeads;
  c.outType = outType;
  c.chip = std::move(chip);
  c.seed = seed;
  return c;
}

/// The lengths: qo_len {1, 7, 64, 65, 300} against kv_len
/// {1, 17, 1000} (causal needs kv_len >= qo_len), and an empty request.
PrefillBatch standardBatch(bool causal) {
  if (causal)
    return {{1, 7, 0, 64, 65, 300, 17}, {1, 17, 0, 1000, 1000, 1000, 17}};
  return {{1, 7, 0, 64, 65, 300, 7}, {17, 1, 17, 1000, 17, 1000, 0}};
}

std::vector<GpuPrefillCase> prefillCases() {
  std::vector<GpuPrefillCase> cases;
  {
    GpuPrefillCase c = makeCase("RaggedD64G2F16Causal",
                                makeSpec(16, 2, 64, DType::F16), 4, DType::F16,
                                "sm_80", 2001);
    c.ragged = true;
    c.params.causal = true;
    c.batches = {{{5, 3}, {9, 3}}};
    cases.push_back(c);
  }
  {
    GpuPrefillCase c = makeCase("NhdCsrP16D128G4F16CausalStandard",
                                makeSpec(16, 2, 128, DType::F16), 8, DType::F16,
                                "sm_80", 2002);
    c.params.causal = true;
    c.batches = {standardBatch(true)};
    cases.push_back(c);
  }
  {
    GpuPrefillCase c = makeCase("NhdCsrP16D128G4F16Standard",
                                makeSpec(16, 2, 128, DType::F16), 8, DType::F16,
                                "sm_80", 2003);
    c.batches = {standardBatch(false)};
    cases.push_back(c);
  }
  return cases;
}

class GpuPrefill : public ::testing::TestWithParam<GpuPrefillCase> {};

TEST_P(GpuPrefill, MatchesReference) { runGpuPrefillCase(GetParam()); }

INSTANTIATE_TEST_SUITE_P(
    Matrix, GpuPrefill, ::testing::ValuesIn(prefillCases()),
    [](const ::testing::TestParamInfo<GpuPrefillCase> &info) {
      return info.param.name;
    });

} // namespace
