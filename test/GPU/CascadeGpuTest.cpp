//===- CascadeGpuTest.cpp - kv.cascade as GPU kernels in the emulator -----===//
//
// A cascade lowers (kv-expand-cascade, convert-kv-to-gpu) to one tensor-core
// prefill per level and a merge kernel: a shared level's requests hold the
// query rows of every request that shares it, so its keys are read once per
// query tile. Each case builds random 2- and 3-level cascades over one pool
// (a level-0 prefix shared by every row, a middle level of two groups whose
// second has no keys, a last level with a request of no rows and requests
// of 1..4 rows), runs them in the emulator with NaN-poisoned outputs, and
// compares with the float64 reference computed as plain attention of each
// last-level request over the concatenation of its levels' keys (causal
// and windows bottom-right on that concatenation). Any emulator report
// fails the test.
//
//===----------------------------------------------------------------------===//
#include "GpuHarness.h"

#include "TestUtil.h"

using namespace kvir::test;
using namespace kvir::test::gpu;

namespace {

struct CascadeCase {
  std::string name;
  int64_t levels = 2;
  CacheSpec spec;
  int64_t qHeads = 8;
  ref::AttentionParams params;
  /// Sinks and slopes come from params; whether ALiBi is the attribute.
  VariantSource variants;
  /// Keys of the shared level-0 prefix.
  int64_t prefixLen = 300;
  std::string chip = "sm_80";
  uint64_t seed = 1;
};

std::ostream &operator<<(std::ostream &os, const CascadeCase &c) {
  return os << c.name;
}

void runCascadeCase(const CascadeCase &c) {
  Rng rng(c.seed);
  const CacheSpec &spec = c.spec;
  SCOPED_TRACE(describe(spec) + " levels " + std::to_string(c.levels) +
               " chip " + c.chip);
  CascadeShape shape =
      randomCascadeShape(rng, c.levels, 6, c.params.causal, c.prefixLen,
                         rng.integer(17, 90), /*maxLastLen=*/40);
  std::vector<PagedCache> caches = makeCascadeCaches(spec, shape.kvLens, rng);
  int64_t rows = shape.qoLens[0][0];
  Tensor q = randomTensor(rng, spec.dtype, {rows, c.qHeads, spec.headDim}, 2.0);
  StateBuffers out =
      makeStateBuffers(rows, c.qHeads, spec.headDimV, spec.dtype);
  KernelSource src;
  std::string qs = src.addMemref("q", q);
  std::string stateType =
      stateTypeText(c.qHeads, spec.headDimV, spec.dtype, c.params.base);
  std::vector<std::vector<int32_t>> indptrs = emitCascade(
      src, qs, caches, shape.qoLens, c.params, stateType, c.variants);
  emitStore(src, "%s", stateType, out);

  RunResult result;
  ASSERT_TRUE(runGpu(src, {out.o, out.lse}, c.chip,
                     {"kv.cascade", "kv.cascade_positions", "kv.prefill",
                      "kv.merge", "kv.merge_sinks"},
                     result));
  EXPECT_TRUE(noReports(result));
  // One prefill per level (direct, or split + merge_partitions), then the
  // merge of the levels' states; with a window, the positions of each
  // shared level's rows first.
  std::vector<std::string> names = result.kernelNames();
  int64_t prefills = 0, positions = 0;
  for (const std::string &name : names) {
    prefills += name.rfind("prefill_", 0) == 0;
    positions += name.rfind("cascade_positions_", 0) == 0;
  }
  EXPECT_GE(prefills, c.levels) << result.describeLaunches();
  bool positional = c.params.windowLeft || c.params.rope ||
                    !c.params.alibiSlopes.empty() ||
                    !c.variants.scoreMod.empty() || !c.variants.maskMod.empty();
  EXPECT_EQ(positions, positional ? c.levels - 1 : 0)
      << result.describeLaunches();
  // The shared levels' prefills take 256-row query tiles (kv.shared_level),
  // the last level the default 128 (levels with the same kernel share a
  // plan).
  // (f32 levels run on the decode kernel, one block per query row.)
  // On sm_90a the shared levels' tiles are four warpgroups on wgmma up to
  // head dim 128.
  bool tallOnWgmma =
      c.chip == "sm_90a" && std::max(spec.headDim, spec.headDimV) <= 128;
  int64_t tall = 0, other = 0;
  for (kvir::kvgpu::LaunchPlanAttr plan : result.kernel->summary().plans)
    if (auto config = llvm::dyn_cast_or_null<kvir::kvgpu::PrefillConfigAttr>(
            plan.getConfig())) {
      ++(config.getQTile() == 256 ? tall : other);
      if (config.getQTile() == 256)
        EXPECT_EQ(config.usesWgmma(), tallOnWgmma)
            << c.chip << ": the shared level on " << int(config.getMma());
    }
  if (spec.dtype != DType::F32) {
    EXPECT_GE(tall, 1);
    EXPECT_EQ(other, 1);
  }
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names.back().rfind("merge" + std::to_string(c.levels) + "_", 0),
            0u)
      << result.describeLaunches();

