//===- SupportTest.cpp - Host helpers, reference self-checks, JIT smoke ---===//
//
// The host conversions against known encodings, the descriptor layout, the
// reference's own consistency (addressing is injective and in bounds, the
// merge algebra holds, bool and packed masks agree, the append checker
// accepts the exact append and rejects a corrupted one), and a known-answer
// JIT run.
//
//===----------------------------------------------------------------------===//
#include "Support/Memref.h"
#include "TestUtil.h"

#include <cmath>
#include <limits>
#include <set>

using namespace kvir::test;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(Float, HalfAndBFloatRoundToNearestEven) {
  EXPECT_EQ(encodeF16(1.0), 0x3c00);
  EXPECT_EQ(encodeF16(65504.0), 0x7bff);
  EXPECT_EQ(encodeF16(65520.0), 0x7c00); // rounds up to inf
  EXPECT_EQ(encodeF16(std::ldexp(1.0, -24)), 0x0001);
  EXPECT_EQ(encodeF16(1.0 + std::ldexp(1.0, -11)), 0x3c00); // tie to even
  EXPECT_EQ(encodeF16(1.0 + 3 * std::ldexp(1.0, -11)), 0x3c02);
  EXPECT_EQ(decodeF16(0xc000), -2.0);
  EXPECT_TRUE(std::isnan(decodeF16(0x7e00)));
  EXPECT_EQ(encodeBF16(1.0), 0x3f80);
  EXPECT_EQ(encodeBF16(1.0 + std::ldexp(1.0, -8)), 0x3f80); // tie to even
  EXPECT_EQ(encodeBF16(1.0 + 3 * std::ldexp(1.0, -8)), 0x3f82);
  EXPECT_EQ(decodeBF16(0x4049), 3.140625);
}

TEST(Float, Fp8E4M3) {
  EXPECT_EQ(decodeFp8(0x7e, true), 448.0);
  EXPECT_TRUE(std::isnan(decodeFp8(0x7f, true)));
  EXPECT_TRUE(std::isnan(decodeFp8(0xff, true)));
  EXPECT_EQ(decodeFp8(0x01, true), std::ldexp(1.0, -9));
  EXPECT_EQ(decodeFp8(0x08, true), std::ldexp(1.0, -6));
  EXPECT_EQ(decodeFp8(0xb8, true), -1.0);
  EXPECT_EQ(encodeFp8Saturating(464.0, true), 0x7e);
  EXPECT_EQ(encodeFp8Saturating(1e9, true), 0x7e);
  EXPECT_EQ(encodeFp8Saturating(-kInf, true), 0xfe);
  EXPECT_EQ(encodeFp8Saturating(1.0625, true), 0x38); // tie to even: 1.0
  EXPECT_EQ(encodeFp8Saturating(1.1875, true), 0x3a); // tie to even: 1.25
  EXPECT_TRUE(std::isnan(decodeFp8(encodeFp8Saturating(NAN, true), true)));
  // Every finite code round-trips.
  for (int c = 0; c < 256; ++c) {
    double v = decodeFp8(c, true);
    if (!std::isnan(v) && v != 0.0)
      EXPECT_EQ(encodeFp8Saturating(v, true), c) << c;
  }
}

TEST(Float, Fp8E5M2) {
  EXPECT_EQ(decodeFp8(0x7b, false), 57344.0);
  EXPECT_EQ(decodeFp8(0x7c, false), kInf);
  EXPECT_TRUE(std::isnan(decodeFp8(0x7d, false)));
  EXPECT_EQ(decodeFp8(0x01, false), std::ldexp(1.0, -16));
  EXPECT_EQ(encodeFp8Saturating(kInf, false), 0x7b);
  EXPECT_EQ(encodeFp8Saturating(-1e6, false), 0xfb);
  EXPECT_EQ(encodeFp8Saturating(1.125, false), 0x3c); // tie to even: 1.0
  EXPECT_EQ(encodeFp8Saturating(1.375, false), 0x3e); // tie to even: 1.5
  for (int c = 0; c < 256; ++c) {
    double v = decodeFp8(c, false);
    if (std::isfinite(v) && v != 0.0)
      EXPECT_EQ(encodeFp8Saturating(v, false), c) << c;
  }
}

