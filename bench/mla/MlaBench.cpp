//===- MlaBench.cpp - The MLA kernels' traffic, tensor-core work, balance
//--===//
//
// kvir-mla-bench: one MLA decode step (ckv 512 + kpe 64, bf16, page size 64,
// ckv / kpe slices of one 576-wide pool as FlashMLA keeps them) per batch
// shape, in the emulator for sm_90a (H100: 132 SMs), two ways:
//
//   * kvir: kv.mla_decode with one query row per request, whose split-KV
//     follows the lengths (the work schedule);
//   * uniform: the same attention written with rows(qo_indptr) (one row
//     each, not causal), which takes the prefill's uniform partitions: every
//     request cut into the same number of pieces. An anchor for load
//     balance, not a kvir default.
//
// Per way: blocks launched, global bytes over the ideal (ckv + kpe read once
// per request, q, the outputs), tensor-core multiply-adds (mma.sync or
// wgmma) over the minimum (the two GEMMs of every row, padded to 16, and
// key once: D + pe + D), the busiest attention block's bytes over the mean, and
// an estimated H100 time (max of HBM at 3.35 TB/s and the busiest SM's
// share, blocks handed in launch order to the least-loaded SM) over the
// floor (ideal bytes / 3.35 TB/s); the largest relative error against the
// float64 reference. Then ptxas' registers / spills / shared memory per
// kernel and the compile time of kvir-opt + kvir-translate. Not run by the
// tests.
//
//   kvir-mla-bench [--shapes h16,h128,skewed,h64rows]
//
//===----------------------------------------------------------------------===//
#include "BenchSupport.h"
#include "GpuHarness.h"

#include "Harness/Harness.h"
#include "TestUtil.h"

#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

using namespace kvir::test;
using namespace kvir::test::gpu;
using namespace kvir::bench;
namespace ref = kvir::ref;

namespace {

constexpr double kRoof = 3.35e12; // H100 SXM HBM3, bytes/s
constexpr int64_t kSms = 132;
constexpr int64_t kCkv = 512, kKpe = 64, kPage = 64;

struct Shape {
  std::string key, name;
  int64_t heads;
  std::vector<int64_t> lengths;
};

/// The function of one way: one row per request, or rows(qo_indptr).
KernelSource mlaSource(const PagedCache &cache, const Tensor &qNope,
                       const Tensor &qPe, int64_t heads, bool rows,
                       const StateBuffers &out) {
  KernelSource src(rows ? "mla_rows" : "mla_decode");
  std::string kvType;
  std::string kv = emitPagedView(src, cache, "kv", kvType,
                                 /*staticSliceStrides=*/true);
  std::string qn = src.addMemref("q_nope", qNope);
  std::string qp = src.addMemref("q_pe", qPe);
  std::string rowsClause;
  if (rows) {
    std::vector<int32_t> indptr(qNope.shape()[0] + 1);
    for (size_t i = 0; i < indptr.size(); ++i)
      indptr[i] = int32_t(i);
    std::string qo = src.addMemref("qo_indptr", makeI32(indptr));
    rowsClause = " rows(" + qo + " : " + src.typeOf(qo) + ")";
  }
  std::string stateType = stateTypeText(heads, kCkv, DType::BF16, Base::E);
  src.addLine("%s = kv.mla_decode " + qn + ", " + qp + ", " + kv + rowsClause +
              " : " + src.typeOf(qn) + ", " + src.typeOf(qp) + ", " + kvType +
              " -> " + stateType);
  emitStore(src, "%s", stateType, out);
  return src;
}

} // namespace

