//===- CodegenTest.cpp - Size expressions, identities, layouts, targets ---===//
//
// Unit tests of the pieces of the kernel layer that are plain C++: size
// expressions (parse, evaluate, print as text and C, fold, the verifier rules
// no textual IR can reach), kernel identities, shared-memory layouts, chip
// records; and that this build has assertions on.
//
//===----------------------------------------------------------------------===//
#include "kvir/Codegen/KernelFunc.h"
#include "kvir/Codegen/PagedTileLoader.h"
#include "kvir/Dialect/KV/IR/KVTypes.h"
#include "kvir/Dialect/KV/IR/PoolLayout.h"
#include "kvir/Dialect/KVGPU/IR/KVGPUDialect.h"
#include "kvir/Registration/InitAll.h"
#include "kvir/Target/GPU/TargetInfo.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include "gtest/gtest.h"

#include <limits>
#include <map>

using namespace mlir;
using namespace kvir;
using kvgpu::SizeExprAttr;
using kvgpu::SizeExprKind;

namespace {

MLIRContext &context() {
  static MLIRContext *ctx = [] {
    DialectRegistry registry;
    kvir::registerAllDialects(registry);
    auto *c = new MLIRContext(registry);
    c->loadAllAvailableDialects();
    return c;
  }();
  return *ctx;
}

SizeExprAttr parse(StringRef text) {
  return cast<SizeExprAttr>(
      parseAttribute(("#kvgpu.size<" + text + ">").str(), &context()));
}

std::optional<int64_t> eval(SizeExprAttr e,
                            const std::map<std::string, int64_t> &env) {
  return e.evaluate([&](StringRef s) -> std::optional<int64_t> {
    auto it = env.find(s.str());
    if (it == env.end())
      return std::nullopt;
    return it->second;
  });
}

TEST(SizeExpr, EvaluatesTheSplitRule) {
  SizeExprAttr rule = parse("min(32, max(1, ceildiv(264, max(1, batch * 8))))");
  // ceil(264 / 8) = 33 -> 32; ceil(264 / 32) = 9; 264 / 264 = 1; batch 0 -> 32.
  EXPECT_EQ(eval(rule, {{"batch", 1}}), 32);
  EXPECT_EQ(eval(rule, {{"batch", 4}}), 9);
  EXPECT_EQ(eval(rule, {{"batch", 33}}), 1);
  EXPECT_EQ(eval(rule, {{"batch", 34}}), 1);
  EXPECT_EQ(eval(rule, {{"batch", 0}}), 32);
  EXPECT_EQ(eval(rule, {}), std::nullopt);
}

TEST(SizeExpr, RoundsTowardTheRightInfinity) {
  EXPECT_EQ(eval(parse("ceildiv(a, 4)"), {{"a", -5}}), -1);
  EXPECT_EQ(eval(parse("floordiv(a, 4)"), {{"a", -5}}), -2);
  EXPECT_EQ(eval(parse("ceildiv(a, 4)"), {{"a", 5}}), 2);
  EXPECT_EQ(eval(parse("floordiv(a, 0)"), {{"a", 5}}), std::nullopt);
}

/// A size that overflows int64 has no value (a caller's absurd batch must
/// not wrap into a small grid).
TEST(SizeExpr, OverflowHasNoValue) {
  int64_t big = std::numeric_limits<int64_t>::max();
  int64_t least = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(eval(parse("a * 32"), {{"a", big / 2}}), std::nullopt);
  EXPECT_EQ(eval(parse("a + 1"), {{"a", big}}), std::nullopt);
  EXPECT_EQ(eval(parse("floordiv(a, b)"), {{"a", least}, {"b", -1}}),
            std::nullopt);
  EXPECT_EQ(eval(parse("ceildiv(a, b)"), {{"a", least}, {"b", -1}}),
            std::nullopt);
  EXPECT_EQ(eval(parse("a * 32"), {{"a", big / 64}}), big / 64 * 32);
}

TEST(SizeExpr, PrintsWithPrecedenceAndAsC) {
  SizeExprAttr e = parse("(a + 1) * b + c * 2");
  EXPECT_EQ(e.str(), "(a + 1) * b + c * 2");
  EXPECT_EQ(parse("a * (b * c)").str(), "a * (b * c)");
  SizeExprAttr m = parse("min(a, b, ceildiv(c, 2))");
  EXPECT_EQ(m.str(), "min(a, b, ceildiv(c, 2))");
  // C has no variadic min: nested binary calls.
  EXPECT_EQ(m.toC(nullptr, "k_"), "k_min(a, k_min(b, k_ceildiv(c, 2)))");
  EXPECT_EQ(e.toC([](StringRef s) { return "n_" + s.str(); }, "k_"),
            "(n_a + 1) * n_b + n_c * 2");
}

TEST(SizeExpr, BuildersFold) {
  MLIRContext *ctx = &context();
  auto c = [&](int64_t v) { return SizeExprAttr::constant(ctx, v); };
  SizeExprAttr batch = SizeExprAttr::symbolRef(ctx, "batch");
  EXPECT_EQ(SizeExprAttr::mul(c(6), c(7)), c(42));
  EXPECT_EQ(SizeExprAttr::mul(batch, c(1)), batch);
  EXPECT_EQ(SizeExprAttr::add(c(0), batch), batch);
  EXPECT_EQ(SizeExprAttr::min({batch}), batch);
  EXPECT_EQ(SizeExprAttr::ceilDiv(c(264), c(8)), c(33));
  EXPECT_EQ(SizeExprAttr::mul(batch, c(8)).str(), "batch * 8");
}

/// The verifier's message for `args`, or "" if it accepts them.
std::string verifierMessage(SizeExprKind kind, int64_t value, StringRef symbol,
                            ArrayRef<SizeExprAttr> operands) {
  std::string message;
  ScopedDiagnosticHandler capture(&context(), [&](Diagnostic &d) {
    message = d.str();
    return success();
  });
  SizeExprAttr::getChecked([&] { return emitError(UnknownLoc::get(&context())); },
                           &context(), kind, value, symbol, operands);
  return message;
}

TEST(SizeExpr, VerifierRulesTheParserCannotReach) {
  SizeExprAttr one = SizeExprAttr::constant(&context(), 1);
  EXPECT_EQ(verifierMessage(SizeExprKind::constant, 1, "x", {}),
            "a constant size has no operands or symbol");
  EXPECT_EQ(verifierMessage(SizeExprKind::constant, 1, "", {one}),
            "a constant size has no operands or symbol");
  EXPECT_EQ(verifierMessage(SizeExprKind::symbol, 0, "", {}),
            "a symbol size needs a name and no operands");
  EXPECT_EQ(verifierMessage(SizeExprKind::symbol, 0, "x", {one}),
            "a symbol size needs a name and no operands");
  EXPECT_EQ(verifierMessage(SizeExprKind::add, 0, "", {one, one, one}),
            "add takes 2 operands, got 3");
  EXPECT_EQ(verifierMessage(SizeExprKind::mul, 0, "", {one}),
            "mul takes 2 operands, got 1");
  EXPECT_EQ(verifierMessage(SizeExprKind::max, 0, "", {}),
            "max takes at least one operand");
  EXPECT_EQ(verifierMessage(SizeExprKind::min, 0, "", {one, one}), "");
}

TEST(KernelIdentity, CoversEverythingAdded) {
  MLIRContext *ctx = &context();
  Type f16 = Float16Type::get(ctx), bf16 = BFloat16Type::get(ctx);
  auto symbol = [&](Type t, StringRef chip, int64_t n) {
    return codegen::KernelIdentity("decode_x").add(t).add(chip).add(n).getSymbol();
  };
  std::string base = symbol(f16, "sm_90a", 1);
  EXPECT_EQ(base, symbol(f16, "sm_90a", 1));
  EXPECT_NE(base, symbol(bf16, "sm_90a", 1));
  EXPECT_NE(base, symbol(f16, "sm_80", 1));
  EXPECT_NE(base, symbol(f16, "sm_90a", 2));
  // A readable stem, then 16 hex digits of a stable hash.
  ASSERT_EQ(base.size(), std::string("decode_x_").size() + 16);
  EXPECT_EQ(base.rfind("decode_x_", 0), 0u);
  EXPECT_EQ(base.find_first_not_of("0123456789abcdef", 9), std::string::npos);
}

TEST(SharedMemoryLayout, PlacesBuffersAtTheirAlignment) {
  MLIRContext *ctx = &context();
  codegen::SharedMemoryLayout layout;
  layout.add("tile", {32, 128}, Float16Type::get(ctx));           // 8192
  layout.add("meta", {3}, IntegerType::get(ctx, 32), 4);          // 12
  layout.add("acc", {8, 128}, Float32Type::get(ctx));             // 4096 at 16
  ArrayRef<codegen::SharedBuffer> b = layout.getBuffers();
  EXPECT_EQ(b[0].offset, 0);
  EXPECT_EQ(b[1].offset, 8192);
  EXPECT_EQ(b[2].offset, 8208);
  EXPECT_EQ(layout.getBytes(), 8208 + 4096);
  EXPECT_FALSE(layout.isDynamic());
  layout.add("big", {64, 1024}, Float16Type::get(ctx));
  EXPECT_TRUE(layout.isDynamic());
}

TEST(TargetInfo, ResolvesChipsExactly) {
  EXPECT_EQ(target::TargetInfo::lookup("sm_90a")->smCount, 132);
  EXPECT_EQ(target::TargetInfo::lookup("sm_80")->smCount, 108);
  using target::CopyAtom;
  using target::MmaAtom;
  const target::TargetInfo *hopper = target::TargetInfo::lookup("sm_90a");
  const target::TargetInfo *sm90 = target::TargetInfo::lookup("sm_90");
  const target::TargetInfo *ampere = target::TargetInfo::lookup("sm_80");
  // wgmma needs the arch-specific target; TMA does not.
  EXPECT_EQ(hopper->mmaAtoms.front(), MmaAtom::WgmmaM64NK16);
  EXPECT_FALSE(sm90->has(MmaAtom::WgmmaM64NK16));
  EXPECT_TRUE(sm90->has(CopyAtom::Tma));
  EXPECT_FALSE(ampere->has(CopyAtom::Tma));
  for (const target::TargetInfo &t : target::TargetInfo::all()) {
    EXPECT_TRUE(t.has(MmaAtom::MmaSyncM16N8K16)) << t.chip.str();
    EXPECT_EQ(t.whyNoMmaSyncKernels(), "") << t.chip.str();
  }
  target::TargetInfo bare = *ampere;
  bare.copyAtoms = {};
  EXPECT_EQ(bare.whyNoMmaSyncKernels(), "sm_80 has no mma.sync / cp.async");
  EXPECT_EQ(target::stringifyMmaAtom(MmaAtom::WgmmaM64NK16), "wgmma.m64nNk16");
  EXPECT_EQ(target::TargetInfo::lookup("sm_90a "), nullptr);
  EXPECT_EQ(target::TargetInfo::lookup("sm_70"), nullptr);
  EXPECT_EQ(target::TargetInfo::supportedChips(),
            "sm_80, sm_86, sm_89, sm_90 or sm_90a");
}

TEST(TargetInfo, OccupancyFollowsTheCalculator) {
  const target::TargetInfo &a100 = *target::TargetInfo::lookup("sm_80");
  // 128 threads, 72 registers, 21600 B: registers allow 7 blocks (4 warps x
  // 2304 registers each of 65536), shared memory 7 (22656 B each of 164 KB):
  // 28 of 64 warps.
  EXPECT_EQ(a100.residentBlocks(128, 72, 21600), 7);
  EXPECT_NEAR(a100.occupancy(128, 72, 21600), 28.0 / 64.0, 1e-12);
  // Shared memory bound: 100 KB blocks, one per SM.
  EXPECT_EQ(a100.residentBlocks(128, 32, 100 * 1024), 1);
}

TEST(TargetInfo, GridDependencyControlFromSm90) {
  for (const target::TargetInfo &t : target::TargetInfo::all())
    EXPECT_EQ(t.hasGridDependencyControl, t.chip.starts_with("sm_90"))
        << t.chip.str();
}

TEST(CopyRows, ChunksPerThreadRow) {
  // A 64-row tile of 16 chunks (head dim 128, f16): 2 chunks of a row a
  // thread at 256 and 128 threads (8 threads a row), 1 where 2 would idle
  // threads (16 rows over 256 threads) or leave fewer than 8 a row.
  EXPECT_EQ(codegen::chunksPerThreadRow(64, 16, 256), 2);
  EXPECT_EQ(codegen::chunksPerThreadRow(64, 16, 128), 2);
  EXPECT_EQ(codegen::chunksPerThreadRow(16, 16, 256), 1);
  EXPECT_EQ(codegen::chunksPerThreadRow(64, 8, 128), 1);
  // Head dim 512 (64 chunks): 4 a row. Spans must be whole groups of 8
  // chunks: head dim 192 (24 chunks) takes 3 (spans of 8, not 12, which
  // would put two rows in one phase of 8 threads: bank conflicts), 96 (12
  // chunks) takes 1, as does a caller's maximum of 1.
  EXPECT_EQ(codegen::chunksPerThreadRow(32, 64, 256), 4);
  EXPECT_EQ(codegen::chunksPerThreadRow(64, 24, 256), 3);
  EXPECT_EQ(codegen::chunksPerThreadRow(64, 12, 64), 1);
  EXPECT_EQ(codegen::chunksPerThreadRow(64, 16, 128, 1), 1);
}

TEST(PoolLayout, DimInnermostExceptVllmKeys) {
  auto paged = [](StringRef params) {
    return cast<kv::PagedType>(
        parseType(("!kv.paged<" + params + ">").str(), &context()));
  };
  kv::PagedType nhd =
      paged("page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, "
            "dtype = f16, layout = nhd, storage = combined, table = csr");
  kv::PagedType vllm =
      paged("page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, "
            "dtype = f16, layout = vllm, storage = split, table = block_table");
  ASSERT_TRUE(nhd && vllm);
  EXPECT_TRUE(kv::isDimInnermost(nhd, kv::PoolRole::K));
  EXPECT_TRUE(kv::isDimInnermost(nhd, kv::PoolRole::V));
  // vLLM's K packs 8 dims innermost ([blocks, heads, dim / 8, slots, 8]),
  // its V has the slots innermost ([blocks, heads, dim, slots]).
  EXPECT_FALSE(kv::isDimInnermost(vllm, kv::PoolRole::K));
  EXPECT_FALSE(kv::isDimInnermost(vllm, kv::PoolRole::V));
}

TEST(Build, AssertionsAreOn) {
#ifdef NDEBUG
  FAIL() << "kvir is built with NDEBUG: assertions are off";
#else
  SUCCEED();
#endif
}

} // namespace
