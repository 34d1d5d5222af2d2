//===- BalanceBench.cpp - Load balance of the decode launch plan -----------===//
//
// kvir-balance-bench: runs one decode call (Hq 32, Hkv 8, head_dim 128, f16,
// NHD pages of 16, CSR) for each batch shape the split-KV schedule must
// handle -- uniform 64 x 1024, skewed 1 x 16384 + 31 x 64, single 1 x 32768
// and 256 x 512 -- in the emulator for sm_90a (H100: 132 SMs) and reports,
// from the emulator's per-block counters:
//
//   * blocks launched (decode kernel + merge kernel), bytes / ideal;
//   * the decode launch's largest block's global bytes over the mean;
//   * an estimated H100 time per launch, max(bytes / 3.35 TB/s, busiest SM's
//     bytes / (3.35 TB/s / 132)), the busiest SM found by handing blocks in
//     launch order to the least-loaded SM (a GPU's block dispatcher), summed
//     over the call's launches; reported against the floor (ideal bytes /
//     3.35 TB/s);
//   * bytes in flight per SM by construction: the stages - 1 K/V tiles a
//     block keeps in flight times the blocks an SM runs at once, against
//     Little's law (600 ns x 3.35 TB/s / 132 = 15.2 KB);
//   * the same estimate for FlashInfer's plan() on the same batch, as an
//     anchor: its chunks (smallest page count per chunk with at most
//     132 x 8 / Hkv items per KV head, at least 128 / page pages) as blocks
//     of chunk x 512 bytes per KV head in request order, plus q and the
//     partial states; modeled, not run.
//
// Also checks the output against the float64 reference. Not run by the
// tests. Usage: kvir-balance-bench [--shapes uniform,skewed,single,large]
//
//===----------------------------------------------------------------------===//
#include "BenchSupport.h"
#include "GpuHarness.h"
#include "kvir/Target/GPU/TargetInfo.h"

#include "Harness/Harness.h"

#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <queue>
#include <string>
#include <vector>

using namespace kvir::test;
using namespace kvir::test::gpu;
using namespace kvir::bench;
namespace ref = kvir::ref;

namespace {

constexpr double kRoof = 3.35e12; // H100 SXM HBM3, bytes/s
constexpr int64_t kSms = 132;
constexpr int64_t kKvHeads = 8, kQHeads = 32, kHeadDim = 128, kPage = 16;

struct Shape {
  std::string name;
  std::vector<int64_t> lengths;
};

/// Estimated seconds of one launch of `blockBytes` on an H100.
double launchSeconds(const std::vector<double> &blockBytes) {
  return memoryBoundSeconds(blockBytes, kRoof, kSms);
}

/// FlashInfer's decode plan() on `lengths`, modeled: blocks' bytes of the
/// decode launch and of its merge, in launch order.
std::pair<std::vector<double>, std::vector<double>>
flashInferBlocks(const std::vector<int64_t> &lengths, int64_t group) {
  int64_t maxGridPerHead = kSms * 8 / kKvHeads;
  int64_t minChunkPages = std::max<int64_t>(128 / kPage, 1);
  auto pagesOf = [](int64_t len) { return (len + kPage - 1) / kPage; };
  int64_t maxPages = 0;
  for (int64_t l : lengths)
    maxPages = std::max(maxPages, pagesOf(l));
  auto count = [&](int64_t chunk) {
    int64_t n = 0;
    for (int64_t l : lengths)
      n += std::max<int64_t>(1, (pagesOf(l) + chunk - 1) / chunk);
    return n;
  };
  int64_t lo = minChunkPages, hi = std::max(minChunkPages, maxPages);
  while (lo < hi) {
    int64_t mid = (lo + hi) / 2;
    if (count(mid) <= maxGridPerHead)
      hi = mid;
    else
      lo = mid + 1;
  }
  bool split = count(lo) > int64_t(lengths.size());
  double tokenBytes = 2.0 * kHeadDim * 2; // K + V rows of one KV head
  double qBytes = group * kHeadDim * 2.0;
  double partialBytes = group * (kHeadDim + 1) * 4.0;
  std::vector<double> decode, merge;
  for (int64_t h = 0; h < kKvHeads; ++h)
    for (int64_t l : lengths) {
      int64_t chunkTokens = split ? lo * kPage : std::max<int64_t>(l, 1);
      int64_t pieces = split ? std::max<int64_t>(1, (l + chunkTokens - 1) /
                                                        chunkTokens)
                             : 1;
      for (int64_t j = 0; j < pieces; ++j) {
        int64_t tokens = std::min(chunkTokens, l - j * chunkTokens);
        decode.push_back(std::max<int64_t>(tokens, 0) * tokenBytes + qBytes +
                         (split ? partialBytes : group * kHeadDim * 2.0));
      }
    }
  if (split)
    for (int64_t l : lengths) {
      int64_t pieces = std::max<int64_t>(1, (l + lo * kPage - 1) / (lo * kPage));
      for (int64_t h = 0; h < kQHeads; ++h)
        merge.push_back(pieces * (kHeadDim + 1) * 4.0 + kHeadDim * 2.0 + 4);
    }
  return {decode, merge};
}

} // namespace

