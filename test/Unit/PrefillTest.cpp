//===- PrefillTest.cpp - kv.prefill against the reference -----------------===//
//
// Ragged query rows (qo_indptr) over paged and ragged KV: causal with
// bottom-right alignment, custom masks (one byte per bool and bit-packed with
// random padding bits), sliding window, soft cap, RoPE, GQA, both bases.
// Without causal, a request may have more query rows than keys, and the
// empty request still has rows: those rows are the empty state. Rows may
// also sit at given positions.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"

using namespace kvir::test;

namespace {

TEST(Prefill, CausalF16GroupOf4Base2) {
  PrefillCase c;
  c.spec = makeSpec(16, 2, 128, DType::F16);
  c.qHeads = 8;
  c.params.causal = true;
  c.params.base = Base::Two;
  c.seed = 301;
  runPrefillCase(c);
}

TEST(Prefill, NonCausalF32MoreRowsThanKeys) {
  PrefillCase c;
  c.spec = makeSpec(5, 2, 64, DType::F32, Layout::HND, Storage::Combined,
                    Table::BlockTable);
  c.qHeads = 2;
  c.maxLen = 12;
  c.maxQo = 16;
  c.seed = 302;
  runPrefillCase(c);
}

TEST(Prefill, CausalPageSize1BF16) {
  PrefillCase c;
  c.spec = makeSpec(1, 1, 64, DType::BF16);
  c.qHeads = 8;
  c.params.causal = true;
  c.maxLen = 20;
  c.seed = 303;
  runPrefillCase(c);
}

TEST(Prefill, CausalHeadDim256PageSize64) {
  PrefillCase c;
  c.spec = makeSpec(64, 1, 256, DType::F16, Layout::NHD, Storage::Split,
                    Table::CSR);
  c.qHeads = 4;
  c.params.causal = true;
  c.maxLen = 140;
  c.maxQo = 5;
  c.batch = 3;
  c.seed = 304;
  runPrefillCase(c);
}

// Rows at given positions (positions(...)): causal, the window and RoPE
// read them instead of bottom-right alignment; a row at -1 sees no key
// under causal.
TEST(Prefill, PositionsCausalWindowF16) {
  PrefillCase c;
  c.spec = makeSpec(16, 2, 64, DType::F16);
  c.qHeads = 4;
  c.params.causal = true;
  c.params.windowLeft = 9;
  c.positions = true;
  c.seed = 320;
  runPrefillCase(c);
}

TEST(Prefill, PositionsRopeRaggedBF16) {
  PrefillCase c;
  c.spec = makeSpec(8, 1, 64, DType::BF16);
  c.ragged = true;
  c.qHeads = 2;
  c.params.rope = kvir::ref::Rope{kvir::ref::RopeStyle::RotateHalf, 1e4, 1.0};
  c.positions = true;
  c.seed = 321;
  runPrefillCase(c);
}

TEST(Prefill, BoolMaskF16) {
  PrefillCase c;
  c.spec = makeSpec(16, 2, 64, DType::F16);
  c.qHeads = 4;
  c.mask = MaskKind::Bool;
  c.seed = 305;
  runPrefillCase(c);
}

TEST(Prefill, PackedMaskF32) {
  // Many requests with odd qo_len x kv_len, so that blocks end mid-byte.
  PrefillCase c;
  c.spec = makeSpec(5, 2, 64, DType::F32);
  c.qHeads = 2;
  c.mask = MaskKind::Packed;
  c.batch = 7;
  c.maxLen = 23;
  c.maxQo = 7;
  c.seed = 306;
  runPrefillCase(c);
}

TEST(Prefill, PackedMaskCausalF16Base2) {
  PrefillCase c;
  c.spec = makeSpec(16, 1, 128, DType::F16, Layout::HND, Storage::Split,
                    Table::TokenTable);
  c.qHeads = 4;
  c.mask = MaskKind::Packed;
  c.params.causal = true;
  c.params.base = Base::Two;
  c.batch = 5;
  c.seed = 307;
  runPrefillCase(c);
}

TEST(Prefill, BoolMaskWithWindowBF16) {
  PrefillCase c;
  c.spec = makeSpec(8, 2, 64, DType::BF16);
  c.qHeads = 4;
  c.mask = MaskKind::Bool;
  c.params.windowLeft = 6;
  c.params.causal = true;
  c.seed = 308;
  runPrefillCase(c);
}

TEST(Prefill, CausalWindowF16) {
  PrefillCase c;
  c.spec = makeSpec(16, 2, 64, DType::F16, Layout::NHD, Storage::Combined,
                    Table::BlockTable);
  c.qHeads = 8;
  c.params.causal = true;
  c.params.windowLeft = 5;
  c.seed = 309;
  runPrefillCase(c);
}

TEST(Prefill, NonCausalWindowF32) {
  // Without causal the window still bounds keys from below only.
  PrefillCase c;
  c.spec = makeSpec(4, 1, 64, DType::F32);
  c.qHeads = 2;
  c.params.windowLeft = 3;
  c.maxLen = 20;
  c.seed = 310;
  runPrefillCase(c);
}

TEST(Prefill, SoftCapSmScaleCausalF32) {
  PrefillCase c;
  c.spec = makeSpec(16, 2, 64, DType::F32);
  c.qHeads = 8;
  c.params.causal = true;
  c.params.smScale = 0.25;
  c.params.softCap = 1.25;
  c.seed = 311;
  runPrefillCase(c);
}

TEST(Prefill, RopeInterleaveCausalF16) {
  PrefillCase c;
  c.spec = makeSpec(16, 2, 128, DType::F16);
  c.qHeads = 4;
  c.params.causal = true;
  c.params.rope = ref::Rope{ref::RopeStyle::Interleave, 1e4, 1.0};
  c.maxLen = 60;
  c.seed = 312;
  runPrefillCase(c);
}

TEST(Prefill, RopeRotateHalfBF16Base2) {
  PrefillCase c;
  c.spec = makeSpec(8, 1, 64, DType::BF16);
  c.qHeads = 4;
  c.params.rope = ref::Rope{ref::RopeStyle::RotateHalf, 1e6, 2.0};
  c.params.base = Base::Two;
  c.seed = 313;
  runPrefillCase(c);
}

TEST(Prefill, RopeRotateHalfCausalF32ShortSequences) {
  PrefillCase c;
  c.spec = makeSpec(4, 2, 64, DType::F32);
  c.qHeads = 2;
  c.params.causal = true;
  c.params.rope = ref::Rope{ref::RopeStyle::RotateHalf, 1e4, 1.0};
  c.maxLen = 20;
  c.seed = 314;
  runPrefillCase(c);
}

TEST(Prefill, RaggedCausalF16) {
  PrefillCase c;
  c.spec = makeSpec(1, 2, 128, DType::F16);
  c.ragged = true;
  c.qHeads = 8;
  c.params.causal = true;
  c.seed = 315;
  runPrefillCase(c);
}

TEST(Prefill, RaggedPackedMaskSplitDimsF32) {
  PrefillCase c;
  c.spec = makeSpec(1, 1, 64, DType::F32, Layout::NHD, Storage::Split,
                    Table::CSR, /*headDimV=*/128);
  c.ragged = true;
  c.qHeads = 4;
  c.mask = MaskKind::Packed;
  c.params.base = Base::Two;
  c.batch = 5;
  c.seed = 316;
  runPrefillCase(c);
}

TEST(Prefill, RaggedRopeWindowCausalBF16) {
  PrefillCase c;
  c.spec = makeSpec(1, 2, 64, DType::BF16);
  c.ragged = true;
  c.qHeads = 4;
  c.params.causal = true;
  c.params.windowLeft = 4;
  c.params.rope = ref::Rope{ref::RopeStyle::Interleave, 1e4, 1.0};
  c.params.base = Base::Two;
  c.seed = 318;
  runPrefillCase(c);
}

/// Every rule at once: causal, packed mask, window, soft cap and RoPE over
/// an fp8 cache in the vLLM layout.
TEST(Prefill, CausalMaskWindowSoftCapRopeFp8VllmF16) {
  PrefillCase c;
  c.spec = makeSpec(16, 2, 64, DType::F16, Layout::VLLM, Storage::Split,
                    Table::BlockTable);
  c.spec.quant = Quant::FP8E5M2;
  c.qHeads = 4;
  c.mask = MaskKind::Packed;
  c.params.causal = true;
  c.params.windowLeft = 9;
  c.params.softCap = 2.0;
  c.params.rope = ref::Rope{ref::RopeStyle::RotateHalf, 1e4, 1.0};
  c.seed = 317;
  runPrefillCase(c);
}

} // namespace
