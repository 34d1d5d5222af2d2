//===- VariantsGpuTest.cpp - Attention variants in the GPU kernels
//---------===//
//
// Sinks, ALiBi, score_mod and mask_mod regions compiled into the decode
// kernels (direct, split + merge; DecodeCases.h) and the tensor-core
// prefill kernel (direct, split + merge; PrefillCases.h), run in the
// emulator against the float64 reference: gpt-oss's sliding and full
// layers, ALiBi with the standard and given slopes beside a soft cap, a
// per-head table read by score_mod, soft cap and window written as regions,
// a document mask, prefix-LM, and everything at once with RoPE.
//
//===----------------------------------------------------------------------===//
#include "DecodeCases.h"
#include "PrefillCases.h"

#include <cmath>

using namespace kvir::test;
using namespace kvir::test::gpu;

namespace {

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
    c.runs =
        bothPaths(c.chip, c.spec.kvHeads, c.qHeads / c.spec.kvHeads, smallBatch,
                  smallMaxLen, largeMaxLen, c.params.windowLeft);
    return c;
  };
  // gpt-oss: bf16, head dim 64, GQA 8, sinks on every layer; a 128-key
  // window on every other layer (no request is cut), none on the rest (the
  // long request is split: sinks join in the merge kernel, once).
  {
    GpuDecodeCase c =
        makeCase("GptOssSlidingSinksBF16", makeSpec(16, 2, 64, DType::BF16), 16,
                 DType::BF16, "sm_90a", 1701);
    Rng rng(c.seed);
    c.params.sinks = randomPerHead(rng, 16, -1.0, 5.0);
    c.params.windowLeft = 127;
    cases.push_back(withRuns(c, 4, 300, 40));
  }
  {
    GpuDecodeCase c =
        makeCase("GptOssFullSinksBF16", makeSpec(16, 2, 64, DType::BF16), 16,
                 DType::BF16, "sm_90a", 1702);
    Rng rng(c.seed);
    c.params.sinks = randomPerHead(rng, 16, -1.0, 5.0);
    c.params.base = Base::Two;
    cases.push_back(withRuns(c, 4, 200, 30));
  }
  {
    GpuDecodeCase c =
        makeCase("AlibiStandardF16Base2", makeSpec(16, 2, 128, DType::F16), 8,
                 DType::F16, "sm_86", 1703);
    c.params.alibiSlopes = alibiPaperSlopes(8);
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
    GpuDecodeCase c =
        makeCase("ScoreModPerHeadTableF16", makeSpec(16, 2, 128, DType::F16), 8,
                 DType::F16, "sm_90a", 1705);
    Rng rng(c.seed);
    std::vector<double> temperature = randomPerHead(rng, 8, 0.25, 2.0);
    Tensor table = f32Vector(temperature);
    c.variants.captures = {{"temperature", table}};
    // A soft cap of a tempered score: tanh in the kernel (a polynomial,
    // no libdevice).
    c.variants.scoreMod =
        R"(^bb0(%s: f32, %b: index, %h: index, %p: index, %j: index):
      %t = memref.load $temperature[%h] : memref<8xf32>
      %x = arith.mulf %s, %t : f32
      %c = arith.constant 8.0 : f32
      %y = arith.divf %x, %c : f32
      %th = math.tanh %y : f32
      %r = arith.mulf %th, %c : f32
      kv.yield %r : f32)";
    c.params.scoreMod = [temperature](double s, int64_t, int64_t h, int64_t,
                                      int64_t) {
      return 8.0 * std::tanh(s * double(float(temperature[h])) / 8.0);
    };
    cases.push_back(withRuns(c, 5, 100, 20));
  }
  // A per-request document mask: the query sees its own document's keys.
  {
    GpuDecodeCase c =
        makeCase("DocumentMaskBF16", makeSpec(16, 2, 64, DType::BF16), 8,
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
    c.variants.maskMod = "^bb0(%b: index, %h: index, %p: index, %j: index):\n"
                         "      %dp = memref.load $doc[%b, %p] : " +
                         type +
                         "\n"
                         "      %dj = memref.load $doc[%b, %j] : " +
                         type +
                         "\n"
                         "      %same = arith.cmpi eq, %dp, %dj : i32\n"
                         "      kv.yield %same : i1";
    c.params.maskMod = [docs](int64_t b, int64_t, int64_t p, int64_t j) {
      return docs[b][p] == docs[b][j];
    };
    cases.push_back(c);
  }
  // Top-k sparse selection (DeepSeek-V3.2's indexer on a GQA model): 64
  // entries of requests up to 300 keys long, with RoPE (keys turn by their
  // gathered positions) and an fp8 cache; then 320 entries cut into chunks
  // (the merge adds the sinks), with a window, ALiBi and sinks on the keys
  // they select.
  {
    GpuDecodeCase c = makeCase("TopkRopeFp8E4M3F16",
                               makeSpec(16, 2, 128, DType::F16), 8,
                               DType::F16, "sm_90a", 1708);
    c.spec.quant = Quant::FP8E4M3;
    c.params.rope = ref::Rope();
    c.topk = 64;
    c.runs = {BatchRun{8, 300, {}, false}};
    cases.push_back(c);
  }
  {
    GpuDecodeCase c = makeCase("TopkSplitWindowAlibiSinksBF16",
                               makeSpec(16, 2, 64, DType::BF16), 4,
                               DType::BF16, "sm_86", 1709);
    Rng rng(c.seed);
    c.params.sinks = randomPerHead(rng, 4, -1.0, 3.0);
    c.params.alibiSlopes = randomPerHead(rng, 4, 0.001, 0.05);
    c.params.windowLeft = 500;
    c.topk = 320;
    c.runs = {BatchRun{2, 900, {}, true, 850}};
    cases.push_back(c);
  }
  // Everything at once, with RoPE, a window and a soft cap beside them.
  {
    GpuDecodeCase c =
        makeCase("AllVariantsRopeWindowF16", makeSpec(16, 2, 128, DType::F16),
                 8, DType::F16, "sm_90a", 1707);
    Rng rng(c.seed);
    c.params.sinks = randomPerHead(rng, 8, -1.0, 3.0);
    c.params.alibiSlopes = alibiPaperSlopes(8);
    c.variants.standardAlibi = true;
    c.params.softCap = 20.0;
    c.params.windowLeft = 300;
    c.params.rope = ref::Rope();
    addKeyBiasScoreMod(c.params, c.variants);
    addEveryThirdKeyHidden(c.params, c.variants);
    cases.push_back(withRuns(c, 4, 150, 20));
  }
  return cases;
}

