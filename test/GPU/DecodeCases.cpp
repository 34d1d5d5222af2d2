//===- DecodeCases.cpp - GPU decode cases in the emulator -----------------===//
//
// Each configuration is a kv.decode over a random paged cache (pages
// scattered over a pool whose unowned slots are NaN, outputs NaN-poisoned),
// lowered with convert-kv-to-gpu alone (as kvir-runner does) and after
// kv-specialize-layout + kv-tile (as kv-to-nvvm / kv-to-ptx do) -- the test
// fails if the decode falls back to host loops -- run in kvir's emulator and
// compared with the float64 reference (outputs within the harness's relative
// error bound of the output type, LSE within 1e-3, empty requests exactly
// (0, -inf), nothing NaN). Every configuration runs batches on both sides
// of the split-KV heuristic: a small batch (P > 1 partitions: split kernel +
// merge kernel) and one with batch * Hkv >= 2 * SMs (P == 1: the direct
// kernel); which kernels ran, and with how many partitions, is read from
// the emulator's launch records. Batches always hold an empty and a
// one-token request.
// Any emulator report (out-of-bounds access, shared-memory race, barrier
// divergence) fails the test.
//
//===----------------------------------------------------------------------===//
#include "DecodeCases.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

using namespace kvir::test;
using namespace kvir::test::gpu;

std::ostream &gpu::operator<<(std::ostream &os, const GpuDecodeCase &c) {
  return os << c.name;
}

void gpu::runGpuDecodeCase(const GpuDecodeCase &c) {
  Rng rng(c.seed);
  SCOPED_TRACE(describe(c.spec) + " q_heads " + std::to_string(c.qHeads) +
               " out " + mlirName(c.outType) + " chip " + c.chip + " seed " +
               std::to_string(c.seed));
  for (const BatchRun &run : c.runs) {
    std::vector<int64_t> kvLens =
        run.lengths.empty() ? randomLengths(rng, run.batch, run.maxLen)
                            : run.lengths;
    if (run.firstLen)
      kvLens[0] = run.firstLen;
    int64_t batch = kvLens.size();
    SCOPED_TRACE("batch of " + std::to_string(batch));
    PagedCache cache = makeCache(c.spec, kvLens, rng, c.cacheOptions);
    Tensor q =
        randomTensor(rng, c.spec.dtype, {batch, c.qHeads, c.spec.headDim}, 2.0);
    StateBuffers out =
        makeStateBuffers(batch, c.qHeads, c.spec.headDimV, c.outType);

    KernelSource src;
    std::string kvType;
    std::string kv = emitPagedView(src, cache, "kv", kvType);
    std::string qs = src.addMemref("q", q);
    std::string stateType =
        stateTypeText(c.qHeads, c.spec.headDimV, c.outType, c.params.base);
    ref::AttentionParams params = c.params;
    if (c.topk)
      params.topk = randomTopk(rng, kvLens, c.topk);
    std::string variants = emitVariants(src, params, c.variants);
    src.addLine("%s = kv.decode " + qs + ", " + kv + variants + " " +
                withConfig(attentionAttrs(c.params, /*withCausal=*/false,
                                          c.variants.standardAlibi),
                           c.config) +
                " : " + src.typeOf(qs) + ", " + kvType + " -> " + stateType);
    emitStore(src, "%s", stateType, out);

    ref::State expected =
        ref::decode(q, ref::PagedSource(cache), asKernelSees(params));
    RunResult result;
    auto start = std::chrono::steady_clock::now();
    ASSERT_TRUE(runGpu(src, {out.o, out.lse}, c.chip, {"kv.decode"}, result,
                       c.graphMaxBatch));
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    EXPECT_TRUE(noReports(result));

    // The split-KV choice (the plan's work schedule, for these lengths) and
    // the kernels that carried it out.
    std::optional<int64_t> items = result.scheduledItems(
        "kv.decode", c.topk ? std::vector<int64_t>(batch, c.topk) : kvLens);
    ASSERT_TRUE(items.has_value()) << "no kv.decode work schedule";
    bool split = *items > batch;
    std::vector<std::string> names = result.kernelNames();
    if (c.graphMaxBatch) {
      // Fixed grids: the split kernel over the plan's max_work blocks
      // (those past the schedule's items do nothing) and the merge over
      // max_batch blocks, whatever the batch and the schedule.
      ASSERT_EQ(names.size(), 2u) << result.describeLaunches();
      EXPECT_TRUE(isSplitKernel(names[0])) << names[0];
      EXPECT_GE(result.launches[0].grid.x, uint32_t(*items));
      EXPECT_EQ(names[1].rfind("merge_rows", 0), 0u) << names[1];
      EXPECT_EQ(result.launches[1].grid.x, uint32_t(c.graphMaxBatch));
    } else if (!split) {
      ASSERT_EQ(names.size(), 1u) << result.describeLaunches();
      EXPECT_EQ(names[0].rfind("decode_", 0), 0u) << names[0];
      EXPECT_FALSE(isSplitKernel(names[0])) << names[0];
      EXPECT_EQ(result.launches[0].grid.x, uint32_t(batch));
      EXPECT_EQ(result.launches[0].grid.y, uint32_t(c.spec.kvHeads));
      EXPECT_EQ(result.launches[0].grid.z, 1u);
    } else {
      ASSERT_EQ(names.size(), 2u) << result.describeLaunches();
      EXPECT_EQ(names[0].rfind("decode_", 0), 0u) << names[0];
      EXPECT_TRUE(isSplitKernel(names[0])) << names[0];
      EXPECT_EQ(result.launches[0].grid.x, uint32_t(*items));
      EXPECT_EQ(result.launches[0].grid.y, uint32_t(c.spec.kvHeads));
      EXPECT_EQ(result.launches[0].grid.z, 1u);
      EXPECT_EQ(names[1].rfind("merge_rows", 0), 0u) << names[1];
      EXPECT_EQ(result.launches[1].grid.x, uint32_t(batch));
      EXPECT_EQ(result.launches[1].grid.y, uint32_t(c.qHeads));
    }
    // The expectations follow the decode kernel's chunk rule (minChunk);
    // the tensor-core kernel's work list cuts at 256 keys.
    bool tensorCores = names[0].rfind("decode_tc_", 0) == 0;
    if (run.expectSplit && !tensorCores)
      EXPECT_EQ(split, *run.expectSplit) << *items << " work items";
    // The block of a decode kernel covers the GQA group on threadIdx.y;
    // the tensor-core kernel (GQA groups of 8 and more) packs it into the
    // rows of a query tile, its warps along threadIdx.x.
    if (tensorCores)
      EXPECT_EQ(result.launches[0].block.y, 1u);
    else
      EXPECT_EQ(result.launches[0].block.y,
                uint32_t(c.qHeads / c.spec.kvHeads));
    EXPECT_TRUE(check(compareGpuState(out, expected, c.outType)));
    if (std::getenv("KVIR_UNIT_VERBOSE"))
      std::printf("    batch %lld, %lld work items: %.2f s\n", (long long)batch,
                  (long long)*items, seconds);
  }
}

