//===- InlinePtxTest.cpp - The inline-PTX template reader -----------------===//
//
// Templates split into the statements and operands PTX's syntax gives them
// (PTX ISA 4), constraint strings into outputs and tied inputs (LLVM's
// inline-asm constraint grammar), and text outside the grammar refused
// with a reason.
//
//===----------------------------------------------------------------------===//
#include "InlinePtx.h"

#include "gtest/gtest.h"

using namespace kvir::emu;

namespace {

TEST(InlinePtx, SplitsStatementsAndOperands) {
  std::string error;
  auto statements = parseInlinePtx(
      "{\n .reg .pred p;  // scale-d\n setp.ne.b32 p, $70, 0;\n"
      " wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {$0, $1, $2, $3}, "
      "{$4, $5, $6, $7}, $8, p, -1, 1, 0x1;\n}\n",
      error);
  ASSERT_TRUE(statements) << error;
  ASSERT_EQ(statements->size(), 3u);
  const PtxStatement &reg = (*statements)[0];
  EXPECT_EQ(reg.opcode, ".reg");
  ASSERT_EQ(reg.operands.size(), 2u);
  EXPECT_EQ(reg.operands[0].name, ".pred");
  EXPECT_EQ(reg.operands[1].name, "p");
  const PtxStatement &setp = (*statements)[1];
  EXPECT_EQ(setp.opcode, "setp.ne.b32");
  ASSERT_EQ(setp.operands.size(), 3u);
  EXPECT_EQ(setp.operands[1].kind, PtxOperand::Placeholder);
  EXPECT_EQ(setp.operands[1].value, 70);
  EXPECT_EQ(setp.operands[2].kind, PtxOperand::Immediate);
  const PtxStatement &mma = (*statements)[2];
  EXPECT_EQ(mma.opcode, "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16");
  ASSERT_EQ(mma.operands.size(), 7u); // the RS form
  ASSERT_EQ(mma.operands[0].kind, PtxOperand::Vector);
  ASSERT_EQ(mma.operands[0].elements.size(), 4u);
  EXPECT_EQ(mma.operands[0].elements[3].value, 3);
  EXPECT_EQ(mma.operands[1].elements[0].value, 4);
  EXPECT_EQ(mma.operands[2].value, 8);
  EXPECT_EQ(mma.operands[3].kind, PtxOperand::Name);
  EXPECT_EQ(mma.operands[4].value, -1);
  EXPECT_EQ(mma.operands[6].value, 1); // 0x1
}

TEST(InlinePtx, EmptyTemplateHasNoStatements) {
  std::string error;
  auto statements = parseInlinePtx("  // nothing\n", error);
  ASSERT_TRUE(statements) << error;
  EXPECT_TRUE(statements->empty());
}

TEST(InlinePtx, RefusesTextOutsideTheGrammar) {
  const std::pair<const char *, const char *> bad[] = {
      {"@p wgmma.fence.sync.aligned;", "guarded statement"},
      {"ld.shared.b32 $0, [$1];", "memory operand"},
      {"mov.b32 ${0:r}, $1;", "only plain $N placeholders"},
      {"wgmma.fence.sync.aligned", "does not end with ';'"},
      {"{ wgmma.fence.sync.aligned;", "unbalanced '{'"},
      {"wgmma.fence.sync.aligned; }", "unbalanced '}'"},
      {"add.s32 $0, $1, 1+2;", "is not a placeholder"},
  };
  for (auto [text, why] : bad) {
    SCOPED_TRACE(text);
    std::string error;
    EXPECT_FALSE(parseInlinePtx(text, error));
    EXPECT_NE(error.find(why), std::string::npos) << error;
  }
}

TEST(InlinePtx, Constraints) {
  std::string error;
  auto c = parseConstraints("=f,=f,0,1,r,l,~{memory}", error);
  ASSERT_TRUE(c) << error;
  EXPECT_EQ(c->outputs, 2u);
  EXPECT_EQ(c->tiedTo, (std::vector<int>{0, 1, -1, -1}));
  EXPECT_FALSE(parseConstraints("=f,2", error));
  EXPECT_NE(error.find("ties to an output that does not exist"),
            std::string::npos);
  EXPECT_FALSE(parseConstraints("r,=f", error));
  EXPECT_NE(error.find("after an input"), std::string::npos);
}

} // namespace
