//===- ChecksTest.cpp - Every check of the emulator reports ---------------===//
//
// Each kernel breaks one rule; the launch must fail (exitOnError is off) and
// the report must name the problem, the thread and the block. Positive
// controls show the same kernels pass when the rule is kept, and that a
// failed launch leaves the emulator usable.
//
//===----------------------------------------------------------------------===//
#include "TestSupport.h"

using namespace kvir::emu;
using namespace kvir::emu::test;

namespace {

const char *const kKernels = R"(
module attributes {gpu.container_module} {
  gpu.module @check_kernels {
    // out[t] = in[t + shift]
    gpu.func @chk_shifted_copy(%in: memref<?xf32>, %out: memref<?xf32>,
                               %shift: index) kernel {
      %t = gpu.thread_id x
      %i = arith.addi %t, %shift : index
      %v = memref.load %in[%i] : memref<?xf32>
      memref.store %v, %out[%t] : memref<?xf32>
      gpu.return
    }
    // s[t] = t; [barrier if sync]; out[t] = s[(t + shift) % 32]
    gpu.func @chk_shared(%out: memref<?xi32>, %shift: index, %sync: i1)
        workgroup(%s: memref<32xi32, #gpu.address_space<workgroup>>) kernel {
      %t = gpu.thread_id x
      %c32 = arith.constant 32 : index
      %v = arith.index_cast %t : index to i32
      memref.store %v, %s[%t] : memref<32xi32, #gpu.address_space<workgroup>>
      scf.if %sync {
        gpu.barrier
      }
      %j = arith.addi %t, %shift : index
      %m = arith.remui %j, %c32 : index
      %r = memref.load %s[%m] : memref<32xi32, #gpu.address_space<workgroup>>
      memref.store %r, %out[%t] : memref<?xi32>
      gpu.return
    }
    // s[0] = t in every thread.
    gpu.func @chk_same_word(%out: memref<?xi32>)
        workgroup(%s: memref<32xi32, #gpu.address_space<workgroup>>) kernel {
      %t = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %v = arith.index_cast %t : index to i32
      memref.store %v, %s[%c0] : memref<32xi32, #gpu.address_space<workgroup>>
      gpu.return
    }
    // s[0] = max over the threads of t (atomically), then every thread
    // reads s[0], after a barrier if %sync.
    gpu.func @chk_atomic_max(%out: memref<?xi32>, %sync: i1)
        workgroup(%s: memref<32xi32, #gpu.address_space<workgroup>>) kernel {
      %t = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %zero = arith.constant 0 : i32
      %first = arith.cmpi eq, %t, %c0 : index
      scf.if %first {
        memref.store %zero, %s[%c0] : memref<32xi32, #gpu.address_space<workgroup>>
      }
      gpu.barrier
      %v = arith.index_cast %t : index to i32
      %old = memref.atomic_rmw maxs %v, %s[%c0] : (i32, memref<32xi32, #gpu.address_space<workgroup>>) -> i32
      scf.if %sync {
        gpu.barrier
      }
      %r = memref.load %s[%c0] : memref<32xi32, #gpu.address_space<workgroup>>
      memref.store %r, %out[%t] : memref<?xi32>
      gpu.return
    }
    // s[t + 1] (one past the end for the last thread).
    gpu.func @chk_shared_oob(%out: memref<?xi32>)
        workgroup(%s: memref<32xi32, #gpu.address_space<workgroup>>) kernel {
      %t = gpu.thread_id x
      %c1 = arith.constant 1 : index
      %j = arith.addi %t, %c1 : index
      %v = arith.index_cast %t : index to i32
      memref.store %v, %s[%j] : memref<32xi32, #gpu.address_space<workgroup>>
      gpu.return
    }
    // A barrier only for threads t < limit.
    gpu.func @chk_barrier_if(%limit: index) kernel {
      %t = gpu.thread_id x
      %lt = arith.cmpi ult, %t, %limit : index
      scf.if %lt {
        gpu.barrier
      }
      gpu.return
    }
    // A full-warp shuffle only in lanes < limit.
    gpu.func @chk_shuffle_if(%out: memref<?xi32>, %limit: index) kernel {
      %t = gpu.thread_id x
      %lt = arith.cmpi ult, %t, %limit : index
      scf.if %lt {
        %v = arith.index_cast %t : index to i32
        %one = arith.constant 1 : i32
        %w = arith.constant 32 : i32
        %r, %p = gpu.shuffle xor %v, %one, %w : i32
        memref.store %r, %out[%t] : memref<?xi32>
      }
      gpu.return
    }
    // Lanes < 16 shuffle, the others vote (both with the full mask).
    gpu.func @chk_shuffle_or_vote(%out: memref<?xi32>) kernel {
      %t = gpu.thread_id x
      %c16 = arith.constant 16 : index
      %lt = arith.cmpi ult, %t, %c16 : index
      %v = arith.index_cast %t : index to i32
      %full = arith.constant -1 : i32
      %one = arith.constant 1 : i32
      %w = arith.constant 32 : i32
      %r = scf.if %lt -> i32 {
        %s, %p = gpu.shuffle xor %v, %one, %w : i32
        scf.yield %s : i32
      } else {
        %b = nvvm.vote.sync ballot %full, %lt -> i32
        scf.yield %b : i32
      }
      memref.store %r, %out[%t] : memref<?xi32>
      gpu.return
    }
    // A ballot with a membermask of the low half-warp, executed by all.
    gpu.func @chk_ballot_mask(%out: memref<?xi32>, %mask: i32) kernel {
      %t = gpu.thread_id x
      %true = arith.constant true
      %b = nvvm.vote.sync ballot %mask, %true -> i32
      memref.store %b, %out[%t] : memref<?xi32>
      gpu.return
    }
    // ldmatrix .x1 with row addresses offset by `skew` halves.
    gpu.func @chk_ldmatrix_skew(%out: memref<?xf16>, %skew: index)
        workgroup(%s: memref<16x16xf16, #gpu.address_space<workgroup>>) kernel {
      %t = gpu.thread_id x
      %c8 = arith.constant 8 : index
      %r = arith.remui %t, %c8 : index
      %m = nvgpu.ldmatrix %s[%r, %skew] {numTiles = 1 : i32, transpose = false}
          : memref<16x16xf16, #gpu.address_space<workgroup>> -> vector<1x2xf16>
      %v = vector.extract %m[0, 0] : f16 from vector<1x2xf16>
      memref.store %v, %out[%t] : memref<?xf16>
      gpu.return
    }
  }
}
)";

class ChecksTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() { prepared = prepare(kKernels); }
  void SetUp() override {
    ASSERT_TRUE(prepared);
    Emulator::get().clearResults();
  }
  /// Expects the launch to have failed with a report containing each of
  /// `parts`.
  void expectReport(llvm::LogicalResult result,
                    std::initializer_list<const char *> parts) {
    EXPECT_TRUE(llvm::failed(result));
    std::string r = reports();
    for (const char *part : parts)
      EXPECT_NE(r.find(part), std::string::npos)
          << "missing '" << part << "' in:\n"
          << r;
  }
  static bool prepared;
};
bool ChecksTest::prepared = false;

