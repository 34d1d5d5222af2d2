//===- AppendMergeTest.cpp - kv.append, kv.merge, merge_partitions, rebase ===//
//
// Append: new rows are written through the table (optionally rotated and
// quantized), then decoded in the same function. The pool is read back and
// checked element by element against the reference (unwritten elements must
// be bitwise unchanged), and the decode is compared with the reference over
// the stored bytes.
//
// Merge: the state of a key set J is the merge of the states of any
// partition of J. Decode over a page table split into two sub-tables merged
// with kv.merge (and an empty state), partial states imported with
// kv.load_state and reduced with kv.merge_partitions, and FlashMLA-style
// +inf empty partials normalized by kv.rebase, all compared with the
// reference state of the union.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"

#include <cmath>
#include <limits>

using namespace kvir::test;

namespace {

/// How append inputs are drawn.
enum class AppendInputs {
  /// Uniform in [-1, 1).
  Random,
  /// Half of the rows scaled by 1e-4, so that int8 groups take the 1e-5
  /// scale floor.
  Tiny,
  /// Exact rounding ties of the quantized type (V always; K too without
  /// RoPE): fp8 midpoints times a power-of-two scale, or int8 groups of
  /// scale exactly 2^-7 whose codes are k + 1/2. Round-half-even decides.
  Ties,
};

/// An fp8 value halfway between two adjacent finite codes (|x| < 16).
double fp8Midpoint(Rng &rng, bool e4m3) {
  while (true) {
    uint8_t c = rng.integer(0, 0x7f);
    double lo = decodeFp8(c, e4m3), hi = decodeFp8(c + 1, e4m3);
    if (std::isfinite(lo) && std::isfinite(hi) && hi < 16.0)
      return (rng.coin() ? 1 : -1) * (lo + hi) / 2;
  }
}

/// Rewrites row values of `t` ([nnz, H, D]) per `mode`.
void shapeInputs(Rng &rng, Tensor &t, const CacheSpec &spec, float scale,
                 AppendInputs mode) {
  int64_t nnz = t.dim(0), heads = t.dim(1), width = t.dim(2);
  for (int64_t i = 0; i < nnz; ++i)
    for (int64_t h = 0; h < heads; ++h) {
      if (mode == AppendInputs::Tiny) {
        if (i % 2 == 0)
          for (int64_t d = 0; d < width; ++d)
            t.set({i, h, d}, t.get({i, h, d}) * 1e-4);
        continue;
      }
      if (spec.quant == Quant::Int8Group) {
        int64_t g = spec.quantGroup;
        for (int64_t first = 0; first < width; first += g) {
          int64_t anchor = first + rng.integer(0, g - 1);
          for (int64_t d = first; d < first + g; ++d) {
            double code = d == anchor ? (rng.coin() ? 127.0 : -127.0)
                                      : rng.integer(-127, 126) + 0.5;
            t.set({i, h, d}, code / 128.0);
          }
        }
        continue;
      }
      bool e4m3 = spec.quant == Quant::FP8E4M3;
      for (int64_t d = 0; d < width; ++d)
        t.set({i, h, d}, fp8Midpoint(rng, e4m3) * scale);
    }
}

struct AppendParams {
  CacheSpec spec;
  AppendInputs inputs = AppendInputs::Random;
  std::optional<ref::Rope> rope;
  CacheOptions cacheOptions;
  int64_t qHeads = 4;
  int64_t batch = 5;
  int64_t maxLen = 30;
  int64_t maxNew = 3;
  Base base = Base::E;
  uint64_t seed = 1;
};

void runAppendDecode(const AppendParams &a) {
  const CacheSpec &s = a.spec;
  SCOPED_TRACE(describe(s));
  Rng rng(a.seed);
  for (int rep = 0; rep < 2; ++rep) {
    SCOPED_TRACE("batch " + std::to_string(rep) + " of seed " +
                 std::to_string(a.seed));
    std::vector<int64_t> kvLens = randomLengths(rng, a.batch, a.maxLen);
    std::vector<int64_t> filled(a.batch);
    std::vector<std::pair<int32_t, int32_t>> rows;
    for (int64_t b = 0; b < a.batch; ++b) {
      int64_t fresh =
          kvLens[b] ? rng.integer(1, std::min(a.maxNew, kvLens[b])) : 0;
      filled[b] = kvLens[b] - fresh;
      for (int64_t t = filled[b]; t < kvLens[b]; ++t)
        rows.push_back({int32_t(b), int32_t(t)});
    }
    rng.shuffle(rows);
    CacheOptions options = a.cacheOptions;
    options.filledLens = filled;
    PagedCache cache = makeCache(s, kvLens, rng, options);
    PagedCache before = cloneCache(cache);

    ref::AppendInput input;
    int64_t nnz = rows.size();
    input.k = randomTensor(rng, s.dtype, {nnz, s.kvHeads, s.headDim});
    input.v = randomTensor(rng, s.dtype, {nnz, s.kvHeads, s.headDimV});
    for (auto [b, t] : rows) {
      input.batchIndices.push_back(b);
      input.positions.push_back(t);
    }
    input.rope = a.rope;
    if (a.inputs != AppendInputs::Random) {
      if (!a.rope || a.inputs == AppendInputs::Tiny)
        shapeInputs(rng, input.k, s, options.kScale, a.inputs);
      shapeInputs(rng, input.v, s, options.vScale, a.inputs);
    }
    Tensor q = randomTensor(rng, s.dtype, {a.batch, a.qHeads, s.headDim}, 2.0);
    StateBuffers out = makeStateBuffers(a.batch, a.qHeads, s.headDimV, s.dtype);

    KernelSource src;
    std::string kvType;
    std::string kv = emitPagedView(src, cache, "kv", kvType);
    emitAppend(src, input, kv, kvType);
    std::string qs = src.addMemref("q", q);
    std::string stateType =
        stateTypeText(a.qHeads, s.headDimV, s.dtype, a.base);
    src.addLine("%s = kv.decode " + qs + ", " + kv + " : " + src.typeOf(qs) +
                ", " + kvType + " -> " + stateType);
    emitStore(src, "%s", stateType, out);
    ASSERT_TRUE(runKernel(src, {out.o, out.lse}));

    // The pool as the kernel left it.
    std::vector<std::string> reports = ref::checkAppend(before, cache, input);
    for (const std::string &r : reports)
      ADD_FAILURE() << r;

    ref::AttentionParams params;
    params.base = a.base;
    ref::State expected = ref::decode(q, ref::PagedSource(cache), params);
    EXPECT_TRUE(check(compareState(out, expected, s.dtype)));
  }
}

TEST(AppendDecode, NhdCombinedCsrF16) {
  AppendParams a;
  a.spec = makeSpec(16, 2, 128, DType::F16);
  a.seed = 701;
  runAppendDecode(a);
}

TEST(AppendDecode, HndSplitBlockTableRopeInterleaveF32) {
  AppendParams a;
  a.spec = makeSpec(5, 2, 64, DType::F32, Layout::HND, Storage::Split,
                    Table::BlockTable, 32);
  a.rope = ref::Rope{ref::RopeStyle::Interleave, 1e4, 1.0};
  a.base = Base::Two;
  a.seed = 702;
  runAppendDecode(a);
}

TEST(AppendDecode, VllmBlockTableRopeRotateHalfBF16) {
  AppendParams a;
  a.spec = makeSpec(16, 2, 64, DType::BF16, Layout::VLLM, Storage::Split,
                    Table::BlockTable);
  a.rope = ref::Rope{ref::RopeStyle::RotateHalf, 5e5, 0.5};
  a.seed = 703;
  runAppendDecode(a);
}

TEST(AppendDecode, LlamaTokenOffsetRopeInterleaveF16) {
  AppendParams a;
  a.spec = makeSpec(64, 2, 128, DType::F16, Layout::Llama, Storage::Split,
                    Table::TokenOffset);
  a.rope = ref::Rope{ref::RopeStyle::Interleave, 1e4, 1.0};
  a.maxLen = 64;
  a.maxNew = 8;
  a.seed = 704;
  runAppendDecode(a);
}

TEST(AppendDecode, NhdCombinedCsrRopeLlama31RotateHalfRotary64F16) {
  AppendParams a;
  a.spec = makeSpec(16, 2, 128, DType::F16);
  a.rope = llama31Rope(ref::RopeStyle::RotateHalf, 64);
  a.seed = 706;
  runAppendDecode(a);
}

TEST(AppendDecode, HndSplitBlockTableRopeInterleaveRotary32BF16) {
  AppendParams a;
  a.spec = makeSpec(8, 2, 64, DType::BF16, Layout::HND, Storage::Split,
                    Table::BlockTable);
  a.rope = ref::Rope{ref::RopeStyle::Interleave, 1e4, 1.0};
  a.rope->rotaryDim = 32;
  a.seed = 707;
  runAppendDecode(a);
}

TEST(AppendDecode, Int8GroupNhdCombinedCsrRopeRotateHalfF16) {
  AppendParams a;
  a.spec = quantized(makeSpec(16, 2, 128, DType::F16), Quant::Int8Group, 8);
  a.rope = ref::Rope{ref::RopeStyle::RotateHalf, 1e4, 1.0};
  a.seed = 705;
  runAppendDecode(a);
}

TEST(AppendDecode, Int8GroupPpl2TokenOffsetF32) {
  AppendParams a;
  a.spec = quantized(makeSpec(8, 2, 64, DType::F32, Layout::PPL2,
                              Storage::Combined, Table::TokenOffset),
                     Quant::Int8Group, 16);
  a.spec.layer = 1;
  a.cacheOptions.numLayers = 2;
  a.seed = 706;
  runAppendDecode(a);
}

TEST(AppendDecode, Int8GroupPpl0TokenTableBF16) {
  AppendParams a;
  a.spec = quantized(makeSpec(4, 1, 64, DType::BF16, Layout::PPL0,
                              Storage::Combined, Table::TokenTable),
                     Quant::Int8Group, 8);
  a.cacheOptions.numLayers = 2;
  a.base = Base::Two;
  a.seed = 707;
  runAppendDecode(a);
}

TEST(AppendDecode, Fp8E4M3NhdSplitTokenTableF16) {
  AppendParams a;
  a.spec = quantized(makeSpec(16, 2, 64, DType::F16, Layout::NHD,
                              Storage::Split, Table::TokenTable),
                     Quant::FP8E4M3);
  // Scales so that stored values span e4m3's normals, subnormals and, for
  // the largest inputs, saturation.
  a.cacheOptions.kScale = 0.002f;
  a.cacheOptions.vScale = 0.125f;
  a.seed = 708;
  runAppendDecode(a);
}

TEST(AppendDecode, Fp8E5M2VllmCsrRopeInterleaveBF16) {
  AppendParams a;
  a.spec = quantized(makeSpec(8, 2, 64, DType::BF16, Layout::VLLM,
                              Storage::Split, Table::CSR),
                     Quant::FP8E5M2);
  a.rope = ref::Rope{ref::RopeStyle::Interleave, 1e4, 1.0};
  a.cacheOptions.kScale = 0.5f;
  a.cacheOptions.vScale = 0.0625f;
  a.seed = 709;
  runAppendDecode(a);
}

TEST(AppendDecode, Fp8E4M3HndCombinedBlockTableRopeRotateHalfF32) {
  AppendParams a;
  a.spec = quantized(makeSpec(5, 1, 64, DType::F32, Layout::HND,
                              Storage::Combined, Table::BlockTable),
                     Quant::FP8E4M3);
  a.rope = ref::Rope{ref::RopeStyle::RotateHalf, 1e4, 1.0};
  a.cacheOptions.kScale = 0.01f;
  a.cacheOptions.vScale = 0.01f;
  a.seed = 710;
  runAppendDecode(a);
}

TEST(AppendDecode, Int8GroupTinyRowsTakeTheScaleFloorF16) {
  AppendParams a;
  a.spec = quantized(makeSpec(8, 2, 64, DType::F16), Quant::Int8Group, 8);
  a.inputs = AppendInputs::Tiny;
  a.seed = 711;
  runAppendDecode(a);
}

TEST(AppendDecode, Int8GroupExactTiesRoundHalfEvenF16) {
  AppendParams a;
  a.spec = quantized(makeSpec(16, 2, 64, DType::F16, Layout::HND,
                              Storage::Split, Table::BlockTable),
                     Quant::Int8Group, 16);
  a.inputs = AppendInputs::Ties;
  a.seed = 712;
  runAppendDecode(a);
}

TEST(AppendDecode, Int8GroupExactTiesWithRopeBF16) {
  AppendParams a;
  a.spec = quantized(makeSpec(4, 1, 64, DType::BF16), Quant::Int8Group, 8);
  a.inputs = AppendInputs::Ties;
  a.rope = ref::Rope{ref::RopeStyle::Interleave, 1e4, 1.0};
  a.seed = 713;
  runAppendDecode(a);
}

TEST(AppendDecode, Fp8E4M3ExactTiesRoundHalfEvenF16) {
  AppendParams a;
  a.spec = quantized(makeSpec(8, 2, 64, DType::F16), Quant::FP8E4M3);
  a.inputs = AppendInputs::Ties;
  a.cacheOptions.kScale = 0.5f;
  a.cacheOptions.vScale = 0.125f;
  a.seed = 714;
  runAppendDecode(a);
}

TEST(AppendDecode, Fp8E5M2ExactTiesRoundHalfEvenF32) {
  AppendParams a;
  a.spec = quantized(makeSpec(8, 2, 64, DType::F32, Layout::NHD,
                              Storage::Split, Table::TokenOffset),
                     Quant::FP8E5M2);
  a.inputs = AppendInputs::Ties;
  a.cacheOptions.kScale = 2.0f;
  a.cacheOptions.vScale = 0.25f;
  a.seed = 715;
  runAppendDecode(a);
}

//===----------------------------------------------------------------------===//
// Merge
//===----------------------------------------------------------------------===//

void runSplitTableMerge(CacheSpec spec, Base base, int64_t qHeads,
                        uint64_t seed) {
  SCOPED_TRACE(describe(spec));
  Rng rng(seed);
  const int64_t batch = 6;
  for (int rep = 0; rep < 2; ++rep) {
    std::vector<int64_t> kvLens = randomLengths(rng, batch, 50);
    PagedCache cache = makeCache(spec, kvLens, rng);
    auto [first, second] = splitPages(cache, rng);
    Tensor q = randomTensor(rng, spec.dtype, {batch, qHeads, spec.headDim}, 2.0);
    StateBuffers out = makeStateBuffers(batch, qHeads, spec.headDimV, spec.dtype);

    KernelSource src;
    std::string typeA, typeB;
    std::string kvA = emitPagedView(src, first, "kva", typeA);
    std::string kvB = emitPagedView(src, second, "kvb", typeB);
    std::string qs = src.addMemref("q", q);
    std::string t = stateTypeText(qHeads, spec.headDimV, spec.dtype, base);
    src.addLine("%a = kv.decode " + qs + ", " + kvA + " : " + src.typeOf(qs) +
                ", " + typeA + " -> " + t);
    src.addLine("%b = kv.decode " + qs + ", " + kvB + " : " + src.typeOf(qs) +
                ", " + typeB + " -> " + t);
    src.addLine("%c0 = arith.constant 0 : index");
    src.addLine("%rows = memref.dim " + qs + ", %c0 : " + src.typeOf(qs));
    src.addLine("%e = kv.empty_state %rows : " + t);
    src.addLine("%m = kv.merge %b, %e, %a : " + t + ", " + t + ", " + t +
                " -> " + t);
    emitStore(src, "%m", t, out);
    ASSERT_TRUE(runKernel(src, {out.o, out.lse}));

    ref::AttentionParams params;
    params.base = base;
    ref::State expected = ref::decode(q, ref::PagedSource(cache), params);
    EXPECT_TRUE(check(compareState(out, expected, spec.dtype)));
  }
}

TEST(Merge, DecodeOverSplitPageTableF32) {
  runSplitTableMerge(makeSpec(4, 2, 64, DType::F32), Base::E, 8, 801);
}

TEST(Merge, DecodeOverSplitPageTableF16Base2) {
  runSplitTableMerge(makeSpec(8, 1, 128, DType::F16, Layout::HND,
                              Storage::Split, Table::CSR, 64),
                     Base::Two, 4, 802);
}

/// An imported state (the reference's, for the leading pages of each
/// request) merged with a decode over the remaining pages.
TEST(Merge, ImportedStateMergedWithDecodeF32Base2) {
  CacheSpec spec = makeSpec(4, 2, 64, DType::F32, Layout::NHD, Storage::Split);
  Rng rng(821);
  const int64_t batch = 6, qHeads = 4;
  for (int rep = 0; rep < 2; ++rep) {
    std::vector<int64_t> kvLens = randomLengths(rng, batch, 40);
    PagedCache cache = makeCache(spec, kvLens, rng);
    auto [first, second] = splitPages(cache, rng);
    Tensor q = randomTensor(rng, spec.dtype, {batch, qHeads, spec.headDim}, 2.0);
    ref::AttentionParams params;
    params.base = Base::Two;
    StateBuffers imported = makeStateBuffers(batch, qHeads, spec.headDimV,
                                             spec.dtype);
    storeState(ref::decode(q, ref::PagedSource(first), params), imported);
    StateBuffers out = makeStateBuffers(batch, qHeads, spec.headDimV, spec.dtype);

    KernelSource src;
    std::string kvType;
    std::string kv = emitPagedView(src, second, "kv", kvType);
    std::string qs = src.addMemref("q", q);
    std::string oin = src.addMemref("o_in", imported.o);
    std::string lin = src.addMemref("lse_in", imported.lse);
    std::string t = stateTypeText(qHeads, spec.headDimV, spec.dtype, Base::Two);
    src.addLine("%a = kv.load_state " + oin + ", " + lin + " : " +
                src.typeOf(oin) + ", " + src.typeOf(lin) + " -> " + t);
    src.addLine("%b = kv.decode " + qs + ", " + kv + " : " + src.typeOf(qs) +
                ", " + kvType + " -> " + t);
    src.addLine("%m = kv.merge %a, %b : " + t + ", " + t + " -> " + t);
    emitStore(src, "%m", t, out);
    ASSERT_TRUE(runKernel(src, {out.o, out.lse}));
    ref::State expected = ref::decode(q, ref::PagedSource(cache), params);
    EXPECT_TRUE(check(compareState(out, expected, spec.dtype)));
  }
}

/// kv.rebase of a decode state: lse_e = lse_2 * ln 2, empty rows stay empty.
TEST(Merge, RebaseDecodeStateBase2ToEBF16) {
  CacheSpec spec = makeSpec(16, 1, 128, DType::BF16);
  Rng rng(822);
  const int64_t batch = 5, qHeads = 8;
  for (int rep = 0; rep < 2; ++rep) {
    std::vector<int64_t> kvLens = randomLengths(rng, batch, 40);
    PagedCache cache = makeCache(spec, kvLens, rng);
    Tensor q = randomTensor(rng, spec.dtype, {batch, qHeads, spec.headDim}, 2.0);
    StateBuffers out = makeStateBuffers(batch, qHeads, spec.headDimV, spec.dtype);
    KernelSource src;
    std::string kvType;
    std::string kv = emitPagedView(src, cache, "kv", kvType);
    std::string qs = src.addMemref("q", q);
    std::string two = stateTypeText(qHeads, spec.headDimV, spec.dtype, Base::Two);
    std::string e = stateTypeText(qHeads, spec.headDimV, spec.dtype, Base::E);
    src.addLine("%a = kv.decode " + qs + ", " + kv + " : " + src.typeOf(qs) +
                ", " + kvType + " -> " + two);
    src.addLine("%b = kv.rebase %a : " + two + " -> " + e);
    emitStore(src, "%b", e, out);
    ASSERT_TRUE(runKernel(src, {out.o, out.lse}));
    ref::AttentionParams params;
    params.base = Base::Two;
    ref::State expected =
        ref::rebase(ref::decode(q, ref::PagedSource(cache), params), Base::E);
    EXPECT_TRUE(check(compareState(out, expected, spec.dtype)));
  }
}

/// Partial decode states over random contiguous chunks of each request's
/// keys (some chunks empty), imported with kv.load_state and reduced with
/// kv.merge_partitions. With `flashMlaEmpty`, empty partials carry FlashMLA's
/// +inf LSE and garbage outputs and go through kv.rebase (base e -> 2).
void runPartitionMerge(DType stateType, Base base, bool flashMlaEmpty,
                       uint64_t seed) {
  CacheSpec spec = makeSpec(8, 2, 64, DType::F32);
  Rng rng(seed);
  const int64_t batch = 5, qHeads = 4, parts = 4;
  for (int rep = 0; rep < 2; ++rep) {
    std::vector<int64_t> kvLens = randomLengths(rng, batch, 40);
    PagedCache cache = makeCache(spec, kvLens, rng);
    Tensor q = randomTensor(rng, spec.dtype, {batch, qHeads, spec.headDim}, 2.0);
    ref::PagedSource source(cache);

    // Chunk boundaries per request.
    std::vector<std::vector<int64_t>> cuts(batch);
    for (int64_t b = 0; b < batch; ++b) {
      cuts[b] = {0, kvLens[b]};
      for (int64_t k = 1; k < parts; ++k)
        cuts[b].push_back(rng.integer(0, kvLens[b]));
      std::sort(cuts[b].begin(), cuts[b].end());
    }
    Base partialBase = flashMlaEmpty ? Base::E : base;
    StateBuffers partials =
        makeStateBuffers(batch, qHeads, spec.headDimV, stateType, parts);
    std::vector<ref::State> states;
    for (int64_t k = 0; k < parts; ++k) {
      std::vector<int64_t> qoLens(batch, 1);
      Tensor mask = randomMask(rng, qoLens, kvLens, /*packed=*/false);
      int64_t offset = 0;
      for (int64_t b = 0; b < batch; ++b) {
        for (int64_t j = 0; j < kvLens[b]; ++j)
          mask.setBits({offset + j},
                       j >= cuts[b][k] && j < cuts[b][k + 1] ? 1 : 0);
        offset += kvLens[b];
      }
      ref::AttentionParams params;
      params.base = partialBase;
      params.mask = &mask;
      states.push_back(ref::decode(q, source, params));
      storeState(states.back(), partials, k);
      if (!flashMlaEmpty)
        continue;
      for (int64_t r = 0; r < batch; ++r)
        for (int64_t h = 0; h < qHeads; ++h) {
          if (states.back().lseAt(r, h) !=
              -std::numeric_limits<double>::infinity())
            continue;
          partials.lse.set({k, r, h}, std::numeric_limits<double>::infinity());
          for (int64_t d = 0; d < spec.headDimV; ++d)
            partials.o.set({k, r, h, d}, rng.uniform(-3.0, 3.0));
        }
    }
    StateBuffers out = makeStateBuffers(batch, qHeads, spec.headDimV, stateType);

    KernelSource src;
    std::vector<bool> oDyn{true, true, false, false}, lDyn{true, true, false};
    std::string oin = src.addMemref("o_in", partials.o, oDyn);
    std::string lin = src.addMemref("lse_in", partials.lse, lDyn);
    std::string whole = stateTypeText(qHeads, spec.headDimV, stateType, base);
    std::string partitioned = stateTypeText(qHeads, spec.headDimV, stateType,
                                            partialBase, /*partitioned=*/true);
    src.addLine("%p = kv.load_state " + oin + ", " + lin + " : " +
                src.typeOf(oin) + ", " + src.typeOf(lin) + " -> " +
                partitioned);
    std::string reduced = "%p";
    if (flashMlaEmpty) {
      std::string rebased = stateTypeText(qHeads, spec.headDimV, stateType,
                                          base, /*partitioned=*/true);
      src.addLine("%r = kv.rebase %p : " + partitioned + " -> " + rebased);
      reduced = "%r";
      partitioned = rebased;
    }
    src.addLine("%m = kv.merge_partitions " + reduced + " : " + partitioned +
                " -> " + whole);
    emitStore(src, "%m", whole, out);
    ASSERT_TRUE(runKernel(src, {out.o, out.lse}));

    ref::AttentionParams params;
    params.base = base;
    ref::State unionState = ref::decode(q, source, params);
    EXPECT_TRUE(check(compareState(out, unionState, stateType)));
    // The reference's own merge of the partials is the union's state too.
    ref::State merged = ref::merge(states);
    if (partialBase != base)
      merged = ref::rebase(merged, base);
    double worst = 0.0;
    for (size_t i = 0; i < merged.o.size(); ++i)
      worst = std::max(worst, std::fabs(merged.o[i] - unionState.o[i]));
    for (size_t i = 0; i < merged.lse.size(); ++i)
      if (std::isfinite(unionState.lse[i]))
        worst = std::max(worst, std::fabs(merged.lse[i] - unionState.lse[i]));
      else
        EXPECT_EQ(merged.lse[i], unionState.lse[i]);
    EXPECT_LT(worst, 1e-12);
  }
}

TEST(Merge, LoadStateMergePartitionsF32) {
  runPartitionMerge(DType::F32, Base::E, /*flashMlaEmpty=*/false, 811);
}

TEST(Merge, LoadStateMergePartitionsBF16Base2) {
  runPartitionMerge(DType::BF16, Base::Two, /*flashMlaEmpty=*/false, 812);
}

TEST(Merge, RebaseNormalizesFlashMlaEmptyPartialsF32) {
  runPartitionMerge(DType::F32, Base::Two, /*flashMlaEmpty=*/true, 813);
}

TEST(Merge, RebaseNormalizesFlashMlaEmptyPartialsF16) {
  runPartitionMerge(DType::F16, Base::Two, /*flashMlaEmpty=*/true, 814);
}

} // namespace
