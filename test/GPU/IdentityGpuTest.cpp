//===- IdentityGpuTest.cpp - Kernels differ in everything that changes them ===//
//
// A kernel's symbol covers everything that changes its code. Each case puts
// two kv.decode ops into one function that differ in exactly one thing --
// the LSE base, the soft cap, the window, sm_scale, the layout map (same
// pool type, NHD against HND), the output dtype, the configuration -- and
// checks that they launch different kernels and that each result matches
// the float64 reference (the bug this guards against: two decodes differing
// only in their LSE base shared one kernel, and the second returned the
// first's base). The chip is covered by compiling one function for two
// chips. On-the-fly RoPE has no decode kernel yet, so it cannot be paired.
//
//===----------------------------------------------------------------------===//
#include "GpuHarness.h"

#include "TestUtil.h"

#include <set>

using namespace kvir::test;
using namespace kvir::test::gpu;

namespace {

/// One decode of a pair: its cache, parameters, output type and config.
struct Variant {
  CacheSpec spec;
  ref::AttentionParams params;
  DType outType = DType::F16;
  std::string config; // a #kvgpu.decode, or "" for kv-tile's choice
};

std::string withConfig(std::string attrs, const std::string &config) {
  if (config.empty())
    return attrs;
  std::string entry = "kvgpu.config = " + config;
  if (attrs.empty())
    return "{" + entry + "}";
  return attrs.substr(0, attrs.size() - 1) + ", " + entry + "}";
}

/// Both decodes of `pair` in one function over a batch of 4 (the split
/// path on every chip): distinct decode kernels, both results right.
void runPair(const Variant &a, const Variant &b, int64_t qHeads,
             uint64_t seed, const std::string &chip = "sm_90a",
             std::vector<std::string> *decodeKernels = nullptr) {
  Rng rng(seed);
  std::vector<int64_t> kvLens = randomLengths(rng, 4, 90);
  KernelSource src;
  std::vector<Tensor> outputs;
  std::vector<std::pair<StateBuffers, ref::State>> checks;
  for (auto [i, v] : llvm::enumerate(std::vector<Variant>{a, b})) {
    std::string tag = i ? "b" : "a";
    PagedCache cache = makeCache(v.spec, kvLens, rng);
    Tensor q = randomTensor(rng, v.spec.dtype, {4, qHeads, v.spec.headDim}, 2.0);
    StateBuffers out = makeStateBuffers(4, qHeads, v.spec.headDimV, v.outType);
    std::string kvType;
    std::string kv = emitPagedView(src, cache, "kv_" + tag, kvType);
    std::string qs = src.addMemref("q_" + tag, q);
    std::string stateType =
        stateTypeText(qHeads, v.spec.headDimV, v.outType, v.params.base);
    src.addLine("%s_" + tag + " = kv.decode " + qs + ", " + kv + " " +
                withConfig(attentionAttrs(v.params, false), v.config) + " : " +
                src.typeOf(qs) + ", " + kvType + " -> " + stateType);
    std::string o = src.addMemref("out_" + tag, out.o);
    std::string l = src.addMemref("lse_" + tag, out.lse);
    src.addLine("kv.store_state %s_" + tag + ", " + o + ", " + l + " : " +
                stateType + ", " + src.typeOf(o) + ", " + src.typeOf(l));
    outputs.insert(outputs.end(), {out.o, out.lse});
    checks.push_back(
        {out, ref::decode(q, ref::PagedSource(cache), asKernelSees(v.params))});
  }
  RunResult result;
  ASSERT_TRUE(runGpu(src, outputs, chip, {"kv.decode"}, result));
  EXPECT_TRUE(noReports(result));
  std::set<std::string> decodes;
  for (const std::string &name : result.kernelNames())
    if (name.rfind("decode_", 0) == 0)
      decodes.insert(name);
  EXPECT_EQ(decodes.size(), 2u) << "the two decodes share a kernel:\n"
                                << result.describeLaunches();
  for (auto &[out, expected] : checks)
    EXPECT_TRUE(check(compareGpuState(out, expected,
                                      out.o.dtype())));
  if (decodeKernels)
    decodeKernels->assign(decodes.begin(), decodes.end());
}

Variant base() {
  Variant v;
  v.spec = makeSpec(16, 2, 64, DType::F16, Layout::NHD, Storage::Combined,
                    Table::CSR);
  return v;
}

TEST(KernelIdentity, LseBase) {
  Variant a = base(), b = base();
  b.params.base = Base::Two;
  runPair(a, b, 8, 2001);
}

TEST(KernelIdentity, SoftCap) {
  Variant a = base(), b = base();
  b.params.softCap = 4.0;
  runPair(a, b, 8, 2002);
}

TEST(KernelIdentity, Window) {
  Variant a = base(), b = base();
  b.params.windowLeft = 16;
  runPair(a, b, 8, 2003);
}

TEST(KernelIdentity, SmScale) {
  Variant a = base(), b = base();
  b.params.smScale = 0.05;
  runPair(a, b, 8, 2004);
}

TEST(KernelIdentity, LayoutMap) {
  // Page size == KV heads: NHD and HND pools have the same memref type, so
  // only the layout tells the kernels apart.
  Variant a = base(), b = base();
  a.spec = makeSpec(4, 4, 64, DType::F16, Layout::NHD, Storage::Combined,
                    Table::CSR);
  b.spec = makeSpec(4, 4, 64, DType::F16, Layout::HND, Storage::Combined,
                    Table::CSR);
  runPair(a, b, 8, 2005);
}

TEST(KernelIdentity, OutputDtype) {
  Variant a = base(), b = base();
  b.outType = DType::F32;
  runPair(a, b, 8, 2006);
}

TEST(KernelIdentity, KvDtype) {
  Variant a = base(), b = base();
  b.spec.dtype = DType::BF16;
  b.outType = DType::BF16;
  runPair(a, b, 8, 2007);
}

TEST(KernelIdentity, Config) {
  Variant a = base(), b = base();
  a.config = "#kvgpu.decode<vector = 8, threads_x = 8, threads_z = 4, "
             "tile_tokens = 32, max_partitions = 32>";
  b.config = "#kvgpu.decode<vector = 8, threads_x = 8, threads_z = 8, "
             "tile_tokens = 16, max_partitions = 32>";
  runPair(a, b, 8, 2008);
}

TEST(KernelIdentity, Chip) {
  Variant a = base(), b = base();
  b.params.base = Base::Two;
  std::vector<std::string> onHopper, onAmpere;
  runPair(a, b, 8, 2009, "sm_90a", &onHopper);
  runPair(a, b, 8, 2009, "sm_80", &onAmpere);
  for (const std::string &name : onHopper)
    EXPECT_EQ(std::count(onAmpere.begin(), onAmpere.end(), name), 0)
        << name << " is built for both chips";
}

} // namespace
