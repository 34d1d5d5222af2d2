//===- SyncTest.cpp - mbarriers, named barriers, setmaxnreg, elect.sync ---===//
//
// The sm_90 synchronization of warp-specialized kernels, each kernel with a
// `mode` selecting the correct use (mode 0, results checked against values
// the host computes) or one misuse the PTX ISA leaves undefined, which must
// be reported: deadlocks, counts out of range or in disagreement, an
// mbarrier used before init, after inval, or before its init is ordered
// before the use, and races that the synchronization no longer orders.
//
//===----------------------------------------------------------------------===//
#include "TestSupport.h"

using namespace kvir::emu;
using namespace kvir::emu::test;

namespace {

const char *const kKernels = R"(
module attributes {gpu.container_module} {
  gpu.module @sync_kernels {
    // Warp 0 writes data[l] = 3l and arrives on an mbarrier of 32; warp 1
    // waits for phase 0 and copies data[l] to out[l]. Modes: 1 warp 0 never
    // arrives, 2 warp 1 does not wait, 3 no barrier after the init, 4 no
    // init, 5 an arrive of 40, 6 a transaction count past 2^20 - 1, 7 the
    // mbarrier is invalidated before warp 1 waits, 8 a plain store to it.
    gpu.func @mb_handoff(%out: memref<?xi32>, %mode: i32)
        workgroup(%bar: memref<1xi64, #gpu.address_space<workgroup>>,
                  %data: memref<32xi32, #gpu.address_space<workgroup>>) kernel {
      %t = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c32 = arith.constant 32 : index
      %i0 = arith.constant 0 : i32
      %i1 = arith.constant 1 : i32
      %i32 = arith.constant 32 : i32
      %bi = memref.extract_aligned_pointer_as_index %bar : memref<1xi64, #gpu.address_space<workgroup>> -> index
      %bi64 = arith.index_cast %bi : index to i64
      %bp = llvm.inttoptr %bi64 : i64 to !llvm.ptr<3>
      %first = arith.cmpi eq, %t, %c0 : index
      %m1 = arith.constant 1 : i32
      %m2 = arith.constant 2 : i32
      %m3 = arith.constant 3 : i32
      %m4 = arith.constant 4 : i32
      %m5 = arith.constant 5 : i32
      %m6 = arith.constant 6 : i32
      %m7 = arith.constant 7 : i32
      %isM1 = arith.cmpi eq, %mode, %m1 : i32
      %isM2 = arith.cmpi eq, %mode, %m2 : i32
      %isM3 = arith.cmpi eq, %mode, %m3 : i32
      %isM4 = arith.cmpi eq, %mode, %m4 : i32
      %isM5 = arith.cmpi eq, %mode, %m5 : i32
      %isM6 = arith.cmpi eq, %mode, %m6 : i32
      %isM7 = arith.cmpi eq, %mode, %m7 : i32
      %true = arith.constant true
      %noInit = arith.xori %isM4, %true : i1
      %doInit = arith.andi %first, %noInit : i1
      scf.if %doInit {
        nvvm.mbarrier.init %bp, %i32 : !llvm.ptr<3>, i32
      }
      %noSync = arith.xori %isM3, %true : i1
      scf.if %noSync {
        gpu.barrier
      }
      %inval = arith.andi %first, %isM7 : i1
      scf.if %inval {
        nvvm.mbarrier.inval %bp : !llvm.ptr<3>
      }
      %m8 = arith.constant 8 : i32
      %isM8 = arith.cmpi eq, %mode, %m8 : i32
      %clobber = arith.andi %first, %isM8 : i1
      scf.if %clobber {
        %z = arith.constant 0 : i64
        memref.store %z, %bar[%c0] : memref<1xi64, #gpu.address_space<workgroup>>
      }
      %producer = arith.cmpi ult, %t, %c32 : index
      scf.if %producer {
        %ti = arith.index_cast %t : index to i32
        %v = arith.muli %ti, %m3 : i32
        memref.store %v, %data[%t] : memref<32xi32, #gpu.address_space<workgroup>>
        %tx = arith.constant 1048575 : i32
        %over = arith.andi %first, %isM6 : i1
        scf.if %over {
          nvvm.mbarrier.expect_tx %bp, %tx : !llvm.ptr<3>, i32
          nvvm.mbarrier.expect_tx %bp, %tx : !llvm.ptr<3>, i32
        }
        %bigArrive = arith.andi %first, %isM5 : i1
        %c40 = arith.constant 40 : i32
        %count = arith.select %bigArrive, %c40, %i1 : i32
        %arrive = arith.xori %isM1, %true : i1
        scf.if %arrive {
          %s = nvvm.mbarrier.arrive %bp, %count : !llvm.ptr<3> -> i64
        }
      } else {
        %wait = arith.xori %isM2, %true : i1
        scf.if %wait {
          nvvm.mbarrier.try_wait.parity %bp, %i0, %i0 : !llvm.ptr<3>, i32, i32
        }
        %l = arith.subi %t, %c32 : index
        %v = memref.load %data[%l] : memref<32xi32, #gpu.address_space<workgroup>>
        memref.store %v, %out[%l] : memref<?xi32>
      }
      gpu.return
    }

    // The lanes of warp 0 write data[l], meet at __syncwarp, and lane 0
    // alone arrives on an mbarrier of 1; lane 0 of warp 1 waits, meets its
    // warp at __syncwarp, and every lane of warp 1 reads data[l]. The warp
    // barriers carry the mbarrier's ordering to the other lanes.
    gpu.func @mb_warp_handoff(%out: memref<?xi32>)
        workgroup(%bar: memref<1xi64, #gpu.address_space<workgroup>>,
                  %data: memref<32xi32, #gpu.address_space<workgroup>>) kernel {
      %t = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c32 = arith.constant 32 : index
      %i0 = arith.constant 0 : i32
      %i1 = arith.constant 1 : i32
      %all = arith.constant -1 : i32
      %bi = memref.extract_aligned_pointer_as_index %bar : memref<1xi64, #gpu.address_space<workgroup>> -> index
      %bi64 = arith.index_cast %bi : index to i64
      %bp = llvm.inttoptr %bi64 : i64 to !llvm.ptr<3>
      %first = arith.cmpi eq, %t, %c0 : index
      scf.if %first {
        nvvm.mbarrier.init %bp, %i1 : !llvm.ptr<3>, i32
      }
      gpu.barrier
      %lane = arith.remui %t, %c32 : index
      %lane0 = arith.cmpi eq, %lane, %c0 : index
      %producer = arith.cmpi ult, %t, %c32 : index
      scf.if %producer {
        %ti = arith.index_cast %t : index to i32
        memref.store %ti, %data[%t] : memref<32xi32, #gpu.address_space<workgroup>>
        nvvm.bar.warp.sync %all : i32
        scf.if %lane0 {
          %s = nvvm.mbarrier.arrive %bp : !llvm.ptr<3> -> i64
        }
      } else {
        scf.if %lane0 {
          nvvm.mbarrier.try_wait.parity %bp, %i0, %i0 : !llvm.ptr<3>, i32, i32
        }
        nvvm.bar.warp.sync %all : i32
        %v = memref.load %data[%lane] : memref<32xi32, #gpu.address_space<workgroup>>
        memref.store %v, %out[%lane] : memref<?xi32>
      }
      gpu.return
    }

    // A ring of two slots between a producer warp (warp 0, lane 0 copies
    // in[i] into slot i % 2) and a consumer warp (warp 1, lane 0 adds it to
    // a sum): full[s] counts the producer's arrive and `tx` bytes
    // (expect_tx / complete_tx), empty[s] the consumer's release. Each
    // waits with the parity of its pass over the ring. out[0] = the sum.
    gpu.func @mb_ring(%in: memref<?xi32>, %out: memref<?xi32>, %n: index)
        workgroup(%full: memref<2xi64, #gpu.address_space<workgroup>>,
                  %empty: memref<2xi64, #gpu.address_space<workgroup>>,
                  %slots: memref<2xi32, #gpu.address_space<workgroup>>) kernel {
      %t = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c8 = arith.constant 8 : index
      %c32 = arith.constant 32 : index
      %i1 = arith.constant 1 : i32
      %i4 = arith.constant 4 : i32
      %fi = memref.extract_aligned_pointer_as_index %full : memref<2xi64, #gpu.address_space<workgroup>> -> index
      %ei = memref.extract_aligned_pointer_as_index %empty : memref<2xi64, #gpu.address_space<workgroup>> -> index
      %first = arith.cmpi eq, %t, %c0 : index
      scf.if %first {
        scf.for %s = %c0 to %c2 step %c1 {
          %off = arith.muli %s, %c8 : index
          %fa = arith.addi %fi, %off : index
          %ea = arith.addi %ei, %off : index
          %fa64 = arith.index_cast %fa : index to i64
          %ea64 = arith.index_cast %ea : index to i64
          %fp = llvm.inttoptr %fa64 : i64 to !llvm.ptr<3>
          %ep = llvm.inttoptr %ea64 : i64 to !llvm.ptr<3>
          nvvm.mbarrier.init %fp, %i1 : !llvm.ptr<3>, i32
          nvvm.mbarrier.init %ep, %i1 : !llvm.ptr<3>, i32
        }
        nvvm.fence.mbarrier.init
      }
      gpu.barrier
      %lane0 = arith.remui %t, %c32 : index
      %isLane0 = arith.cmpi eq, %lane0, %c0 : index
      %warp = arith.divui %t, %c32 : index
      %isProducer = arith.cmpi eq, %warp, %c0 : index
      scf.if %isLane0 {
        %sum = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %c0) -> (index) {
          %s = arith.remui %i, %c2 : index
          %pass = arith.divui %i, %c2 : index
          %par = arith.remui %pass, %c2 : index
          %par32 = arith.index_cast %par : index to i32
          %off = arith.muli %s, %c8 : index
          %fa = arith.addi %fi, %off : index
          %ea = arith.addi %ei, %off : index
          %fa64 = arith.index_cast %fa : index to i64
          %ea64 = arith.index_cast %ea : index to i64
          %fp = llvm.inttoptr %fa64 : i64 to !llvm.ptr<3>
          %ep = llvm.inttoptr %ea64 : i64 to !llvm.ptr<3>
          %next = scf.if %isProducer -> (index) {
            // The slot is free once the consumer released the previous
            // pass (the first pass waits on parity 1: done at once).
            %freePar = arith.xori %par32, %i1 : i32
            nvvm.mbarrier.try_wait.parity %ep, %freePar, %i1 : !llvm.ptr<3>, i32, i32
            %v = memref.load %in[%i] : memref<?xi32>
            memref.store %v, %slots[%s] : memref<2xi32, #gpu.address_space<workgroup>>
            %st = nvvm.mbarrier.arrive.expect_tx %fp, %i4 : !llvm.ptr<3>, i32 -> i64
            nvvm.mbarrier.complete_tx %fp, %i4 : !llvm.ptr<3>, i32
            scf.yield %acc : index
          } else {
            nvvm.mbarrier.try_wait.parity %fp, %par32, %i1 : !llvm.ptr<3>, i32, i32
            %v = memref.load %slots[%s] : memref<2xi32, #gpu.address_space<workgroup>>
            %st = nvvm.mbarrier.arrive %ep : !llvm.ptr<3> -> i64
            %vi = arith.index_cast %v : i32 to index
            %a = arith.addi %acc, %vi : index
            scf.yield %a : index
          }
          scf.yield %next : index
        }
        %true = arith.constant true
        %isConsumer = arith.xori %isProducer, %true : i1
        scf.if %isConsumer {
          %r = arith.index_cast %sum : index to i32
          memref.store %r, %out[%c0] : memref<?xi32>
        }
      }
      gpu.return
    }

