//===- IdentityGpuTest.cpp - Kernels differ in everything that changes them ===//
//
// A kernel's symbol covers everything that changes its code. Each case puts
// two kv.decode (or two kv.prefill) ops into one function that differ in
// exactly one thing -- for prefill also causal, the custom mask's kind --
// the LSE base, the soft cap, the window, RoPE (style, theta, rotary_dim,
// Llama 3.1's scaling), sm_scale, the layout map (same pool type, NHD
// against HND), the output dtype, the configuration -- and checks that
// they launch different kernels and that each result matches the float64
// reference (the bug this guards against: two decodes differing only in
// their LSE base shared one kernel, and the second returned the first's
// base). The chip is covered by compiling one function for two chips.
//
//===----------------------------------------------------------------------===//
#include "GpuHarness.h"

#include "TestUtil.h"

#include <memory>
#include <set>

using namespace kvir::test;
using namespace kvir::test::gpu;

namespace {

/// One op of a pair: its cache, parameters, output type and config.
struct Variant {
  CacheSpec spec;
  ref::AttentionParams params;
  DType outType = DType::F16;
  std::string config; // a #kvgpu.decode / prefill, or "" for kv-tile's choice
  /// A kv.prefill (query rows {5, 9, 2, 17} over the batch) with an
  /// optional custom mask, instead of a kv.decode.
  bool prefill = false;
  MaskKind mask = MaskKind::None;
  /// Sinks and slopes come from params; regions and captures here.
  VariantSource variants;
};

/// Both ops of `pair` in one function over a batch of 4 (the split path on
/// every chip): distinct kernels, both results right.
void runPair(const Variant &a, const Variant &b, int64_t qHeads,
             uint64_t seed, const std::string &chip = "sm_90a",
             std::vector<std::string> *decodeKernels = nullptr) {
  Rng rng(seed);
  std::vector<int64_t> kvLens = randomLengths(rng, 4, 90);
  std::vector<int64_t> qoLens{5, 9, 2, 17};
  for (int64_t i = 0; i < 4; ++i)
    kvLens[i] = std::max(kvLens[i], qoLens[i]); // causal needs kv >= qo
  std::vector<int32_t> qoIndptr = indptrOf(qoLens);
  std::string op = a.prefill ? "kv.prefill" : "kv.decode";
  std::string stem = a.prefill ? "prefill_" : "decode_";
  KernelSource src;
  std::vector<Tensor> outputs;
  std::vector<std::pair<StateBuffers, ref::State>> checks;
  std::vector<std::shared_ptr<Tensor>> masks;
  for (auto [i, v] : llvm::enumerate(std::vector<Variant>{a, b})) {
    std::string tag = i ? "b" : "a";
    PagedCache cache = makeCache(v.spec, kvLens, rng);
    int64_t rows = v.prefill ? qoIndptr.back() : 4;
    Tensor q =
        randomTensor(rng, v.spec.dtype, {rows, qHeads, v.spec.headDim}, 2.0);
    StateBuffers out =
        makeStateBuffers(rows, qHeads, v.spec.headDimV, v.outType);
    std::string kvType;
    std::string kv = emitPagedView(src, cache, "kv_" + tag, kvType);
    std::string qs = src.addMemref("q_" + tag, q);
    std::string stateType =
        stateTypeText(qHeads, v.spec.headDimV, v.outType, v.params.base);
    std::string attrs = withConfig(
        attentionAttrs(v.params, v.prefill, v.variants.standardAlibi),
        v.config);
    std::string clauses = emitVariants(src, v.params, v.variants);
    auto mask = std::make_shared<Tensor>();
    if (v.prefill) {
      std::string qo = src.addMemref("qo_" + tag, makeI32(qoIndptr));
      std::string maskClause;
      if (v.mask != MaskKind::None) {
        *mask = randomMask(rng, qoLens, kvLens, v.mask == MaskKind::Packed);
        std::string ms = src.addMemref("mask_" + tag, *mask);
        maskClause = " mask(" + ms + " : " + src.typeOf(ms) + ")";
      }
      src.addLine("%s_" + tag + " = kv.prefill " + qs + ", " + qo + ", " +
                  kv + maskClause + clauses + " " + attrs + " : " +
                  src.typeOf(qs) +
                  ", " + src.typeOf(qo) + ", " + kvType + " -> " + stateType);
    } else {
      src.addLine("%s_" + tag + " = kv.decode " + qs + ", " + kv + clauses +
                  " " + attrs + " : " + src.typeOf(qs) + ", " + kvType +
                  " -> " + stateType);
    }
    std::string o = src.addMemref("out_" + tag, out.o);
    std::string l = src.addMemref("lse_" + tag, out.lse);
    src.addLine("kv.store_state %s_" + tag + ", " + o + ", " + l + " : " +
                stateType + ", " + src.typeOf(o) + ", " + src.typeOf(l));
    outputs.insert(outputs.end(), {out.o, out.lse});
    ref::AttentionParams params = asKernelSees(v.params);
    if (v.mask != MaskKind::None)
      params.mask = mask.get();
    checks.push_back(
        {out, v.prefill ? ref::attention(q, qoIndptr, ref::PagedSource(cache),
                                         params)
                        : ref::decode(q, ref::PagedSource(cache), params)});
    masks.push_back(mask);
  }
  RunResult result;
  ASSERT_TRUE(runGpu(src, outputs, chip, {op}, result));
  EXPECT_TRUE(noReports(result));
  std::set<std::string> decodes;
  for (const std::string &name : result.kernelNames())
    if (name.rfind(stem, 0) == 0)
      decodes.insert(name);
  EXPECT_EQ(decodes.size(), 2u) << "the two ops share a kernel:\n"
                                << result.describeLaunches();
  for (auto &[out, expected] : checks) {
    // Tensor-core kernels round P to the KV type.
    DType precision = out.o.dtype() == DType::F32 && a.prefill
                          ? a.spec.dtype
                          : out.o.dtype();
    EXPECT_TRUE(check(compareGpuState(out, expected, precision)));
  }
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

TEST(KernelIdentity, Rope) {
  // Style, rotary_dim and Llama 3.1's scaling each change the kernel.
  Variant a = base(), b = base(), c = base();
  a.params.rope = ref::Rope{ref::RopeStyle::RotateHalf, 1e4, 1.0};
  b.params.rope = a.params.rope;
  b.params.rope->rotaryDim = 32;
  runPair(a, b, 8, 2005);
  c.params.rope = llama31Rope(ref::RopeStyle::RotateHalf, 0);
  Variant d = c;
  d.params.rope->style = ref::RopeStyle::Interleave;
  runPair(c, d, 8, 2006);
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
             "tile_tokens = 32, stages = 3, max_partitions = 32>";
  b.config = "#kvgpu.decode<vector = 8, threads_x = 8, threads_z = 8, "
             "tile_tokens = 16, stages = 3, max_partitions = 32>";
  runPair(a, b, 8, 2008);
}

// Variants: sinks, and regions that differ in an op, or only in which
// values from above they read (one table read twice is one kernel
// parameter, two tables of the same type two).
TEST(KernelIdentity, Sinks) {
  Variant a = base(), b = base();
  Rng rng(2010);
  b.params.sinks = randomPerHead(rng, 8, -1.0, 3.0);
  runPair(a, b, 8, 2010);
}

TEST(KernelIdentity, ScoreModRegion) {
  Variant a = base(), b = base();
  Rng rng(2011);
  std::vector<double> t = randomPerHead(rng, 8, 0.5, 1.5);
  Tensor table = f32Vector(t);
  for (Variant *v : {&a, &b}) {
    bool add = v == &b;
    // (Arguments are named after their captures: one name per op.)
    std::string name = add ? "tb" : "ta";
    v->variants.captures = {{name, table}};
    v->variants.scoreMod =
        "^bb0(%s: f32, %b: index, %h: index, %p: index, %j: index):\n"
        "  %x = memref.load $" + name + "[%h] : memref<8xf32>\n  %r = " +
        (add ? "arith.addf" : "arith.mulf") +
        " %s, %x : f32\n  kv.yield %r : f32";
    v->params.scoreMod = [t, add](double s, int64_t, int64_t h, int64_t,
                                  int64_t) {
      double x = double(float(t[h]));
      return add ? s + x : s * x;
    };
  }
  runPair(a, b, 8, 2011);
}

TEST(KernelIdentity, RegionCaptures) {
  Variant a = base(), b = base();
  Rng rng(2012);
  auto levels = [&] {
    std::vector<int32_t> v;
    Tensor t(DType::I32, {128});
    for (int64_t i = 0; i < 128; ++i) {
      v.push_back(int32_t(rng.integer(0, 3)));
      t.set({i}, v.back());
    }
    return std::make_pair(v, t);
  };
  auto [keyLevel, keyTable] = levels();
  auto [rowLevel, rowTable] = levels();
  auto region = [](const std::string &keys, const std::string &rows) {
    return "^bb0(%b: index, %h: index, %p: index, %j: index):\n"
           "  %x = memref.load $" + keys + "[%j] : memref<128xi32>\n"
           "  %y = memref.load $" + rows + "[%p] : memref<128xi32>\n"
           "  %v = arith.cmpi ule, %x, %y : i32\n"
           "  kv.yield %v : i1";
  };
  // a reads its one table twice; b reads a second one for the rows.
  a.variants.captures = {{"ka", keyTable}};
  a.variants.maskMod = region("ka", "ka");
  a.params.maskMod = [keyLevel = keyLevel](int64_t, int64_t, int64_t p,
                                           int64_t j) {
    return keyLevel[j] <= keyLevel[p];
  };
  b.variants.captures = {{"kb", keyTable}, {"rb", rowTable}};
  b.variants.maskMod = region("kb", "rb");
  b.params.maskMod = [keyLevel = keyLevel, rowLevel = rowLevel](
                         int64_t, int64_t, int64_t p, int64_t j) {
    return keyLevel[j] <= rowLevel[p];
  };
  runPair(a, b, 8, 2012);
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

Variant prefillBase() {
  Variant v = base();
  v.prefill = true;
  v.params.causal = true;
  return v;
}

TEST(KernelIdentity, PrefillCausal) {
  Variant a = prefillBase(), b = prefillBase();
  b.params.causal = false;
  runPair(a, b, 8, 2101);
}

TEST(KernelIdentity, PrefillMaskKind) {
  // Same shapes and attributes; one mask of bools, one bit-packed.
  Variant a = prefillBase(), b = prefillBase();
  a.mask = MaskKind::Bool;
  b.mask = MaskKind::Packed;
  runPair(a, b, 8, 2102);
}

TEST(KernelIdentity, PrefillWindowAndBase) {
  Variant a = prefillBase(), b = prefillBase();
  b.params.windowLeft = 3;
  runPair(a, b, 8, 2103);
  Variant c = prefillBase();
  c.params.base = Base::Two;
  runPair(a, c, 8, 2104);
}

TEST(KernelIdentity, PrefillSoftCapAndScale) {
  Variant a = prefillBase(), b = prefillBase();
  b.params.softCap = 4.0;
  runPair(a, b, 8, 2105);
  Variant c = prefillBase();
  c.params.smScale = 0.05;
  runPair(a, c, 8, 2106);
}

TEST(KernelIdentity, PrefillRope) {
  Variant a = prefillBase(), b = prefillBase();
  a.params.rope = ref::Rope{ref::RopeStyle::Interleave, 1e4, 1.0};
  b.params.rope = ref::Rope{ref::RopeStyle::Interleave, 5e5, 1.0};
  runPair(a, b, 8, 2108);
}

TEST(KernelIdentity, PrefillConfigAndOutput) {
  Variant a = prefillBase(), b = prefillBase();
  b.config = "#kvgpu.prefill<q_tile = 64, kv_tile = 32, warps = 4, "
             "stages = 2, q_in_registers = false, max_partitions = 16>";
  runPair(a, b, 8, 2107);
  Variant c = prefillBase();
  c.outType = DType::F32;
  runPair(a, c, 8, 2108);
}

} // namespace