int main(int argc, char **argv) {
  // Every return destroys the host engines before static destruction.
  kvir::test::gpu::GpuKernelCacheScope kernelCacheScope;
  std::vector<Shape> shapes;
  {
    std::vector<int64_t> skewed(32, 64);
    skewed[0] = 16384;
    shapes = {{"uniform 64 x 1024", std::vector<int64_t>(64, 1024)},
              {"skewed 1 x 16384 + 31 x 64", skewed},
              {"single 1 x 32768", {32768}},
              {"256 x 512", std::vector<int64_t>(256, 512)}};
  }
  std::vector<std::string> only;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--shapes" && i + 1 < argc) {
      for (llvm::StringRef s : llvm::split(argv[++i], ','))
        only.push_back(s.str());
    } else {
      std::fprintf(stderr, "usage: %s [--shapes uniform,skewed,single,256]\n",
                   argv[0]);
      return 2;
    }
  }
  int64_t group = kQHeads / kKvHeads;
  std::printf("Decode load balance on sm_90a (H100 SXM: 132 SMs, 3.35 TB/s): "
              "Hq %lld, Hkv %lld, head_dim %lld, f16, NHD pages of %lld.\n\n",
              (long long)kQHeads, (long long)kKvHeads, (long long)kHeadDim,
              (long long)kPage);
  std::printf("| batch | plan | blocks | bytes / ideal | largest block / mean "
              "| est. time / floor | in flight per SM | loop instr / token "
              "| max rel err |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  Toolbox tools(argv[0], /*usePtxas=*/false);
  bool allOk = true;
  for (const Shape &shape : shapes) {
    if (!only.empty() &&
        std::none_of(only.begin(), only.end(), [&](const std::string &o) {
          return shape.name.find(o) != std::string::npos;
        }))
      continue;
    int64_t batch = shape.lengths.size();
    CacheSpec spec;
    spec.pageSize = kPage;
    spec.kvHeads = kKvHeads;
    spec.headDim = spec.headDimV = kHeadDim;
    spec.dtype = DType::F16;
    spec.layout = Layout::NHD;
    spec.storage = Storage::Combined;
    spec.table = Table::CSR;
    Rng rng(4242 + batch);
    PagedCache cache = makeCache(spec, shape.lengths, rng);
    Tensor q = randomTensor(rng, DType::F16, {batch, kQHeads, kHeadDim}, 2.0);
    StateBuffers out = makeStateBuffers(batch, kQHeads, kHeadDim, DType::F16);
    KernelSource src("batch_decode");
    std::string kvType;
    std::string kv = emitPagedView(src, cache, "kv", kvType);
    std::string qs = src.addMemref("q", q);
    std::string stateType =
        stateTypeText(kQHeads, kHeadDim, DType::F16, Base::Two);
    src.addLine("%s = kv.decode " + qs + ", " + kv + " : " + src.typeOf(qs) +
                ", " + kvType + " -> " + stateType);
    emitStore(src, "%s", stateType, out);
    ref::AttentionParams params;
    params.base = Base::Two;
    ref::State expected = ref::decode(q, ref::PagedSource(cache), params);

    RunResult result;
    ::testing::AssertionResult ran =
        runGpu(src, {out.o, out.lse}, "sm_90a", {"kv.decode"}, result);
    if (!ran) {
      std::fprintf(stderr, "%s\n", ran.message());
      return 1;
    }
    for (const std::string &r : result.reports) {
      allOk = false;
      std::fprintf(stderr, "%s\n", r.c_str());
    }
    double kvBytes = 0;
    for (int64_t l : shape.lengths)
      kvBytes += double(l) * kKvHeads * 2 * kHeadDim * 2;
    double ideal = kvBytes + 2.0 * batch * kQHeads * kHeadDim * 2 +
                   batch * kQHeads * 4.0;
    double bytes = 0, seconds = 0, largest = 0, mean = 0;
    int64_t blocks = 0, decodeBlocks = 0;
    for (const auto &l : result.launches) {
      bytes += globalBytesLoaded(l) + globalBytesStored(l);
      std::vector<double> perBlock;
      for (const auto &w : l.blocks)
        perBlock.push_back(double(w.globalBytes));
      seconds += launchSeconds(perBlock);
      blocks += perBlock.size();
      if (l.kernel.rfind("decode_", 0) == 0) {
        decodeBlocks = perBlock.size();
        double sum = 0;
        for (double b : perBlock) {
          sum += b;
          largest = std::max(largest, b);
        }
        mean = sum / std::max<size_t>(1, perBlock.size());
      }
    }
    double rel = maxRelativeError(out, expected);
    allOk &= rel <= outputTolerance(DType::F16);
    double floor = ideal / kRoof;
    // A block keeps stages - 1 K/V tiles in flight (its ring, from the
    // plan's configuration); an SM runs min(resident, blocks / SMs) blocks
    // at once, resident from TargetInfo at the 72 registers ptxas gives
    // these kernels on sm_90a (bench/RESULTS.md decode table).
    double perSm = 0, tileBytes = 0;
    std::string perToken = "?";
    for (kvir::kvgpu::LaunchPlanAttr plan :
         result.kernel->summary().plans) {
      auto config =
          llvm::dyn_cast_or_null<kvir::kvgpu::DecodeConfigAttr>(plan.getConfig());
      if (!config)
        continue;
      tileBytes = 2.0 * config.getTileTokens() * config.getThreadsX() *
                  config.getVector() * 2 * (config.getStages() - 1);
      for (kvir::kvgpu::KernelLaunchAttr k : plan.getKernels()) {
        if (k.getRole() != "split")
          continue;
        int64_t threads = 1;
        for (int64_t d : k.getBlock())
          threads *= d;
        int64_t resident =
            kvir::target::TargetInfo::lookup("sm_90a")->residentBlocks(
                threads, 72, k.getStaticSharedBytes());
        perSm = std::min<double>(
            resident, std::ceil(double(decodeBlocks) / kSms));
        // The split kernel's tile loop: PTX statements (all paths) x warps
        // / tile tokens, per token per KV head.
        Toolbox::Compiled compiled = tools.compile(src.text(), "sm_90a");
        if (std::optional<LoopStatements> loop = hotLoopStatements(
                compiled.ptx, k.getKernel().getLeafReference().str(),
                "cp.async.wait_group " +
                    std::to_string(config.getStages() - 2) + ";")) {
          char buf[32];
          std::snprintf(buf, sizeof(buf), "%.1f",
                        double(loop->statements) * double(threads / 32) /
                            double(config.getTileTokens()));
          perToken = buf;
        }
      }
    }
    std::printf("| %s | kvir | %lld | %.3f | %.2f | %.2f | %.0f KB | %s | "
                "%.1e%s |\n",
                shape.name.c_str(), (long long)blocks, bytes / ideal,
                largest / mean, seconds / floor, perSm * tileBytes / 1024,
                perToken.c_str(), rel,
                rel <= outputTolerance(DType::F16) ? "" : " **FAIL**");
    auto [fiDecode, fiMerge] = flashInferBlocks(shape.lengths, group);
    double fiBytes = 0, fiDecodeBytes = 0, fiLargest = 0;
    for (double b : fiDecode) {
      fiDecodeBytes += b;
      fiLargest = std::max(fiLargest, b);
    }
    fiBytes = fiDecodeBytes;
    for (double b : fiMerge)
      fiBytes += b;
    double fiSeconds = launchSeconds(fiDecode) +
                       (fiMerge.empty() ? 0.0 : launchSeconds(fiMerge));
    std::printf("| | FlashInfer plan (model) | %zu | %.3f | %.2f | %.2f | | "
                "161 (FlashInfer's) | |\n",
                fiDecode.size() + fiMerge.size(), fiBytes / ideal,
                fiLargest / (fiDecodeBytes / std::max<size_t>(1, fiDecode.size())),
                fiSeconds / floor);
    std::fflush(stdout);
  }
  return allOk ? 0 : 1;
}