    // Warps 0 and 1 exchange through named barrier 1 (64 threads): each
    // writes s[t], bar.sync 1, reads s[t ^ 32]. Warp 2 writes s[t] and
    // bar.arrive 2, 64; warp 3 bar.sync 2, 64 and reads s[t - 32]. out[t]
    // = what thread t read (warp 2 writes its own t). Modes: 1 warp 1 uses
    // a count of 96 (two counts on one barrier), 2 both use 96 (deadlock),
    // 3 no barrier between warps 0 and 1 (race).
    gpu.func @nb_exchange(%out: memref<?xi32>, %mode: i32)
        workgroup(%s: memref<128xi32, #gpu.address_space<workgroup>>) kernel {
      %t = gpu.thread_id x
      %c32 = arith.constant 32 : index
      %c64 = arith.constant 64 : index
      %c96 = arith.constant 96 : index
      %i1 = arith.constant 1 : i32
      %i2 = arith.constant 2 : i32
      %i64 = arith.constant 64 : i32
      %i96 = arith.constant 96 : i32
      %m1 = arith.constant 1 : i32
      %m2 = arith.constant 2 : i32
      %m3 = arith.constant 3 : i32
      %ti = arith.index_cast %t : index to i32
      memref.store %ti, %s[%t] : memref<128xi32, #gpu.address_space<workgroup>>
      %warp = arith.divui %t, %c32 : index
      %pair = arith.cmpi ult, %t, %c64 : index
      scf.if %pair {
        %w1 = arith.cmpi uge, %t, %c32 : index
        %isM1 = arith.cmpi eq, %mode, %m1 : i32
        %isM2 = arith.cmpi eq, %mode, %m2 : i32
        %isM3 = arith.cmpi eq, %mode, %m3 : i32
        %oneOff = arith.andi %isM1, %w1 : i1
        %big = arith.ori %oneOff, %isM2 : i1
        %count = arith.select %big, %i96, %i64 : i32
        %true = arith.constant true
        %sync = arith.xori %isM3, %true : i1
        scf.if %sync {
          nvvm.barrier id = %i1 number_of_threads = %count
        }
        %c32i = arith.constant 32 : index
        %other = arith.xori %t, %c32i : index
        %v = memref.load %s[%other] : memref<128xi32, #gpu.address_space<workgroup>>
        memref.store %v, %out[%t] : memref<?xi32>
      } else {
        %w2 = arith.cmpi ult, %t, %c96 : index
        scf.if %w2 {
          nvvm.barrier.arrive id = %i2 number_of_threads = %i64
          memref.store %ti, %out[%t] : memref<?xi32>
        } else {
          nvvm.barrier id = %i2 number_of_threads = %i64
          %from = arith.subi %t, %c32 : index
          %v = memref.load %s[%from] : memref<128xi32, #gpu.address_space<workgroup>>
          memref.store %v, %out[%t] : memref<?xi32>
        }
      }
      gpu.return
    }