/// A table of per-(request, token) document ids: runs of random lengths.
Tensor documentIds(Rng &rng, int64_t batch, int64_t len, double split,
                   std::vector<std::vector<int32_t>> &docs) {
  Tensor doc(DType::I32, {batch, len});
  docs.assign(batch, {});
  for (int64_t b = 0; b < batch; ++b) {
    int32_t id = 0;
    for (int64_t t = 0; t < len; ++t) {
      if (t > 0 && rng.coin(split))
        ++id;
      docs[b].push_back(id);
      doc.set({b, t}, id);
    }
  }
  return doc;
}

std::vector<GpuPrefillCase> prefillVariantCases() {
  std::vector<GpuPrefillCase> cases;
  // Causal batches (kv_len >= qo_len) with rows that see no key, one long
  // request, and a lone request few enough tiles to be split.
  PrefillBatch causal{{1, 7, 0, 64, 65, 300, 17},
                      {1, 17, 0, 1000, 1000, 1000, 17}};
  PrefillBatch lone{{7}, {1000}};
  // gpt-oss: sinks with a 128-key window; split requests take the sinks
  // in the merge.
  {
    GpuPrefillCase c = makePrefillCase("GptOssSinksWindowBF16",
                                       makeSpec(16, 2, 64, DType::BF16), 16,
                                       DType::BF16, "sm_90a", 1801);
    Rng rng(c.seed);
    c.params.causal = true;
    c.params.windowLeft = 127;
    c.params.sinks = randomPerHead(rng, 16, -1.0, 5.0);
    c.batches = {causal, lone};
    cases.push_back(c);
  }
  {
    GpuPrefillCase c =
        makePrefillCase("AlibiStandardF16", makeSpec(16, 2, 128, DType::F16), 8,
                        DType::F16, "sm_80", 1802);
    c.params.causal = true;
    c.params.alibiSlopes = alibiPaperSlopes(8);
    c.variants.standardAlibi = true;
    c.params.base = Base::Two;
    c.batches = {causal, lone};
    cases.push_back(c);
  }
  // Gemma: soft cap and sliding window written as regions.
  {
    GpuPrefillCase c = makePrefillCase("SoftCapWindowAsRegionsBF16",
                                       makeSpec(16, 2, 128, DType::BF16), 4,
                                       DType::BF16, "sm_90a", 1803);
    c.params.causal = true;
    addSoftCapWindowRegions(c.params, c.variants, 5.0, 95);
    c.batches = {causal};
    cases.push_back(c);
  }
  // FlexAttention's document mask with a score_mod reading a per-head
  // table.
  {
    GpuPrefillCase c = makePrefillCase("DocumentMaskScoreTableF16",
                                       makeSpec(16, 2, 64, DType::F16), 8,
                                       DType::F16, "sm_86", 1804);
    Rng rng(c.seed);
    c.params.causal = true;
    c.batches = {causal, lone};
    std::vector<std::vector<int32_t>> docs;
    Tensor doc = documentIds(rng, 7, 1000, 0.01, docs);
    std::vector<double> bias = randomPerHead(rng, 8, -0.5, 0.5);
    Tensor table = f32Vector(bias);
    c.variants.captures = {{"doc", doc}, {"bias", table}};
    c.variants.maskMod =
        R"(^bb0(%b: index, %h: index, %p: index, %j: index):
      %dp = memref.load $doc[%b, %p] : memref<7x1000xi32>
      %dj = memref.load $doc[%b, %j] : memref<7x1000xi32>
      %same = arith.cmpi eq, %dp, %dj : i32
      kv.yield %same : i1)";
    c.variants.scoreMod =
        R"(^bb0(%s: f32, %b: index, %h: index, %p: index, %j: index):
      %x = memref.load $bias[%h] : memref<8xf32>
      %r = arith.addf %s, %x : f32
      kv.yield %r : f32)";
    c.params.maskMod = [docs](int64_t b, int64_t, int64_t p, int64_t j) {
      return docs[b][p] == docs[b][j];
    };
    c.params.scoreMod = [bias](double s, int64_t, int64_t h, int64_t, int64_t) {
      return s + double(float(bias[h]));
    };
    cases.push_back(c);
  }
  // A document mask that also shows every row the first 64 keys (sink
  // tokens), over a 4-stage ring of 16-key tiles: the marks of tiles
  // 0 ... 2 precede the loop, each iteration marks tile i + 3 (the live
  // first tiles are marked while earlier marks are read), and dead tiles in
  // flight are neither loaded nor multiplied.
  {
    GpuPrefillCase c = makePrefillCase("SinkTokensDocumentMaskFourStagesBF16",
                                       makeSpec(16, 2, 64, DType::BF16), 8,
                                       DType::BF16, "sm_90a", 1808);
    Rng rng(c.seed);
    c.params.causal = true;
    c.batches = {PrefillBatch{{1, 7, 0, 64, 40}, {1, 17, 0, 700, 1000}}, lone};
    std::vector<std::vector<int32_t>> docs;
    Tensor doc = documentIds(rng, 7, 1000, 0.02, docs);
    c.variants.captures = {{"doc", doc}};
    c.variants.maskMod =
        R"(^bb0(%b: index, %h: index, %p: index, %j: index):
      %dp = memref.load $doc[%b, %p] : memref<7x1000xi32>
      %dj = memref.load $doc[%b, %j] : memref<7x1000xi32>
      %same = arith.cmpi eq, %dp, %dj : i32
      %c64 = arith.constant 64 : index
      %sink = arith.cmpi ult, %j, %c64 : index
      %v = arith.ori %same, %sink : i1
      kv.yield %v : i1)";
    c.params.maskMod = [docs](int64_t b, int64_t, int64_t p, int64_t j) {
      return docs[b][p] == docs[b][j] || j < 64;
    };
    c.config = "#kvgpu.prefill<q_tile = 64, kv_tile = 16, warps = 4, "
               "stages = 4, q_in_registers = true, max_partitions = 2>";
    cases.push_back(c);
  }
  // Prefix-LM: bidirectional over each request's prefix, causal after.
  {
    GpuPrefillCase c =
        makePrefillCase("PrefixLmBF16", makeSpec(8, 1, 64, DType::BF16), 4,
                        DType::BF16, "sm_80", 1805);
    Rng rng(c.seed);
    c.batches = {causal};
    std::vector<int64_t> prefixes;
    Tensor prefix(DType::I32, {7});
    for (int64_t b = 0; b < 7; ++b) {
      prefixes.push_back(rng.integer(0, 900));
      prefix.set({b}, prefixes.back());
    }
    c.variants.captures = {{"prefix", prefix}};
    c.variants.maskMod =
        R"(^bb0(%b: index, %h: index, %p: index, %j: index):
      %n = memref.load $prefix[%b] : memref<7xi32>
      %ni = arith.index_cast %n : i32 to index
      %past = arith.cmpi sle, %j, %p : index
      %in = arith.cmpi slt, %j, %ni : index
      %v = arith.ori %past, %in : i1
      kv.yield %v : i1)";
    c.params.maskMod = [prefixes](int64_t b, int64_t, int64_t p, int64_t j) {
      return j <= p || j < prefixes[b];
    };
    cases.push_back(c);
  }
  // f32 prefills run their query rows on the decode kernel.
  {
    GpuPrefillCase c = makePrefillCase("F32QueryRowsSinksAlibiMaskMod",
                                       makeSpec(16, 2, 64, DType::F32), 4,
                                       DType::F32, "sm_86", 1807);
    Rng rng(c.seed);
    c.params.causal = true;
    c.params.sinks = randomPerHead(rng, 4, -1.0, 4.0);
    c.params.alibiSlopes = alibiPaperSlopes(4);
    c.variants.standardAlibi = true;
    c.variants.maskMod =
        R"(^bb0(%b: index, %h: index, %p: index, %j: index):
      %c4 = arith.constant 4 : index
      %r = arith.remui %j, %c4 : index
      %c1 = arith.constant 1 : index
      %keep = arith.cmpi ne, %r, %c1 : index
      kv.yield %keep : i1)";
    c.params.maskMod = [](int64_t, int64_t, int64_t, int64_t j) {
      return j % 4 != 1;
    };
    c.batches = {PrefillBatch{{1, 7, 0, 33}, {1, 17, 0, 300}}};
    cases.push_back(c);
  }
  // Everything at once: RoPE, a window, a soft cap, a packed custom mask.
  {
    GpuPrefillCase c = makePrefillCase("AllVariantsRopeMaskF16",
                                       makeSpec(16, 2, 64, DType::F16), 8,
                                       DType::F16, "sm_90a", 1806);
    Rng rng(c.seed);
    c.params.causal = true;
    c.params.windowLeft = 200;
    c.params.softCap = 20.0;
    c.params.rope = ref::Rope();
    c.mask = MaskKind::Packed;
    c.params.sinks = randomPerHead(rng, 8, -1.0, 3.0);
    c.params.alibiSlopes = alibiPaperSlopes(8);
    c.variants.standardAlibi = true;
    addKeyBiasScoreMod(c.params, c.variants);
    addEveryThirdKeyHidden(c.params, c.variants);
    c.batches = {causal, lone};
    cases.push_back(c);
  }
  return cases;
}

