//===- DependentLaunchTest.cpp - Programmatic dependent launch ------------===//
//
// A primary grid reads `in` and writes `mid` (before its
// griddepcontrol.launch_dependents) and `tail` (after). A dependent grid
// launched with programmatic stream serialization may run while the
// primary does: before its griddepcontrol.wait it may touch only memory
// the primary does not (PTX ISA, griddepcontrol: only the wait makes the
// primary's memory operations complete and visible — a trigger makes
// nothing visible, so `mid`, written before it, is as off-limits as
// `tail`). After the wait it reads `mid`. Each early access must be
// reported; the same kernels launched without the attribute (stream
// order) must not be.
//
//===----------------------------------------------------------------------===//
#include "TestSupport.h"

using namespace kvir::emu;
using namespace kvir::emu::test;

namespace {

/// out[i] = f(...) for thread i of one 64-thread block.
const char *kModule = R"(
module attributes {gpu.container_module} {
  gpu.module @pdl {
    gpu.func @primary(%in: memref<?xf32>, %mid: memref<?xf32>,
                      %tail: memref<?xf32>) kernel {
      %i = gpu.thread_id x
      %one = arith.constant 1.0 : f32
      %x = memref.load %in[%i] : memref<?xf32>
      %y = arith.addf %x, %one : f32
      memref.store %y, %mid[%i] : memref<?xf32>
      nvvm.griddepcontrol launch_dependents
      memref.store %x, %tail[%i] : memref<?xf32>
      gpu.return
    }
    // Before the wait: its own input only. After: the primary's output.
    gpu.func @dependent(%own: memref<?xf32>, %mid: memref<?xf32>,
                        %out: memref<?xf32>) kernel {
      %i = gpu.thread_id x
      %three = arith.constant 3.0 : f32
      %o = memref.load %own[%i] : memref<?xf32>
      nvvm.griddepcontrol wait
      %m = memref.load %mid[%i] : memref<?xf32>
      %p = arith.mulf %m, %three : f32
      %r = arith.addf %p, %o : f32
      memref.store %r, %out[%i] : memref<?xf32>
      gpu.return
    }
    // Reads what the primary wrote (before its trigger) before the wait.
    gpu.func @early_read(%own: memref<?xf32>, %mid: memref<?xf32>,
                         %out: memref<?xf32>) kernel {
      %i = gpu.thread_id x
      %m = memref.load %mid[%i] : memref<?xf32>
      nvvm.griddepcontrol wait
      memref.store %m, %out[%i] : memref<?xf32>
      gpu.return
    }
    // Overwrites what the primary reads, before the wait.
    gpu.func @early_write(%in: memref<?xf32>, %mid: memref<?xf32>,
                          %out: memref<?xf32>) kernel {
      %i = gpu.thread_id x
      %zero = arith.constant 0.0 : f32
      memref.store %zero, %in[%i] : memref<?xf32>
      nvvm.griddepcontrol wait
      %m = memref.load %mid[%i] : memref<?xf32>
      memref.store %m, %out[%i] : memref<?xf32>
      gpu.return
    }
  }
}
)";

class DependentLaunchTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() { ok = prepare(kModule); }
  static bool ok;
  static constexpr size_t kThreads = 64;

  Buffer<float> in{kThreads}, mid{kThreads, std::nanf("")},
      tail{kThreads, std::nanf("")}, own{kThreads},
      out{kThreads, std::nanf("")};

  void SetUp() override {
    for (size_t i = 0; i < kThreads; ++i) {
      in[i] = float(i);
      own[i] = float(1000 + i);
    }
  }
  bool runPrimary() {
    Args args;
    args.memref(in).memref(mid).memref(tail);
    return succeeded(launch("primary", {1, 1, 1}, {kThreads, 1, 1}, args, 0));
  }
  /// `kernel` as the grid after the primary; its first argument is `own`
  /// (or, for early_write, the primary's input).
  bool runSecond(const std::string &kernel, bool dependent) {
    Args args;
    if (kernel == "early_write")
      args.memref(in);
    else
      args.memref(own);
    args.memref(mid).memref(out);
    return succeeded(Emulator::get().launch(kernel, {1, 1, 1}, {kThreads, 1, 1},
                                            0, args.get(), {{}, dependent}));
  }
};
bool DependentLaunchTest::ok = false;

TEST_F(DependentLaunchTest, WaitBeforeReadingThePrimary) {
  ASSERT_TRUE(ok);
  ASSERT_TRUE(runPrimary()) << reports();
  ASSERT_TRUE(runSecond("dependent", /*dependent=*/true)) << reports();
  for (size_t i = 0; i < kThreads; ++i)
    EXPECT_EQ(out[i], (float(i) + 1) * 3 + float(1000 + i)) << i;
}

TEST_F(DependentLaunchTest, EarlyAccessesAreReported) {
  ASSERT_TRUE(ok);
  const std::pair<const char *, const char *> cases[] = {
      {"early_read", "reads global bytes"},
      {"early_write", "writes global bytes"},
  };
  for (auto [kernel, text] : cases) {
    SCOPED_TRACE(kernel);
    ASSERT_TRUE(runPrimary()) << reports();
    size_t before = Emulator::get().getReports().size();
    EXPECT_FALSE(runSecond(kernel, /*dependent=*/true));
    ASSERT_GT(Emulator::get().getReports().size(), before);
    std::string all = reports();
    EXPECT_NE(all.find(text), std::string::npos) << all;
    EXPECT_NE(
        all.find(std::string("the primary grid ('primary') ") +
                 (std::string(kernel) == "early_read" ? "writes" : "reads")),
        std::string::npos)
        << all;
    EXPECT_NE(all.find("before griddepcontrol.wait"), std::string::npos) << all;
  }
}

/// In stream order (no attribute) the same kernels are race-free.
TEST_F(DependentLaunchTest, StreamOrderIsNotChecked) {
  ASSERT_TRUE(ok);
  for (const char *kernel : {"early_read", "early_write"}) {
    SCOPED_TRACE(kernel);
    ASSERT_TRUE(runPrimary()) << reports();
    EXPECT_TRUE(runSecond(kernel, /*dependent=*/false)) << reports();
    for (size_t i = 0; i < kThreads; ++i)
      EXPECT_EQ(out[i], float(i) + 1) << i;
  }
}

} // namespace