    // setmaxnreg: warpgroup 0 decreases to 40, the others increase to
    // %inc's choice (mode 0: 232; mode 1: 240 with 4 warpgroups: past the
    // register file; mode 2: warps 2-3 of warpgroup 0 take another
    // setmaxnreg instruction).
    gpu.func @regs(%out: memref<?xi32>, %mode: i32) kernel {
      %t = gpu.thread_id x
      %c128 = arith.constant 128 : index
      %c64 = arith.constant 64 : index
      %m1 = arith.constant 1 : i32
      %m2 = arith.constant 2 : i32
      %isM1 = arith.cmpi eq, %mode, %m1 : i32
      %isM2 = arith.cmpi eq, %mode, %m2 : i32
      %wg0 = arith.cmpi ult, %t, %c128 : index
      scf.if %wg0 {
        %upper = arith.cmpi uge, %t, %c64 : index
        %split = arith.andi %upper, %isM2 : i1
        scf.if %split {
          nvvm.setmaxregister decrease 48
        } else {
          nvvm.setmaxregister decrease 40
        }
      } else {
        scf.if %isM1 {
          nvvm.setmaxregister increase 240
        } else {
          nvvm.setmaxregister increase 232
        }
      }
      %ti = arith.index_cast %t : index to i32
      memref.store %ti, %out[%t] : memref<?xi32>
      gpu.return
    }