TEST(Memref, DescriptorWordsForAnyRank) {
  int64_t storage[4];
  for (int rank = 0; rank <= 6; ++rank) {
    std::vector<int64_t> sizes(rank), strides(rank);
    for (int i = 0; i < rank; ++i) {
      sizes[i] = i + 2;
      strides[i] = 100 - i;
    }
    std::vector<int64_t> words =
        makeMemrefDescriptor(storage, storage + 1, 7, sizes, strides);
    ASSERT_EQ(words.size(), size_t(3 + 2 * rank));
    EXPECT_EQ(words[0], reinterpret_cast<int64_t>(storage));
    EXPECT_EQ(words[1], reinterpret_cast<int64_t>(storage + 1));
    EXPECT_EQ(words[2], 7);
    for (int i = 0; i < rank; ++i) {
      EXPECT_EQ(words[3 + i], sizes[i]);
      EXPECT_EQ(words[3 + rank + i], strides[i]);
    }
  }
  Tensor t(DType::F16, {2, 3, 4});
  Tensor v = t.view(5, {2, 2}, {12, 1});
  std::vector<int64_t> words = v.descriptor();
  EXPECT_EQ(words, (std::vector<int64_t>{reinterpret_cast<int64_t>(t.data()),
                                         reinterpret_cast<int64_t>(t.data()), 5,
                                         2, 2, 12, 1}));
  EXPECT_EQ(v.memrefType({true, false}, true),
            "memref<?x2xf16, strided<[?, ?], offset: ?>>");
}

/// Every logical element of every pool role maps to its own in-bounds
/// index (Tensor::linearize aborts on out-of-bounds).
TEST(Reference, PoolAddressingIsInjective) {
  std::vector<CacheSpec> specs;
  for (Layout layout : {Layout::NHD, Layout::HND})
    for (Storage storage : {Storage::Combined, Storage::Split})
      specs.push_back(makeSpec(3, 2, 16, DType::F16, layout, storage));
  specs.push_back(makeSpec(3, 2, 16, DType::F16, Layout::VLLM, Storage::Split));
  specs.push_back(makeSpec(3, 2, 32, DType::F32, Layout::VLLM, Storage::Split));
  for (Layout layout : {Layout::PPL0, Layout::PPL1, Layout::PPL2, Layout::PPL3}) {
    CacheSpec s = makeSpec(3, 2, 16, DType::F16, layout);
    s.layer = 1;
    s.quant = Quant::Int8Group;
    s.quantGroup = 4;
    specs.push_back(s);
  }
  specs.push_back(makeSpec(5, 2, 8, DType::F16, Layout::Llama, Storage::Split));
  const int64_t pages = 4, layers = 2;
  for (const CacheSpec &s : specs) {
    SCOPED_TRACE(describe(s));
    std::vector<Role> roles{Role::K, Role::V};
    if (s.quant == Quant::Int8Group)
      roles = {Role::K, Role::V, Role::KScale, Role::VScale};
    std::set<std::pair<int, int64_t>> seen;
    for (Role role : roles) {
      bool second = s.storage != Storage::Combined &&
                    (role == Role::V || role == Role::VScale);
      bool scale = role == Role::KScale || role == Role::VScale;
      Tensor pool(DType::F32, ref::poolShape(s, role, pages, layers));
      int id = (scale ? 2 : 0) + (second ? 1 : 0);
      for (int64_t p = 0; p < pages; ++p)
        for (int64_t slot = 0; slot < s.pageSize; ++slot)
          for (int64_t h = 0; h < s.kvHeads; ++h)
            for (int64_t d = 0; d < s.dimExtent(role); ++d) {
              int64_t off =
                  pool.linearize(ref::poolIndex(s, role, p, slot, h, d));
              EXPECT_TRUE(seen.insert({id, off}).second);
            }
    }
  }
}

ref::State randomState(Rng &rng, int64_t rows, int64_t heads, int64_t dv,
                       Base base) {
  ref::State s(rows, heads, dv, base);
  for (double &o : s.o)
    o = rng.uniform(-1, 1);
  for (double &l : s.lse)
    l = rng.coin(0.2) ? -kInf : rng.uniform(-3, 3);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < heads; ++h)
      if (s.lseAt(r, h) == -kInf)
        for (int64_t d = 0; d < dv; ++d)
          s.out(r, h, d) = 0.0;
  return s;
}

