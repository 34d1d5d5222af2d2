//===- HopperGemmTest.cpp - A warp-specialized sm_90a GEMM ----------------===//
//
// C (128 x 64, bf16) = A (128 x 512) * B^T (B: 64 x 512), bf16 inputs, the
// way Hopper kernels are built: a producer warpgroup (setmaxnreg down to
// 40) whose elected thread issues TMA loads of 64-wide K tiles with 128-byte
// swizzle into a 4-stage ring of mbarriers (full: arrive.expect_tx + the
// copies' bytes; empty: the 256 consumer threads), and two consumer
// warpgroups (setmaxnreg up to 232), 64 rows each, running chains of four
// m64n64k16 wgmmas per stage that keep one group in flight across the loop's
// back edge; the epilogue converts to bf16, stores with stmatrix into a
// 128-byte-swizzled tile, fences the async proxy, meets on named barrier 1
// and writes C with one TMA store. Checked against a float64 matmul. Then one
// mutation per hazard of this kind of kernel; each must be reported.
//
//===----------------------------------------------------------------------===//
#include "TestSupport.h"
#include "kvir/Emulator/TensorMap.h"

#include <cmath>
#include <random>

using namespace kvir::emu;
using namespace kvir::emu::test;

namespace {

constexpr int M = 128, N = 64, K = 512, BK = 64, Stages = 4, KT = K / BK;
// Shared memory: mbarriers full[4] at 0, empty[4] at 32; stage s at
// 1024 + s * 24576 (A 128 x 64, B 64 x 64, 128-byte rows); C at 99328.
constexpr int StageBytes = (M + N) * BK * 2, StageBase = 1024;
constexpr int CBase = StageBase + Stages * StageBytes;
constexpr int SharedBytes = CBase + M * N * 2;

std::string accType() {
  std::string s = "!llvm.struct<(";
  for (int i = 0; i < N / 2; ++i)
    s += i ? ", f32" : "f32";
  return s + ")>";
}

/// Mutations: 1 the consumers do not wait for a stage's TMA loads, 2 the
/// producer does not wait for a stage to be released, 3 no fence.proxy.async
/// before the TMA store, 4 the consumers ask for 240 registers, 5 the
/// consumers release a stage before its wgmmas retired.
std::string kernel() {
  std::string acc = accType(), ws = "#gpu.address_space<workgroup>";
  std::string s = R"(
  gpu.func @hopper_gemm(%mapA: !llvm.ptr, %mapB: !llvm.ptr, %mapC: !llvm.ptr,
                        %mode: i32) kernel {
    %t = gpu.thread_id x
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c128 = arith.constant 128 : index
    %c256 = arith.constant 256 : index
    %cKT = arith.constant )" +
                  std::to_string(KT) + R"( : index
    %i0 = arith.constant 0 : i32
    %i1 = arith.constant 1 : i32
    %i2 = arith.constant 2 : i32
    %i3 = arith.constant 3 : i32
    %i4 = arith.constant 4 : i32
    %i64 = arith.constant 64 : i32
    %i256 = arith.constant 256 : i32
    %true = arith.constant true
    %dyn = gpu.dynamic_shared_memory : memref<?xi8, )" +
                  ws + R"(>
    %base = memref.extract_aligned_pointer_as_index %dyn : memref<?xi8, )" +
                  ws + R"(> -> index
    %base64 = arith.index_cast %base : index to i64
    // The shared pointer at byte offset %o.
    %wg = arith.divui %t, %c128 : index
    %isProducer = arith.cmpi eq, %wg, %c0 : index
    %first = arith.cmpi eq, %t, %c0 : index
    scf.if %first {
      scf.for %s = %c0 to %c4 step %c1 {
        %o = arith.muli %s, %c8 : index
        %fa = arith.addi %base, %o : index
        %fa64 = arith.index_cast %fa : index to i64
        %fp = llvm.inttoptr %fa64 : i64 to !llvm.ptr<3>
        nvvm.mbarrier.init %fp, %i1 : !llvm.ptr<3>, i32
        %c32 = arith.constant 32 : index
        %ea = arith.addi %fa, %c32 : index
        %ea64 = arith.index_cast %ea : index to i64
        %ep = llvm.inttoptr %ea64 : i64 to !llvm.ptr<3>
        nvvm.mbarrier.init %ep, %i256 : !llvm.ptr<3>, i32
      }
      nvvm.fence.mbarrier.init
    }
    gpu.barrier
    %isM1 = arith.cmpi eq, %mode, %i1 : i32
    %isM2 = arith.cmpi eq, %mode, %i2 : i32
    %isM3 = arith.cmpi eq, %mode, %i3 : i32
    %isM4 = arith.cmpi eq, %mode, %i4 : i32
    %i5 = arith.constant 5 : i32
    %isM5 = arith.cmpi eq, %mode, %i5 : i32
    scf.if %isProducer {
      nvvm.setmaxregister decrease 40
      scf.if %first {
        scf.for %kt = %c0 to %cKT step %c1 {
          %s = arith.remui %kt, %c4 : index
          %pass = arith.divui %kt, %c4 : index
          %par = arith.remui %pass, %c2 : index
          %par32 = arith.index_cast %par : index to i32
          %freePar = arith.xori %par32, %i1 : i32
          %o = arith.muli %s, %c8 : index
          %fa = arith.addi %base, %o : index
          %fa64 = arith.index_cast %fa : index to i64
          %fp = llvm.inttoptr %fa64 : i64 to !llvm.ptr<3>
          %c32 = arith.constant 32 : index
          %ea = arith.addi %fa, %c32 : index
          %ea64 = arith.index_cast %ea : index to i64
          %ep = llvm.inttoptr %ea64 : i64 to !llvm.ptr<3>
          %waitFree = arith.xori %isM2, %true : i1
          scf.if %waitFree {
            nvvm.mbarrier.try_wait.parity %ep, %freePar, %i0 : !llvm.ptr<3>, i32, i32
          }
          %bytes = arith.constant )" +
                  std::to_string(StageBytes) + R"( : i32
          %st = nvvm.mbarrier.arrive.expect_tx %fp, %bytes : !llvm.ptr<3>, i32 -> i64
          %stageBytes = arith.constant )" +
                  std::to_string(StageBytes) + R"( : index
          %stageBase = arith.constant )" +
                  std::to_string(StageBase) + R"( : index
          %so = arith.muli %s, %stageBytes : index
          %aOff = arith.addi %stageBase, %so : index
          %aa = arith.addi %base, %aOff : index
          %aa64 = arith.index_cast %aa : index to i64
          %ap = llvm.inttoptr %aa64 : i64 to !llvm.ptr<3>
          %aBytes = arith.constant )" +
                  std::to_string(M * BK * 2) + R"( : index
          %ba = arith.addi %aa, %aBytes : index
          %ba64 = arith.index_cast %ba : index to i64
          %bp = llvm.inttoptr %ba64 : i64 to !llvm.ptr<3>
          %cBK = arith.constant )" +
                  std::to_string(BK) + R"( : index
          %k = arith.muli %kt, %cBK : index
          %k32 = arith.index_cast %k : index to i32
          %mapBytes1 = arith.constant 128 : i32
          nvvm.fence.proxy.acquire #nvvm.mem_scope<sys> %mapA, %mapBytes1
          nvvm.cp.async.bulk.tensor.shared.cluster.global %ap, %mapA, %fp, box[%k32, %i0] {isCTAOnly = true} : !llvm.ptr<3>, !llvm.ptr
          %mapBytes2 = arith.constant 128 : i32
          nvvm.fence.proxy.acquire #nvvm.mem_scope<sys> %mapB, %mapBytes2
          nvvm.cp.async.bulk.tensor.shared.cluster.global %bp, %mapB, %fp, box[%k32, %i0] {isCTAOnly = true} : !llvm.ptr<3>, !llvm.ptr
        }
      }
    } else {
      scf.if %isM4 {
        nvvm.setmaxregister increase 240
      } else {
        nvvm.setmaxregister increase 232
      }
      %consumer = arith.subi %wg, %c1 : index
      %zero = llvm.mlir.zero : )" +
                  acc + R"(
      %mask = arith.constant 262143 : i64
      %c4i = arith.constant 4 : i64
      %sbo = arith.constant 274877906944 : i64
      %swz = arith.constant 4611686018427387904 : i64
      %layout = arith.ori %sbo, %swz : i64
      %step = arith.constant 2 : i64
      %final = scf.for %kt = %c0 to %cKT step %c1 iter_args(%d = %zero) -> ()" +
                  acc + R"() {
        %s = arith.remui %kt, %c4 : index
        %pass = arith.divui %kt, %c4 : index
        %par = arith.remui %pass, %c2 : index
        %par32 = arith.index_cast %par : index to i32
        %o = arith.muli %s, %c8 : index
        %fa = arith.addi %base, %o : index
        %fa64 = arith.index_cast %fa : index to i64
        %fp = llvm.inttoptr %fa64 : i64 to !llvm.ptr<3>
        %waitFull = arith.xori %isM1, %true : i1
        scf.if %waitFull {
          nvvm.mbarrier.try_wait.parity %fp, %par32, %i0 : !llvm.ptr<3>, i32, i32
        }
        %stageBytes = arith.constant )" +
                  std::to_string(StageBytes) + R"( : index
        %stageBase = arith.constant )" +
                  std::to_string(StageBase) + R"( : index
        %so = arith.muli %s, %stageBytes : index
        %aStage = arith.addi %stageBase, %so : index
        %rows = arith.constant 8192 : index
        %aRows = arith.muli %consumer, %rows : index
        %aOff = arith.addi %aStage, %aRows : index
        %aBytes = arith.constant )" +
                  std::to_string(M * BK * 2) + R"( : index
        %bOff = arith.addi %aStage, %aBytes : index
        %aAddr = arith.addi %base, %aOff : index
        %bAddr = arith.addi %base, %bOff : index
        %aAddr64 = arith.index_cast %aAddr : index to i64
        %bAddr64 = arith.index_cast %bAddr : index to i64
        %aLow = arith.andi %aAddr64, %mask : i64
        %bLow = arith.andi %bAddr64, %mask : i64
        %aStart = arith.shrui %aLow, %c4i : i64
        %bStart = arith.shrui %bLow, %c4i : i64
        %dA0 = arith.ori %aStart, %layout : i64
        %dB0 = arith.ori %bStart, %layout : i64
        nvvm.wgmma.fence.aligned
)";
  std::string in = "%d";
  for (int j = 0; j < BK / 16; ++j) {
    std::string jn = std::to_string(j);
    if (j) {
      std::string pj = std::to_string(j - 1);
      s += "        %dA" + jn + " = arith.addi %dA" + pj + ", %step : i64\n";
      s += "        %dB" + jn + " = arith.addi %dB" + pj + ", %step : i64\n";
    }
    s += "        %r" + jn + " = nvvm.wgmma.mma_async %dA" + jn + ", %dB" + jn +
         ", " + in +
         ", #nvvm.shape<m = 64, n = 64, k = 16>, D [<f32>, "
         "#nvvm.wgmma_scale_out<one>], A [<bf16>, #nvvm.wgmma_scale_in<one>, "
         "#nvvm.mma_layout<row>], B [<bf16>, #nvvm.wgmma_scale_in<one>, "
         "#nvvm.mma_layout<col>] : " +
         acc + " -> " + acc + "\n";
    in = "%r" + jn;
  }
  s += R"(        nvvm.wgmma.commit.group.sync.aligned
        // Mode 5 releases this stage before its wgmmas retired.
        scf.if %isM5 {
          %c32 = arith.constant 32 : index
          %eo = arith.addi %o, %c32 : index
          %ea = arith.addi %base, %eo : index
          %ea64 = arith.index_cast %ea : index to i64
          %ep = llvm.inttoptr %ea64 : i64 to !llvm.ptr<3>
          %tok = nvvm.mbarrier.arrive %ep : !llvm.ptr<3> -> i64
        }
        nvvm.wgmma.wait.group.sync.aligned 1
        // The previous stage's wgmmas retired: release it.
        %notM5 = arith.xori %isM5, %true : i1
        %after = arith.cmpi ugt, %kt, %c0 : index
        %notFirst = arith.andi %after, %notM5 : i1
        scf.if %notFirst {
          %prev0 = arith.addi %kt, %c4 : index
          %prev1 = arith.subi %prev0, %c1 : index
          %ps = arith.remui %prev1, %c4 : index
          %po = arith.muli %ps, %c8 : index
          %c32 = arith.constant 32 : index
          %po2 = arith.addi %po, %c32 : index
          %ea = arith.addi %base, %po2 : index
          %ea64 = arith.index_cast %ea : index to i64
          %ep = llvm.inttoptr %ea64 : i64 to !llvm.ptr<3>
          %tok = nvvm.mbarrier.arrive %ep : !llvm.ptr<3> -> i64
        }
        scf.yield )" +
       in + " : " + acc + R"(
      }
      nvvm.wgmma.wait.group.sync.aligned 0
      // Epilogue: bf16 pairs, stmatrix x4 per two 8-column blocks into the
      // 128-byte-swizzled C tile.
      %local = arith.remui %t, %c128 : index
      %warp = arith.divui %local, %c32e : index
      %lane = arith.remui %local, %c32e : index
      %mtx = arith.divui %lane, %c8 : index
      %mrow = arith.remui %lane, %c8 : index
      %half = arith.remui %mtx, %c2 : index
      %pair = arith.divui %mtx, %c2 : index
      %c64 = arith.constant 64 : index
      %c16 = arith.constant 16 : index
      %rowA = arith.muli %consumer, %c64 : index
      %rowW = arith.muli %warp, %c16 : index
      %rowH = arith.muli %half, %c8 : index
      %row0 = arith.addi %rowA, %rowW : index
      %row1 = arith.addi %row0, %rowH : index
      %row = arith.addi %row1, %mrow : index
      %row8 = arith.remui %row, %c8 : index
      %rowBytes = arith.muli %row, %c128 : index
      %cBase = arith.constant )" +
       std::to_string(CBase) + R"( : index
      %cRow = arith.addi %cBase, %rowBytes : index
)";
  // Constants the epilogue uses, placed before it.
  s.insert(s.find("      %local = "),
           "      %c32e = arith.constant 32 : index\n");
  for (int j = 0; j < N / 8; j += 2) {
    std::string jn = std::to_string(j);
    std::string regs[4];
    for (int m = 0; m < 4; ++m) {
      // Matrix m: half m % 2 (rows +8) of column block j + m / 2.
      int block = j + m / 2, reg = 4 * block + 2 * (m % 2);
      std::string id = jn + "_" + std::to_string(m);
      s += "      %lo" + id + " = llvm.extractvalue %final[" +
           std::to_string(reg) + "] : " + acc + "\n";
      s += "      %hi" + id + " = llvm.extractvalue %final[" +
           std::to_string(reg + 1) + "] : " + acc + "\n";
      s += "      %blo" + id + " = arith.truncf %lo" + id + " : f32 to bf16\n";
      s += "      %bhi" + id + " = arith.truncf %hi" + id + " : f32 to bf16\n";
      s += "      %v" + id + " = vector.from_elements %blo" + id + ", %bhi" +
           id + " : vector<2xbf16>\n";
      s += "      %w" + id + " = vector.bitcast %v" + id +
           " : vector<2xbf16> to vector<1xi32>\n";
      s += "      %p" + id + " = vector.extract %w" + id +
           "[0] : i32 from "
           "vector<1xi32>\n";
      regs[m] = "%p" + id;
    }
    s += "      %blk" + jn + " = arith.constant " + jn + " : index\n";
    s += "      %col" + jn + " = arith.addi %blk" + jn + ", %pair : index\n";
    s += "      %chunk" + jn + " = arith.xori %col" + jn + ", %row8 : index\n";
    s += "      %cOff" + jn + " = arith.muli %chunk" + jn + ", %c16 : index\n";
    s += "      %at" + jn + " = arith.addi %cRow, %cOff" + jn + " : index\n";
    s += "      %abs" + jn + " = arith.addi %base, %at" + jn + " : index\n";
    s += "      %abs64_" + jn + " = arith.index_cast %abs" + jn +
         " : index to i64\n";
    s += "      %sp" + jn + " = llvm.inttoptr %abs64_" + jn +
         " : i64 to !llvm.ptr<3>\n";
    s += "      nvvm.stmatrix %sp" + jn + ", " + regs[0] + ", " + regs[1] +
         ", " + regs[2] + ", " + regs[3] +
         " {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = "
         "#nvvm.mma_layout<row>, shape = #nvvm.ld_st_matrix_shape<m = 8, n = "
         "8>} : !llvm.ptr<3>, i32, i32, i32, i32\n";
  }
  s += R"(      %fence = arith.xori %isM3, %true : i1
      scf.if %fence {
        nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
      }
      nvvm.barrier id = %i1 number_of_threads = %i256
      %leader = arith.cmpi eq, %t, %c128 : index
      scf.if %leader {
        %cb = arith.addi %base, %cBase : index
        %cb64 = arith.index_cast %cb : index to i64
        %cp = llvm.inttoptr %cb64 : i64 to !llvm.ptr<3>
        %mapBytes3 = arith.constant 128 : i32
        nvvm.fence.proxy.acquire #nvvm.mem_scope<sys> %mapC, %mapBytes3
        nvvm.cp.async.bulk.tensor.global.shared.cta %mapC, %cp, box[%i0, %i0] : !llvm.ptr, !llvm.ptr<3>
        nvvm.cp.async.bulk.commit.group
        nvvm.cp.async.bulk.wait_group 0
      }
    }
    gpu.return
  }
)";
  return s;
}

