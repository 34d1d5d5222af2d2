//===- ShuffleTest.cpp - shfl.sync against models of PTX and CUDA ---------===//
//
// Random shuffles (seeded) of every mode: per-lane offsets b (including
// b >= 32), random clamp/segment masks c, random partial membermasks. The
// emulator's values and valid flags are compared with a transcription of
// the PTX ISA pseudo-code ("shfl.sync", Semantics) and, for the c encodings
// CUDA's __shfl_*_sync(mask, v, b, width) use, with CUDA's documented
// per-width semantics.
//
//===----------------------------------------------------------------------===//
#include "TestSupport.h"

#include <random>

using namespace kvir::emu;
using namespace kvir::emu::test;

namespace {

enum Mode { Bfly, Up, Down, Idx };
const char *const kModeNames[] = {"bfly", "up", "down", "idx"};

struct Lane {
  uint32_t value;
  bool valid;
  int source; // the lane read
};

/// PTX ISA, shfl.sync, "Semantics":
///   lane[4:0] = laneid; bval[4:0] = b[4:0]; cval[4:0] = c[4:0];
///   segmask[4:0] = c[12:8];
///   maxLane = (lane & segmask) | (cval & ~segmask); minLane = lane & segmask;
///   up: j = lane - bval, pval = j >= maxLane; down: j = lane + bval,
///   pval = j <= maxLane; bfly: j = lane ^ bval, pval = j <= maxLane;
///   idx: j = minLane | (bval & ~segmask), pval = j <= maxLane;
///   if (!pval) j = lane; d = a[j]; p = pval.
Lane ptxModel(Mode mode, int lane, uint32_t b, uint32_t c,
              const uint32_t *values) {
  int bval = b & 31, cval = c & 31, segmask = (c >> 8) & 31;
  int maxLane = (lane & segmask) | (cval & ~segmask);
  int minLane = lane & segmask;
  int j = 0;
  bool pval = false;
  switch (mode) {
  case Up:
    j = lane - bval;
    pval = j >= maxLane;
    break;
  case Down:
    j = lane + bval;
    pval = j <= maxLane;
    break;
  case Bfly:
    j = lane ^ bval;
    pval = j <= maxLane;
    break;
  case Idx:
    j = minLane | (bval & ~segmask);
    pval = j <= maxLane;
    break;
  }
  if (!pval)
    j = lane;
  return {values[j], pval, j};
}

/// CUDA C++ Programming Guide, "Warp Shuffle Functions", for width a power
/// of two and 0 <= b < 32: lanes form groups of `width`;
///   __shfl_sync(idx):  reads lane (lane & ~(width-1)) + b % width;
///   __shfl_up_sync:    own value if lane % width < b, else lane - b;
///   __shfl_down_sync:  own value if lane % width + b >= width, else lane + b;
///   __shfl_xor_sync:   lane ^ b unless that is in a later group (own value).
/// Returns the lane read.
int cudaModel(Mode mode, int lane, int b, int width) {
  int group = lane / width;
  switch (mode) {
  case Idx:
    return group * width + b % width;
  case Up:
    return lane % width < b ? lane : lane - b;
  case Down:
    return lane % width + b >= width ? lane : lane + b;
  case Bfly: {
    int j = lane ^ b;
    return j / width > group ? lane : j;
  }
  }
  return lane;
}

/// The c operand CUDA's headers pass for a width: the segment mask in
/// c[12:8] and, except for up, the clamp 31 in c[4:0].
uint32_t cudaClamp(Mode mode, int width) {
  return (uint32_t(32 - width) << 8) | (mode == Up ? 0 : 0x1f);
}

class ShuffleTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    std::string source = "module attributes {gpu.container_module} {\n"
                         "gpu.module @shuffle_kernels {\n";
    for (const char *mode : kModeNames) {
      // Lanes whose participation flag is 0 skip the shuffle; the others
      // pass the same membermask and clamp and their own offset.
      source +=
          std::string(R"(
  gpu.func @shfl_)") +
          mode + R"((%vals: memref<64xi32>, %bs: memref<64xi32>,
      %part: memref<64xi32>, %out: memref<64xi32>, %valid: memref<64xi32>,
      %mask: i32, %c: i32) kernel {
    %t = gpu.thread_id x
    %p = memref.load %part[%t] : memref<64xi32>
    %zero = arith.constant 0 : i32
    %on = arith.cmpi ne, %p, %zero : i32
    scf.if %on {
      %v = memref.load %vals[%t] : memref<64xi32>
      %b = memref.load %bs[%t] : memref<64xi32>
      %r = nvvm.shfl.sync )" +
          mode +
          R"( %mask, %v, %b, %c {return_value_and_is_valid} : i32 -> !llvm.struct<(i32, i1)>
      %d = llvm.extractvalue %r[0] : !llvm.struct<(i32, i1)>
      %ok = llvm.extractvalue %r[1] : !llvm.struct<(i32, i1)>
      %oki = arith.extui %ok : i1 to i32
      memref.store %d, %out[%t] : memref<64xi32>
      memref.store %oki, %valid[%t] : memref<64xi32>
    }
    gpu.return
  }
)";
    }
    source += "}\n}\n";
    prepared = prepare(source);
  }
  static bool prepared;

  /// One launch of 2 warps; returns whether the emulator's results match
  /// `expect` (value and valid per thread) for participating threads.
  void run(Mode mode, uint32_t mask, uint32_t c, const uint32_t *bs,
           const uint32_t *values, const std::string &what,
           bool cudaCheck = false, int width = 32) {
    Buffer<uint32_t> vals(64), b(64), part(64), out(64, 0xdeadbeef),
        valid(64, 7);
    for (int i = 0; i < 64; ++i) {
      vals[i] = values[i];
      b[i] = bs[i];
      part[i] = mask >> (i % 32) & 1;
    }
    // The model: per warp, the source lane of each member, and whether any
    // member reads a lane outside the membermask (the emulator reports it).
    bool readsOutside = false;
    std::vector<Lane> expect(64);
    for (int w = 0; w < 2; ++w)
      for (int lane = 0; lane < 32; ++lane) {
        if (!(mask >> lane & 1))
          continue;
        Lane l = ptxModel(mode, lane, bs[32 * w + lane], c, values + 32 * w);
        expect[32 * w + lane] = l;
        if (!(mask >> l.source & 1))
          readsOutside = true;
        if (cudaCheck) {
          int j = cudaModel(mode, lane, int(bs[32 * w + lane]), width);
          ASSERT_EQ(j, l.source)
              << "PTX and CUDA models disagree: " << what << " lane " << lane;
        }
      }
    Args args;
    args.staticMemref(vals).staticMemref(b).staticMemref(part);
    args.staticMemref(out).staticMemref(valid);
    args.scalar<uint32_t>(mask).scalar<uint32_t>(c);
    Emulator::get().clearResults();
    bool ok = llvm::succeeded(launch(std::string("shfl_") + kModeNames[mode],
                                     {1, 1, 1}, {64, 1, 1}, args));
    if (readsOutside) {
      EXPECT_FALSE(ok) << what;
      EXPECT_NE(reports().find("which is not in the membermask"),
                std::string::npos)
          << what << "\n"
          << reports();
      return;
    }
    ASSERT_TRUE(ok) << what << "\n" << reports();
    for (int i = 0; i < 64; ++i) {
      if (!part[i]) {
        EXPECT_EQ(out[i], 0xdeadbeefu) << what << " thread " << i;
        continue;
      }
      EXPECT_EQ(out[i], expect[i].value)
          << what << " thread " << i << " b=" << bs[i];
      EXPECT_EQ(valid[i], uint32_t(expect[i].valid))
          << what << " thread " << i << " b=" << bs[i];
    }
  }
};
bool ShuffleTest::prepared = false;

