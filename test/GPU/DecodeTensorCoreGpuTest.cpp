//===- DecodeTensorCoreGpuTest.cpp - kv.decode on the tensor-core kernel --===//
//
// Decodes the CUDA-core decode kernel cannot run (head_dim != head_dim_v,
// head dim 512, GQA groups of 64 at head dim 256; fp8 and int8-group caches
// too) run on the prefill kernel with one query row per request
// (DecodeTensorCore.cpp): on wgmma on sm_90a, each case there also on
// mma.sync. Each case
// runs a small batch with a long request (which the work schedule cuts:
// split kernel + ragged merge) and a larger batch of short ones (direct
// kernel) in the emulator with NaN-poisoned outputs, against the float64
// reference; any emulator report fails it.
//
//===----------------------------------------------------------------------===//
#include "GpuHarness.h"

#include "TestUtil.h"

using namespace kvir::test;
using namespace kvir::test::gpu;

namespace {

struct TensorCoreDecodeCase {
  std::string name;
  CacheSpec spec;
  int64_t qHeads = 8;
  ref::AttentionParams params;
  /// Sinks and slopes come from params; the rest of the variants here.
  VariantSource variants;
  std::string chip = "sm_90a";
  int64_t graphMaxBatch = 0;
  uint64_t seed = 1;
  /// > 0: a random sparse selection of this many entries per request; the
  /// second batch is then 24 requests of up to 700 keys.
  int64_t topk = 0;
};

std::ostream &operator<<(std::ostream &os, const TensorCoreDecodeCase &c) {
  return os << c.name;
}

void runCase(const TensorCoreDecodeCase &c) {
  Rng rng(c.seed);
  SCOPED_TRACE(describe(c.spec) + " q_heads " + std::to_string(c.qHeads) +
               " chip " + c.chip);
  // A long request the schedule cuts among short ones; then more requests
  // than the chip has SMs, none cut.
  std::vector<std::vector<int64_t>> batches{
      {1500, 0, 1, 37, 64, 65},
      c.topk ? randomLengths(rng, 24, 700)
             : randomLengths(rng, c.graphMaxBatch ? c.graphMaxBatch : 140,
                             70)};
  for (const std::vector<int64_t> &kvLens : batches) {
    int64_t batch = kvLens.size();
    SCOPED_TRACE("batch of " + std::to_string(batch));
    PagedCache cache = makeCache(c.spec, kvLens, rng);
    Tensor q =
        randomTensor(rng, c.spec.dtype, {batch, c.qHeads, c.spec.headDim}, 2.0);
    StateBuffers out =
        makeStateBuffers(batch, c.qHeads, c.spec.headDimV, c.spec.dtype);
    KernelSource src;
    std::string kvType;
    std::string kv = emitPagedView(src, cache, "kv", kvType);
    std::string qs = src.addMemref("q", q);
    std::string stateType = stateTypeText(c.qHeads, c.spec.headDimV,
                                          c.spec.dtype, c.params.base);
    ref::AttentionParams params = c.params;
    if (c.topk)
      params.topk = randomTopk(rng, kvLens, c.topk);
    std::string variants = emitVariants(src, params, c.variants);
    src.addLine("%s = kv.decode " + qs + ", " + kv + variants + " " +
                attentionAttrs(c.params, /*withCausal=*/false,
                               c.variants.standardAlibi) +
                " : " + src.typeOf(qs) + ", " + kvType + " -> " + stateType);
    emitStore(src, "%s", stateType, out);
    RunResult result;
    ASSERT_TRUE(runGpu(src, {out.o, out.lse}, c.chip, {"kv.decode"}, result,
                       c.graphMaxBatch));
    EXPECT_TRUE(noReports(result));
    std::vector<std::string> names = result.kernelNames();
    ASSERT_FALSE(names.empty());
    EXPECT_EQ(names.front().rfind("decode_tc_", 0), 0u)
        << result.describeLaunches();
    // sm_90a pads the group's rows to wgmma's 64 (its twins keep mma.sync).
    EXPECT_EQ(result.planConfig("kv.decode").find("mma = wgmma") !=
                  std::string::npos,
              c.chip == "sm_90a")
        << result.planConfig("kv.decode");
    std::optional<int64_t> items = result.scheduledItems(
        "kv.decode", c.topk ? std::vector<int64_t>(batch, c.topk) : kvLens);
    ASSERT_TRUE(items.has_value()) << "no kv.decode work schedule";
    // The long request is cut; the many short ones are not (fixed grids
    // always launch the split kernel and the merge).
    // (Kernel names end in "_split_<hash>"; "split" storage appears
    // earlier.)
    std::string stem = names.front().substr(0, names.front().rfind('_'));
    bool split = llvm::StringRef(stem).ends_with("_split");
    EXPECT_EQ(split, c.graphMaxBatch || *items > batch)
        << result.describeLaunches();
    if (batch < 10 && !c.graphMaxBatch)
      EXPECT_GT(*items, batch);
    EXPECT_EQ(int64_t(result.launches.front().grid.y), c.spec.kvHeads);
    ref::State expected =
        ref::decode(q, ref::PagedSource(cache), asKernelSees(params));
    // int8 groups are dequantized into the KV type before the mma, and
    // RoPE rotates q and K into it: the LSE carries that type's rounding.
    double lseTolerance = c.spec.quant == Quant::Int8Group || c.params.rope
                              ? outputTolerance(c.spec.dtype)
                              : 1e-3;
    EXPECT_TRUE(check(
        compareGpuState(out, expected, c.spec.dtype, lseTolerance)));
  }
}

std::vector<TensorCoreDecodeCase> cases() {
  std::vector<TensorCoreDecodeCase> all;
  auto add = [&](std::string name, CacheSpec spec, int64_t qHeads,
                 std::string chip, uint64_t seed) {
    TensorCoreDecodeCase c;
    c.name = std::move(name);
    c.spec = spec;
    c.qHeads = qHeads;
    c.chip = std::move(chip);
    c.seed = seed;
    all.push_back(c);
    return &all.back();
  };
  {
    CacheSpec spec = makeSpec(16, 2, 128, DType::F16, Layout::NHD,
                              Storage::Split, Table::CSR);
    spec.headDimV = 64;
    add("D128Dv64NhdSplitCsrG4F16", spec, 8, "sm_90a", 9301);
  }
  {
    CacheSpec spec = makeSpec(16, 1, 192, DType::BF16, Layout::HND,
                              Storage::Split, Table::BlockTable);
    spec.headDimV = 128;
    TensorCoreDecodeCase *c =
        add("D192Dv128HndBlockTableG8WindowBF16Sm80", spec, 8, "sm_80", 9302);
    c->params.windowLeft = 300;
    c->params.base = Base::Two;
  }
  {
    TensorCoreDecodeCase *c =
        add("D512NhdCombinedCsrG4SoftCapF16",
            makeSpec(16, 1, 512, DType::F16), 4, "sm_90a", 9303);
    c->params.softCap = 20.0;
  }
  add("Group64D256HndCombinedCsrBF16",
      makeSpec(16, 1, 256, DType::BF16, Layout::HND), 64, "sm_90a", 9304);
  {
    CacheSpec spec = makeSpec(8, 2, 128, DType::F16, Layout::NHD,
                              Storage::Split, Table::TokenTable);
    spec.headDimV = 256;
    TensorCoreDecodeCase *c =
        add("D128Dv256TokenTableFixedGridF16", spec, 4, "sm_90a", 9305);
    c->graphMaxBatch = 8;
  }
  // Quantized KV: the prefill kernel's code ring and per-tile conversion.
  {
    // (fp8 at head dim 512 fits the CUDA-core kernel: 32 lanes of 16 codes.)
    CacheSpec spec = quantized(makeSpec(16, 2, 256, DType::F16, Layout::NHD,
                                        Storage::Split, Table::CSR),
                               Quant::FP8E4M3);
    spec.headDimV = 128;
    TensorCoreDecodeCase *c =
        add("Fp8E4M3D256Dv128NhdSplitCsrG4F16", spec, 8, "sm_90a", 9306);
    c->params.base = Base::Two;
    c->params.softCap = 25.0;
  }
  {
    CacheSpec spec = quantized(makeSpec(16, 1, 192, DType::BF16, Layout::HND,
                                        Storage::Split, Table::BlockTable),
                               Quant::Int8Group, 16);
    spec.headDimV = 128;
    add("Int8G16D192Dv128HndBlockTableG8BF16Sm80", spec, 8, "sm_80", 9307);
  }
  // RoPE (the decode kernel takes none of these shapes): q and each K tile
  // rotated in place in shared memory, keys at their positions up to 1500.
  {
    CacheSpec spec = makeSpec(16, 1, 192, DType::F16, Layout::NHD,
                              Storage::Split, Table::CSR);
    spec.headDimV = 128;
    TensorCoreDecodeCase *c =
        add("RopeRotateHalfRotary64D192Dv128NhdSplitCsrG8F16", spec, 8,
            "sm_90a", 9308);
    c->params.rope = ref::Rope{ref::RopeStyle::RotateHalf, 1e4, 1.0};
    c->params.rope->rotaryDim = 64;
  }
  {
    TensorCoreDecodeCase *c =
        add("RopeLlama31InterleaveD512HndCombinedCsrG4BF16",
            makeSpec(16, 1, 512, DType::BF16, Layout::HND), 4, "sm_80", 9309);
    c->params.rope = llama31Rope(ref::RopeStyle::Interleave, 0);
  }
  // Variants (DeepSeek-style head dims only tensor cores take): sinks and
  // ALiBi, a window written as a mask_mod.
  {
    CacheSpec spec = makeSpec(16, 1, 192, DType::BF16, Layout::NHD,
                              Storage::Split, Table::CSR);
    spec.headDimV = 128;
    TensorCoreDecodeCase *c = add("SinksAlibiMaskModD192Dv128NhdSplitCsrG8BF16",
                                  spec, 8, "sm_90a", 9310);
    Rng rng(9310);
    c->params.sinks = randomPerHead(rng, 8, -1.0, 5.0);
    c->params.alibiSlopes = alibiPaperSlopes(8);
    c->variants.standardAlibi = true;
    c->variants.maskMod =
        R"(^bb0(%b: index, %h: index, %p: index, %j: index):
      %w = arith.constant 400 : index
      %d = arith.subi %p, %j : index
      %in = arith.cmpi sle, %d, %w : index
      kv.yield %in : i1)";
    c->params.maskMod = [](int64_t, int64_t, int64_t p, int64_t j) {
      return j >= p - 400;
    };
  }
  // Top-k sparse selection on head dims only tensor cores take: 512
  // entries per request, cut into chunks for the short batch.
  {
    CacheSpec spec = makeSpec(16, 1, 192, DType::BF16, Layout::NHD,
                              Storage::Split, Table::BlockTable);
    spec.headDimV = 128;
    TensorCoreDecodeCase *c =
        add("Topk512D192Dv128NhdBlockTableG8BF16", spec, 8, "sm_90a", 9311);
    c->topk = 512;
    c->params.windowLeft = 900;
  }
  // sm_90a runs every one of these decodes on wgmma: each runs on mma.sync
  // too.
  addMmaSyncTwins(all, [](const TensorCoreDecodeCase &) { return true; });
  return all;
}

class GpuTensorCoreDecode
    : public ::testing::TestWithParam<TensorCoreDecodeCase> {};

TEST_P(GpuTensorCoreDecode, MatchesReference) { runCase(GetParam()); }

INSTANTIATE_TEST_SUITE_P(
    Matrix, GpuTensorCoreDecode, ::testing::ValuesIn(cases()),
    [](const ::testing::TestParamInfo<TensorCoreDecodeCase> &info) {
      return info.param.name;
    });

} // namespace
