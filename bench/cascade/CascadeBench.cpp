//===- CascadeBench.cpp - Global KV traffic of a cascade vs flat decode ---===//
//
// kvir-cascade-bench: a decode step of R requests (one query row each) that
// share a P-token prefix and own U tokens each (default 64 x (16384 + 256),
// FlashInfer's shared-prefix serving case), run in the emulator for sm_90a
// two ways over the same pool:
//
//   * cascade: kv.cascade with level 0 one request holding all R rows over
//     the prefix pages, level 1 the R requests over their own pages
//     (per-level tensor-core prefills and a merge kernel);
//   * flat: kv.decode of the R requests, each page table listing the prefix
//     pages then its own (the decode kernels read the prefix once per
//     request).
//
// Reports each launch's global bytes loaded (the emulator's counters), the
// total per way, the saving (flat / cascade), and both against the ideal
// (every KV byte once: P + R x U tokens), and checks both outputs against
// the float64 reference (attention over each request's prefix + own keys).
// Head dim 128, f16, NHD pages of 16, Hq 4 over Hkv 1 by default (bytes
// scale with KV heads, the ratios do not; the GQA group sets how many query
// tiles read the prefix). Not run by the tests.
//
//   kvir-cascade-bench [--requests R] [--prefix P] [--unique U] [--kv-heads H]
//                      [--group G] [--window W]
//
// With a window (window_left = W), positions are those of the concatenated
// levels: the cascade computes each shared row's position first
// (kv.cascade_positions) and its shared level masks per row.
//
//===----------------------------------------------------------------------===//
#include "BenchSupport.h"
#include "GpuHarness.h"

#include "Harness/Harness.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace kvir::test;
using namespace kvir::test::gpu;
using namespace kvir::bench;
namespace ref = kvir::ref;

namespace {

constexpr int64_t kHeadDim = 128, kPage = 16;

/// One CSR cache over `levels`' pool whose request r lists level 0's pages
/// (a whole number of pages) and then level 1's request r.
PagedCache flatten(const PagedCache &prefix, const PagedCache &own) {
  std::vector<int32_t> prefixPages = toI32Vector(prefix.tables[1]);
  int64_t prefixCount = toI32Vector(prefix.tables[0])[1];
  prefixPages.resize(prefixCount);
  std::vector<int32_t> indptr = toI32Vector(own.tables[0]),
                       indices = toI32Vector(own.tables[1]),
                       last = toI32Vector(own.tables[2]);
  std::vector<int32_t> flatIndptr{0}, flatIndices;
  for (size_t r = 0; r + 1 < indptr.size(); ++r) {
    flatIndices.insert(flatIndices.end(), prefixPages.begin(),
                       prefixPages.end());
    flatIndices.insert(flatIndices.end(), indices.begin() + indptr[r],
                       indices.begin() + indptr[r + 1]);
    flatIndptr.push_back(flatIndices.size());
  }
  PagedCache flat = own;
  flat.tables = {makeI32(flatIndptr), makeI32(flatIndices), makeI32(last)};
  return flat;
}

struct Way {
  std::string name;
  RunResult result;
  double relErr = 0;
};

double loadedBytes(const RunResult &result) {
  double total = 0;
  for (const auto &l : result.launches)
    total += globalBytesLoaded(l);
  return total;
}

void printWay(const Way &way, double ideal) {
  for (const auto &l : way.result.launches)
    std::printf("| %s | `%s` | %lld | %.1f MB |\n", way.name.c_str(),
                l.kernel.c_str(), (long long)(l.grid.x * l.grid.y * l.grid.z),
                globalBytesLoaded(l) / 1e6);
  double total = loadedBytes(way.result);
  std::printf("| %s | total (%.2fx ideal, max rel err %.1e) | | %.1f MB |\n",
              way.name.c_str(), total / ideal, way.relErr, total / 1e6);
}

} // namespace