    // elect.sync over lanes 4-7 of each warp (the others do not take
    // part): out[t] = 1 for the elected lane, 0 for the others, 2 for the
    // lanes outside.
    gpu.func @elect(%out: memref<?xi32>) kernel {
      %t = gpu.thread_id x
      %c32 = arith.constant 32 : index
      %c4 = arith.constant 4 : index
      %c8 = arith.constant 8 : index
      %lane = arith.remui %t, %c32 : index
      %ge = arith.cmpi uge, %lane, %c4 : index
      %lt = arith.cmpi ult, %lane, %c8 : index
      %in = arith.andi %ge, %lt : i1
      %r = scf.if %in -> (i32) {
        %mask = arith.constant 240 : i32
        %e = nvvm.elect.sync %mask -> i1
        %ei = arith.extui %e : i1 to i32
        scf.yield %ei : i32
      } else {
        %two = arith.constant 2 : i32
        scf.yield %two : i32
      }
      memref.store %r, %out[%t] : memref<?xi32>
      gpu.return
    }
  }
}
)";

class SyncTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() { ok = prepare(kKernels); }
  static bool ok;

  /// Launches `kernel` with (out, mode) and returns whether it succeeded;
  /// `out` is poisoned with -1 first.
  static bool run(const char *kernel, Buffer<int32_t> &out, int32_t mode,
                  uint32_t threads) {
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = -1;
    Args args;
    args.memref(out).scalar(mode);
    return succeeded(launch(kernel, {1, 1, 1}, {threads, 1, 1}, args));
  }
};
bool SyncTest::ok = false;

