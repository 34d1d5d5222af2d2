//===- VariantsTest.cpp - Attention variants against the reference
//---------===//
//
// Sinks, ALiBi, score_mod and mask_mod regions and top-k sparse selection
// on kv.decode and kv.prefill
// (kv-to-loops), each against the reference's own statement of the variant:
// gpt-oss (sinks with a 128-key window, and a full layer), ALiBi with the
// standard and given slopes, a per-head table read by score_mod, soft cap
// and window written as regions, FlexAttention's document mask, prefix-LM.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"

#include <cmath>

using namespace kvir::test;

namespace {

// gpt-oss: bf16, head dim 64, 8 query heads per KV head, sinks on every
// layer, a 128-key window on every other one.
TEST(Variants, GptOssSlidingLayerDecode) {
  DecodeCase c;
  c.spec = makeSpec(16, 1, 64, DType::BF16);
  c.qHeads = 8;
  c.maxLen = 300;
  c.params.windowLeft = 127;
  c.params.base = Base::E;
  Rng rng(1701);
  c.params.sinks = randomPerHead(rng, 8, -1.0, 5.0);
  c.seed = 1701;
  runDecodeCase(c);
}

TEST(Variants, GptOssFullLayerDecode) {
  DecodeCase c;
  c.spec = makeSpec(16, 1, 64, DType::BF16);
  c.qHeads = 8;
  c.maxLen = 200;
  c.params.base = Base::Two;
  Rng rng(1702);
  c.params.sinks = randomPerHead(rng, 8, -1.0, 5.0);
  c.seed = 1702;
  runDecodeCase(c);
}

TEST(Variants, GptOssSlidingLayerPrefill) {
  PrefillCase c;
  c.spec = makeSpec(16, 1, 64, DType::BF16);
  c.qHeads = 8;
  c.maxLen = 200;
  c.params.causal = true;
  c.params.windowLeft = 127;
  Rng rng(1703);
  c.params.sinks = randomPerHead(rng, 8, -1.0, 5.0);
  c.seed = 1703;
  runPrefillCase(c);
}

// Top-k sparse selection: each request sees the keys its list names (-1
// entries anywhere), alone and with a window, ALiBi and sinks on top.
TEST(Variants, TopkDecode) {
  DecodeCase c;
  c.spec = makeSpec(16, 2, 64, DType::F16);
  c.qHeads = 8;
  c.maxLen = 120;
  c.topk = 32;
  c.seed = 1712;
  runDecodeCase(c);
}

TEST(Variants, TopkWindowAlibiSinksDecode) {
  DecodeCase c;
  c.spec = makeSpec(8, 1, 64, DType::F32, Layout::HND, Storage::Split,
                    Table::BlockTable);
  c.qHeads = 4;
  c.maxLen = 90;
  c.topk = 20;
  c.params.windowLeft = 40;
  Rng rng(1713);
  c.params.alibiSlopes = randomPerHead(rng, 4, 0.01, 0.2);
  c.params.sinks = randomPerHead(rng, 4, -1.0, 3.0);
  c.seed = 1713;
  runDecodeCase(c);
}

// A large sink dominates rows with few keys: rows keep a small output.
TEST(Variants, DominantSinksDecode) {
  DecodeCase c;
  c.spec = makeSpec(4, 2, 64, DType::F32);
  c.qHeads = 4;
  c.params.sinks = {12.0, -30.0, 0.5, 40.0};
  c.seed = 1704;
  runDecodeCase(c);
}

TEST(Variants, AlibiStandardSlopesPrefill) {
  PrefillCase c;
  c.spec = makeSpec(16, 2, 64, DType::F16);
  c.qHeads = 12; // not a power of two: the paper's interleaved extra slopes
  c.params.causal = true;
  c.params.alibiSlopes = alibiPaperSlopes(12);
  c.variants.standardAlibi = true;
  c.seed = 1705;
  runPrefillCase(c);
}

TEST(Variants, AlibiGivenSlopesDecode) {
  DecodeCase c;
  c.spec = makeSpec(16, 2, 128, DType::F16);
  c.qHeads = 4;
  Rng rng(1706);
  c.params.alibiSlopes = randomPerHead(rng, 4, 0.001, 0.3);
  c.params.base = Base::Two;
  c.seed = 1706;
  runDecodeCase(c);
}

// score_mod reading a per-head table captured from above.
TEST(Variants, ScoreModPerHeadTableDecode) {
  DecodeCase c;
  c.spec = makeSpec(16, 2, 64, DType::F32);
  c.qHeads = 4;
  Rng rng(1707);
  std::vector<double> temperature = randomPerHead(rng, 4, 0.25, 2.0);
  Tensor table = f32Vector(temperature);
  c.variants.captures = {{"temperature", table}};
  c.variants.scoreMod =
      R"(^bb0(%s: f32, %b: index, %h: index, %p: index, %j: index):
      %t = memref.load $temperature[%h] : memref<4xf32>
      %r = arith.mulf %s, %t : f32
      kv.yield %r : f32)";
  c.params.scoreMod = [temperature](double s, int64_t, int64_t h, int64_t,
                                    int64_t) {
    return s * double(float(temperature[h]));
  };
  c.seed = 1707;
  runDecodeCase(c);
}