/// A 2-D bf16 tensor map: `inner` x `outer` elements, box `boxInner` x
/// `boxOuter`, 128-byte swizzle.
void encode(TensorMapBuffer &map, void *base, uint64_t inner, uint64_t outer,
            uint32_t boxInner, uint32_t boxOuter) {
  TensorMapFields f;
  f.dataType = TmaBFloat16;
  f.rank = 2;
  f.globalAddress = reinterpret_cast<uint64_t>(base);
  f.globalDim[0] = inner;
  f.globalDim[1] = outer;
  f.globalStrides[0] = inner * 2;
  f.boxDim[0] = boxInner;
  f.boxDim[1] = boxOuter;
  f.elementStrides[0] = f.elementStrides[1] = 1;
  f.swizzle = TmaSwizzle128B;
  ASSERT_EQ(encodeTensorMap(map.bytes, f), "");
}

uint16_t toBf16(float f) {
  uint32_t w;
  std::memcpy(&w, &f, 4);
  return uint16_t((w + 0x7fff + ((w >> 16) & 1)) >> 16);
}

class HopperGemmTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    ok = prepare("module attributes {gpu.container_module} {\n"
                 "gpu.module @hopper {\n" +
                 kernel() + "}\n}\n");
  }
  static bool ok;

  /// Runs the kernel in `mode`; fills `c` and `reference` (float64).
  static bool run(int32_t mode, Buffer<uint16_t> &c,
                  std::vector<double> &reference) {
    std::mt19937 rng(2026);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    Buffer<uint16_t> a(M * K), b(N * K);
    for (size_t i = 0; i < a.size(); ++i)
      a[i] = toBf16(dist(rng));
    for (size_t i = 0; i < b.size(); ++i)
      b[i] = toBf16(dist(rng));
    for (size_t i = 0; i < c.size(); ++i)
      c[i] = 0x7fc0; // NaN: every element must be written
    TensorMapBuffer mapA, mapB, mapC;
    encode(mapA, a.ptr(), K, M, BK, M);
    encode(mapB, b.ptr(), K, N, BK, N);
    encode(mapC, c.ptr(), N, M, N, M);
    reference.assign(M * N, 0);
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n)
        for (int k = 0; k < K; ++k)
          reference[m * N + n] += double(bf16BitsToFloat(a[m * K + k])) *
                                  bf16BitsToFloat(b[n * K + k]);
    Args args;
    args.pointer(mapA.bytes).pointer(mapB.bytes).pointer(mapC.bytes);
    args.scalar(mode);
    return succeeded(
        launch("hopper_gemm", {1, 1, 1}, {384, 1, 1}, args, SharedBytes));
  }
};
bool HopperGemmTest::ok = false;