class GpuPrefillVariants : public ::testing::TestWithParam<GpuPrefillCase> {};

TEST_P(GpuPrefillVariants, MatchesReference) { runGpuPrefillCase(GetParam()); }

INSTANTIATE_TEST_SUITE_P(
    Prefill, GpuPrefillVariants, ::testing::ValuesIn(prefillVariantCases()),
    [](const ::testing::TestParamInfo<GpuPrefillCase> &info) {
      return info.param.name;
    });

class GpuDecodeVariants : public ::testing::TestWithParam<GpuDecodeCase> {};

TEST_P(GpuDecodeVariants, MatchesReference) { runGpuDecodeCase(GetParam()); }

INSTANTIATE_TEST_SUITE_P(
    Decode, GpuDecodeVariants, ::testing::ValuesIn(variantCases()),
    [](const ::testing::TestParamInfo<GpuDecodeCase> &info) {
      return info.param.name;
    });

} // namespace

namespace {

/// Tensor-core MACs and the attention kernel's global loads of one call
/// of a prefill of `len` rows over `len` keys (f16, head dim 64, GQA 2)
/// with `maskMod` (none if empty), checked against the reference.
std::pair<uint64_t, uint64_t>
runDocumentPrefill(int64_t len, const std::string &maskMod,
                   const ref::AttentionParams &params) {
  CacheSpec spec = makeSpec(16, 1, 64, DType::F16);
  Rng rng(1901);
  PagedCache cache = makeCache(spec, {len}, rng);
  std::vector<int32_t> qoIndptr{0, int32_t(len)};
  Tensor q = randomTensor(rng, spec.dtype, {len, 2, 64}, 2.0);
  StateBuffers out = makeStateBuffers(len, 2, 64, spec.dtype);
  KernelSource src;
  std::string kvType;
  std::string kv = emitPagedView(src, cache, "kv", kvType);
  std::string qs = src.addMemref("q", q);
  std::string qo = src.addMemref("qo_indptr", makeI32(qoIndptr));
  std::string stateType = stateTypeText(2, 64, spec.dtype, Base::E);
  std::string region =
      maskMod.empty() ? std::string() : " mask_mod {\n" + maskMod + "\n}";
  src.addLine("%s = kv.prefill " + qs + ", " + qo + ", " + kv + region + " : " +
              src.typeOf(qs) + ", " + src.typeOf(qo) + ", " + kvType + " -> " +
              stateType);
  emitStore(src, "%s", stateType, out);
  RunResult result;
  EXPECT_TRUE(runGpu(src, {out.o, out.lse}, "sm_90a", {"kv.prefill"}, result));
  EXPECT_TRUE(noReports(result));
  ref::State expected = ref::attention(q, qoIndptr, ref::PagedSource(cache),
                                       asKernelSees(params));
  EXPECT_TRUE(check(compareGpuState(out, expected, spec.dtype)));
  // The attention kernel's loads (a split's merge reads partial states,
  // not K/V).
  uint64_t mma = 0, bytes = 0;
  for (const auto &l : result.launches) {
    mma += l.tensorCoreMacs;
    if (l.kernel.rfind("prefill_", 0) == 0)
      bytes += l.globalBytesLoaded;
  }
  return {mma, bytes};
}

// K/V tiles a mask_mod hides from every row of a query tile are neither
// loaded nor multiplied: 8 equal documents (1/8 of the pairs visible) take
// about 1/8 of the dense mma and K/V loads (tile edges add some).
TEST(GpuPrefillVariantsTiles, DocumentMaskSkipsHiddenTiles) {
  int64_t len = 1024, docs = 8;
  auto [denseMma, denseBytes] = runDocumentPrefill(len, "", {});
  ref::AttentionParams params;
  params.maskMod = [&](int64_t, int64_t, int64_t p, int64_t j) {
    return p * docs / len == j * docs / len;
  };
  std::string mask = "^bb0(%b: index, %h: index, %p: index, %j: index):\n"
                     "  %n = arith.constant 8 : index\n"
                     "  %l = arith.constant 1024 : index\n"
                     "  %pn = arith.muli %p, %n : index\n"
                     "  %jn = arith.muli %j, %n : index\n"
                     "  %dp = arith.divui %pn, %l : index\n"
                     "  %dj = arith.divui %jn, %l : index\n"
                     "  %same = arith.cmpi eq, %dp, %dj : index\n"
                     "  kv.yield %same : i1";
  auto [maskedMma, maskedBytes] = runDocumentPrefill(len, mask, params);
  EXPECT_LT(double(maskedMma), 0.25 * double(denseMma))
      << maskedMma << " of " << denseMma;
  EXPECT_LT(double(maskedBytes), 0.35 * double(denseBytes))
      << maskedBytes << " of " << denseBytes;
}

/// Global bytes loaded by a decode (f16, head dim 128, GQA 4, 2 KV heads)
/// of 3 requests of about 2000 keys with `maskMod` (or none), checked
/// against the reference.
uint64_t runMaskedDecode(const std::string &maskMod,
                         const ref::AttentionParams &params) {
  CacheSpec spec = makeSpec(16, 2, 128, DType::F16);
  Rng rng(1905);
  PagedCache cache = makeCache(spec, {2000, 1987, 2048}, rng);
  Tensor q = randomTensor(rng, spec.dtype, {3, 8, 128}, 2.0);
  StateBuffers out = makeStateBuffers(3, 8, 128, spec.dtype);
  KernelSource src;
  std::string kvType;
  std::string kv = emitPagedView(src, cache, "kv", kvType);
  std::string qs = src.addMemref("q", q);
  std::string stateType = stateTypeText(8, 128, spec.dtype, Base::E);
  std::string region =
      maskMod.empty() ? std::string() : " mask_mod {\n" + maskMod + "\n}";
  // One partition per request: the direct kernel reads every tile itself.
  src.addLine("%s = kv.decode " + qs + ", " + kv + region +
              " {kvgpu.config = #kvgpu.decode<vector = 8, threads_x = 16, "
              "threads_z = 2, tile_tokens = 16, stages = 3, max_partitions = "
              "1>} : " +
              src.typeOf(qs) + ", " + kvType + " -> " + stateType);
  emitStore(src, "%s", stateType, out);
  RunResult result;
  EXPECT_TRUE(runGpu(src, {out.o, out.lse}, "sm_90a", {"kv.decode"}, result));
  EXPECT_TRUE(noReports(result));
  ref::State expected =
      ref::decode(q, ref::PagedSource(cache), asKernelSees(params));
  EXPECT_TRUE(check(compareGpuState(out, expected, spec.dtype)));
  uint64_t bytes = 0;
  for (const auto &l : result.launches)
    bytes += l.globalBytesLoaded;
  return bytes;
}

// The decode kernel skips tiles too: a mask_mod keeping the query's own
// block of 256 keys leaves about 1/8 of each request's tiles live.
TEST(GpuDecodeVariantsTiles, BlockMaskSkipsHiddenTiles) {
  uint64_t dense = runMaskedDecode("", {});
  ref::AttentionParams params;
  params.maskMod = [](int64_t, int64_t, int64_t p, int64_t j) {
    return p / 256 == j / 256;
  };
  std::string mask = "^bb0(%b: index, %h: index, %p: index, %j: index):\n"
                     "  %n = arith.constant 256 : index\n"
                     "  %bp = arith.divui %p, %n : index\n"
                     "  %bj = arith.divui %j, %n : index\n"
                     "  %same = arith.cmpi eq, %bp, %bj : index\n"
                     "  kv.yield %same : i1";
  uint64_t masked = runMaskedDecode(mask, params);
  EXPECT_LT(double(masked), 0.2 * double(dense)) << masked << " of " << dense;
}

} // namespace