/// The shortest chunk the decode schedule cuts for GQA group `group` (twice
/// as long for 1-byte fp8 / int8 KV).
int64_t gpu::minChunk(int64_t group, bool oneByte) {
  return std::max<int64_t>(128, 64 * group * (oneByte ? 2 : 1));
}

/// A small batch with one request long enough to be cut and a large batch
/// of short requests, which no schedule cuts.
std::vector<BatchRun> gpu::bothPaths(const std::string &chip, int64_t kvHeads,
                                     int64_t group, int64_t smallBatch,
                                     int64_t smallMaxLen, int64_t largeMaxLen,
                                     std::optional<int64_t> windowLeft,
                                     bool oneByte) {
  int64_t large = (2 * smCountOf(chip) + kvHeads - 1) / kvHeads;
  // A window of at most one chunk's keys leaves nothing to cut; any wider
  // one lets the long first request be cut (chunks split the visible keys).
  int64_t chunk = minChunk(group, oneByte);
  bool cut = !windowLeft || *windowLeft + 1 > chunk;
  return {BatchRun{smallBatch, smallMaxLen, {}, cut, 2 * chunk + 37},
          BatchRun{large, largeMaxLen, {}, false}};
}

GpuDecodeCase gpu::makeCase(std::string name, CacheSpec spec, int64_t qHeads,
                            DType outType, std::string chip, uint64_t seed) {
  GpuDecodeCase c;
  c.name = std::move(name);
  c.spec = spec;
  c.qHeads = qHeads;
  c.outType = outType;
  c.chip = std::move(chip);
  c.seed = seed;
  return c;
}