TEST_F(ChecksTest, GlobalLoadPastTheEnd) {
  Buffer<float> in(32), out(32);
  Args ok;
  ok.memref(in).memref(out).scalar<int64_t>(0);
  EXPECT_TRUE(
      llvm::succeeded(launch("chk_shifted_copy", {1, 1, 1}, {32, 1, 1}, ok)))
      << reports();
  Args args;
  args.memref(in).memref(out).scalar<int64_t>(3);
  expectReport(launch("chk_shifted_copy", {1, 1, 1}, {32, 1, 1}, args),
               {"kernel 'chk_shifted_copy': out-of-bounds global load of 4 "
                "bytes",
                "test buffer", "block (0,0,0) thread (29,0,0)"});
}

TEST_F(ChecksTest, GlobalLoadBeforeTheStart) {
  Buffer<float> in(32), out(32);
  Args args;
  args.memref(in).memref(out).scalar<int64_t>(-1);
  expectReport(launch("chk_shifted_copy", {1, 1, 1}, {32, 1, 1}, args),
               {"out-of-bounds global load", "thread (0,0,0)"});
}

TEST_F(ChecksTest, UnregisteredMemory) {
  std::vector<float> untracked(32);
  Buffer<float> out(32);
  Args args;
  args.memrefAt(untracked.data(), 32).memref(out).scalar<int64_t>(0);
  expectReport(launch("chk_shifted_copy", {1, 1, 1}, {32, 1, 1}, args),
               {"out-of-bounds global load", "thread (0,0,0)"});
}

