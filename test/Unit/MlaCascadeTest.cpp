//===- MlaCascadeTest.cpp - kv.mla_decode and kv.cascade -------------------===//
//
// MLA: ckv 512 + kpe 64, page size 64 (FlashMLA's), separate pools or slices
// of one 576-wide pool, f16/bf16/fp8. Cascade: 2 and 3 levels whose page
// tables index one shared pool, causal on the last level only.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"

using namespace kvir::test;

namespace {

struct MlaParams {
  DType dtype = DType::F16;
  Table table = Table::CSR;
  int64_t pageSize = 64;
  bool sharedPool = false;
  Quant quant = Quant::None;
  std::optional<double> smScale;
  Base base = Base::E;
  int64_t heads = 8;
  int64_t maxLen = 100;
  uint64_t seed = 1;
};

void runMla(const MlaParams &m) {
  CacheSpec spec = makeSpec(m.pageSize, 1, 512, m.dtype, Layout::NHD,
                            Storage::MLA, m.table);
  spec.peDim = 64;
  spec.quant = m.quant;
  SCOPED_TRACE(describe(spec));
  Rng rng(m.seed);
  const int64_t batch = 4;
  for (int rep = 0; rep < 2; ++rep) {
    std::vector<int64_t> kvLens = randomLengths(rng, batch, m.maxLen);
    CacheOptions options;
    options.mlaSharedPool = m.sharedPool;
    options.kScale = 0.125f;
    PagedCache cache = makeCache(spec, kvLens, rng, options);
    Tensor qNope = randomTensor(rng, m.dtype, {batch, m.heads, 512}, 0.5);
    Tensor qPe = randomTensor(rng, m.dtype, {batch, m.heads, 64}, 2.0);
    StateBuffers out = makeStateBuffers(batch, m.heads, 512, m.dtype);

    KernelSource src;
    std::string kvType;
    std::string kv = emitPagedView(src, cache, "kv", kvType);
    std::string qn = src.addMemref("q_nope", qNope);
    std::string qp = src.addMemref("q_pe", qPe);
    std::string stateType = stateTypeText(m.heads, 512, m.dtype, m.base);
    ref::AttentionParams attrs;
    attrs.smScale = m.smScale;
    src.addLine("%s = kv.mla_decode " + qn + ", " + qp + ", " + kv + " " +
                attentionAttrs(attrs) + " : " + src.typeOf(qn) + ", " +
                src.typeOf(qp) + ", " + kvType + " -> " + stateType);
    emitStore(src, "%s", stateType, out);
    ASSERT_TRUE(runKernel(src, {out.o, out.lse}));
    ref::State expected = ref::mlaDecode(
        qNope, qPe, cache, asKernelSees(attrs).smScale, m.base);
    EXPECT_TRUE(check(compareState(out, expected, m.dtype)));
  }
}

TEST(Mla, DecodePage64F16) {
  MlaParams m;
  m.seed = 501;
  runMla(m);
}

TEST(Mla, DecodeSharedPoolBlockTableBF16Base2) {
  MlaParams m;
  m.dtype = DType::BF16;
  m.table = Table::BlockTable;
  m.sharedPool = true;
  m.base = Base::Two;
  m.seed = 502;
  runMla(m);
}

TEST(Mla, DecodeFp8E4M3SharedPoolF16) {
  MlaParams m;
  m.quant = Quant::FP8E4M3;
  m.sharedPool = true;
  m.heads = 16;
  m.maxLen = 70;
  m.seed = 503;
  runMla(m);
}

TEST(Mla, DecodeSmScaleTokenTableF32) {
  MlaParams m;
  m.dtype = DType::F32;
  m.table = Table::TokenTable;
  m.pageSize = 16;
  m.smScale = 0.05;
  m.maxLen = 50;
  m.heads = 4;
  m.seed = 504;
  runMla(m);
}

void runCascade(int64_t levels, CacheSpec spec, bool causal, Base base,
                int64_t qHeads, uint64_t seed) {
  SCOPED_TRACE(describe(spec));
  Rng rng(seed);
  for (int rep = 0; rep < 2; ++rep) {
    int64_t prefixLen = rng.integer(8, 40), middleLen = rng.integer(5, 30);
    CascadeShape shape = randomCascadeShape(rng, levels, 5, causal, prefixLen,
                                            middleLen, /*maxLastLen=*/20);
    std::vector<PagedCache> caches =
        makeCascadeCaches(spec, shape.kvLens, rng);
    int64_t rows = shape.qoLens[0][0];
    Tensor q = randomTensor(rng, spec.dtype, {rows, qHeads, spec.headDim}, 2.0);
    StateBuffers out = makeStateBuffers(rows, qHeads, spec.headDimV, spec.dtype);

    KernelSource src;
    std::string qs = src.addMemref("q", q);
    ref::AttentionParams params;
    params.causal = causal;
    params.base = base;
    std::string stateType =
        stateTypeText(qHeads, spec.headDimV, spec.dtype, base);
    std::vector<std::vector<int32_t>> indptrs =
        emitCascade(src, qs, caches, shape.qoLens, params, stateType);
    emitStore(src, "%s", stateType, out);
    ASSERT_TRUE(runKernel(src, {out.o, out.lse}));

    std::vector<ref::PagedSource> sources;
    for (const PagedCache &c : caches)
      sources.emplace_back(c);
    std::vector<const ref::KVSource *> levelSources;
    for (const ref::PagedSource &s : sources)
      levelSources.push_back(&s);
    ref::State expected = ref::cascade(q, indptrs, levelSources, params);
    EXPECT_TRUE(check(compareState(out, expected, spec.dtype)));
  }
}

TEST(Cascade, TwoLevelsCausalF16) {
  runCascade(2, makeSpec(16, 2, 128, DType::F16), /*causal=*/true, Base::Two,
             8, 601);
}

TEST(Cascade, TwoLevelsNonCausalF32BlockTable) {
  runCascade(2,
             makeSpec(5, 1, 64, DType::F32, Layout::HND, Storage::Combined,
                      Table::BlockTable),
             /*causal=*/false, Base::E, 4, 602);
}

TEST(Cascade, ThreeLevelsCausalBF16) {
  runCascade(3, makeSpec(8, 2, 64, DType::BF16), /*causal=*/true, Base::E, 4,
             603);
}

TEST(Cascade, ThreeLevelsCausalF32TokenTableSplit) {
  runCascade(3,
             makeSpec(4, 2, 64, DType::F32, Layout::NHD, Storage::Split,
                      Table::TokenTable, 32),
             /*causal=*/true, Base::Two, 4, 604);
}

} // namespace
