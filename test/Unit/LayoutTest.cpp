//===- LayoutTest.cpp - Every layout and table form -----------------------===//
//
// Decode (and causal prefill on a subset) over every layout preset -- NHD and
// HND combined and split, vLLM, OpenPPL cache_layout 0..3 with a layer index,
// Llama's contiguous cache -- and user affine maps, through every table form
// (csr, block_table, token_table with unaligned token runs, token_offset).
// Pages no request owns, slots past a request's length and other layers are
// NaN, so a wrong address shows up as NaN.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"

using namespace kvir::test;

namespace {

struct LayoutParam {
  std::string name;
  CacheSpec spec;
  int64_t numLayers = 1;
  std::function<Index(Role, int64_t)> affineShape;
  int64_t qHeads = 4;
  int64_t maxLen = 40;
};

void PrintTo(const LayoutParam &param, std::ostream *os) { *os << param.name; }

CacheSpec withLayer(CacheSpec spec, int64_t layer) {
  spec.layer = layer;
  return spec;
}

/// OpenPPL's int64 cachestarts / kv lengths.
CacheSpec withI64Tables(CacheSpec spec) {
  spec.tableType = DType::I64;
  return spec;
}

std::vector<LayoutParam> layoutParams() {
  const DType f16 = DType::F16, f32 = DType::F32, bf16 = DType::BF16;
  std::vector<LayoutParam> params;
  auto add = [&](std::string name, CacheSpec spec, int64_t numLayers = 1,
                 std::function<Index(Role, int64_t)> shape = {}) {
    params.push_back({std::move(name), spec, numLayers, std::move(shape)});
  };
  add("NhdCombinedBlockTable",
      makeSpec(16, 2, 64, f16, Layout::NHD, Storage::Combined, Table::BlockTable));
  add("NhdCombinedTokenTable",
      makeSpec(8, 2, 64, f32, Layout::NHD, Storage::Combined, Table::TokenTable));
  add("NhdSplitTokenOffset",
      makeSpec(16, 2, 64, f16, Layout::NHD, Storage::Split, Table::TokenOffset));
  add("NhdSplitCsr",
      makeSpec(5, 1, 128, bf16, Layout::NHD, Storage::Split, Table::CSR));
  add("HndCombinedBlockTable",
      makeSpec(16, 2, 64, f16, Layout::HND, Storage::Combined, Table::BlockTable));
  add("HndCombinedCsr",
      makeSpec(5, 2, 64, f32, Layout::HND, Storage::Combined, Table::CSR));
  add("HndSplitTokenTable",
      makeSpec(16, 2, 128, f16, Layout::HND, Storage::Split, Table::TokenTable, 64));
  add("VllmF16BlockTable",
      makeSpec(16, 2, 64, f16, Layout::VLLM, Storage::Split, Table::BlockTable));
  add("VllmF32Csr",
      makeSpec(8, 2, 64, f32, Layout::VLLM, Storage::Split, Table::CSR));
  add("VllmBF16TokenTable",
      makeSpec(16, 1, 128, bf16, Layout::VLLM, Storage::Split, Table::TokenTable));
  add("VllmF16TokenOffsetValueDim32",
      makeSpec(4, 2, 64, f16, Layout::VLLM, Storage::Split, Table::TokenOffset, 32));
  add("Ppl0TokenTableLayer1",
      withLayer(makeSpec(8, 2, 64, f16, Layout::PPL0, Storage::Combined,
                         Table::TokenTable), 1), 2);
  add("Ppl1CsrLayer0",
      withLayer(makeSpec(16, 2, 64, f32, Layout::PPL1, Storage::Combined,
                         Table::CSR), 0), 3);
  add("Ppl2TokenOffsetLayer2",
      withLayer(makeSpec(16, 2, 64, f16, Layout::PPL2, Storage::Combined,
                         Table::TokenOffset), 2), 3);
  add("Ppl3BlockTableLayer1",
      withLayer(makeSpec(5, 2, 64, bf16, Layout::PPL3, Storage::Combined,
                         Table::BlockTable), 1), 2);
  add("Ppl0TokenTableLayer1I64",
      withI64Tables(withLayer(makeSpec(8, 2, 64, f16, Layout::PPL0,
                                       Storage::Combined, Table::TokenTable),
                              1)),
      2);
  add("Ppl2TokenOffsetLayer2I64",
      withI64Tables(withLayer(makeSpec(16, 2, 64, f16, Layout::PPL2,
                                       Storage::Combined, Table::TokenOffset),
                              2)),
      3);
  add("Ppl3TokenTableLayer0",
      withLayer(makeSpec(16, 1, 128, f16, Layout::PPL3, Storage::Combined,
                         Table::TokenTable), 0), 2);
  add("LlamaTokenOffset",
      makeSpec(64, 2, 64, f16, Layout::Llama, Storage::Split, Table::TokenOffset));
  add("LlamaTokenOffsetF32",
      makeSpec(48, 1, 128, f32, Layout::Llama, Storage::Split, Table::TokenOffset));

  // Affine: vLLM-like packing of a combined pool with the head outermost.
  {
    CacheSpec s = makeSpec(8, 2, 64, f16, Layout::Affine, Storage::Combined,
                           Table::CSR);
    s.kMap = ref::parseAffineMap(
        "(p, kv, s, h, d) -> (h, p, kv, d floordiv 8, s, d mod 8)");
    add("AffineCombinedPackedCsr", s, 1, [](Role, int64_t pages) {
      return Index{2, pages, 2, 8, 8, 8};
    });
  }
  // Affine: a 3-d pool mixing page and kv, and slot and head.
  {
    CacheSpec s = makeSpec(4, 2, 64, f32, Layout::Affine, Storage::Combined,
                           Table::BlockTable);
    s.kMap = ref::parseAffineMap("(p, kv, s, h, d) -> (p * 2 + kv, s * 2 + h, d)");
    add("AffineCombinedFlattenedBlockTable", s, 1, [](Role, int64_t pages) {
      return Index{pages * 2, 8, 64};
    });
  }
  // Affine split with a token-major K and a dim-major V (D != Dv).
  {
    CacheSpec s = makeSpec(8, 2, 64, f16, Layout::Affine, Storage::Split,
                           Table::TokenTable, 32);
    s.kMap = ref::parseAffineMap("(p, kv, s, h, d) -> (p * 8 + s, h, d)");
    s.vMap = ref::parseAffineMap("(p, kv, s, h, d) -> (d, h, p, s)");
    add("AffineSplitTokenTable", s, 1, [](Role role, int64_t pages) {
      if (role == Role::V)
        return Index{32, 2, pages, 8};
      return Index{pages * 8, 2, 64};
    });
  }
  return params;
}

class LayoutMatrix : public ::testing::TestWithParam<LayoutParam> {};

TEST_P(LayoutMatrix, Decode) {
  const LayoutParam &p = GetParam();
  DecodeCase c;
  c.spec = p.spec;
  c.qHeads = p.qHeads;
  c.cacheOptions.numLayers = p.numLayers;
  c.cacheOptions.affineShape = p.affineShape;
  c.maxLen = std::min(p.maxLen, p.spec.layout == Layout::Llama
                                    ? p.spec.pageSize
                                    : p.maxLen);
  c.params.base = p.spec.dtype == DType::F32 ? Base::E : Base::Two;
  c.seed = std::hash<std::string>()(p.name) % 100000;
  runDecodeCase(c);
}

TEST_P(LayoutMatrix, CausalPrefill) {
  const LayoutParam &p = GetParam();
  PrefillCase c;
  c.spec = p.spec;
  c.qHeads = p.qHeads;
  c.cacheOptions.numLayers = p.numLayers;
  c.cacheOptions.affineShape = p.affineShape;
  c.maxLen = std::min(p.maxLen, p.spec.layout == Layout::Llama
                                    ? p.spec.pageSize
                                    : p.maxLen);
  c.params.causal = true;
  c.repeats = 1;
  c.seed = std::hash<std::string>()(p.name) % 100000 + 7;
  runPrefillCase(c);
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, LayoutMatrix, ::testing::ValuesIn(layoutParams()),
    [](const ::testing::TestParamInfo<LayoutParam> &info) {
      return info.param.name;
    });

} // namespace
