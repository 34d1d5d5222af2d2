//===- MmaTest.cpp - mma.sync against a scalar matmul ---------------------===//
//
// D = A * B + C on one warp with mma.sync m16n8k16 / m16n8k8 (f16 and bf16
// inputs, f32 and f16 accumulators), random seeded inputs, compared with a
// double-precision scalar matmul. The kernels gather and scatter fragments
// through index tables the host fills from the PTX ISA fragment tables
// (9.7.14.5.8, "Matrix Fragments for mma.m16n8k16 / mma.m16n8k8 with
// floating point type"), with groupID = lane / 4 and tig = lane % 4.
//
//===----------------------------------------------------------------------===//
#include "TestSupport.h"

#include <cmath>
#include <random>

using namespace kvir::emu;
using namespace kvir::emu::test;

namespace {

struct Config {
  const char *name;
  int k;
  bool bf16;
  bool f16Acc;
};
const Config kConfigs[] = {
    {"mma_k16_f16_f32", 16, false, false},
    {"mma_k8_f16_f32", 8, false, false},
    {"mma_k16_f16_f16", 16, false, true},
    {"mma_k16_bf16_f32", 16, true, false},
};

/// Element `i` of lane `lane`'s fragment, as a row-major linear index.
int aIndex(int k, int lane, int i) {
  int g = lane / 4, tig = lane % 4;
  if (k == 16) // a0..a7
    return (g + 8 * ((i / 2) % 2)) * 16 + 2 * tig + i % 2 + 8 * (i / 4);
  return (g + 8 * (i / 2)) * 8 + 2 * tig + i % 2; // a0..a3
}
int bIndex(int k, int lane, int i) { // B is K x 8
  int g = lane / 4, tig = lane % 4;
  if (k == 16) // b0..b3
    return (2 * tig + i % 2 + 8 * (i / 2)) * 8 + g;
  return (2 * tig + i) * 8 + g; // b0, b1
}
int cIndex(int lane, int i) { // C, D are 16 x 8
  int g = lane / 4, tig = lane % 4;
  return (g + 8 * (i / 2)) * 8 + 2 * tig + i % 2;
}

/// Emits `%<name><e> = <type> element e of <mem> at <table>[lane * n + e]`.
std::string gather(const std::string &name, const std::string &mem,
                   const std::string &table, int n, const std::string &type) {
  std::string s;
  for (int e = 0; e < n; ++e) {
    std::string id = name + std::to_string(e);
    s += "    %" + id + "_k = arith.addi %" + table + "_base, %e" +
         std::to_string(e) + " : index\n";
    s += "    %" + id + "_i32 = memref.load %" + table + "[%" + id +
         "_k] : memref<?xi32>\n";
    s += "    %" + id + "_idx = arith.index_cast %" + id +
         "_i32 : i32 to index\n";
    s += "    %" + id + " = memref.load %" + mem + "[%" + id +
         "_idx] : memref<?x" + type + ">\n";
  }
  return s;
}

std::string list(const std::string &name, int n) {
  std::string s;
  for (int e = 0; e < n; ++e)
    s += (e ? ", %" : "%") + name + std::to_string(e);
  return s;
}

std::string kernel(const Config &cfg) {
  int nA = cfg.k == 16 ? 8 : 4, nB = cfg.k == 16 ? 4 : 2;
  std::string in = cfg.bf16 ? "bf16" : "f16", acc = cfg.f16Acc ? "f16" : "f32";
  std::string s = "  gpu.func @" + std::string(cfg.name) + "(%A: memref<?x" +
                  in + ">, %B: memref<?x" + in + ">, %C: memref<?x" + acc +
                  ">, %D: memref<?x" + acc +
                  ">, %ai: memref<?xi32>, %bi: memref<?xi32>, %ci: "
                  "memref<?xi32>) kernel {\n"
                  "    %l = gpu.thread_id x\n";
  for (int e = 0; e < 8; ++e)
    s += "    %e" + std::to_string(e) + " = arith.constant " +
         std::to_string(e) + " : index\n";
  s += "    %nA = arith.constant " + std::to_string(nA) + " : index\n";
  s += "    %nB = arith.constant " + std::to_string(nB) + " : index\n";
  s += "    %ai_base = arith.muli %l, %nA : index\n";
  s += "    %bi_base = arith.muli %l, %nB : index\n";
  s += "    %ci_base = arith.muli %l, %e4 : index\n";
  s += gather("a", "A", "ai", nA, in) + gather("b", "B", "bi", nB, in) +
       gather("c", "C", "ci", 4, acc);
  std::string dType = "vector<2x2x" + acc + ">";
  if (!cfg.bf16) {
    s += "    %va = vector.from_elements " + list("a", nA) + " : vector<" +
         std::to_string(nA / 2) + "x2xf16>\n";
    s += "    %vb = vector.from_elements " + list("b", nB) + " : vector<" +
         std::to_string(nB / 2) + "x2xf16>\n";
    s +=
        "    %vc = vector.from_elements " + list("c", 4) + " : " + dType + "\n";
    s += "    %vd = nvgpu.mma.sync (%va, %vb, %vc) {mmaShape = [16, 8, " +
         std::to_string(cfg.k) + "]} : (vector<" + std::to_string(nA / 2) +
         "x2xf16>, vector<" + std::to_string(nB / 2) + "x2xf16>, " + dType +
         ") -> " + dType + "\n";
    for (int i = 0; i < 4; ++i)
      s += "    %d" + std::to_string(i) + " = vector.extract %vd[" +
           std::to_string(i / 2) + ", " + std::to_string(i % 2) + "] : " + acc +
           " from " + dType + "\n";
  } else {
    // nvgpu.mma.sync cannot deduce PTX types for bf16; pack pairs into
    // 32-bit registers (lower index in the low half) for nvvm.mma.sync.
    auto pack = [&](const std::string &name, int n) {
      std::string r;
      for (int p = 0; p < n / 2; ++p) {
        std::string id = name + "p" + std::to_string(p);
        r += "    %" + id + "v = vector.from_elements %" + name +
             std::to_string(2 * p) + ", %" + name + std::to_string(2 * p + 1) +
             " : vector<2xbf16>\n";
        r += "    %" + id + " = llvm.bitcast %" + id +
             "v : vector<2xbf16> to i32\n";
      }
      return r;
    };
    s += pack("a", nA) + pack("b", nB);
    s += "    %sd = nvvm.mma.sync A[" + list("ap", nA / 2) + "] B[" +
         list("bp", nB / 2) + "] C[" + list("c", 4) +
         "] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, "
         "multiplicandAPtxType = #nvvm.mma_type<bf16>, "
         "multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = "
         "16, n = 8, k = " +
         std::to_string(cfg.k) +
         ">} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>\n";
    for (int i = 0; i < 4; ++i)
      s += "    %d" + std::to_string(i) + " = llvm.extractvalue %sd[" +
           std::to_string(i) + "] : !llvm.struct<(f32, f32, f32, f32)>\n";
  }
  for (int i = 0; i < 4; ++i)
    s += "    %o" + std::to_string(i) + " = memref.load %ci[%c" +
         std::to_string(i) +
         "_k] : memref<?xi32>\n"
         "    %o" +
         std::to_string(i) + "i = arith.index_cast %o" + std::to_string(i) +
         " : i32 to index\n"
         "    memref.store %d" +
         std::to_string(i) + ", %D[%o" + std::to_string(i) + "i] : memref<?x" +
         acc + ">\n";
  s += "    gpu.return\n  }\n";
  return s;
}

/// Random f16 / bf16 bit patterns of magnitude in [2^-4, 4), either with
/// full mantissas or on the grid of multiples of 1/8 (so that every product
/// and sum is exact).
uint16_t randomInput(std::mt19937 &rng, bool bf16, bool grid) {
  if (grid) {
    int v = int(rng() % 33) - 16; // -2 .. 2 in steps of 1/8
    float f = v / 8.0f;
    if (bf16) {
      uint32_t w;
      std::memcpy(&w, &f, 4);
      return uint16_t(w >> 16); // exact: few mantissa bits
    }
    return floatToHalfBits(f);
  }
  uint16_t sign = rng() % 2;
  if (bf16) // exponent 123 .. 128 (2^-4 .. 2^1), 7 mantissa bits
    return uint16_t(sign << 15 | (123 + rng() % 6) << 7 | (rng() & 0x7f));
  return uint16_t(sign << 15 | (11 + rng() % 6) << 10 | (rng() & 0x3ff));
}

class MmaTest : public ::testing::TestWithParam<int> {
protected:
  static void SetUpTestSuite() {
    std::string source = "module attributes {gpu.container_module} {\n"
                         "gpu.module @mma_kernels {\n";
    for (const Config &cfg : kConfigs)
      source += kernel(cfg);
    source += "}\n}\n";
    prepared = prepare(source);
  }
  static bool prepared;
};
bool MmaTest::prepared = false;

TEST_P(MmaTest, MatchesScalarMatmul) {
  ASSERT_TRUE(prepared);
  const Config &cfg = kConfigs[GetParam()];
  int k = cfg.k, nA = k == 16 ? 8 : 4, nB = k == 16 ? 4 : 2;
  std::mt19937 rng(1234 + GetParam());
  Buffer<int32_t> ai(32 * nA), bi(32 * nB), ci(32 * 4);
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < nA; ++i)
      ai[lane * nA + i] = aIndex(k, lane, i);
    for (int i = 0; i < nB; ++i)
      bi[lane * nB + i] = bIndex(k, lane, i);
    for (int i = 0; i < 4; ++i)
      ci[lane * 4 + i] = cIndex(lane, i);
  }
  auto decode = [&](uint16_t h) {
    return cfg.bf16 ? bf16BitsToFloat(h) : halfBitsToFloat(h);
  };
  for (int iter = 0; iter < 40; ++iter) {
    bool grid = iter % 2 == 0;
    Buffer<uint16_t> A(16 * k), B(k * 8);
    for (size_t i = 0; i < A.size(); ++i)
      A[i] = randomInput(rng, cfg.bf16, grid);
    for (size_t i = 0; i < B.size(); ++i)
      B[i] = randomInput(rng, cfg.bf16, grid);
    // C: f32 (or f16) values on the 1/8 grid in [-8, 8].
    std::vector<float> cVals(128);
    for (float &c : cVals)
      c = (int(rng() % 129) - 64) / 8.0f;
    Buffer<float> C32(128), D32(128, NAN);
    Buffer<uint16_t> C16(128), D16(128, 0x7e00);
    for (int i = 0; i < 128; ++i) {
      C32[i] = cVals[i];
      C16[i] = floatToHalfBits(cVals[i]);
    }
    Args args;
    args.memref(A).memref(B);
    if (cfg.f16Acc)
      args.memref(C16).memref(D16);
    else
      args.memref(C32).memref(D32);
    args.memref(ai).memref(bi).memref(ci);
    Emulator::get().clearResults();
    ASSERT_TRUE(llvm::succeeded(launch(cfg.name, {1, 1, 1}, {32, 1, 1}, args)))
        << reports();
    EXPECT_EQ(Emulator::get().getLaunchStats().back().mmaOps, 1u);
    int bad = 0;
    for (int r = 0; r < 16; ++r)
      for (int c = 0; c < 8; ++c) {
        double ref = cVals[r * 8 + c], mag = std::fabs(ref);
        for (int x = 0; x < k; ++x) {
          double p = double(decode(A[r * k + x])) * decode(B[x * 8 + c]);
          ref += p;
          mag += std::fabs(p);
        }
        double got =
            cfg.f16Acc ? halfBitsToFloat(D16[r * 8 + c]) : D32[r * 8 + c];
        // Exact on the grid; otherwise within the rounding of an f32 (or
        // f16) accumulation of k + 1 terms, in any order.
        double tol = grid ? 0.0
                          : (cfg.f16Acc ? std::ldexp(mag, -10)
                                        : (k + 1) * std::ldexp(mag, -23));
        if (grid && cfg.f16Acc)
          tol = std::ldexp(std::fabs(ref), -11); // only the final rounding
        if (!(std::fabs(got - ref) <= tol) && bad++ < 5)
          ADD_FAILURE() << cfg.name << " iteration " << iter << " D[" << r
                        << "][" << c << "] = " << got << ", expected " << ref
                        << " (tolerance " << tol << ")";
      }
    ASSERT_EQ(bad, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, MmaTest, ::testing::Range(0, 4),
                         [](const ::testing::TestParamInfo<int> &info) {
                           return std::string(kConfigs[info.param].name);
                         });

} // namespace
