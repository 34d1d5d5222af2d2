//===- MlaGpuTest.cpp - kv.mla_decode as tensor-core kernels --------------===//
//
// MLA (ckv 512 + kpe 64) through convert-kv-to-gpu's MLA kernel in the
// emulator against the float64 reference (test/Unit's ref::mlaDecode):
// 16, 32, 64 and 128 heads, kv_len 0, 1, 63, 64, 65 and 4096 in one batch, one
// query row per request or 1, 2 and 4 causal rows through rows(qo_indptr),
// split-KV and a single partition (a config with max_partitions = 1),
// separate ckv / kpe pools and slices of one 576-wide pool, f16 and bf16,
// page size 64 (FlashMLA's) and others, sm_80 and sm_90a. Outputs are
// NaN-poisoned before each run; any emulator report fails a case.
//
//===----------------------------------------------------------------------===//
#include "GpuHarness.h"

#include "TestUtil.h"

using namespace kvir::test;
using namespace kvir::test::gpu;

namespace {

constexpr int64_t kCkv = 512, kKpe = 64;

struct MlaCase {
  std::string name;
  int64_t heads = 16;
  DType dtype = DType::F16;
  Table table = Table::CSR;
  int64_t pageSize = 64;
  bool sharedPool = false;
  std::vector<int64_t> kvLens;
  /// Query rows per request (1, 2, 4) through rows(qo_indptr), causal;
  /// empty: one row per request without rows().
  std::vector<int64_t> qoLens;
  /// A #kvgpu.prefill config for the op (empty: kv-tile's).
  std::string config;
  std::optional<double> smScale;
  Base base = Base::E;
  std::string chip = "sm_90a";
  /// Whether the launch must be split-KV (split + merge kernels).
  bool expectSplit = true;
  /// CUDA-graph grids fixed for this many requests (0: sized per call).
  int64_t graphMaxBatch = 0;
  uint64_t seed = 1;
  /// Variants: sinks and slopes in `variantParams` (with the reference's
  /// score_mod / mask_mod), regions and captures in `variants`.
  ref::AttentionParams variantParams;
  VariantSource variants;
  /// > 0: a random sparse selection of this many entries per query row
  /// (randomTopk); the work schedule then sees `topk` entries per request.
  int64_t topk = 0;
};

std::ostream &operator<<(std::ostream &os, const MlaCase &c) {
  return os << c.name;
}

/// Whether sm_90a runs `c` on wgmma: where its query tiles have 64 rows
/// (rows(), or 64 heads and more), fewer rows would be mostly padding.
bool onWgmma(const MlaCase &c) {
  if (!c.qoLens.empty() && !c.topk)
    return true;
  int64_t tilesPerRow = (c.heads + 63) / 64;
  int64_t rows = ((c.heads + tilesPerRow - 1) / tilesPerRow + 15) / 16 * 16;
  return rows >= 64;
}

void runMlaCase(const MlaCase &c) {
  CacheSpec spec = makeSpec(c.pageSize, 1, kCkv, c.dtype, Layout::NHD,
                            Storage::MLA, c.table);
  spec.peDim = kKpe;
  SCOPED_TRACE(describe(spec) + " heads " + std::to_string(c.heads) +
               " chip " + c.chip);
  Rng rng(c.seed);
  bool multiRow = !c.qoLens.empty();
  std::vector<int64_t> qoLens =
      multiRow ? c.qoLens : std::vector<int64_t>(c.kvLens.size(), 1);
  std::vector<int32_t> qoIndptr = indptrOf(qoLens);
  int64_t rows = qoIndptr.back();
  CacheOptions options;
  options.mlaSharedPool = c.sharedPool;
  PagedCache cache = makeCache(spec, c.kvLens, rng, options);
  Tensor qNope = randomTensor(rng, c.dtype, {rows, c.heads, kCkv}, 0.5);
  Tensor qPe = randomTensor(rng, c.dtype, {rows, c.heads, kKpe}, 2.0);
  StateBuffers out = makeStateBuffers(rows, c.heads, kCkv, c.dtype);

  KernelSource src;
  std::string kvType;
  std::string kv = emitPagedView(src, cache, "kv", kvType,
                                /*staticSliceStrides=*/true);
  std::string qn = src.addMemref("q_nope", qNope);
  std::string qp = src.addMemref("q_pe", qPe);
  std::string stateType = stateTypeText(c.heads, kCkv, c.dtype, c.base);
  std::string rowsClause;
  if (multiRow) {
    std::string qo = src.addMemref("qo_indptr", makeI32(qoIndptr));
    rowsClause = " rows(" + qo + " : " + src.typeOf(qo) + ")";
  }
  std::vector<std::string> attrs;
  if (multiRow)
    attrs.push_back("causal");
  if (c.smScale)
    attrs.push_back("sm_scale = " + std::to_string(*c.smScale) + " : f32");
  if (!c.config.empty())
    attrs.push_back("kvgpu.config = " + c.config);
  std::string attrText;
  for (const std::string &a : attrs)
    attrText += (attrText.empty() ? "{" : ", ") + a;
  if (!attrText.empty())
    attrText += "}";
  if (c.variants.standardAlibi)
    attrText = attrText.empty()
                   ? "{alibi}"
                   : attrText.substr(0, attrText.size() - 1) + ", alibi}";
  ref::AttentionParams variantParams = c.variantParams;
  if (c.topk) {
    std::vector<int64_t> rowKvLens;
    for (size_t b = 0; b < c.kvLens.size(); ++b)
      rowKvLens.insert(rowKvLens.end(), qoLens[b], c.kvLens[b]);
    variantParams.topk = randomTopk(rng, rowKvLens, c.topk);
  }
  rowsClause += emitVariants(src, variantParams, c.variants);
  src.addLine("%s = kv.mla_decode " + qn + ", " + qp + ", " + kv + rowsClause +
              " " + attrText + " : " + src.typeOf(qn) + ", " + src.typeOf(qp) +
              ", " + kvType + " -> " + stateType);
  emitStore(src, "%s", stateType, out);

  RunResult result;
  ASSERT_TRUE(runGpu(src, {out.o, out.lse}, c.chip, {"kv.mla_decode"}, result,
                     c.graphMaxBatch));
  EXPECT_TRUE(noReports(result));
  if (c.config.empty() && c.chip == "sm_90a")
    EXPECT_EQ(result.planConfig("kv.mla_decode").find("mma = wgmma") !=
                  std::string::npos,
              onWgmma(c))
        << result.planConfig("kv.mla_decode");
  std::vector<std::string> names = result.kernelNames();
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names.front().rfind("mla_", 0), 0u) << result.describeLaunches();
  bool split = names.front().find("_split_") != std::string::npos;
  EXPECT_EQ(split, c.expectSplit) << result.describeLaunches();
  if (multiRow) {
    // Query rows: the work schedule for these rows and lengths chose the
    // split (a config of one partition has none); fixed grids always
    // split, over the most items the shapes allow.
    std::map<std::string, int64_t> sizes{
        {"nnz", qoIndptr.back()}, {"qo_indptr_len", int64_t(qoIndptr.size())}};
    std::optional<RunResult::PrefillScheduleCounts> schedule =
        result.scheduledPrefill(
            "kv.mla_decode", qoIndptr,
            c.topk ? std::vector<int64_t>(c.kvLens.size(), c.topk) : c.kvLens,
            sizes);
    if (schedule && c.graphMaxBatch) {
      EXPECT_TRUE(split) << result.describeLaunches();
      EXPECT_EQ(std::optional<int64_t>(result.launches.front().grid.x),
                result.planSize("kv.mla_decode", "max_work", sizes));
      EXPECT_LE(std::optional<int64_t>(schedule->partialRows),
                result.planSize("kv.mla_decode", "max_partial_rows", sizes));
    } else if (schedule) {
      EXPECT_EQ(split, schedule->cut()) << result.describeLaunches();
    }
  }
  if (split && !multiRow) {
    // One row per request: the work schedule for these lengths chose the
    // split, and the split kernel ran one block per item (per query tile).
    std::optional<int64_t> items = result.scheduledItems(
        "kv.mla_decode",
        c.topk ? std::vector<int64_t>(c.kvLens.size(), c.topk) : c.kvLens);
    ASSERT_TRUE(items.has_value()) << "no kv.mla_decode work schedule";
    if (!c.graphMaxBatch)
      EXPECT_GT(*items, int64_t(c.kvLens.size()));
    EXPECT_GE(int64_t(result.launches.front().grid.x), *items);
    EXPECT_EQ(names.back().rfind("merge_rows", 0), 0u)
        << result.describeLaunches();
  }