int main(int argc, char **argv) {
  // Every return destroys the host engines before static destruction.
  kvir::test::gpu::GpuKernelCacheScope kernelCacheScope;
  std::vector<Shape> shapes;
  {
    std::vector<int64_t> skewed(16, 256);
    skewed[0] = 16384;
    shapes = {{"h16", "H 16, 8 x 4096", 16, std::vector<int64_t>(8, 4096)},
              {"h128", "H 128, 4 x 4096", 128, std::vector<int64_t>(4, 4096)},
              {"skewed", "H 16, skewed 1 x 16384 + 15 x 256", 16, skewed},
              {"h64rows", "H 64, 32 x 1024", 64,
               std::vector<int64_t>(32, 1024)}};
  }
  std::vector<std::string> only;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--shapes" && i + 1 < argc) {
      for (llvm::StringRef s : llvm::split(argv[++i], ','))
        only.push_back(s.str());
    } else {
      std::fprintf(stderr, "usage: %s [--shapes h16,h128,skewed,h64rows]\n",
                   argv[0]);
      return 2;
    }
  }
  Toolbox tools(argv[0], /*usePtxas=*/true);
  bool allOk = true;
  std::printf("| shape | way | blocks | bytes / ideal | mma / min | busiest "
              "block / mean | est. H100 time / floor | max rel err |\n"
              "|---|---|---|---|---|---|---|---|\n");
  std::vector<std::string> kernelRows;
  for (const Shape &shape : shapes) {
    if (!only.empty() &&
        std::find(only.begin(), only.end(), shape.key) == only.end())
      continue;
    CacheSpec spec = makeSpec(kPage, 1, kCkv, DType::BF16, Layout::NHD,
                              Storage::MLA, Table::BlockTable);
    spec.peDim = kKpe;
    Rng rng(2026);
    CacheOptions options;
    options.mlaSharedPool = true;
    PagedCache cache = makeCache(spec, shape.lengths, rng, options);
    int64_t batch = shape.lengths.size();
    Tensor qNope = randomTensor(rng, DType::BF16, {batch, shape.heads, kCkv}, 0.5);
    Tensor qPe = randomTensor(rng, DType::BF16, {batch, shape.heads, kKpe}, 2.0);
    ref::AttentionParams params;
    ref::State expected =
        ref::mlaDecode(qNope, qPe, cache, asKernelSees(params).smScale,
                       Base::E, {}, false);

    double keys = 0;
    for (int64_t l : shape.lengths)
      keys += double(l);
    double ideal = keys * (kCkv + kKpe) * 2 +
                   double(batch) * shape.heads * (kCkv + kKpe) * 2 +
                   double(batch) * shape.heads * (kCkv * 2 + 4);
    // Tensor-core multiply-adds over the minimum: both GEMMs once for
    // every row (padded to a 16-row m-tile) and key.
    double minMacs = double((shape.heads + 15) / 16 * 16) * keys *
                     double(kCkv + kKpe + kCkv);
    for (bool rows : {false, true}) {
      StateBuffers out =
          makeStateBuffers(batch, shape.heads, kCkv, DType::BF16);
      KernelSource src =
          mlaSource(cache, qNope, qPe, shape.heads, rows, out);
      RunResult result;
      ::testing::AssertionResult ran =
          runGpu(src, {out.o, out.lse}, "sm_90a", {"kv.mla_decode"}, result);
      if (!ran) {
        std::fprintf(stderr, "%s\n", ran.message());
        return 1;
      }
      for (const std::string &r : result.reports) {
        allOk = false;
        std::fprintf(stderr, "%s\n", r.c_str());
      }
      double bytes = 0, seconds = 0, mma = 0, largest = 0, mean = 0;
      int64_t blocks = 0;
      for (const auto &l : result.launches) {
        bytes += globalBytesLoaded(l) + globalBytesStored(l);
        mma += double(l.tensorCoreMacs);
        std::vector<double> perBlock;
        for (const auto &w : l.blocks)
          perBlock.push_back(double(w.globalBytes));
        seconds += memoryBoundSeconds(perBlock, kRoof, kSms);
        blocks += perBlock.size();
        if (l.kernel.rfind("mla_", 0) == 0) {
          double sum = 0;
          for (double b : perBlock) {
            sum += b;
            largest = std::max(largest, b);
          }
          mean = sum / std::max<size_t>(1, perBlock.size());
        }
      }
      double rel = maxRelativeError(out, expected);
      bool ok = rel <= outputTolerance(DType::BF16);
      allOk &= ok;
      std::printf("| %s | %s | %lld | %.3f | %.2f | %.2f | %.2f | %.1e%s |\n",
                  shape.name.c_str(), rows ? "uniform (rows)" : "kvir",
                  (long long)blocks, bytes / ideal, mma / minMacs,
                  largest / mean, seconds / (ideal / kRoof), rel,
                  ok ? "" : " **FAIL**");
      std::fflush(stdout);
      if (rows)
        continue;
      Toolbox::Compiled compiled = tools.compile(src.text(), "sm_90a");
      for (const auto &[name, info] : compiled.kernels) {
        if (name.rfind("mla_", 0) != 0)
          continue;
        char line[512];
        std::snprintf(line, sizeof(line),
                      "| %s | `%s` | %d | %lld / %lld | %.2f s |",
                      shape.name.c_str(), name.c_str(), info.registers,
                      (long long)info.spillStores, (long long)info.spillLoads,
                      compiled.compileSeconds);
        kernelRows.push_back(line);
      }
    }
  }
  std::printf("\n| shape | kernel (sm_90a) | registers | spill stores / "
              "loads (bytes) | compile (kvir-opt + kvir-translate) |\n"
              "|---|---|---|---|---|\n");
  for (const std::string &row : kernelRows)
    std::printf("%s\n", row.c_str());
  return allOk ? 0 : 1;
}
