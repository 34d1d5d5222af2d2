//===- ClusterTest.cpp - Thread block clusters ----------------------------===//
//
// Clusters of CTAs (sm_90): the cluster special registers against the
// launch geometry (PTX ISA, "Special Registers": %cluster_ctarank is the
// CTA's rank, x fastest; %clusterid the cluster's index in the grid), and
// distributed shared memory — each CTA of a 2-CTA cluster writes its shared
// memory, synchronizes with barrier.cluster, reads its partner's through
// mapa, and synchronizes again before exiting. Then each misuse: no
// barrier between the write and the remote read, a .relaxed arrive (no
// release), a CTA that exits while its partner reads its shared memory, a
// mapa to a rank outside the cluster, a wait without an arrive, a cluster
// barrier that can never complete, a grid that is not a multiple of the
// cluster.
//
//===----------------------------------------------------------------------===//
#include "TestSupport.h"

using namespace kvir::emu;
using namespace kvir::emu::test;

namespace {

/// @exchange's body with its synchronization chosen by `first` (between
/// the write and the remote read) and `last` (before exiting), and the
/// rank mapa maps to (`partner`: %other, or a constant).
std::string exchange(const std::string &name, const std::string &first,
                     const std::string &last, const std::string &partner) {
  return "    gpu.func @" + name + R"((%out: memref<?xf32>)
        workgroup(%s: memref<64xf32, #gpu.address_space<workgroup>>) kernel {
      %i = gpu.thread_id x
      %cta = gpu.block_id x
      %c64 = arith.constant 64 : index
      %rank = nvvm.read.ptx.sreg.cluster.ctarank : i32
      %one = arith.constant 1 : i32
      %other = arith.xori %rank, %one : i32
      %ctaI = arith.index_cast %cta : index to i32
      %ctaF = arith.sitofp %ctaI : i32 to f32
      %iI = arith.index_cast %i : index to i32
      %iF = arith.sitofp %iI : i32 to f32
      %hundred = arith.constant 100.0 : f32
      %v0 = arith.mulf %ctaF, %hundred : f32
      %v = arith.addf %v0, %iF : f32
      memref.store %v, %s[%i] : memref<64xf32, #gpu.address_space<workgroup>>
)" + first +
         R"(      %base = memref.extract_aligned_pointer_as_index %s : memref<64xf32, #gpu.address_space<workgroup>> -> index
      %c4 = arith.constant 4 : index
      %off = arith.muli %i, %c4 : index
      %addr = arith.addi %base, %off : index
      %addr64 = arith.index_cast %addr : index to i64
      %p = llvm.inttoptr %addr64 : i64 to !llvm.ptr<3>
      %remote = nvvm.mapa %p, )" +
         partner + R"( : !llvm.ptr<3> -> !llvm.ptr<7>
      %r = llvm.load %remote : !llvm.ptr<7> -> f32
      %o0 = arith.muli %cta, %c64 : index
      %o = arith.addi %o0, %i : index
      memref.store %r, %out[%o] : memref<?xf32>
)" + last +
         R"(      gpu.return
    }
)";
}

const char *kSync = "      nvvm.cluster.arrive\n      nvvm.cluster.wait\n";
const char *kRelaxed =
    "      nvvm.cluster.arrive.relaxed\n      nvvm.cluster.wait\n";

std::string module() {
  std::string s = R"(
module attributes {gpu.container_module} {
  gpu.module @clusters {
    gpu.func @registers(%out: memref<?xi32>) kernel {
      %i = gpu.thread_id x
      %cta = gpu.block_id x
      %c0 = arith.constant 0 : index
      %c8 = arith.constant 8 : index
      %first = arith.cmpi eq, %i, %c0 : index
      scf.if %first {
        %base = arith.muli %cta, %c8 : index
        %r0 = nvvm.read.ptx.sreg.cluster.ctarank : i32
        %r1 = nvvm.read.ptx.sreg.cluster.nctarank : i32
        %r2 = nvvm.read.ptx.sreg.cluster.ctaid.x : i32
        %r3 = nvvm.read.ptx.sreg.cluster.nctaid.x : i32
        %r4 = nvvm.read.ptx.sreg.clusterid.x : i32
        %r5 = nvvm.read.ptx.sreg.nclusterid.x : i32
        %r6 = nvvm.read.ptx.sreg.cluster.ctaid.y : i32
        %r7 = nvvm.read.ptx.sreg.nclusterid.y : i32
)";
  for (int k = 0; k < 8; ++k) {
    std::string n = std::to_string(k);
    s += "        %k" + n + " = arith.constant " + n + " : index\n";
    s += "        %o" + n + " = arith.addi %base, %k" + n + " : index\n";
    s +=
        "        memref.store %r" + n + ", %out[%o" + n + "] : memref<?xi32>\n";
  }
  s += "      }\n      gpu.return\n    }\n";
  s += exchange("exchange", kSync, kSync, "%other");
  s += exchange("no_sync", "", kSync, "%other");
  s += exchange("relaxed", kRelaxed, kSync, "%other");
  s += exchange("exit_early", kSync, "", "%other");
  s += exchange("bad_rank", kSync, kSync, "%two");
  s += exchange("wait_only", "      nvvm.cluster.wait\n", kSync, "%other");
  // Warp 0 of rank 1 waits at a named barrier warp 1 never reaches, so
  // the cluster barrier never completes.
  s += R"(    gpu.func @deadlock() kernel {
      %rank = nvvm.read.ptx.sreg.cluster.ctarank : i32
      %warp = nvvm.read.ptx.sreg.warpid : i32
      %zero = arith.constant 0 : i32
      %id = arith.constant 1 : i32
      %count = arith.constant 64 : i32
      %r1 = arith.cmpi ne, %rank, %zero : i32
      %w0 = arith.cmpi eq, %warp, %zero : i32
      %stuck = arith.andi %r1, %w0 : i1
      scf.if %stuck {
        nvvm.barrier id = %id number_of_threads = %count
      }
      nvvm.cluster.arrive
      nvvm.cluster.wait
      gpu.return
    }
  }
}
)";
  // bad_rank maps to rank 2 of a 2-CTA cluster.
  size_t at = s.find("%remote = nvvm.mapa %p, %two");
  size_t line = s.rfind("\n", at);
  s.insert(line + 1, "      %two = arith.constant 2 : i32\n");
  return s;
}

class ClusterTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() { ok = prepare(module()); }
  static bool ok;

  bool run(const std::string &kernel, Dim3 grid, Dim3 cluster, Args &args,
           uint32_t threads = 64) {
    Emulator::get().options().exitOnError = false;
    LaunchAttributes attributes;
    attributes.cluster = cluster;
    return succeeded(Emulator::get().launch(kernel, grid, {threads, 1, 1}, 0,
                                            args.get(), attributes));
  }
  /// Runs `kernel` on 2 clusters of 2 CTAs; returns whether it failed with
  /// a report containing `text`.
  void expectReport(const std::string &kernel, const std::string &text,
                    uint32_t threads = 64) {
    SCOPED_TRACE(kernel);
    Buffer<float> out(4 * 64);
    Args args;
    if (kernel != "deadlock")
      args.memref(out);
    size_t before = Emulator::get().getReports().size();
    EXPECT_FALSE(run(kernel, {4, 1, 1}, {2, 1, 1}, args, threads));
    ASSERT_GT(Emulator::get().getReports().size(), before);
    std::string all = reports();
    EXPECT_NE(all.find(text), std::string::npos) << all;
  }
};
bool ClusterTest::ok = false;

TEST_F(ClusterTest, SpecialRegisters) {
  ASSERT_TRUE(ok);
  // A grid of 6 CTAs in clusters of 2: 3 clusters.
  Buffer<int32_t> out(6 * 8, -1);
  Args args;
  args.memref(out);
  ASSERT_TRUE(run("registers", {6, 1, 1}, {2, 1, 1}, args, 32)) << reports();
  for (int32_t cta = 0; cta < 6; ++cta) {
    SCOPED_TRACE(cta);
    const int32_t *r = &out[cta * 8];
    EXPECT_EQ(r[0], cta % 2); // %cluster_ctarank
    EXPECT_EQ(r[1], 2);       // %cluster_nctarank
    EXPECT_EQ(r[2], cta % 2); // %cluster_ctaid.x
    EXPECT_EQ(r[3], 2);       // %cluster_nctaid.x
    EXPECT_EQ(r[4], cta / 2); // %clusterid.x
    EXPECT_EQ(r[5], 3);       // %nclusterid.x
    EXPECT_EQ(r[6], 0);       // %cluster_ctaid.y
    EXPECT_EQ(r[7], 1);       // %nclusterid.y
  }
  const LaunchStats &stats = Emulator::get().getLaunchStats().back();
  EXPECT_EQ(stats.cluster.count(), 2u);
  EXPECT_NE(stats.toJson().find("\"cluster\": [2, 1, 1]"), std::string::npos);
}

TEST_F(ClusterTest, DistributedSharedMemory) {
  ASSERT_TRUE(ok);
  Buffer<float> out(4 * 64, std::nanf(""));
  Args args;
  args.memref(out);
  ASSERT_TRUE(run("exchange", {4, 1, 1}, {2, 1, 1}, args)) << reports();
  for (uint32_t cta = 0; cta < 4; ++cta)
    for (uint32_t i = 0; i < 64; ++i)
      EXPECT_EQ(out[cta * 64 + i], float((cta ^ 1) * 100 + i))
          << "CTA " << cta << " thread " << i;
  const LaunchStats &stats = Emulator::get().getLaunchStats().back();
  EXPECT_EQ(stats.clusterBarriers, 8u); // 2 phases, counted per CTA
}

TEST_F(ClusterTest, MisuseIsReported) {
  ASSERT_TRUE(ok);
  expectReport("no_sync", "shared-memory race across the cluster");
  expectReport("relaxed", "shared-memory race across the cluster");
  expectReport("exit_early", "which has exited");
  expectReport("bad_rank", "mapa to CTA rank 2 of a cluster of 2");
  expectReport("wait_only", "barrier.cluster.wait without a "
                            "barrier.cluster.arrive before it");
  expectReport("deadlock", "deadlock: barrier.cluster.wait for phase 1");
  expectReport("deadlock", "of CTA rank 1 waits at");
}

TEST_F(ClusterTest, InvalidClusterShapes) {
  ASSERT_TRUE(ok);
  for (Dim3 cluster : {Dim3{3, 1, 1}, Dim3{16, 1, 1}, Dim3{0, 1, 1}}) {
    Buffer<float> out(4 * 64);
    Args args;
    args.memref(out);
    EXPECT_FALSE(run("exchange", {4, 1, 1}, cluster, args));
    EXPECT_NE(reports().find("at most 8 CTAs per cluster, and the grid a "
                             "multiple of the cluster"),
              std::string::npos)
        << reports();
  }
}

} // namespace