  ref::AttentionParams params;
  params.smScale = c.smScale;
  ref::State expected =
      ref::mlaDecode(qNope, qPe, cache, asKernelSees(params).smScale, c.base,
                     multiRow ? qoIndptr : std::vector<int32_t>{}, multiRow,
                     asKernelSees(variantParams));
  EXPECT_TRUE(check(compareGpuState(out, expected, c.dtype)));
}

/// The issue's lengths: empty, one key, a page +- 1, and a long request.
const std::vector<int64_t> kEdgeLens = {0, 1, 63, 64, 65, 4096};

std::vector<MlaCase> mlaCases() {
  std::vector<MlaCase> cases;
  auto add = [&](std::string name, int64_t heads, DType dtype, Table table,
                 uint64_t seed) {
    MlaCase c;
    c.name = std::move(name);
    c.heads = heads;
    c.dtype = dtype;
    c.table = table;
    c.seed = seed;
    cases.push_back(c);
    return &cases.back();
  };
  add("H16EdgeLensSplitCsrP64F16", 16, DType::F16, Table::CSR, 9001)->kvLens =
      kEdgeLens;
  {
    MlaCase *c = add("H16EdgeLensSharedPoolBlockTableP64BF16Sm80", 16,
                     DType::BF16, Table::BlockTable, 9002);
    c->kvLens = kEdgeLens;
    c->sharedPool = true;
    c->chip = "sm_80";
  }
  {
    // One partition: the direct kernel writes the final state.
    MlaCase *c = add("H16UnsplitCsrP64BF16Base2", 16, DType::BF16, Table::CSR,
                     9003);
    c->kvLens = {0, 1, 63, 64, 65, 700};
    c->config = "#kvgpu.prefill<q_tile = 16, kv_tile = 32, warps = 4, "
                "stages = 2, q_in_registers = false, max_partitions = 1, "
                "value_warps = 4>";
    c->expectSplit = false;
    c->base = Base::Two;
  }
  {
    // 32 heads: a 32-row tile, 8 warps of 128 value columns.
    MlaCase *c = add("H32TokenTableP64BF16Sm80", 32, DType::BF16,
                     Table::TokenTable, 9011);
    c->kvLens = {65, 1, 300, 0};
    c->chip = "sm_80";
  }
  {
    MlaCase *c = add("H128SharedPoolCsrP64F16", 128, DType::F16, Table::CSR,
                     9004);
    c->kvLens = {0, 1, 63, 64, 65, 300};
    c->sharedPool = true;
  }
  {
    MlaCase *c = add("H128UnsplitTokenTableP1BF16", 128, DType::BF16,
                     Table::TokenTable, 9005);
    c->kvLens = {1, 65, 200};
    c->pageSize = 1;
    c->config = "#kvgpu.prefill<q_tile = 64, kv_tile = 32, warps = 16, "
                "stages = 2, q_in_registers = false, max_partitions = 1, "
                "value_warps = 4>";
    c->expectSplit = false;
    c->smScale = 0.05;
  }
  {
    // A skewed batch: the work schedule cuts the long request into chunks
    // and leaves the short ones whole (written final by the split kernel).
    MlaCase *c = add("H16SkewedScheduleBlockTableP64F16", 16, DType::F16,
                     Table::BlockTable, 9009);
    c->kvLens = {5000, 3, 70, 1, 130, 0, 64, 9};
  }
  {
    // CUDA-graph grids for up to 8 requests, 5 present.
    MlaCase *c = add("H64FixedGridCsrP64BF16", 64, DType::BF16, Table::CSR,
                     9010);
    c->kvLens = {700, 0, 65, 1, 2000};
    c->graphMaxBatch = 8;
  }
  {
    // Query rows under CUDA-graph grids: the prefill schedule's fixed
    // form (split kernel over the shapes' most items, the merge always).
    MlaCase *c = add("H16CausalRowsFixedGridCsrP64F16", 16, DType::F16,
                     Table::CSR, 9011);
    c->kvLens = {3000, 2, 0, 65};
    c->qoLens = {2, 1, 1, 4};
    c->graphMaxBatch = 4;
  }
  {
    // Speculative decoding: 1, 2 and 4 causal rows per request; the last
    // two requests have more rows than keys (their first rows see none).
    MlaCase *c = add("H16CausalRowsSplitCsrP64F16", 16, DType::F16,
                     Table::CSR, 9006);
    c->kvLens = {1, 2, 63, 64, 65, 4096, 0, 1};
    c->qoLens = {1, 2, 1, 4, 2, 4, 3, 4};
  }
  {
    MlaCase *c = add("H128CausalRowsSharedPoolBlockTableP16BF16", 128,
                     DType::BF16, Table::BlockTable, 9007);
    // The 1300-key request's tile is cut into chunks.
    c->kvLens = {2, 64, 1300, 1};
    c->qoLens = {2, 4, 1, 4};
    c->pageSize = 16;
    c->sharedPool = true;
    c->chip = "sm_80";
  }
  {
    MlaCase *c = add("H16CausalRowsUnsplitCsrP32F16", 16, DType::F16,
                     Table::CSR, 9008);
    c->kvLens = {4, 63, 65, 300, 2};
    c->qoLens = {4, 1, 2, 4, 4};
    c->pageSize = 32;
    c->config = "#kvgpu.prefill<q_tile = 64, kv_tile = 16, warps = 8, "
                "stages = 2, q_in_registers = false, max_partitions = 1, "
                "value_warps = 2>";
    c->expectSplit = false;
  }
  {
    // Variants: sinks with the standard ALiBi slopes, split-KV (sinks join
    // in the merge for cut requests, in the split kernel for whole ones).
    MlaCase *c =
        add("H16SinksAlibiSplitCsrP64BF16", 16, DType::BF16, Table::CSR, 9012);
    c->kvLens = kEdgeLens;
    Rng rng(9012);
    c->variantParams.sinks = randomPerHead(rng, 16, -1.0, 5.0);
    c->variantParams.alibiSlopes = alibiPaperSlopes(16);
    c->variants.standardAlibi = true;
  }
  {
    // Regions on causal rows: a mask_mod dropping every fifth key and a
    // score_mod reading a per-head table.
    MlaCase *c =
        add("H16CausalRowsRegionsCsrP64F16", 16, DType::F16, Table::CSR, 9013);
    c->kvLens = {1, 2, 63, 64, 65, 4096};
    c->qoLens = {1, 2, 1, 4, 2, 4};
    Rng rng(9013);
    std::vector<double> bias = randomPerHead(rng, 16, -1.0, 1.0);
    Tensor table = f32Vector(bias);
    c->variants.captures = {{"bias", table}};
    c->variants.scoreMod =
        R"(^bb0(%s: f32, %b: index, %h: index, %p: index, %j: index):
      %x = memref.load $bias[%h] : memref<16xf32>
      %r = arith.addf %s, %x : f32
      kv.yield %r : f32)";
    c->variants.maskMod =
        R"(^bb0(%b: index, %h: index, %p: index, %j: index):
      %c5 = arith.constant 5 : index
      %r = arith.remui %j, %c5 : index
      %c0 = arith.constant 0 : index
      %keep = arith.cmpi ne, %r, %c0 : index
      kv.yield %keep : i1)";
    c->variantParams.scoreMod = [bias](double x, int64_t, int64_t h, int64_t,
                                       int64_t) {
      return x + double(float(bias[h]));
    };
    c->variantParams.maskMod = [](int64_t, int64_t, int64_t, int64_t j) {
      return j % 5 != 0;
    };
  }
  {
    // DeepSeek-V3.2's sparse decode: 512 selected entries per request
    // (-1 padding anywhere), split over the entries, with sinks and ALiBi
    // at the gathered keys' positions.
    MlaCase *c =
        add("H32Topk512SplitSinksAlibiCsrP64BF16", 32, DType::BF16, Table::CSR,
            9014);
    c->kvLens = {0, 1, 65, 700, 3000};
    c->topk = 512;
    Rng rng(9014);
    c->variantParams.sinks = randomPerHead(rng, 32, -1.0, 3.0);
    c->variantParams.alibiSlopes = randomPerHead(rng, 32, 0.001, 0.02);
  }
  {
    // Causal query rows (speculative decoding), each with its own list: a
    // query tile holds one row's 16 heads.
    MlaCase *c = add("H16TopkCausalRowsBlockTableF16", 16, DType::F16,
                     Table::BlockTable, 9015);
    c->kvLens = {5, 64, 300, 1000};
    c->qoLens = {1, 2, 4, 1};
    c->topk = 128;
    c->expectSplit = false;
  }
  // Head counts of tensor-parallel splits that no tile size divides: a
  // tile holds one query row's heads, the rest of it padding rows that are
  // neither loaded nor stored. 8 heads (DeepSeek-V3.2 over 16 GPUs): half
  // of a 16-row tile; 24, split over the entries: 8 of 32; 80: two 48-row
  // tiles per query row (12 warps), the second 16 rows short.
  {
    MlaCase *c = add("H8TopkCausalRowsBlockTableBF16", 8, DType::BF16,
                     Table::BlockTable, 9018);
    c->kvLens = {5, 64, 300, 1000};
    c->qoLens = {1, 2, 4, 1};
    c->topk = 128;
    c->expectSplit = false;
  }
  {
    MlaCase *c = add("H24Topk512CausalRowsSplitCsrF16", 24, DType::F16,
                     Table::CSR, 9019);
    c->kvLens = {0, 700, 65, 3000};
    c->qoLens = {2, 3, 1, 2};
    c->topk = 512;
  }
  {
    MlaCase *c =
        add("H80TopkCausalRowsCsrP32BF16", 80, DType::BF16, Table::CSR, 9020);
    c->kvLens = {300, 1, 90};
    c->qoLens = {2, 1, 3};
    c->pageSize = 32;
    c->topk = 64;
    c->expectSplit = false;
  }
  // Deeper rings given by hand over 16-key tiles: a tile's gathered keys
  // and page entries ride S - 1 tiles ahead of its copies and stay until it
  // is scored (2S - 1 slots); split over partitions (4 stages) and not.
  {
    MlaCase *c = add("H16TopkThreeStagesBlockTableP16F16", 16, DType::F16,
                     Table::BlockTable, 9016);
    c->kvLens = {5, 64, 300, 1000};
    c->qoLens = {1, 2, 4, 1};
    c->topk = 128;
    c->pageSize = 16;
    c->config = "#kvgpu.prefill<q_tile = 16, kv_tile = 16, warps = 4, "
                "stages = 3, q_in_registers = false, max_partitions = 1, "
                "value_warps = 4>";
    c->expectSplit = false;
  }
  {
    MlaCase *c = add("H32FourStagesSplitTokenTableP64BF16Sm80", 32, DType::BF16,
                     Table::TokenTable, 9017);
    c->kvLens = {65, 1, 300, 0, 40};
    c->chip = "sm_80";
    c->config = "#kvgpu.prefill<q_tile = 32, kv_tile = 16, warps = 8, "
                "stages = 4, q_in_registers = false, max_partitions = 4, "
                "value_warps = 4>";
  }
  // DeepSeek-V3.2's selection over 64 heads: one 64-row wgmma tile per
  // query row, 32-key tiles of gathered keys.
  {
    MlaCase *c = add("H64Topk256CsrP64BF16", 64, DType::BF16, Table::CSR, 9022);
    c->kvLens = {1000, 3, 300, 2000};
    c->topk = 256;
    c->expectSplit = false;
  }
  // wgmma given by hand: 32-key tiles in three stages, split.
  {
    MlaCase *c = add("H64WgmmaThreeStagesSplitBlockTableP32F16", 64, DType::F16,
                     Table::BlockTable, 9021);
    c->kvLens = {65, 1, 700, 0, 40};
    c->pageSize = 32;
    c->config = "#kvgpu.prefill<q_tile = 64, kv_tile = 32, warps = 8, "
                "stages = 3, q_in_registers = false, max_partitions = 8, "
                "value_warps = 2, mma = wgmma>";
  }
  // sm_90a runs 64-row tiles on wgmma: each such case runs on mma.sync too.
  addMmaSyncTwins(
      cases, [](const MlaCase &c) { return c.config.empty() && onWgmma(c); });
  return cases;
}