// Gemma's soft cap and sliding window, written as regions.
TEST(Variants, SoftCapAndWindowAsRegionsPrefill) {
  PrefillCase c;
  c.spec = makeSpec(16, 2, 128, DType::BF16);
  c.qHeads = 4;
  c.maxLen = 80;
  c.params.causal = true;
  addSoftCapWindowRegions(c.params, c.variants, 5.0, 31);
  c.seed = 1708;
  runPrefillCase(c);
}

// FlexAttention's document mask: packed documents attend within their own
// document only (and causally).
TEST(Variants, DocumentMaskPrefill) {
  PrefillCase c;
  c.spec = makeSpec(16, 2, 64, DType::F16);
  c.qHeads = 4;
  c.batch = 3;
  c.maxLen = 60;
  c.maxQo = 16;
  c.params.causal = true;
  Rng rng(1709);
  // Document ids per (request, token): runs of random lengths.
  Tensor doc(DType::I32, {c.batch, c.maxLen});
  std::vector<std::vector<int32_t>> docs(c.batch);
  for (int64_t b = 0; b < c.batch; ++b) {
    int32_t id = 0;
    for (int64_t t = 0; t < c.maxLen; ++t) {
      if (t > 0 && rng.coin(0.15))
        ++id;
      docs[b].push_back(id);
      doc.set({b, t}, id);
    }
  }
  c.variants.captures = {{"doc", doc}};
  c.variants.maskMod = R"(^bb0(%b: index, %h: index, %p: index, %j: index):
      %dp = memref.load $doc[%b, %p] : memref<3x60xi32>
      %dj = memref.load $doc[%b, %j] : memref<3x60xi32>
      %same = arith.cmpi eq, %dp, %dj : i32
      kv.yield %same : i1)";
  c.params.maskMod = [docs](int64_t b, int64_t, int64_t p, int64_t j) {
    return docs[b][p] == docs[b][j];
  };
  c.seed = 1709;
  runPrefillCase(c);
}

// Prefix-LM: the prefix is seen bidirectionally, the rest causally.
TEST(Variants, PrefixLmPrefill) {
  PrefillCase c;
  c.spec = makeSpec(8, 1, 64, DType::F32);
  c.qHeads = 2;
  c.batch = 4;
  c.maxLen = 40;
  Rng rng(1710);
  Tensor prefix(DType::I32, {c.batch});
  std::vector<int64_t> prefixes;
  for (int64_t b = 0; b < c.batch; ++b) {
    prefixes.push_back(rng.integer(0, 30));
    prefix.set({b}, prefixes.back());
  }
  c.variants.captures = {{"prefix", prefix}};
  c.variants.maskMod = R"(^bb0(%b: index, %h: index, %p: index, %j: index):
      %n = memref.load $prefix[%b] : memref<4xi32>
      %ni = arith.index_cast %n : i32 to index
      %past = arith.cmpi sle, %j, %p : index
      %inPrefix = arith.cmpi slt, %j, %ni : index
      %v = arith.ori %past, %inPrefix : i1
      kv.yield %v : i1)";
  c.params.maskMod = [prefixes](int64_t b, int64_t, int64_t p, int64_t j) {
    return j <= p || j < prefixes[b];
  };
  c.seed = 1710;
  runPrefillCase(c);
}

// Every variant at once, with a custom mask and RoPE beside them.
TEST(Variants, AllTogetherPrefill) {
  PrefillCase c;
  c.spec = makeSpec(16, 2, 64, DType::F16);
  c.qHeads = 4;
  c.params.causal = true;
  c.params.softCap = 20.0;
  c.params.windowLeft = 20;
  c.params.rope = ref::Rope();
  c.mask = MaskKind::Packed;
  Rng rng(1711);
  c.params.sinks = randomPerHead(rng, 4, -1.0, 3.0);
  c.params.alibiSlopes = alibiPaperSlopes(4);
  c.variants.standardAlibi = true;
  addKeyBiasScoreMod(c.params, c.variants);
  addEveryThirdKeyHidden(c.params, c.variants);
  c.seed = 1711;
  runPrefillCase(c);
}

} // namespace