  std::vector<ref::PagedSource> sources;
  for (const PagedCache &cache : caches)
    sources.emplace_back(cache);
  std::vector<const ref::KVSource *> levelSources;
  for (const ref::PagedSource &s : sources)
    levelSources.push_back(&s);
  ref::State expected =
      ref::cascade(q, indptrs, levelSources, asKernelSees(c.params));
  // Each level's state is written in the output type before the merge;
  // RoPE rotates q and K into the KV type (the LSE carries its rounding).
  EXPECT_TRUE(check(compareGpuState(
      out, expected, spec.dtype,
      c.params.rope ? outputTolerance(spec.dtype) : 1e-3)));
}

std::vector<CascadeCase> cascadeCases() {
  std::vector<CascadeCase> cases;
  auto add = [&](std::string name, int64_t levels, CacheSpec spec,
                 int64_t qHeads, std::string chip, uint64_t seed) {
    CascadeCase c;
    c.name = std::move(name);
    c.levels = levels;
    c.spec = spec;
    c.qHeads = qHeads;
    c.chip = std::move(chip);
    c.seed = seed;
    cases.push_back(c);
    return &cases.back();
  };
  add("TwoLevelsCausalNhdCsrP16D128G4F16", 2, makeSpec(16, 2, 128, DType::F16),
      8, "sm_80", 7001)
      ->params.causal = true;
  add("TwoLevelsHndBlockTableP8D64G2BF16", 2,
      makeSpec(8, 2, 64, DType::BF16, Layout::HND, Storage::Combined,
               Table::BlockTable),
      4, "sm_90a", 7002)
      ->params.base = Base::Two;
  {
    CascadeCase *c = add("ThreeLevelsCausalSoftCapNhdSplitCsrP16D64G4F16", 3,
                         makeSpec(16, 1, 64, DType::F16, Layout::NHD,
                                  Storage::Split, Table::CSR),
                         4, "sm_86", 7003);
    c->params.causal = true;
    c->params.softCap = 8.0;
    c->params.smScale = 0.15;
  }
  {
    CascadeCase *c = add("ThreeLevelsCausalTokenTableP4D128G8BF16", 3,
                         makeSpec(4, 1, 128, DType::BF16, Layout::NHD,
                                  Storage::Combined, Table::TokenTable),
                         8, "sm_90a", 7004);
    c->params.causal = true;
    c->params.base = Base::Two;
  }
  {
    // Windows count positions in the concatenation of a row's levels: the
    // shared levels' prefills take each row's position
    // (kv.cascade_positions, a kernel of its own). A window of 100 reaches
    // into the middle level or the prefix for some rows only.
    CascadeCase *c = add("TwoLevelsCausalWindowNhdCsrP16D128G4F16", 2,
                         makeSpec(16, 2, 128, DType::F16), 8, "sm_80", 7006);
    c->params.causal = true;
    c->params.windowLeft = 100;
  }
  {
    CascadeCase *c = add("ThreeLevelsWindowSoftCapHndBlockTableP8D64G2BF16", 3,
                         makeSpec(8, 2, 64, DType::BF16, Layout::HND,
                                  Storage::Combined, Table::BlockTable),
                         4, "sm_90a", 7007);
    c->params.windowLeft = 70;
    c->params.softCap = 20.0;
    c->prefixLen = 150;
  }
  {
    CascadeCase *c = add("ThreeLevelsCausalWindowZeroTokenTableP4D64G1F16", 3,
                         makeSpec(4, 2, 64, DType::F16, Layout::NHD,
                                  Storage::Combined, Table::TokenTable),
                         2, "sm_86", 7008);
    c->params.causal = true;
    c->params.windowLeft = 0;
  }
  {
    // RoPE: the shared levels' rows rotate at their positions relative to
    // the level's keys (kv.cascade_positions), which turn q . k as the
    // concatenation's positions do.
    CascadeCase *c = add("TwoLevelsCausalRopeRotateHalfNhdCsrP16D128G4F16", 2,
                         makeSpec(16, 2, 128, DType::F16), 8, "sm_80", 7009);
    c->params.causal = true;
    c->params.rope = ref::Rope{ref::RopeStyle::RotateHalf, 1e4, 1.0};
  }
  {
    CascadeCase *c = add("ThreeLevelsRopeLlama31WindowHndBlockTableP8D64G2BF16",
                         3,
                         makeSpec(8, 2, 64, DType::BF16, Layout::HND,
                                  Storage::Combined, Table::BlockTable),
                         4, "sm_90a", 7010);
    c->params.windowLeft = 90;
    c->params.rope = llama31Rope(ref::RopeStyle::Interleave, 0);
    c->prefixLen = 150;
  }
  // Sinks join each row once, in the merge of the levels (a level's own
  // partitions merge without them); ALiBi's distances are positions in the
  // concatenation, as a window's.
  {
    CascadeCase *c = add("ThreeLevelsCausalSinksWindowNhdCsrP16D64G8BF16", 3,
                         makeSpec(16, 1, 64, DType::BF16), 8, "sm_90a", 7011);
    c->params.causal = true;
    c->params.windowLeft = 120;
    Rng rng(7011);
    c->params.sinks = randomPerHead(rng, 8, -1.0, 5.0);
  }
  {
    CascadeCase *c = add("TwoLevelsCausalAlibiSinksHndBlockTableP8D128G4F16", 2,
                         makeSpec(8, 2, 128, DType::F16, Layout::HND,
                                  Storage::Combined, Table::BlockTable),
                         8, "sm_80", 7012);
    c->params.causal = true;
    c->params.base = Base::Two;
    c->variants.standardAlibi = true;
    Rng rng(7012);
    c->params.sinks = randomPerHead(rng, 8, -1.0, 5.0);
    c->params.alibiSlopes = alibiPaperSlopes(8);
  }
  // Regions see each row as a row of its last-level request at its
  // position in the concatenation of levels (every level's prefill gets
  // that frame): on the tensor-core kernel (with tile skipping) and, f32,
  // on the decode kernel.
  {
    CascadeCase *c = add("ThreeLevelsCausalRegionsNhdCsrP16D64G4F16", 3,
                         makeSpec(16, 2, 64, DType::F16), 8, "sm_90a", 7013);
    c->params.causal = true;
    Rng rng(7013);
    addRequestRegions(rng, c->params, c->variants, 6);
  }
  {
    CascadeCase *c = add("TwoLevelsCausalRegionsWindowAlibiF32", 2,
                         makeSpec(16, 1, 64, DType::F32), 4, "sm_80", 7014);
    c->params.causal = true;
    c->params.windowLeft = 200;
    c->prefixLen = 120;
    Rng rng(7014);
    addRequestRegions(rng, c->params, c->variants, 6);
    c->params.alibiSlopes = randomPerHead(rng, 4, 0.01, 0.05);
  }
  {
    // An empty shared prefix.
    CascadeCase *c = add("EmptyPrefixCausalNhdCsrP16D64G1F16", 2,
                         makeSpec(16, 2, 64, DType::F16), 2, "sm_80", 7005);
    c->params.causal = true;
    c->prefixLen = 0;
  }
  // sm_90a runs the levels on wgmma: each sm_90a case runs on mma.sync too.
  addMmaSyncTwins(
      cases, [](const CascadeCase &c) { return c.spec.dtype != DType::F32; });
  return cases;
}

class GpuCascade : public ::testing::TestWithParam<CascadeCase> {};

TEST_P(GpuCascade, MatchesAttentionOverConcatenatedLevels) {
  runCascadeCase(GetParam());
}

INSTANTIATE_TEST_SUITE_P(
    Matrix, GpuCascade, ::testing::ValuesIn(cascadeCases()),
    [](const ::testing::TestParamInfo<CascadeCase> &info) {
      return info.param.name;
    });

} // namespace