/// A serving step on an MLA cache as kernels: the append kernel writes each
/// request's new tokens (ckv as K, kpe as V: FlashInfer's
/// append_paged_mla_kv_cache), then the MLA kernel attends with one causal
/// query row per new token. The pools must hold exactly the appended rows
/// (everything else unchanged) and the state must match MLA attention over
/// the updated cache.
void runMlaAppendStep(DType dtype, Table table, bool sharedPool,
                      const std::string &chip, uint64_t seed) {
  CacheSpec spec =
      makeSpec(64, 1, kCkv, dtype, Layout::NHD, Storage::MLA, table);
  spec.peDim = kKpe;
  SCOPED_TRACE(describe(spec) + " chip " + chip);
  Rng rng(seed);
  const int64_t heads = 16;
  std::vector<int64_t> kvLens = {1, 64, 65, 200, 7};
  int64_t batch = kvLens.size();
  std::vector<int64_t> filled(batch), fresh(batch);
  ref::AppendInput input;
  for (int64_t b = 0; b < batch; ++b) {
    fresh[b] = rng.integer(1, std::min<int64_t>(4, kvLens[b]));
    filled[b] = kvLens[b] - fresh[b];
    for (int64_t t = filled[b]; t < kvLens[b]; ++t) {
      input.batchIndices.push_back(b);
      input.positions.push_back(t);
    }
  }
  CacheOptions options;
  options.filledLens = filled;
  options.mlaSharedPool = sharedPool;
  PagedCache cache = makeCache(spec, kvLens, rng, options);
  PagedCache before = cloneCache(cache);
  int64_t nnz = input.positions.size();
  input.k = randomTensor(rng, dtype, {nnz, 1, kCkv});
  input.v = randomTensor(rng, dtype, {nnz, 1, kKpe});
  std::vector<int32_t> qoIndptr = indptrOf(fresh);
  Tensor qNope = randomTensor(rng, dtype, {nnz, heads, kCkv}, 0.5);
  Tensor qPe = randomTensor(rng, dtype, {nnz, heads, kKpe}, 2.0);
  StateBuffers out = makeStateBuffers(nnz, heads, kCkv, dtype);

  KernelSource src;
  std::string kvType;
  std::string kv = emitPagedView(src, cache, "kv", kvType,
                                 /*staticSliceStrides=*/true);
  emitAppend(src, input, kv, kvType);
  std::string qn = src.addMemref("q_nope", qNope);
  std::string qp = src.addMemref("q_pe", qPe);
  std::string qo = src.addMemref("qo_indptr", makeI32(qoIndptr));
  std::string stateType = stateTypeText(heads, kCkv, dtype, Base::E);
  src.addLine("%s = kv.mla_decode " + qn + ", " + qp + ", " + kv + " rows(" +
              qo + " : " + src.typeOf(qo) + ") {causal} : " + src.typeOf(qn) +
              ", " + src.typeOf(qp) + ", " + kvType + " -> " + stateType);
  emitStore(src, "%s", stateType, out);
  RunResult result;
  ASSERT_TRUE(runGpu(src, {out.o, out.lse}, chip,
                     {"kv.append", "kv.mla_decode"}, result));
  EXPECT_TRUE(noReports(result));
  std::vector<std::string> names = result.kernelNames();
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names.front().rfind("append_", 0), 0u) << result.describeLaunches();

  for (const std::string &r : ref::checkAppend(before, cache, input))
    ADD_FAILURE() << r;
  ref::State expected = ref::mlaDecode(qNope, qPe, cache, std::nullopt,
                                       Base::E, qoIndptr, /*causal=*/true);
  EXPECT_TRUE(check(compareGpuState(out, expected, dtype)));
}

TEST(GpuMlaAppend, ThenCausalRowsCsrF16) {
  runMlaAppendStep(DType::F16, Table::CSR, /*sharedPool=*/false, "sm_90a", 9101);
}

TEST(GpuMlaAppend, ThenCausalRowsSharedPoolBlockTableBF16) {
  runMlaAppendStep(DType::BF16, Table::BlockTable, /*sharedPool=*/true, "sm_80",
                   9102);
}

class GpuMla : public ::testing::TestWithParam<MlaCase> {};

TEST_P(GpuMla, MatchesReference) { runMlaCase(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Matrix, GpuMla, ::testing::ValuesIn(mlaCases()),
                         [](const ::testing::TestParamInfo<MlaCase> &info) {
                           return info.param.name;
                         });

} // namespace
