//===- WarpRolesTest.cpp - Warp roles and their register budgets ----------===//
//
// The block a kernel's roles form (warps, the first warp of each role) and
// why a declaration cannot form one: too many threads, a register budget
// setmaxnreg cannot set (range, multiple of 8, whole warpgroups), or one
// past the SM's register file. The dispatch itself runs in the emulator
// (test/Codegen/warp-roles.mlir).
//
//===----------------------------------------------------------------------===//
#include "kvir/Codegen/WarpRoles.h"

#include <gtest/gtest.h>

using namespace kvir;
using namespace kvir::codegen;

namespace {

const target::TargetInfo &hopper() {
  return *target::TargetInfo::lookup("sm_90a");
}

TEST(WarpRoles, BlockOfRoles) {
  WarpRoles roles({{"producer", 4, 24}, {"consumer", 8, 240}});
  EXPECT_EQ(roles.getNumWarps(), 12);
  EXPECT_EQ(roles.getNumThreads(), 384);
  EXPECT_EQ(roles.firstWarp(0), 0);
  EXPECT_EQ(roles.firstWarp(1), 4);
  // FlashAttention-3's split: 24 + 2 x 240 registers per thread fit
  // the 64 K of an H100 SM.
  EXPECT_EQ(roles.whyNot(hopper()), std::nullopt);
  WarpRoles one = WarpRoles::single("attention", 8);
  EXPECT_EQ(one.getNumThreads(), 256);
  EXPECT_EQ(one.getRoles().front().maxRegisters, 0);
  EXPECT_EQ(one.whyNot(hopper()), std::nullopt);
}

TEST(WarpRoles, RegistersAtLaunch) {
  // One block per SM: the 64 K file over the block's threads, in steps of
  // 8, at most 256 (setmaxnreg's range).
  WarpRoles specialized({{"producer", 4, 72}, {"consumer", 8, 216}});
  EXPECT_TRUE(specialized.budgetsRegisters());
  EXPECT_EQ(specialized.registersAtLaunch(), 168); // 65536 / 384 = 170.7
  WarpRoles two({{"producer", 4, 72}, {"consumer", 4, 256}});
  EXPECT_EQ(two.registersAtLaunch(), 256);
  WarpRoles odd({{"producer", 1, 0}, {"consumer", 4, 0}});
  EXPECT_FALSE(odd.budgetsRegisters());
  EXPECT_EQ(odd.registersAtLaunch(), 256); // 65536 / 160 = 409.6
  EXPECT_EQ(WarpRoles::single("attention", 32).registersAtLaunch(), 64);
  EXPECT_EQ(WarpRoles::single("attention", 24).registersAtLaunch(),
            80); // 65536 / 768 = 85.3
}

TEST(WarpRoles, WhyNot) {
  auto why = [](WarpRoles roles) {
    return roles.whyNot(hopper()).value_or("");
  };
  EXPECT_EQ(why(WarpRoles::single("attention", 33)),
            "warp roles of 33 warps exceed a block's 1024 threads");
  EXPECT_EQ(why(WarpRoles({{"idle", 0, 0}})), "warp role 'idle' has no warps");
  EXPECT_NE(why(WarpRoles({{"consumer", 4, 250}})).find(
                "a register budget of 250 for 4 warps"),
            std::string::npos);
  EXPECT_NE(why(WarpRoles({{"producer", 2, 24}})).find("whole warpgroups"),
            std::string::npos);
  // A warpgroup must start on a multiple of 4 warps.
  EXPECT_NE(
      why(WarpRoles({{"a", 1, 0}, {"b", 4, 64}})).find("whole warpgroups"),
      std::string::npos);
  EXPECT_EQ(why(WarpRoles({{"producer", 4, 256}, {"consumer", 8, 256}})),
            "warp roles budget 98304 registers; an SM of sm_90a has 65536");
}

} // namespace
