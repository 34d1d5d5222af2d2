//===- MlaCascadeTest.cpp - kv.mla_decode and kv.cascade -------------------===//
//
// MLA: ckv 512 + kpe 64, page size 64 (FlashMLA's), separate pools or slices
// of one 576-wide pool, f16/bf16/fp8. Cascade: 2 and 3 levels whose page
// tables index one shared pool, causal on the last level only.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"

#include <functional>

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
  /// Several query rows per request (1, 2 or 4) through rows(qo_indptr).
  bool multiRow = false;
  bool causal = false;
  /// > 0: a random sparse selection of this many entries per query row.
  int64_t topk = 0;
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
    std::vector<int64_t> qoLens(batch, 1);
    if (m.multiRow)
      for (int64_t b = 0; b < batch; ++b) {
        const int64_t choices[] = {1, 2, 4};
        qoLens[b] = choices[rng.integer(0, 2)];
        if (m.causal)
          kvLens[b] = std::max(kvLens[b], qoLens[b]);
      }
    std::vector<int32_t> qoIndptr = indptrOf(qoLens);
    int64_t rows = qoIndptr.back();
    CacheOptions options;
    options.mlaSharedPool = m.sharedPool;
    options.kScale = 0.125f;
    PagedCache cache = makeCache(spec, kvLens, rng, options);
    Tensor qNope = randomTensor(rng, m.dtype, {rows, m.heads, 512}, 0.5);
    Tensor qPe = randomTensor(rng, m.dtype, {rows, m.heads, 64}, 2.0);
    StateBuffers out = makeStateBuffers(rows, m.heads, 512, m.dtype);

    KernelSource src;
    std::string kvType;
    std::string kv = emitPagedView(src, cache, "kv", kvType);
    std::string qn = src.addMemref("q_nope", qNope);
    std::string qp = src.addMemref("q_pe", qPe);
    std::string stateType = stateTypeText(m.heads, 512, m.dtype, m.base);
    std::string rowsClause;
    if (m.multiRow) {
      std::string qo = src.addMemref("qo_indptr", makeI32(qoIndptr));
      rowsClause = " rows(" + qo + " : " + src.typeOf(qo) + ")";
    }
    ref::AttentionParams attrs, variants;
    attrs.smScale = m.smScale;
    attrs.causal = m.causal;
    if (m.topk) {
      std::vector<int64_t> rowKvLens;
      for (int64_t b = 0; b < batch; ++b)
        rowKvLens.insert(rowKvLens.end(), qoLens[b], kvLens[b]);
      variants.topk = randomTopk(rng, rowKvLens, m.topk);
    }
    src.addLine("%s = kv.mla_decode " + qn + ", " + qp + ", " + kv +
                rowsClause + emitVariants(src, variants, {}) + " " +
                attentionAttrs(attrs) + " : " +
                src.typeOf(qn) + ", " + src.typeOf(qp) + ", " + kvType +
                " -> " + stateType);
    emitStore(src, "%s", stateType, out);
    ASSERT_TRUE(runKernel(src, {out.o, out.lse}));
    ref::State expected =
        ref::mlaDecode(qNope, qPe, cache, asKernelSees(attrs).smScale, m.base,
                       m.multiRow ? qoIndptr : std::vector<int32_t>{},
                       m.causal, variants);
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

/// Speculative decoding / chunked prefill over an MLA cache: 1, 2 or 4
/// query rows per request, causal (bottom-right) and not.
TEST(Mla, MultiRowCausalPage64BF16) {
  MlaParams m;
  m.dtype = DType::BF16;
  m.multiRow = true;
  m.causal = true;
  m.heads = 16;
  m.seed = 505;
  runMla(m);
}

TEST(Mla, MultiRowSharedPoolBlockTableF16Base2) {
  MlaParams m;
  m.table = Table::BlockTable;
  m.sharedPool = true;
  m.multiRow = true;
  m.base = Base::Two;
  m.seed = 506;
  runMla(m);
}

TEST(Mla, MultiRowCausalFp8E4M3F16) {
  MlaParams m;
  m.quant = Quant::FP8E4M3;
  m.multiRow = true;
  m.causal = true;
  m.maxLen = 70;
  m.seed = 507;
  runMla(m);
}