TEST_F(ChecksTest, MisalignedGlobalLoad) {
  Buffer<float> in(33), out(32);
  char *shifted = reinterpret_cast<char *>(in.ptr()) + 2;
  Args args;
  args.memrefAt(shifted, 32).memref(out).scalar<int64_t>(0);
  expectReport(launch("chk_shifted_copy", {1, 1, 1}, {32, 1, 1}, args),
               {"misaligned global load of 4 bytes",
                "the access assumes 4-byte alignment", "thread (0,0,0)"});
}

TEST_F(ChecksTest, UseAfterFree) {
  Buffer<float> out(32);
  std::vector<float> freed(32);
  Emulator::get().registerAllocation(freed.data(), 128, "scratch");
  Emulator::get().unregisterAllocation(freed.data());
  Args args;
  args.memrefAt(freed.data(), 32).memref(out).scalar<int64_t>(0);
  expectReport(launch("chk_shifted_copy", {1, 1, 1}, {32, 1, 1}, args),
               {"inside scratch", "which was freed (use after free)"});
}

TEST_F(ChecksTest, SharedOutOfBounds) {
  Buffer<int32_t> out(32);
  Args args;
  args.memref(out);
  expectReport(launch("chk_shared_oob", {1, 1, 1}, {32, 1, 1}, args),
               {"out-of-bounds shared store of 4 bytes at shared offset 128; "
                "the block has 128 bytes of shared memory",
                "thread (31,0,0)"});
}

TEST_F(ChecksTest, ReadWriteRaceWithoutBarrier) {
  Buffer<int32_t> out(32);
  Args args;
  args.memref(out).scalar<int64_t>(1).scalar<bool>(false);
  expectReport(launch("chk_shared", {1, 1, 1}, {32, 1, 1}, args),
               {"shared-memory read/write race: thread (1,0,0) writes shared "
                "offset 4, which thread (0,0,0) read since the last barrier"});
}

TEST_F(ChecksTest, NoRaceWithBarrier) {
  Buffer<int32_t> out(32, -1);
  Args args;
  args.memref(out).scalar<int64_t>(1).scalar<bool>(true);
  ASSERT_TRUE(
      llvm::succeeded(launch("chk_shared", {2, 1, 1}, {32, 1, 1}, args)))
      << reports();
  for (int t = 0; t < 32; ++t)
    EXPECT_EQ(out[t], (t + 1) % 32);
  EXPECT_EQ(Emulator::get().getLaunchStats().back().barriers, 2u);
}

TEST_F(ChecksTest, OwnDataNeedsNoBarrier) {
  // shift 0: each thread reads what it wrote itself.
  Buffer<int32_t> out(32);
  Args args;
  args.memref(out).scalar<int64_t>(0).scalar<bool>(false);
  EXPECT_TRUE(
      llvm::succeeded(launch("chk_shared", {1, 1, 1}, {32, 1, 1}, args)))
      << reports();
}

// Atomic updates of one word by every thread do not race with each other;
// a plain read of the word in the same epoch races with them (PTX's memory
// model: conflicting accesses that are not both atomic are a data race).
TEST_F(ChecksTest, AtomicsOrderedOnlyAmongThemselves) {
  Buffer<int32_t> out(64, -1);
  Args synced;
  synced.memref(out).scalar<bool>(true);
  ASSERT_TRUE(
      llvm::succeeded(launch("chk_atomic_max", {1, 1, 1}, {64, 1, 1}, synced)))
      << reports();
  for (int t = 0; t < 64; ++t)
    EXPECT_EQ(out[t], 63);
  Args racing;
  racing.memref(out).scalar<bool>(false);
  expectReport(launch("chk_atomic_max", {1, 1, 1}, {64, 1, 1}, racing),
               {"shared-memory atomic/plain race: thread",
                "reads shared "
                "offset 0, which thread",
                "updated atomically since the last "
                "barrier"});
}