TEST_F(SyncTest, MBarrierOrdersAHandoff) {
  ASSERT_TRUE(ok);
  Buffer<int32_t> out(32);
  ASSERT_TRUE(run("mb_handoff", out, 0, 64)) << reports();
  for (int i = 0; i < 32; ++i)
    EXPECT_EQ(out[i], 3 * i);
  const LaunchStats &s = Emulator::get().getLaunchStats().back();
  EXPECT_EQ(s.mbarrierPhases, 1u);
  EXPECT_EQ(s.mbarrierWaits, 32u);
}

TEST_F(SyncTest, MBarrierMisuseIsReported) {
  ASSERT_TRUE(ok);
  const std::pair<int, const char *> cases[] = {
      {1, "deadlock: every live thread waits and no wait can complete"},
      {2, "shared-memory read/write race"},
      {3, "before its mbarrier.init by thread (0,0,0)"},
      {4, "which holds no mbarrier (no mbarrier.init before)"},
      {5, "mbarrier.arrive of 40 on the mbarrier at shared offset 0 with 32 "
          "arrivals pending"},
      {6, "takes the transaction count of the mbarrier at shared offset 0 to "
          "2097150"},
      {7, "which was invalidated (mbarrier.inval)"},
      {8, "a store of shared bytes [0, 8), which hold the mbarrier at shared "
          "offset 0"},
  };
  for (auto [mode, text] : cases) {
    SCOPED_TRACE(mode);
    Buffer<int32_t> out(32);
    EXPECT_FALSE(run("mb_handoff", out, mode, 64));
    EXPECT_NE(reports().find(text), std::string::npos) << reports();
  }
  // The deadlock names the barrier, the phase and what is pending.
  Buffer<int32_t> out(32);
  EXPECT_FALSE(run("mb_handoff", out, 1, 64));
  EXPECT_NE(reports().find("waits on the mbarrier at shared offset 0 for the "
                           "completion of a phase of parity 0 (current phase "
                           "0, 32 of 32 arrivals pending, transaction count "
                           "0)"),
            std::string::npos)
      << reports();
}