// DeepSeek-V3.2's sparse decode: each row sees only the keys its indexer
// picked (2048 of them there; 24 of up to 100 here), -1 entries padding
// them anywhere in the list.
TEST(Mla, TopkDecodeBF16) {
  MlaParams m;
  m.dtype = DType::BF16;
  m.heads = 16;
  m.topk = 24;
  m.seed = 517;
  runMla(m);
}

TEST(Mla, TopkMultiRowCausalBlockTableF16) {
  MlaParams m;
  m.table = Table::BlockTable;
  m.multiRow = true;
  m.causal = true;
  m.topk = 40;
  m.seed = 518;
  runMla(m);
}

/// A serving step on an MLA cache: append each request's new tokens (ckv
/// and kpe, FlashInfer's append_paged_mla_kv_cache), then attend with one
/// query row per new token, causal. The pools must hold exactly the
/// appended encodings (everything else unchanged), and the state must match
/// MLA attention over the updated cache.
void runMlaAppend(DType dtype, Table table, bool sharedPool, uint64_t seed) {
  CacheSpec spec =
      makeSpec(64, 1, 512, dtype, Layout::NHD, Storage::MLA, table);
  spec.peDim = 64;
  SCOPED_TRACE(describe(spec));
  Rng rng(seed);
  const int64_t batch = 4, heads = 16;
  std::vector<int64_t> kvLens = randomLengths(rng, batch, 150);
  kvLens[0] = 1;
  std::vector<int64_t> filled(batch), fresh(batch);
  ref::AppendInput input;
  for (int64_t b = 0; b < batch; ++b) {
    fresh[b] = kvLens[b] ? rng.integer(1, std::min<int64_t>(4, kvLens[b])) : 0;
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
  input.k = randomTensor(rng, dtype, {nnz, 1, 512});
  input.v = randomTensor(rng, dtype, {nnz, 1, 64});
  std::vector<int32_t> qoIndptr = indptrOf(fresh);
  Tensor qNope = randomTensor(rng, dtype, {nnz, heads, 512}, 0.5);
  Tensor qPe = randomTensor(rng, dtype, {nnz, heads, 64}, 2.0);
  StateBuffers out = makeStateBuffers(nnz, heads, 512, dtype);

  KernelSource src;
  std::string kvType;
  std::string kv = emitPagedView(src, cache, "kv", kvType);
  // k is the latent ckv, v the rotary kpe.
  emitAppend(src, input, kv, kvType);
  std::string qn = src.addMemref("q_nope", qNope);
  std::string qp = src.addMemref("q_pe", qPe);
  std::string qo = src.addMemref("qo_indptr", makeI32(qoIndptr));
  std::string stateType = stateTypeText(heads, 512, dtype, Base::E);
  src.addLine("%s = kv.mla_decode " + qn + ", " + qp + ", " + kv + " rows(" +
              qo + " : " + src.typeOf(qo) + ") {causal} : " + src.typeOf(qn) +
              ", " + src.typeOf(qp) + ", " + kvType + " -> " + stateType);
  emitStore(src, "%s", stateType, out);
  ASSERT_TRUE(runKernel(src, {out.o, out.lse}));

  for (const std::string &r : ref::checkAppend(before, cache, input))
    ADD_FAILURE() << r;
  ref::State expected = ref::mlaDecode(qNope, qPe, cache, std::nullopt,
                                       Base::E, qoIndptr, /*causal=*/true);
  EXPECT_TRUE(check(compareState(out, expected, dtype)));
}

TEST(MlaAppend, ThenCausalRowsCsrF16) {
  runMlaAppend(DType::F16, Table::CSR, /*sharedPool=*/false, 511);
}

TEST(MlaAppend, ThenCausalRowsSharedPoolBlockTableBF16) {
  runMlaAppend(DType::BF16, Table::BlockTable, /*sharedPool=*/true, 512);
}

void runCascade(int64_t levels, CacheSpec spec, bool causal, Base base,
                int64_t qHeads, uint64_t seed,
                std::optional<int64_t> windowLeft = std::nullopt,
                std::optional<ref::Rope> rope = std::nullopt,
                const std::function<void(Rng &, ref::AttentionParams &,
                                         VariantSource &)> &variants = {}) {
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
    params.windowLeft = windowLeft;
    params.rope = rope;
    VariantSource variantSource;
    if (variants)
      variants(rng, params, variantSource);
    std::string stateType =
        stateTypeText(qHeads, spec.headDimV, spec.dtype, base);
    std::vector<std::vector<int32_t>> indptrs = emitCascade(
        src, qs, caches, shape.qoLens, params, stateType, variantSource);
    emitStore(src, "%s", stateType, out);
    ASSERT_TRUE(runKernel(src, {out.o, out.lse}));

    std::vector<ref::PagedSource> sources;
    for (const PagedCache &c : caches)
      sources.emplace_back(c);
    std::vector<const ref::KVSource *> levelSources;
    for (const ref::PagedSource &s : sources)
      levelSources.push_back(&s);
    ref::State expected =
        ref::cascade(q, indptrs, levelSources, asKernelSees(params));
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

// Windows and RoPE see positions in the concatenation of a row's levels: a
// window shorter than the last level hides the shared levels from some rows
// only; one reaching into the middle level hides part of it.
TEST(Cascade, TwoLevelsCausalWindowF16) {
  runCascade(2, makeSpec(16, 2, 64, DType::F16), /*causal=*/true, Base::Two, 4,
             605, /*windowLeft=*/12);
}

TEST(Cascade, ThreeLevelsWindowBlockTableBF16) {
  runCascade(3,
             makeSpec(8, 2, 64, DType::BF16, Layout::NHD, Storage::Combined,
                      Table::BlockTable),
             /*causal=*/false, Base::E, 4, 606, /*windowLeft=*/30);
}

TEST(Cascade, ThreeLevelsCausalRopeF32) {
  ref::Rope rope;
  rope.style = ref::RopeStyle::RotateHalf;
  runCascade(3, makeSpec(16, 1, 64, DType::F32), /*causal=*/true, Base::Two, 2,
             607, std::nullopt, rope);
}

TEST(Cascade, TwoLevelsRopeInterleaveWindowF16) {
  ref::Rope rope;
  rope.style = ref::RopeStyle::Interleave;
  runCascade(2, makeSpec(16, 2, 64, DType::F16), /*causal=*/true, Base::E, 4,
             608, /*windowLeft=*/20, rope);
}

// Sinks join each row's softmax once, after the levels merge (never once
// per level); ALiBi sees positions in the concatenation of levels.
TEST(Cascade, ThreeLevelsCausalSinksWindowBF16) {
  runCascade(3, makeSpec(8, 1, 64, DType::BF16), /*causal=*/true, Base::Two, 4,
             609, /*windowLeft=*/25, std::nullopt,
             [](Rng &rng, ref::AttentionParams &params, VariantSource &) {
               params.sinks = randomPerHead(rng, 4, -1.0, 6.0);
             });
}

// Regions on a cascade: every level's prefill sees its rows in the
// cascade's frame (last-level request, concatenated positions).
TEST(Cascade, ThreeLevelsCausalRegionsF16) {
  runCascade(3, makeSpec(16, 1, 64, DType::F16), /*causal=*/true, Base::E, 4,
             611, std::nullopt, std::nullopt,
             [](Rng &rng, ref::AttentionParams &params, VariantSource &v) {
               addRequestRegions(rng, params, v, 5);
             });
}

TEST(Cascade, TwoLevelsRegionsWindowAlibiRopeF32) {
  runCascade(2, makeSpec(8, 2, 64, DType::F32), /*causal=*/true, Base::Two, 4,
             612, /*windowLeft=*/30, ref::Rope(),
             [](Rng &rng, ref::AttentionParams &params, VariantSource &v) {
               addRequestRegions(rng, params, v, 5);
               params.alibiSlopes = randomPerHead(rng, 4, 0.01, 0.1);
             });
}

TEST(Cascade, TwoLevelsCausalAlibiSinksF16) {
  runCascade(2, makeSpec(16, 2, 64, DType::F16), /*causal=*/true, Base::E, 8,
             610, std::nullopt, std::nullopt,
             [](Rng &rng, ref::AttentionParams &params, VariantSource &v) {
               v.standardAlibi = true;
               params.alibiSlopes = alibiPaperSlopes(8);
               params.sinks = randomPerHead(rng, 8, 0.0, 4.0);
             });
}

} // namespace
