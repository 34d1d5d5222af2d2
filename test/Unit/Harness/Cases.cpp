//===- Cases.cpp - Reusable decode / prefill test cases -------------------===//
#include "Cases.h"

#include <sstream>

using namespace kvir::test;

void kvir::test::runDecodeCase(const DecodeCase &c) {
  Rng rng(c.seed);
  SCOPED_TRACE(describe(c.spec));
  for (int rep = 0; rep < c.repeats; ++rep) {
    SCOPED_TRACE("batch " + std::to_string(rep) + " of seed " +
                 std::to_string(c.seed));
    std::vector<int64_t> kvLens = randomLengths(rng, c.batch, c.maxLen);
    PagedCache cache = makeCache(c.spec, kvLens, rng, c.cacheOptions);
    Tensor q = randomTensor(rng, c.spec.dtype,
                            {c.batch, c.qHeads, c.spec.headDim}, 2.0);
    DType outType = c.outType.value_or(c.spec.dtype);
    StateBuffers out =
        makeStateBuffers(c.batch, c.qHeads, c.spec.headDimV, outType);

    KernelSource src;
    std::string kvType;
    std::string kv = emitPagedView(src, cache, "kv", kvType);
    std::string qs = src.addMemref("q", q);
    std::string stateType =
        stateTypeText(c.qHeads, c.spec.headDimV, outType, c.params.base);
    ref::AttentionParams params = c.params;
    if (c.topk)
      params.topk = randomTopk(rng, kvLens, c.topk);
    std::string variants = emitVariants(src, params, c.variants);
    src.addLine("%s = kv.decode " + qs + ", " + kv + variants + " " +
                attentionAttrs(c.params, /*withCausal=*/false,
                               c.variants.standardAlibi) +
                " : " + src.typeOf(qs) + ", " + kvType + " -> " + stateType);
    emitStore(src, "%s", stateType, out);
    ASSERT_TRUE(runKernel(src, {out.o, out.lse}));

    ref::State expected =
        ref::decode(q, ref::PagedSource(cache), asKernelSees(params));
    EXPECT_TRUE(check(compareState(out, expected, outType)));
  }
}

void kvir::test::runPrefillCase(const PrefillCase &c) {
  Rng rng(c.seed);
  SCOPED_TRACE(c.ragged ? std::string("ragged KV") : describe(c.spec));
  const CacheSpec &s = c.spec;
  for (int rep = 0; rep < c.repeats; ++rep) {
    SCOPED_TRACE("batch " + std::to_string(rep) + " of seed " +
                 std::to_string(c.seed));
    std::vector<int64_t> kvLens = randomLengths(rng, c.batch, c.maxLen);
    std::vector<int64_t> qoLens(c.batch);
    for (int64_t b = 0; b < c.batch; ++b) {
      // Causal attention needs kv_len >= qo_len; otherwise query rows may
      // outnumber keys (and an empty request may still have rows).
      int64_t hi = c.params.causal ? std::min(c.maxQo, kvLens[b]) : c.maxQo;
      qoLens[b] = rng.integer(std::min<int64_t>(1, hi), hi);
    }
    std::vector<int32_t> qoIndptr = indptrOf(qoLens);
    int64_t rows = qoIndptr.back();
    Tensor q = randomTensor(rng, s.dtype, {rows, c.qHeads, s.headDim}, 2.0);
    StateBuffers out = makeStateBuffers(rows, c.qHeads, s.headDimV, s.dtype);
    Tensor mask;
    if (c.mask != MaskKind::None)
      mask = randomMask(rng, qoLens, kvLens, c.mask == MaskKind::Packed);

    KernelSource src;
    std::string kv, kvType;
    PagedCache cache;
    Tensor rk, rv;
    std::vector<int32_t> kvIndptr = indptrOf(kvLens);
    if (c.ragged) {
      int64_t nnz = kvIndptr.back();
      rk = randomTensor(rng, s.dtype, {nnz, s.kvHeads, s.headDim});
      rv = randomTensor(rng, s.dtype, {nnz, s.kvHeads, s.headDimV});
      kv = emitRaggedView(src, s, rk, rv, kvIndptr, kvType);
    } else {
      cache = makeCache(s, kvLens, rng, c.cacheOptions);
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
      positions = randomRowPositions(rng, qoLens, kvLens);
      std::string ps = src.addMemref("positions", makeI32(positions));
      maskClause += " positions(" + ps + " : " + src.typeOf(ps) + ")";
    }
    std::string stateType =
        stateTypeText(c.qHeads, s.headDimV, s.dtype, c.params.base);
    maskClause += emitVariants(src, c.params, c.variants);
    src.addLine("%s = kv.prefill " + qs + ", " + qo + ", " + kv + maskClause +
                " " + attentionAttrs(c.params, true, c.variants.standardAlibi) +
                " : " + src.typeOf(qs) + ", " + src.typeOf(qo) + ", " + kvType +
                " -> " + stateType);
    emitStore(src, "%s", stateType, out);
    ASSERT_TRUE(runKernel(src, {out.o, out.lse}));

    ref::AttentionParams params = asKernelSees(c.params);
    if (c.mask != MaskKind::None)
      params.mask = &mask;
    params.positions = positions;
    ref::State expected =
        c.ragged
            ? ref::attention(q, qoIndptr, ref::RaggedSource(rk, rv, kvIndptr),
                             params)
            : ref::attention(q, qoIndptr, ref::PagedSource(cache), params);
    EXPECT_TRUE(check(compareState(out, expected, s.dtype)));
  }
}
