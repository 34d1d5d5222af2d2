//===- PrefillCases.cpp - GPU prefill cases in the emulator ---------------===//
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
#include "PrefillCases.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

using namespace kvir::test;
using namespace kvir::test::gpu;

std::ostream &gpu::operator<<(std::ostream &os, const GpuPrefillCase &c) {
  return os << c.name;
}

namespace {

/// Rows [first, first + count) of `t` (a view).
Tensor rowsOf(const Tensor &t, int64_t first, int64_t count) {
  Index shape = t.shape();
  shape[0] = count;
  return t.view(t.offset() + first * t.strides()[0], shape, t.strides());
}
StateBuffers rowsOf(const StateBuffers &s, int64_t first, int64_t count) {
  return {rowsOf(s.o, first, count), rowsOf(s.lse, first, count)};
}

/// Succeeds if every element of `s` is still the NaN it was poisoned with.
::testing::AssertionResult stillPoisoned(const StateBuffers &s) {
  int64_t written = 0;
  for (const Tensor *t : {&s.o, &s.lse})
    t->forEachIndex([&](const Index &i) { written += !std::isnan(t->get(i)); });
  if (written)
    return ::testing::AssertionFailure()
           << written << " elements of the padding rows were written";
  return ::testing::AssertionSuccess();
}

} // namespace