TEST_F(HopperGemmTest, MatchesFloat64Reference) {
  ASSERT_TRUE(ok);
  Buffer<uint16_t> c(M * N);
  std::vector<double> reference;
  ASSERT_TRUE(run(0, c, reference)) << reports();
  for (int i = 0; i < M * N; ++i) {
    float got = bf16BitsToFloat(c[i]);
    ASSERT_FALSE(std::isnan(got)) << "C[" << i << "] not written";
    // bf16 output: half an ulp of 8 bits, and f32 sums of 512 products.
    ASSERT_NEAR(got, reference[i], 4e-3 * std::fabs(reference[i]) + 1e-3)
        << "C[" << i / N << "][" << i % N << "]";
  }
  const LaunchStats &s = Emulator::get().getLaunchStats().back();
  EXPECT_EQ(s.wgmmaOps, uint64_t(2 * KT * BK / 16));
  EXPECT_EQ(s.tmaCopies, uint64_t(2 * KT + 1));
  EXPECT_EQ(s.tmaBytesLoaded, uint64_t((M + N) * K * 2));
  EXPECT_EQ(s.tmaBytesStored, uint64_t(M * N * 2));
  EXPECT_EQ(s.namedBarriers, 1u);
}

TEST_F(HopperGemmTest, EveryHazardIsReported) {
  ASSERT_TRUE(ok);
  const std::pair<int, const char *> cases[] = {
      {1, "wrote without being ordered before the wgmma (wait on the "
          "mbarrier the copy completes on"},
      {2, "before any wait observed the completion of phase 0"},
      {3, "without a fence.proxy.async"},
      {4, "setmaxnreg: the warpgroups' register budgets add up to 66560"},
      // The producer's TMA overwrites a stage whose wgmmas are in flight, or
      // retired after the release that let it in.
      {5, "wgmma.mma_async of warpgroup"},
  };
  for (auto [mode, text] : cases) {
    SCOPED_TRACE(mode);
    Buffer<uint16_t> c(M * N);
    std::vector<double> reference;
    EXPECT_FALSE(run(mode, c, reference));
    EXPECT_NE(reports().find(text), std::string::npos) << reports();
  }
}

} // namespace
