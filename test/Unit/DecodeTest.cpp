//===- DecodeTest.cpp - kv.decode against the reference --------------------===//
//
// Batches always contain an empty and a one-token request. Page sizes, head
// dims (with D != Dv), group sizes, dtypes, LSE bases, window, soft cap,
// custom sm_scale and both RoPE styles.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"

using namespace kvir::test;

namespace {

class DecodePageSize : public ::testing::TestWithParam<int64_t> {};

TEST_P(DecodePageSize, NhdCombinedCsrF16GroupOf4) {
  int64_t p = GetParam();
  DecodeCase c;
  c.spec = makeSpec(p, /*kvHeads=*/2, /*headDim=*/128, DType::F16);
  c.qHeads = 8;
  c.params.base = Base::Two;
  c.maxLen = p == 1 ? 24 : 2 * p + 9;
  c.seed = 100 + p;
  runDecodeCase(c);
}

INSTANTIATE_TEST_SUITE_P(PageSizes, DecodePageSize,
                         ::testing::Values(1, 5, 16, 64));

TEST(Decode, HeadDim64F32GroupOf1) {
  DecodeCase c;
  c.spec = makeSpec(16, 2, 64, DType::F32);
  c.qHeads = 2;
  c.seed = 201;
  runDecodeCase(c);
}

TEST(Decode, HeadDim256BF16GroupOf8) {
  DecodeCase c;
  c.spec = makeSpec(16, 1, 256, DType::BF16);
  c.qHeads = 8;
  c.params.base = Base::Two;
  c.seed = 202;
  runDecodeCase(c);
}

TEST(Decode, SplitHeadDim128ValueDim64F16) {
  DecodeCase c;
  c.spec = makeSpec(16, 2, 128, DType::F16, Layout::NHD, Storage::Split,
                    Table::CSR, /*headDimV=*/64);
  c.qHeads = 4;
  c.seed = 203;
  runDecodeCase(c);
}

TEST(Decode, SplitHndHeadDim64ValueDim256F32) {
  DecodeCase c;
  c.spec = makeSpec(8, 1, 64, DType::F32, Layout::HND, Storage::Split,
                    Table::BlockTable, /*headDimV=*/256);
  c.qHeads = 4;
  c.params.base = Base::Two;
  c.seed = 204;
  runDecodeCase(c);
}

TEST(Decode, GroupOf8F32BothBases) {
  for (Base base : {Base::E, Base::Two}) {
    DecodeCase c;
    c.spec = makeSpec(16, 1, 128, DType::F32);
    c.qHeads = 8;
    c.params.base = base;
    c.seed = 205;
    runDecodeCase(c);
  }
}

TEST(Decode, WindowLeftF16) {
  DecodeCase c;
  c.spec = makeSpec(5, 2, 64, DType::F16);
  c.qHeads = 8;
  c.params.windowLeft = 7;
  c.maxLen = 30;
  c.seed = 206;
  runDecodeCase(c);
}

TEST(Decode, WindowLeftZeroSeesOnlyTheLastKey) {
  DecodeCase c;
  c.spec = makeSpec(4, 1, 64, DType::F32);
  c.qHeads = 4;
  c.params.windowLeft = 0;
  c.seed = 207;
  runDecodeCase(c);
}

TEST(Decode, SoftCapAndSmScaleF32) {
  DecodeCase c;
  c.spec = makeSpec(16, 2, 64, DType::F32);
  c.qHeads = 8;
  c.params.smScale = 0.3;
  c.params.softCap = 1.5;
  c.params.base = Base::Two;
  c.seed = 208;
  runDecodeCase(c);
}

TEST(Decode, SoftCapBF16) {
  DecodeCase c;
  c.spec = makeSpec(16, 2, 128, DType::BF16);
  c.qHeads = 8;
  c.params.softCap = 2.0;
  c.seed = 209;
  runDecodeCase(c);
}

TEST(Decode, RopeInterleaveF16) {
  DecodeCase c;
  c.spec = makeSpec(16, 2, 128, DType::F16);
  c.qHeads = 8;
  c.params.rope = ref::Rope{ref::RopeStyle::Interleave, 1e4, 1.0};
  c.maxLen = 60;
  c.seed = 210;
  runDecodeCase(c);
}

TEST(Decode, RopeRotateHalfF32) {
  DecodeCase c;
  c.spec = makeSpec(8, 2, 64, DType::F32);
  c.qHeads = 4;
  c.params.rope = ref::Rope{ref::RopeStyle::RotateHalf, 5e5, 0.25};
  c.params.base = Base::Two;
  // f32 angles pos * freq lose ~pos * 2^-24 radians: at a few thousand
  // positions that alone approaches the 1e-5 tolerance, so stay shorter.
  c.maxLen = 120;
  c.seed = 211;
  runDecodeCase(c);
}

TEST(Decode, RopePartialRotaryInterleaveF16) {
  DecodeCase c;
  c.spec = makeSpec(16, 2, 128, DType::F16);
  c.qHeads = 8;
  c.params.rope = ref::Rope{ref::RopeStyle::Interleave, 1e4, 1.0};
  c.params.rope->rotaryDim = 48;
  c.maxLen = 60;
  c.seed = 213;
  runDecodeCase(c);
}

TEST(Decode, RopeLlama31RotateHalfRotary64F16) {
  DecodeCase c;
  c.spec = makeSpec(16, 2, 128, DType::F16, Layout::HND, Storage::Combined,
                    Table::BlockTable);
  c.qHeads = 4;
  c.params.rope = llama31Rope(ref::RopeStyle::RotateHalf, 64);
  c.batch = 3;
  c.maxLen = 300;
  c.seed = 214;
  runDecodeCase(c);
}

TEST(Decode, RopeLlama31InterleaveF32) {
  DecodeCase c;
  c.spec = makeSpec(8, 2, 64, DType::F32);
  c.qHeads = 4;
  c.params.rope = llama31Rope(ref::RopeStyle::Interleave, 0);
  c.maxLen = 120;
  c.seed = 215;
  runDecodeCase(c);
}

TEST(Decode, RopeLongPositionsPage64F16) {
  DecodeCase c;
  c.spec = makeSpec(64, 1, 128, DType::F16, Layout::HND, Storage::Combined,
                    Table::BlockTable);
  c.qHeads = 4;
  c.params.rope = ref::Rope{ref::RopeStyle::RotateHalf, 1e4, 1.0};
  c.batch = 3;
  c.maxLen = 300;
  c.seed = 212;
  runDecodeCase(c);
}

TEST(Decode, GroupOf4WithFourKvHeadsF16) {
  DecodeCase c;
  c.spec = makeSpec(16, 4, 128, DType::F16, Layout::NHD, Storage::Split,
                    Table::TokenTable);
  c.qHeads = 16;
  c.batch = 4;
  c.seed = 213;
  runDecodeCase(c);
}

/// The state's output type is its own: an f16 cache can produce an f32
/// state (held to the f32 tolerance, since accumulation is f32).
TEST(Decode, F16CacheF32State) {
  DecodeCase c;
  c.spec = makeSpec(16, 2, 128, DType::F16);
  c.outType = DType::F32;
  c.qHeads = 8;
  c.seed = 215;
  runDecodeCase(c);
}

TEST(Decode, F32CacheBF16StateBase2) {
  DecodeCase c;
  c.spec = makeSpec(8, 1, 64, DType::F32);
  c.outType = DType::BF16;
  c.params.base = Base::Two;
  c.qHeads = 2;
  c.seed = 216;
  runDecodeCase(c);
}

/// Every attribute at once, over an int8-group cache.
TEST(Decode, WindowSoftCapRopeSmScaleInt8Base2F16) {
  DecodeCase c;
  c.spec = makeSpec(5, 2, 64, DType::F16, Layout::PPL1, Storage::Combined,
                    Table::BlockTable);
  c.spec.quant = Quant::Int8Group;
  c.spec.quantGroup = 8;
  c.spec.layer = 1;
  c.cacheOptions.numLayers = 2;
  c.qHeads = 8;
  c.params.windowLeft = 11;
  c.params.softCap = 3.0;
  c.params.smScale = 0.2;
  c.params.rope = ref::Rope{ref::RopeStyle::Interleave, 5e5, 0.5};
  c.params.base = Base::Two;
  c.seed = 214;
  runDecodeCase(c);
}

} // namespace