void gpu::runGpuPrefillCase(const GpuPrefillCase &c) {
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
    int64_t rows = qoIndptr.back(), allRows = rows + c.paddingRows;
    Tensor q = randomTensor(rng, s.dtype, {allRows, c.qHeads, s.headDim}, 2.0);
    StateBuffers all =
        makeStateBuffers(allRows, c.qHeads, s.headDimV, c.outType);
    // The requests' rows, and the padding past them.
    StateBuffers out = rowsOf(all, 0, rows),
                 padding = rowsOf(all, rows, c.paddingRows);
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
      kv = emitRaggedView(src, s, rk, rv, kvIndptr, kvType);
    } else {
      cache = makeCache(s, batch.kv, rng);
      kv = emitPagedView(src, cache, "kv", kvType);
    }
    std::string qs = src.addMemref("q", q);
    std::string qo =
        src.addMemref("qo_indptr", makeIndexArray(qoIndptr, s.tableType));
    std::string maskClause;
    if (c.mask != MaskKind::None) {
      std::string ms = src.addMemref("mask", mask);
      maskClause = " mask(" + ms + " : " + src.typeOf(ms) + ")";
    }
    std::vector<int32_t> positions;
    if (c.positions) {
      positions = randomRowPositions(rng, batch.qo, batch.kv);
      std::string ps = src.addMemref("positions", makeI32(positions));
      maskClause += " positions(" + ps + " : " + src.typeOf(ps) + ")";
    }
    std::string stateType =
        stateTypeText(c.qHeads, s.headDimV, c.outType, c.params.base);
    maskClause += emitVariants(src, c.params, c.variants);
    std::string attrs =
        attentionAttrs(c.params, true, c.variants.standardAlibi);
    if (!c.config.empty()) {
      std::string cfg = "kvgpu.config = " + c.config;
      attrs = attrs.empty()
                  ? "{" + cfg + "}"
                  : attrs.substr(0, attrs.size() - 1) + ", " + cfg + "}";
    }
    src.addLine("%s = kv.prefill " + qs + ", " + qo + ", " + kv + maskClause +
                " " + attrs + " : " + src.typeOf(qs) + ", " + src.typeOf(qo) +
                ", " + kvType + " -> " + stateType);
    emitStore(src, "%s", stateType, all);

    ref::AttentionParams params = asKernelSees(c.params);
    if (c.mask != MaskKind::None)
      params.mask = &mask;
    params.positions = positions;
    ref::State expected =
        c.ragged ? ref::attention(rowsOf(q, 0, rows), qoIndptr,
                                  ref::RaggedSource(rk, rv, kvIndptr), params)
                 : ref::attention(rowsOf(q, 0, rows), qoIndptr,
                                  ref::PagedSource(cache), params);
    RunResult result;
    auto start = std::chrono::steady_clock::now();
    ASSERT_TRUE(runGpu(src, {all.o, all.lse}, c.chip, {"kv.prefill"}, result,
                       c.graphMaxBatch));
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    EXPECT_TRUE(noReports(result));
    EXPECT_TRUE(check(stillPoisoned(padding)));
    std::string config = result.planConfig("kv.prefill");
    if (!c.expectConfig.empty() && parseGpuTarget(c.chip).mma == "auto")
      EXPECT_NE(config.find(c.expectConfig), std::string::npos) << config;
    if (c.expectTmaCopies && parseGpuTarget(c.chip).mma == "auto") {
      uint64_t copies = 0;
      for (const emu::LaunchStats &l : result.launches)
        copies += l.tmaCopies;
      EXPECT_GT(copies, 0u) << "no TMA copy under " << config;
    }

    std::vector<std::string> names = result.kernelNames();
    if (s.dtype == DType::F32) {
      // f32 KV: the decode kernel, one block per query row and KV head.
      ASSERT_LE(names.size(), 1u) << result.describeLaunches();
      if (rows) {
        ASSERT_EQ(names.size(), 1u) << result.describeLaunches();
        EXPECT_EQ(names[0].rfind("prefill_rows_", 0), 0u) << names[0];
        EXPECT_EQ(result.launches[0].grid.x, uint32_t(allRows));
        EXPECT_EQ(result.launches[0].grid.y, uint32_t(s.kvHeads));
      }
      EXPECT_TRUE(check(compareGpuState(out, expected, c.outType)));
      continue;
    }
    // The launches the plan's work schedule calls for: the direct kernel
    // when no query tile is cut, else the scheduled split kernel (a block
    // per item) and the merge of the cut tiles' rows. A config of one
    // partition has no schedule and never splits.
    std::map<std::string, int64_t> sizes{{"nnz", allRows},
                                         {"qo_indptr_len", numRequests + 1}};
    std::optional<RunResult::PrefillScheduleCounts> schedule =
        result.scheduledPrefill("kv.prefill", qoIndptr, batch.kv, sizes);
    if (!schedule) {
      ASSERT_EQ(result.planSize("kv.prefill", "num_partitions", sizes),
                std::optional<int64_t>(1))
          << "neither a work schedule nor one partition";
      schedule = RunResult::PrefillScheduleCounts{};
    }
    if (c.graphMaxBatch && result.planSize("kv.prefill", "max_partial_rows",
                                           sizes)) {
      // Fixed grids: the split kernel over the most items these shapes
      // allow (those past the schedule's count do nothing) and the merge,
      // whether or not a tile is cut; the cut tiles' rows fit the fixed
      // workspace.
      ASSERT_EQ(names.size(), rows ? 2u : 1u) << result.describeLaunches();
      EXPECT_TRUE(isSplitKernel(names[0])) << names[0];
      EXPECT_EQ(std::optional<int64_t>(result.launches[0].grid.x),
                result.planSize("kv.prefill", "max_work", sizes));
      EXPECT_GE(int64_t(result.launches[0].grid.x), schedule->items);
      EXPECT_LE(std::optional<int64_t>(schedule->partialRows),
                result.planSize("kv.prefill", "max_partial_rows", sizes));
    } else if (rows == 0 || !schedule->cut()) {
      ASSERT_LE(names.size(), 1u) << result.describeLaunches();
      if (!names.empty())
        EXPECT_FALSE(isSplitKernel(names[0])) << names[0];
    } else {
      ASSERT_EQ(names.size(), 2u) << result.describeLaunches();
      EXPECT_TRUE(isSplitKernel(names[0])) << names[0];
      EXPECT_EQ(result.launches[0].grid.x, uint32_t(schedule->items));
      EXPECT_EQ(names[1].rfind("merge_rows", 0), 0u) << names[1];
    }
    // The P V mma takes P rounded to the KV type: an f32 output is as
    // precise as that type allows.
    DType precision = outputTolerance(c.outType) < outputTolerance(s.dtype)
                          ? s.dtype
                          : c.outType;
    // int8 groups are dequantized into the KV type before the mma (as
    // OpenPPL's kernels do), and RoPE rotates q and K into it (as
    // FlashInfer's prefill does): their rounding in that type carries into
    // the scores and the LSE.
    double lseTolerance = s.quant == Quant::Int8Group || c.params.rope
                              ? outputTolerance(s.dtype)
                              : 1e-3;
    EXPECT_TRUE(check(compareGpuState(out, expected, precision, lseTolerance)));
    if (std::getenv("KVIR_UNIT_VERBOSE"))
      std::printf("%s    %lld requests, %lld rows, %lld items of %lld "
                  "tiles: %.2f s\n",
                  result.describeLaunches().c_str(), (long long)numRequests,
                  (long long)rows, (long long)schedule->items,
                  (long long)schedule->tiles, seconds);
  }
}

GpuPrefillCase gpu::makePrefillCase(std::string name, CacheSpec spec,
                                    int64_t qHeads, DType outType,
                                    std::string chip, uint64_t seed) {
  GpuPrefillCase c;
  c.name = std::move(name);
  c.spec = spec;
  c.qHeads = qHeads;
  c.outType = outType;
  c.chip = std::move(chip);
  c.seed = seed;
  return c;
}