TEST_F(SyncTest, WarpBarriersCarryMBarrierOrdering) {
  ASSERT_TRUE(ok);
  Buffer<int32_t> out(32, -1);
  Args args;
  args.memref(out);
  ASSERT_TRUE(succeeded(launch("mb_warp_handoff", {1, 1, 1}, {64, 1, 1}, args)))
      << reports();
  for (int i = 0; i < 32; ++i)
    EXPECT_EQ(out[i], i);
}

TEST_F(SyncTest, MBarrierRingWithTransactions) {
  ASSERT_TRUE(ok);
  Buffer<int32_t> in(37), out(1, -1);
  int64_t sum = 0;
  for (int i = 0; i < 37; ++i) {
    in[i] = 7 * i + 1;
    sum += in[i];
  }
  Args args;
  args.memref(in).memref(out).scalar(int64_t(37));
  ASSERT_TRUE(succeeded(launch("mb_ring", {1, 1, 1}, {64, 1, 1}, args)))
      << reports();
  EXPECT_EQ(out[0], sum);
  // 37 phases of the full barriers, 37 of the empty ones.
  EXPECT_EQ(Emulator::get().getLaunchStats().back().mbarrierPhases, 74u);
}

TEST_F(SyncTest, NamedBarriers) {
  ASSERT_TRUE(ok);
  Buffer<int32_t> out(128);
  ASSERT_TRUE(run("nb_exchange", out, 0, 128)) << reports();
  for (int t = 0; t < 128; ++t)
    EXPECT_EQ(out[t], t < 64 ? t ^ 32 : t < 96 ? t : t - 32) << t;
  EXPECT_EQ(Emulator::get().getLaunchStats().back().namedBarriers, 2u);

  const std::pair<int, const char *> cases[] = {
      {1, "(one barrier instance, two thread counts)"},
      {2, "waits on named barrier 1 (64 of 96 threads arrived)"},
      {3, "shared-memory read/write race"},
  };
  for (auto [mode, text] : cases) {
    SCOPED_TRACE(mode);
    EXPECT_FALSE(run("nb_exchange", out, mode, 128));
    EXPECT_NE(reports().find(text), std::string::npos) << reports();
  }
}

TEST_F(SyncTest, SetMaxNReg) {
  ASSERT_TRUE(ok);
  Buffer<int32_t> out(512);
  EXPECT_TRUE(run("regs", out, 0, 256)) << reports();
  EXPECT_EQ(out[255], 255);
  EXPECT_FALSE(run("regs", out, 1, 512));
  EXPECT_NE(reports().find("setmaxnreg: the warpgroups' register budgets add "
                           "up to 97280 registers"),
            std::string::npos)
      << reports();
  EXPECT_FALSE(run("regs", out, 2, 256));
  EXPECT_NE(reports().find("executes setmaxnreg at"), std::string::npos)
      << reports();
}

TEST_F(SyncTest, ElectSync) {
  ASSERT_TRUE(ok);
  Buffer<int32_t> out(64);
  Args args;
  args.memref(out);
  ASSERT_TRUE(succeeded(launch("elect", {1, 1, 1}, {64, 1, 1}, args)))
      << reports();
  for (int t = 0; t < 64; ++t) {
    int lane = t % 32;
    EXPECT_EQ(out[t], lane < 4 || lane >= 8 ? 2 : lane == 4 ? 1 : 0) << t;
  }
}

} // namespace