TEST_F(ChecksTest, WriteWriteRaceReportedOnce) {
  Buffer<int32_t> out(32);
  Args args;
  args.memref(out);
  expectReport(launch("chk_same_word", {3, 1, 1}, {64, 1, 1}, args),
               {"shared-memory write/write race: thread (1,0,0) writes shared "
                "offset 0, which thread (0,0,0) wrote since the last barrier",
                "more shared-memory races at the sites reported above"});
  // One report for the pair of sites, one summary.
  EXPECT_EQ(Emulator::get().getReports().size(), 2u) << reports();
}

TEST_F(ChecksTest, BarrierWithExitedThreads) {
  Args args;
  args.scalar<int64_t>(40);
  expectReport(launch("chk_barrier_if", {1, 1, 1}, {64, 1, 1}, args),
               {"barrier divergence: 40 of 64 threads wait at the barrier but "
                "thread (40,0,0) has exited"});
}

TEST_F(ChecksTest, BarrierWhenAllArrive) {
  Args args;
  args.scalar<int64_t>(64);
  EXPECT_TRUE(
      llvm::succeeded(launch("chk_barrier_if", {2, 1, 1}, {64, 1, 1}, args)))
      << reports();
}

TEST_F(ChecksTest, DivergentShuffle) {
  Buffer<int32_t> out(32);
  Args args;
  args.memref(out).scalar<int64_t>(16);
  expectReport(launch("chk_shuffle_if", {1, 1, 1}, {32, 1, 1}, args),
               {"shfl.sync participation mismatch: lane 16 of membermask "
                "0xFFFFFFFF exited without joining"});
}

TEST_F(ChecksTest, CollectiveKindMismatch) {
  Buffer<int32_t> out(32);
  Args args;
  args.memref(out);
  expectReport(launch("chk_shuffle_or_vote", {1, 1, 1}, {32, 1, 1}, args),
               {"warp collective mismatch: thread (0,0,0) executes shfl.sync",
                "but thread (16,0,0) executes vote.sync"});
}

TEST_F(ChecksTest, MembermaskWithoutOwnLane) {
  Buffer<int32_t> out(32);
  Args args;
  args.memref(out).scalar<uint32_t>(0xffff);
  expectReport(
      launch("chk_ballot_mask", {1, 1, 1}, {32, 1, 1}, args),
      {"vote.sync with membermask 0xFFFF excludes the executing lane 16",
       "thread (16,0,0)"});
}

TEST_F(ChecksTest, MembermaskNamesMissingLane) {
  // A block of 16 threads has no lanes 16..31.
  Buffer<int32_t> out(32);
  Args args;
  args.memref(out).scalar<uint32_t>(0xffffffff);
  expectReport(launch("chk_ballot_mask", {1, 1, 1}, {16, 1, 1}, args),
               {"membermask 0xFFFFFFFF names lane 16, which does not exist"});
}

TEST_F(ChecksTest, LdMatrixMisaligned) {
  Buffer<uint16_t> out(32);
  Args args;
  args.memref(out).scalar<int64_t>(1); // rows 2 bytes off a 16-byte boundary
  expectReport(launch("chk_ldmatrix_skew", {1, 1, 1}, {32, 1, 1}, args),
               {"ldmatrix row address is not 16-byte aligned"});
}

TEST_F(ChecksTest, InvalidLaunchConfiguration) {
  Args args;
  args.scalar<int64_t>(0);
  expectReport(launch("chk_barrier_if", {1, 1, 1}, {2048, 1, 1}, args),
               {"invalid launch configuration"});
}

TEST_F(ChecksTest, UsableAfterFailure) {
  Buffer<float> in(32), out(32);
  for (int i = 0; i < 32; ++i)
    in[i] = float(i);
  Args bad;
  bad.memref(in).memref(out).scalar<int64_t>(1);
  EXPECT_TRUE(
      llvm::failed(launch("chk_shifted_copy", {1, 1, 1}, {32, 1, 1}, bad)));
  Emulator::get().clearResults();
  Args good;
  good.memref(in).memref(out).scalar<int64_t>(0);
  ASSERT_TRUE(
      llvm::succeeded(launch("chk_shifted_copy", {1, 1, 1}, {32, 1, 1}, good)))
      << reports();
  for (int i = 0; i < 32; ++i)
    EXPECT_EQ(out[i], float(i));
}

} // namespace