double maxDiff(const ref::State &a, const ref::State &b) {
  double worst = 0.0;
  for (size_t i = 0; i < a.o.size(); ++i)
    worst = std::max(worst, std::fabs(a.o[i] - b.o[i]));
  for (size_t i = 0; i < a.lse.size(); ++i) {
    if (a.lse[i] == -kInf || b.lse[i] == -kInf) {
      if (a.lse[i] != b.lse[i])
        return kInf;
      continue;
    }
    worst = std::max(worst, std::fabs(a.lse[i] - b.lse[i]));
  }
  return worst;
}

TEST(Reference, MergeIsCommutativeAssociativeWithEmptyIdentity) {
  Rng rng(1);
  for (Base base : {Base::E, Base::Two}) {
    ref::State a = randomState(rng, 6, 3, 5, base);
    ref::State b = randomState(rng, 6, 3, 5, base);
    ref::State c = randomState(rng, 6, 3, 5, base);
    ref::State empty(6, 3, 5, base);
    EXPECT_LT(maxDiff(ref::merge({a, b}), ref::merge({b, a})), 1e-12);
    EXPECT_LT(maxDiff(ref::merge({ref::merge({a, b}), c}),
                      ref::merge({a, ref::merge({b, c})})),
              1e-12);
    EXPECT_LT(maxDiff(ref::merge({a, empty}), a), 1e-15);
    ref::State e = ref::merge({empty, empty});
    for (double l : e.lse)
      EXPECT_EQ(l, -kInf);
    for (double o : e.o)
      EXPECT_EQ(o, 0.0);
  }
}

TEST(Reference, RebaseRoundTripsAndNormalizesPlusInf) {
  Rng rng(2);
  ref::State a = randomState(rng, 4, 2, 3, Base::Two);
  EXPECT_LT(maxDiff(ref::rebase(ref::rebase(a, Base::E), Base::Two), a), 1e-12);
  ref::State e = ref::rebase(a, Base::E);
  EXPECT_NEAR(e.lseAt(0, 0) == -kInf ? 0.0 : e.lseAt(0, 0),
              a.lseAt(0, 0) == -kInf ? 0.0 : a.lseAt(0, 0) * std::log(2.0),
              1e-12);
  a.lseAt(1, 1) = kInf;
  a.out(1, 1, 0) = 5.0;
  ref::State n = ref::rebase(a, Base::E);
  EXPECT_EQ(n.lseAt(1, 1), -kInf);
  EXPECT_EQ(n.out(1, 1, 0), 0.0);
}

/// Bool and bit-packed masks with the same bits give the same states, and
/// decode is prefill with one row per request.
TEST(Reference, MaskFormsAgreeAndDecodeIsOneRowPrefill) {
  Rng rng(3);
  CacheSpec spec = makeSpec(4, 1, 8, DType::F32);
  std::vector<int64_t> kvLens = randomLengths(rng, 4, 13);
  std::vector<int64_t> qoLens{3, 1, 5, 2};
  PagedCache cache = makeCache(spec, kvLens, rng);
  ref::PagedSource source(cache);
  std::vector<int32_t> indptr = indptrOf(qoLens);
  Tensor q = randomTensor(rng, DType::F32, {indptr.back(), 2, 8});
  Tensor packed = randomMask(rng, qoLens, kvLens, /*packed=*/true);
  // The same bits, one byte each.
  int64_t total = 0;
  for (size_t b = 0; b < qoLens.size(); ++b)
    total += qoLens[b] * kvLens[b];
  Tensor bytes(DType::I1, {std::max<int64_t>(total, 1)});
  int64_t byteOffset = 0, boolOffset = 0;
  for (size_t b = 0; b < qoLens.size(); ++b) {
    int64_t bits = qoLens[b] * kvLens[b];
    for (int64_t k = 0; k < bits; ++k)
      bytes.setBits({boolOffset + k},
                    (packed.getBits({byteOffset + k / 8}) >> (k % 8)) & 1);
    boolOffset += bits;
    byteOffset += (bits + 7) / 8;
  }
  ref::AttentionParams p1, p2;
  p1.mask = &packed;
  p2.mask = &bytes;
  EXPECT_EQ(maxDiff(ref::attention(q, indptr, source, p1),
                    ref::attention(q, indptr, source, p2)),
            0.0);

  Tensor qd = randomTensor(rng, DType::F32, {4, 2, 8});
  ref::AttentionParams causal;
  causal.causal = true;
  EXPECT_EQ(maxDiff(ref::decode(qd, source, {}),
                    ref::attention(qd, indptrOf({1, 1, 1, 1}), source, causal)),
            0.0);
}