namespace {

/// The output and LSE of a causal prefill (bf16, head dim 128, GQA 2) with
/// `clauses` (regions) and `attrs` over the same random inputs, and the
/// names of the kernels it launched.
std::pair<StateBuffers, std::vector<std::string>>
runGemmaPrefill(const std::string &clauses, const std::string &attrs) {
  CacheSpec spec = makeSpec(16, 2, 128, DType::BF16);
  Rng rng(1902);
  std::vector<int64_t> qo{1, 7, 0, 64, 130}, kv{1, 17, 0, 300, 700};
  PagedCache cache = makeCache(spec, kv, rng);
  std::vector<int32_t> qoIndptr = indptrOf(qo);
  int64_t rows = qoIndptr.back();
  Tensor q = randomTensor(rng, spec.dtype, {rows, 4, 128}, 2.0);
  StateBuffers out = makeStateBuffers(rows, 4, 128, spec.dtype);
  KernelSource src;
  std::string kvType;
  std::string kvName = emitPagedView(src, cache, "kv", kvType);
  std::string qs = src.addMemref("q", q);
  std::string qoName = src.addMemref("qo_indptr", makeI32(qoIndptr));
  std::string stateType = stateTypeText(4, 128, spec.dtype, Base::E);
  src.addLine("%s = kv.prefill " + qs + ", " + qoName + ", " + kvName +
              clauses + " " + attrs + " : " + src.typeOf(qs) + ", " +
              src.typeOf(qoName) + ", " + kvType + " -> " + stateType);
  emitStore(src, "%s", stateType, out);
  RunResult result;
  EXPECT_TRUE(runGpu(src, {out.o, out.lse}, "sm_90a", {"kv.prefill"}, result));
  EXPECT_TRUE(noReports(result));
  return {out, result.kernelNames()};
}

// Gemma's soft cap and sliding window written as regions run the built-ins'
// kernels (kv-canonicalize-variants): the same kernels, bit for bit the
// same results.
TEST(GpuVariantsCanonical, RegionsEqualBuiltinsBitForBit) {
  std::string regions = R"( score_mod {
^bb0(%s: f32, %b: index, %h: index, %p: index, %j: index):
  %c = arith.constant 50.0 : f32
  %x = arith.divf %s, %c : f32
  %t = math.tanh %x : f32
  %r = arith.mulf %c, %t : f32
  kv.yield %r : f32
} mask_mod {
^bb0(%b: index, %h: index, %p: index, %j: index):
  %w = arith.constant 99 : index
  %d = arith.subi %p, %j : index
  %in = arith.cmpi sle, %d, %w : index
  kv.yield %in : i1
})";
  auto [fromRegions, regionKernels] = runGemmaPrefill(regions, "{causal}");
  auto [fromBuiltins, builtinKernels] = runGemmaPrefill(
      "", "{causal, logits_soft_cap = 50.0 : f32, window_left = 99 : i64}");
  EXPECT_EQ(regionKernels, builtinKernels);
  int64_t differing = 0;
  const auto &regionOut = fromRegions, &builtinOut = fromBuiltins;
  regionOut.o.forEachIndex([&](const Index &i) {
    differing += regionOut.o.getBits(i) != builtinOut.o.getBits(i);
  });
  regionOut.lse.forEachIndex([&](const Index &i) {
    differing += regionOut.lse.getBits(i) != builtinOut.lse.getBits(i);
  });
  EXPECT_EQ(differing, 0);
}

} // namespace