int main(int argc, char **argv) {
  // Every return destroys the host engines before static destruction.
  kvir::test::gpu::GpuKernelCacheScope kernelCacheScope;
  int64_t requests = 64, prefix = 16384, unique = 256, kvHeads = 1, group = 4,
          window = -1;
  for (int i = 1; i + 1 < argc; i += 2) {
    int64_t v = std::strtoll(argv[i + 1], nullptr, 10);
    if (!std::strcmp(argv[i], "--requests"))
      requests = v;
    else if (!std::strcmp(argv[i], "--prefix"))
      prefix = v;
    else if (!std::strcmp(argv[i], "--unique"))
      unique = v;
    else if (!std::strcmp(argv[i], "--kv-heads"))
      kvHeads = v;
    else if (!std::strcmp(argv[i], "--group"))
      group = v;
    else if (!std::strcmp(argv[i], "--window"))
      window = v;
    else
      argc = -1;
  }
  if (argc < 0 || prefix % kPage || requests < 1) {
    std::fprintf(stderr,
                 "usage: %s [--requests R] [--prefix P (a multiple of %lld)] "
                 "[--unique U] [--kv-heads H] [--group G] [--window W]\n",
                 argv[0], (long long)kPage);
    return 2;
  }
  int64_t qHeads = group * kvHeads;
  CacheSpec spec;
  spec.pageSize = kPage;
  spec.kvHeads = kvHeads;
  spec.headDim = spec.headDimV = kHeadDim;
  spec.dtype = DType::F16;
  Rng rng(2026);
  std::vector<std::vector<int64_t>> kvLens{
      {prefix}, std::vector<int64_t>(requests, unique)};
  std::vector<std::vector<int64_t>> qoLens{
      {requests}, std::vector<int64_t>(requests, 1)};
  std::vector<PagedCache> levels = makeCascadeCaches(spec, kvLens, rng);
  PagedCache flat = flatten(levels[0], levels[1]);
  Tensor q = randomTensor(rng, DType::F16, {requests, qHeads, kHeadDim}, 2.0);
  std::string stateType =
      stateTypeText(qHeads, kHeadDim, DType::F16, Base::Two);
  ref::AttentionParams params;
  params.base = Base::Two;
  if (window >= 0)
    params.windowLeft = window;
  ref::State expected = ref::decode(q, ref::PagedSource(flat), params);

  Way cascade{"cascade", {}, 0}, decode{"flat decode", {}, 0};
  {
    KernelSource src("cascade_decode");
    std::string qs = src.addMemref("q", q);
    emitCascade(src, qs, levels, qoLens, params, stateType);
    StateBuffers out = makeStateBuffers(requests, qHeads, kHeadDim, DType::F16);
    emitStore(src, "%s", stateType, out);
    ::testing::AssertionResult ran =
        runGpu(src, {out.o, out.lse}, "sm_90a",
               {"kv.cascade", "kv.cascade_positions", "kv.prefill",
                "kv.merge"},
               cascade.result);
    if (!ran) {
      std::fprintf(stderr, "%s\n", ran.message());
      return 1;
    }
    cascade.relErr = maxRelativeError(out, expected);
  }
  {
    KernelSource src("flat_decode");
    std::string kvType;
    std::string kv = emitPagedView(src, flat, "kv", kvType);
    std::string qs = src.addMemref("q", q);
    src.addLine("%s = kv.decode " + qs + ", " + kv + " " +
                attentionAttrs(params) + " : " + src.typeOf(qs) + ", " +
                kvType + " -> " + stateType);
    StateBuffers out = makeStateBuffers(requests, qHeads, kHeadDim, DType::F16);
    emitStore(src, "%s", stateType, out);
    ::testing::AssertionResult ran = runGpu(src, {out.o, out.lse}, "sm_90a",
                                            {"kv.decode"}, decode.result);
    if (!ran) {
      std::fprintf(stderr, "%s\n", ran.message());
      return 1;
    }
    decode.relErr = maxRelativeError(out, expected);
  }

  double tokenBytes = 2.0 * kvHeads * kHeadDim * 2;
  double ideal = (prefix + double(requests) * unique) * tokenBytes;
  std::printf("Cascade vs flat decode on sm_90a: %lld requests sharing a "
              "%lld-token prefix, %lld own tokens each; Hq %lld over Hkv "
              "%lld, head_dim %lld, f16, NHD pages of %lld, window_left "
              "%lld. Ideal KV bytes (each once): %.1f MB.\n\n",
              (long long)requests, (long long)prefix, (long long)unique,
              (long long)qHeads, (long long)kvHeads, (long long)kHeadDim,
              (long long)kPage, (long long)window, ideal / 1e6);
  std::printf("| way | launch | blocks | global bytes loaded |\n");
  std::printf("|---|---|---|---|\n");
  printWay(cascade, ideal);
  printWay(decode, ideal);
  std::printf("\nflat decode / cascade global bytes loaded: %.1fx\n",
              loadedBytes(decode.result) / loadedBytes(cascade.result));
  bool ok = cascade.relErr <= outputTolerance(DType::F16) &&
            decode.relErr <= outputTolerance(DType::F16) &&
            cascade.result.reports.empty() && decode.result.reports.empty();
  for (const std::string &r : cascade.result.reports)
    std::fprintf(stderr, "%s\n", r.c_str());
  for (const std::string &r : decode.result.reports)
    std::fprintf(stderr, "%s\n", r.c_str());
  return ok ? 0 : 1;
}
