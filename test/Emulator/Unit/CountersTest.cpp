//===- CountersTest.cpp - Coalescing and bank-conflict counters -----------===//
//
// Random gathers from global and shared memory (seeded), with the launch's
// counters compared against a model of the definitions in Emulator.h: a
// warp request touches the distinct 32-byte sectors of its lanes' bytes; a
// shared request needs as many wavefronts as its busiest bank (of 32, 4-byte
// words) has distinct words, and every wavefront beyond ceil(words / 32) is
// a bank conflict.
//
//===----------------------------------------------------------------------===//
#include "TestSupport.h"

#include <algorithm>
#include <random>
#include <set>

using namespace kvir::emu;
using namespace kvir::emu::test;

namespace {

const char *const kKernel = R"(
module attributes {gpu.container_module} {
  gpu.module @counter_kernels {
    // out[g] = in[idx[g]] + sh[sidx[g]] after every thread initialized
    // sh[128 k + t], k = 0..7 (consecutive words: conflict-free).
    gpu.func @cnt_gather(%in: memref<?xf32>, %idx: memref<?xi32>,
                         %sidx: memref<?xi32>, %out: memref<?xf32>)
        workgroup(%sh: memref<1024xf32, #gpu.address_space<workgroup>>) kernel {
      %t = gpu.thread_id x
      %b = gpu.block_id x
      %n = gpu.block_dim x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c8 = arith.constant 8 : index
      %c128 = arith.constant 128 : index
      %one = arith.constant 1.0 : f32
      scf.for %k = %c0 to %c8 step %c1 {
        %base = arith.muli %k, %c128 : index
        %s = arith.addi %base, %t : index
        memref.store %one, %sh[%s] : memref<1024xf32, #gpu.address_space<workgroup>>
      }
      gpu.barrier
      %gb = arith.muli %b, %n : index
      %g = arith.addi %gb, %t : index
      %i32 = memref.load %idx[%g] : memref<?xi32>
      %i = arith.index_cast %i32 : i32 to index
      %v = memref.load %in[%i] : memref<?xf32>
      %s32 = memref.load %sidx[%g] : memref<?xi32>
      %s = arith.index_cast %s32 : i32 to index
      %w = memref.load %sh[%s] : memref<1024xf32, #gpu.address_space<workgroup>>
      %r = arith.addf %v, %w : f32
      memref.store %r, %out[%g] : memref<?xf32>
      gpu.return
    }
  }
}
)";

struct Model {
  uint64_t requests = 0, sectors = 0, useful = 0;
  uint64_t sharedRequests = 0, conflicts = 0;

  /// One warp request of 4-byte accesses at `addrs`.
  void global(const std::vector<uint64_t> &addrs) {
    std::set<uint64_t> sectorSet, bytes;
    for (uint64_t a : addrs)
      for (uint64_t x = a; x < a + 4; ++x) {
        sectorSet.insert(x / 32);
        bytes.insert(x);
      }
    ++requests;
    sectors += sectorSet.size();
    useful += bytes.size();
  }
  /// One shared request of 4-byte words `words`.
  void shared(const std::vector<uint64_t> &words) {
    std::set<uint64_t> distinct(words.begin(), words.end());
    uint64_t perBank[32] = {};
    for (uint64_t w : distinct)
      perBank[w % 32]++;
    uint64_t busiest = *std::max_element(perBank, perBank + 32);
    uint64_t minimum = (distinct.size() + 31) / 32;
    ++sharedRequests;
    conflicts += busiest - minimum;
  }
};

class CountersTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() { prepared = prepare(kKernel); }
  static bool prepared;
};
bool CountersTest::prepared = false;

TEST_F(CountersTest, RandomGathersMatchModel) {
  ASSERT_TRUE(prepared);
  std::mt19937 rng(4242);
  const int blocks = 2, threads = 128, n = blocks * threads;
  for (int iter = 0; iter < 30; ++iter) {
    Buffer<float> in(4096, 1.0f), out(n);
    Buffer<int32_t> idx(n), sidx(n);
    // A different access pattern per iteration: random, strided, broadcast,
    // contiguous with an offset.
    int pattern = iter % 4;
    int stride = 1 + rng() % 33, offset = rng() % 64;
    for (int g = 0; g < n; ++g) {
      switch (pattern) {
      case 0:
        idx[g] = rng() % 4096;
        sidx[g] = rng() % 1024;
        break;
      case 1:
        idx[g] = (g * stride) % 4096;
        sidx[g] = ((g % threads) * stride) % 1024;
        break;
      case 2:
        idx[g] = (g / 32) * 7;
        sidx[g] = (g / 8) % 1024; // 8 lanes share a word
        break;
      case 3:
        idx[g] = (g + offset) % 4096;
        sidx[g] = (g % threads + offset) % 1024;
        break;
      }
    }
    Model m;
    // Device addresses: the emulator counts sectors as if each allocation
    // started on a 256-byte boundary (as cudaMalloc's do).
    auto addr = [](auto &buf, int64_t i) {
      uint64_t base = reinterpret_cast<uint64_t>(buf.ptr());
      return reinterpret_cast<uint64_t>(buf.ptr() + i) - base % 256;
    };
    for (int w = 0; w < n / 32; ++w) {
      std::vector<uint64_t> aIdx, aIn, aSidx, aOut;
      for (int lane = 0; lane < 32; ++lane) {
        int g = 32 * w + lane;
        aIdx.push_back(addr(idx, g));
        aIn.push_back(addr(in, idx[g]));
        aSidx.push_back(addr(sidx, g));
        aOut.push_back(addr(out, g));
      }
      for (const auto *a : {&aIdx, &aIn, &aSidx, &aOut})
        m.global(*a);
      // Shared: 8 initializing stores, then the gather.
      for (int k = 0; k < 8; ++k) {
        std::vector<uint64_t> words;
        for (int lane = 0; lane < 32; ++lane)
          words.push_back(128 * k + (32 * w + lane) % threads);
        m.shared(words);
      }
      std::vector<uint64_t> words;
      for (int lane = 0; lane < 32; ++lane)
        words.push_back(sidx[32 * w + lane]);
      m.shared(words);
    }
    Args args;
    args.memref(in).memref(idx).memref(sidx).memref(out);
    Emulator::get().clearResults();
    ASSERT_TRUE(llvm::succeeded(launch("cnt_gather", {uint32_t(blocks), 1, 1},
                                       {uint32_t(threads), 1, 1}, args)))
        << reports();
    const LaunchStats &s = Emulator::get().getLaunchStats().back();
    std::string what = "iteration " + std::to_string(iter) + " pattern " +
                       std::to_string(pattern);
    EXPECT_EQ(s.globalRequests, m.requests) << what;
    EXPECT_EQ(s.globalSectors, m.sectors) << what;
    EXPECT_EQ(s.globalUsefulBytes, m.useful) << what;
    EXPECT_EQ(s.globalBytesLoaded, uint64_t(3 * 4 * n)) << what;
    EXPECT_EQ(s.globalBytesStored, uint64_t(4 * n)) << what;
    EXPECT_EQ(s.sharedRequests, m.sharedRequests) << what;
    EXPECT_EQ(s.bankConflicts, m.conflicts) << what;
    EXPECT_EQ(s.barriers, uint64_t(blocks)) << what;
  }
}

} // namespace