TEST_F(ShuffleTest, RandomOffsetsClampsAndMasks) {
  ASSERT_TRUE(prepared);
  std::mt19937 rng(20240611);
  int failuresExpected = 0, runs = 0;
  for (int mode = 0; mode < 4; ++mode)
    for (int iter = 0; iter < 150; ++iter) {
      uint32_t values[64], bs[64];
      for (uint32_t &v : values)
        v = rng();
      bool uniformB = rng() % 2;
      uint32_t b0 = rng() % 64;
      for (uint32_t &b : bs)
        b = uniformB ? b0 : rng() % 64; // b >= 32: only b[4:0] counts
      // c: random segment mask and clamp, sometimes with junk bits that
      // PTX ignores (c[7:5], c[31:13]).
      uint32_t c = (rng() % 32) | ((rng() % 32) << 8);
      if (rng() % 4 == 0)
        c |= rng() & ~0x1f1fu;
      uint32_t mask = rng() % 3 == 0 ? uint32_t(rng()) | 1u : ~0u;
      std::string what = std::string(kModeNames[mode]) + " iteration " +
                         std::to_string(iter) + " c=" + std::to_string(c) +
                         " mask=" + std::to_string(mask);
      run(Mode(mode), mask, c, bs, values, what);
      ++runs;
      bool outside = false;
      for (int lane = 0; lane < 32; ++lane)
        if (mask >> lane & 1) {
          Lane l = ptxModel(Mode(mode), lane, bs[lane], c, values);
          Lane l2 = ptxModel(Mode(mode), lane, bs[32 + lane], c, values + 32);
          outside |= !(mask >> l.source & 1) || !(mask >> l2.source & 1);
        }
      failuresExpected += outside;
    }
  // Both outcomes were exercised.
  EXPECT_GT(failuresExpected, 0);
  EXPECT_LT(failuresExpected, runs);
}

TEST_F(ShuffleTest, CudaWidthsAgreeWithPtx) {
  ASSERT_TRUE(prepared);
  std::mt19937 rng(77);
  for (int mode = 0; mode < 4; ++mode)
    for (int width = 1; width <= 32; width *= 2)
      for (int iter = 0; iter < 8; ++iter) {
        uint32_t values[64], bs[64];
        for (uint32_t &v : values)
          v = rng();
        uint32_t b = rng() % 32;
        for (uint32_t &x : bs)
          x = b;
        std::string what = std::string(kModeNames[mode]) + " width " +
                           std::to_string(width) + " b " + std::to_string(b);
        run(Mode(mode), ~0u, cudaClamp(Mode(mode), width), bs, values, what,
            /*cudaCheck=*/true, width);
      }
}

TEST_F(ShuffleTest, ShuffleCountsOncePerWarp) {
  ASSERT_TRUE(prepared);
  uint32_t values[64], bs[64];
  for (int i = 0; i < 64; ++i) {
    values[i] = i;
    bs[i] = 1;
  }
  run(Bfly, ~0u, 0x1f, bs, values, "bfly 1");
  ASSERT_FALSE(Emulator::get().getLaunchStats().empty());
  EXPECT_EQ(Emulator::get().getLaunchStats().back().shuffles, 2u);
}

} // namespace