TEST(Reference, AppendCheckerAcceptsExactAndRejectsCorruption) {
  Rng rng(4);
  for (Quant quant : {Quant::None, Quant::Int8Group, Quant::FP8E4M3}) {
    CacheSpec spec = makeSpec(4, 2, 16, DType::F16);
    spec.quant = quant;
    spec.quantGroup = quant == Quant::Int8Group ? 4 : 0;
    std::vector<int64_t> kvLens{5, 3};
    CacheOptions options;
    options.filledLens = {3, 1};
    PagedCache before = makeCache(spec, kvLens, rng, options);
    ref::AppendInput in;
    in.k = randomTensor(rng, DType::F16, {4, 2, 16});
    in.v = randomTensor(rng, DType::F16, {4, 2, 16});
    in.batchIndices = {0, 1, 0, 1};
    in.positions = {3, 1, 4, 2};
    in.rope = ref::Rope{ref::RopeStyle::RotateHalf, 1e4, 1.0};
    PagedCache after = cloneCache(before);
    ref::append(after, in);
    EXPECT_TRUE(ref::checkAppend(before, after, in).empty());
    // A changed element the append does not write.
    PagedCache stray = cloneCache(after);
    stray.pools[0].setRawBits(0, stray.pools[0].rawBits(0) ^ 1);
    EXPECT_FALSE(ref::checkAppend(before, stray, in).empty());
    // A written element off by a lot: flip a high mantissa bit (f16 bit 9,
    // e4m3 bit 2) or the int8 code's bit 5.
    PagedCache wrong = cloneCache(after);
    auto [page, slot] = wrong.locate(0, 4);
    Index index = ref::poolIndex(spec, Role::V, page, slot, 1, 3);
    int bit = quant == Quant::None ? 9 : quant == Quant::FP8E4M3 ? 2 : 5;
    wrong.pools[0].setBits(index, wrong.pools[0].getBits(index) ^ (1u << bit));
    EXPECT_FALSE(ref::checkAppend(before, wrong, in).empty());
  }
}

/// The integration test's program through the JIT: two keys with equal
/// logits, so o is the mean of the values and lse = s + ln 2.
TEST(Jit, KnownAnswerDecode) {
  CacheSpec spec = makeSpec(2, 1, 2, DType::F32);
  PagedCache cache;
  cache.spec = spec;
  Tensor pool(DType::F32, {2, 2, 2, 1, 2});
  pool.forEachIndex([&](const Index &i) { pool.set(i, 1.0); });
  pool.set({0, 1, 0, 0, 0}, 3.0);
  cache.pools = {pool};
  cache.tables = {makeI32({0, 1}), makeI32({0}), makeI32({2})};
  Tensor q(DType::F32, {1, 1, 2});
  q.set({0, 0, 0}, 1.0);
  q.set({0, 0, 1}, 1.0);
  StateBuffers out = makeStateBuffers(1, 1, 2, DType::F32);
  KernelSource src;
  std::string kvType;
  std::string kv = emitPagedView(src, cache, "kv", kvType);
  std::string qs = src.addMemref("q", q);
  std::string t = stateTypeText(1, 2, DType::F32, Base::E);
  src.addLine("%s = kv.decode " + qs + ", " + kv + " : " + src.typeOf(qs) +
              ", " + kvType + " -> " + t);
  emitStore(src, "%s", t, out);
  ASSERT_TRUE(runKernel(src, {out.o, out.lse}));
  EXPECT_FLOAT_EQ(out.o.get({0, 0, 0}), 2.0f);
  EXPECT_FLOAT_EQ(out.o.get({0, 0, 1}), 1.0f);
  EXPECT_NEAR(out.lse.get({0, 0}), std::sqrt(2.0) + std::log(2.0), 1e-6);
}

TEST(Jit, ReportsPipelineErrors) {
  auto kernel = JitKernel::compile("func.func @kernel() { kv.bogus }", "kernel");
  ASSERT_FALSE(kernel);
  std::string message = llvm::toString(kernel.takeError());
  EXPECT_NE(message.find("failed to parse"), std::string::npos) << message;
}

} // namespace
