//===- QuantTest.cpp - int8-group and fp8 KV caches ------------------------===//
//
// The reference dequantizes the same stored bytes (int8 codes times their
// group's scale from the scale pool; fp8 bits decoded with APFloat times the
// per-tensor scale), so the tolerance is the activation type's.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"

using namespace kvir::test;

namespace {

TEST(Int8Group, DecodeNhdCombinedGroup8F16) {
  DecodeCase c;
  c.spec = quantized(makeSpec(16, 2, 128, DType::F16), Quant::Int8Group, 8);
  c.qHeads = 8;
  c.params.base = Base::Two;
  c.seed = 401;
  runDecodeCase(c);
}

TEST(Int8Group, DecodeHndSplitDvDiffersGroup16BF16) {
  DecodeCase c;
  c.spec = quantized(makeSpec(16, 2, 128, DType::BF16, Layout::HND,
                              Storage::Split, Table::BlockTable, 64),
                     Quant::Int8Group, 16);
  c.qHeads = 4;
  c.seed = 402;
  runDecodeCase(c);
}

TEST(Int8Group, DecodeOpenPplLayout0TokenTableF16) {
  // OpenPPL: cache_layout 0, cache_mode 1, quant_group 8, layer 1 of 2.
  DecodeCase c;
  c.spec = quantized(makeSpec(8, 2, 64, DType::F16, Layout::PPL0,
                              Storage::Combined, Table::TokenTable),
                     Quant::Int8Group, 8);
  c.spec.layer = 1;
  c.cacheOptions.numLayers = 2;
  c.qHeads = 8;
  c.seed = 403;
  runDecodeCase(c);
}

TEST(Int8Group, DecodeOpenPplLayout3TokenOffsetF32) {
  DecodeCase c;
  c.spec = quantized(makeSpec(16, 1, 64, DType::F32, Layout::PPL3,
                              Storage::Combined, Table::TokenOffset),
                     Quant::Int8Group, 32);
  c.cacheOptions.numLayers = 3;
  c.spec.layer = 2;
  c.qHeads = 4;
  c.seed = 404;
  runDecodeCase(c);
}

TEST(Int8Group, DecodeLlamaWindowF16) {
  DecodeCase c;
  c.spec = quantized(makeSpec(32, 2, 128, DType::F16, Layout::Llama,
                              Storage::Split, Table::TokenOffset),
                     Quant::Int8Group, 8);
  c.qHeads = 4;
  c.maxLen = 32;
  c.params.windowLeft = 9;
  c.seed = 405;
  runDecodeCase(c);
}

TEST(Int8Group, PrefillCausalPpl1CsrF16) {
  PrefillCase c;
  c.spec = quantized(makeSpec(5, 2, 64, DType::F16, Layout::PPL1,
                              Storage::Combined, Table::CSR),
                     Quant::Int8Group, 8);
  c.cacheOptions.numLayers = 2;
  c.qHeads = 4;
  c.params.causal = true;
  c.seed = 406;
  runPrefillCase(c);
}

TEST(Fp8E4M3, DecodeNhdCombinedCsrF16) {
  DecodeCase c;
  c.spec = quantized(makeSpec(16, 2, 128, DType::F16), Quant::FP8E4M3);
  c.qHeads = 8;
  c.seed = 411;
  runDecodeCase(c);
}

TEST(Fp8E4M3, DecodeVllmBlockTableF16) {
  // vLLM: K [blocks, H, D/16, block, 16] for one-byte elements.
  DecodeCase c;
  c.spec = quantized(makeSpec(16, 2, 128, DType::F16, Layout::VLLM,
                              Storage::Split, Table::BlockTable),
                     Quant::FP8E4M3);
  c.qHeads = 8;
  c.params.base = Base::Two;
  c.seed = 412;
  runDecodeCase(c);
}

TEST(Fp8E4M3, DecodeSubnormalScalesF32) {
  // Large scales put most stored values among e4m3's subnormals.
  DecodeCase c;
  c.spec = quantized(makeSpec(8, 1, 64, DType::F32, Layout::HND,
                              Storage::Split, Table::TokenTable),
                     Quant::FP8E4M3);
  c.cacheOptions.kScale = 64.0f;
  c.cacheOptions.vScale = 32.0f;
  c.qHeads = 4;
  c.seed = 413;
  runDecodeCase(c);
}

TEST(Fp8E5M2, DecodeHndSplitBlockTableBF16) {
  DecodeCase c;
  c.spec = quantized(makeSpec(16, 2, 128, DType::BF16, Layout::HND,
                              Storage::Split, Table::BlockTable),
                     Quant::FP8E5M2);
  c.qHeads = 8;
  c.seed = 421;
  runDecodeCase(c);
}

TEST(Fp8E5M2, DecodeVllmCsrF32) {
  DecodeCase c;
  c.spec = quantized(makeSpec(5, 2, 64, DType::F32, Layout::VLLM,
                              Storage::Split, Table::CSR),
                     Quant::FP8E5M2);
  c.qHeads = 4;
  c.params.base = Base::Two;
  c.seed = 422;
  runDecodeCase(c);
}

TEST(Fp8E5M2, DecodePpl2TokenOffsetF16) {
  DecodeCase c;
  c.spec = quantized(makeSpec(16, 2, 64, DType::F16, Layout::PPL2,
                              Storage::Combined, Table::TokenOffset),
                     Quant::FP8E5M2);
  c.spec.layer = 1;
  c.cacheOptions.numLayers = 2;
  c.qHeads = 2;
  c.seed = 423;
  runDecodeCase(c);
}

TEST(Fp8E4M3, PrefillCausalSoftCapF16) {
  PrefillCase c;
  c.spec = quantized(makeSpec(16, 2, 64, DType::F16), Quant::FP8E4M3);
  c.qHeads = 4;
  c.params.causal = true;
  c.params.softCap = 2.5;
  c.seed = 414;
  runPrefillCase(c);
}

TEST(Fp8E5M2, PrefillPackedMaskBF16) {
  PrefillCase c;
  c.spec = quantized(makeSpec(8, 1, 64, DType::BF16, Layout::NHD,
                              Storage::Split, Table::TokenTable),
                     Quant::FP8E5M2);
  c.qHeads = 4;
  c.mask = MaskKind::Packed;
  c.seed = 424;
  runPrefillCase(c);
}

} // namespace
