//===- WgmmaRegistersTest.cpp - wgmma with A in registers (inline PTX) ----===//
//
// MLIR 22 has no op for wgmma's RS form (A from registers, B from shared
// memory), so kernels emit it as llvm.inline_asm; the emulator reads the
// template back. One warpgroup computes D (64 x N) = A * B + C with A's
// fragment loaded into each thread's four b32 registers from a table the
// host packs after the PTX ISA's register-fragment figure for A (9.7.15.5.1.1:
// register j of lane l in warp w covers row 16w + l/4 (+8 for j odd) and
// columns 2 (l % 4) (+8 for j >= 2) for 16-bit types, 4 (l % 4) (+16) for
// fp8, low bits first); B is laid out in shared memory by the ISA's
// canonical layouts (WgmmaLayouts.h). Results are compared with a float64
// matmul; then each hazard of the RS form must be reported.
//
//===----------------------------------------------------------------------===//
#include "TestSupport.h"
#include "WgmmaLayouts.h"

using namespace kvir::emu;
using namespace kvir::emu::test;

namespace {

struct Case {
  std::string name;
  Elem a, b;
  uint32_t n;
  Layout lb;
  bool negateA = false, negateB = false;
  /// scale-d from a kernel argument through a predicate: 0 is D = A * B.
  bool accumulate = true;
  uint32_t kSteps = 1;
  /// The chain in a loop whose fence, commit and wait are inline PTX too,
  /// keeping one group in flight across the back edge.
  bool loop = false;
  /// An empty commit group after the wgmma's, then wait_group 1: the
  /// wgmma retires, the empty group is the oldest in flight when D is read.
  bool emptyGroupAfter = false;
};

enum class Mutation {
  None,
  EarlyReadA,           // a thread reads an A register before the retiring wait
  LateA,                // A's registers defined after the wgmma.fence
  EarlyReadD,           // wait_group 1 (nothing retired), then D is read
  NoFence,              // no wgmma.fence at all
  EmptyFirstEarlyReadD, // an empty group, the wgmma's, wait_group 1: D read
};

/// The inline-asm wgmma: outputs $0..$W-1 (D), the tied inputs $W..$2W-1
/// (C), A's registers, B's descriptor and the scale-d flag.
std::string mmaAsm(const Case &c, const std::string &result,
                   const std::vector<std::string> &acc,
                   const std::vector<std::string> &aRegs,
                   const std::string &desc) {
  uint32_t words = c.n / 2, k = kOf(c.a);
  std::string d, constraints, operands, types;
  for (uint32_t i = 0; i < words; ++i) {
    d += (i ? ", $" : "$") + std::to_string(i);
    constraints += "=f,";
  }
  for (uint32_t i = 0; i < words; ++i) {
    constraints += std::to_string(i) + ",";
    operands += acc[i] + ", ";
    types += "f32, ";
  }
  std::string a;
  for (uint32_t r = 0; r < 4; ++r) {
    a += (r ? ", $" : "$") + std::to_string(2 * words + r);
    operands += aRegs[r] + ", ";
    types += "i32, ";
  }
  constraints += "r,r,r,r,l,r";
  operands += desc + ", %scale";
  types += "i64, i32";
  bool fp8 = bytesOf(c.a) == 1;
  std::string text =
      "{\\n.reg .pred p;\\nsetp.ne.b32 p, $" + std::to_string(2 * words + 5) +
      ", 0;\\nwgmma.mma_async.sync.aligned.m64n" + std::to_string(c.n) + "k" +
      std::to_string(k) + ".f32." + ptxName(c.a) + "." + ptxName(c.b) + " {" +
      d + "}, {" + a + "}, $" + std::to_string(2 * words + 4) + ", p, " +
      (c.negateA ? "-1" : "1") + ", " + (c.negateB ? "-1" : "1") +
      (fp8            ? ""
       : c.lb.mnMajor ? ", 1"
                      : ", 0") +
      ";\\n}\\n";
  return "    " + result +
         " = llvm.inline_asm has_side_effects asm_dialect = att \"" + text +
         "\", \"" + constraints + "\" " + operands + " : (" + types + ") -> " +
         structType(words) + "\n";
}

/// An inline-PTX statement without operands.
std::string asmStatement(const std::string &text) {
  return "    llvm.inline_asm has_side_effects asm_dialect = att \"" + text +
         "\", \"\"  : () -> ()\n";
}

/// Extracts the W accumulators of struct `from` as %<prefix>0...
std::string extract(const std::string &from, const std::string &prefix,
                    uint32_t words, std::vector<std::string> &names) {
  std::string s;
  names.clear();
  for (uint32_t i = 0; i < words; ++i) {
    names.push_back("%" + prefix + std::to_string(i));
    s += "    " + names.back() + " = llvm.extractvalue " + from + "[" +
         std::to_string(i) + "] : " + structType(words) + "\n";
  }
  return s;
}

/// Loads step `step`'s four A registers of thread %t as %<prefix>0..3.
std::string loadA(const std::string &step, const std::string &prefix,
                  std::vector<std::string> &names) {
  std::string s = "    %" + prefix + "base0 = arith.muli " + step +
                  ", %c128 : index\n"
                  "    %" +
                  prefix + "base1 = arith.addi %" + prefix +
                  "base0, %t : index\n"
                  "    %" +
                  prefix + "base = arith.muli %" + prefix +
                  "base1, %c4 : index\n";
  names.clear();
  for (uint32_t r = 0; r < 4; ++r) {
    std::string rn = std::to_string(r);
    s += "    %" + prefix + "ix" + rn + " = arith.addi %" + prefix +
         "base, %c1_" + rn + " : index\n";
    names.push_back("%" + prefix + rn);
    s += "    " + names.back() + " = memref.load %aTab[%" + prefix + "ix" + rn +
         "] : memref<?xi32>\n";
  }
  return s;
}

std::string kernel(const Case &c, Mutation mutation = Mutation::None) {
  uint32_t words = c.n / 2;
  std::string acc = structType(words);
  std::string ws = "#gpu.address_space<workgroup>";
  std::string s =
      "  gpu.func @" + c.name +
      "(%aTab: memref<?xi32>, %img: memref<?xi32>, %tab: memref<?xi32>, "
      "%cin: memref<?xf32>, %out: memref<?xf32>, %descB: i64, %stepB: i64, "
      "%nwords: index, %scale: i32) kernel {\n"
      "    %t = gpu.thread_id x\n"
      "    %c0 = arith.constant 0 : index\n"
      "    %c1 = arith.constant 1 : index\n"
      "    %c4 = arith.constant 4 : index\n"
      "    %c128 = arith.constant 128 : index\n";
  for (uint32_t i = 0; i < std::max(words, 4u); ++i)
    s += "    %c1_" + std::to_string(i) + " = arith.constant " +
         std::to_string(i) + " : index\n";
  s += "    %dyn = gpu.dynamic_shared_memory : memref<?xi8, " + ws +
       ">\n"
       "    %smem = memref.view %dyn[%c0][%nwords] : memref<?xi8, " +
       ws + "> to memref<?xi32, " + ws +
       ">\n"
       "    scf.for %w = %t to %nwords step %c128 {\n"
       "      %v = memref.load %img[%w] : memref<?xi32>\n"
       "      memref.store %v, %smem[%w] : memref<?xi32, " +
       ws +
       ">\n"
       "    }\n"
       "    nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = "
       "#nvvm.shared_space<cta>}\n"
       "    gpu.barrier\n"
       "    %baseIdx = memref.extract_aligned_pointer_as_index %dyn : "
       "memref<?xi8, " +
       ws +
       "> -> index\n"
       "    %base64 = arith.index_cast %baseIdx : index to i64\n"
       "    %mask = arith.constant 262143 : i64\n"
       "    %c4i = arith.constant 4 : i64\n"
       "    %low = arith.andi %base64, %mask : i64\n"
       "    %startField = arith.shrui %low, %c4i : i64\n"
       "    %dB0 = arith.addi %descB, %startField : i64\n"
       "    %cw = arith.constant " +
       std::to_string(words) +
       " : index\n"
       "    %tabBase = arith.muli %t, %cw : index\n";
  std::vector<std::string> accNames;
  for (uint32_t i = 0; i < words; ++i) {
    std::string n = std::to_string(i);
    s += "    %ti" + n + " = arith.addi %tabBase, %c1_" + n + " : index\n";
    s += "    %ix" + n + "_32 = memref.load %tab[%ti" + n +
         "] : memref<?xi32>\n";
    s += "    %ix" + n + " = arith.index_cast %ix" + n + "_32 : i32 to index\n";
    s += "    %cv" + n + " = memref.load %cin[%ix" + n + "] : memref<?xf32>\n";
    accNames.push_back("%cv" + n);
  }
  std::vector<std::string> aNames;
  std::string result;
  if (!c.loop) {
    // Every step's A registers are defined before the wgmma.fence (the
    // fence orders register writes before the wgmmas that follow it).
    std::vector<std::vector<std::string>> aSteps(c.kSteps);
    for (uint32_t j = 0; j < c.kSteps && mutation != Mutation::LateA; ++j) {
      std::string jn = std::to_string(j);
      s += "    %cj" + jn + " = arith.constant " + jn + " : index\n";
      s += loadA("%cj" + jn, "a" + jn + "_", aSteps[j]);
    }
    if (mutation == Mutation::EmptyFirstEarlyReadD)
      s += asmStatement("wgmma.commit_group.sync.aligned;");
    if (mutation != Mutation::NoFence)
      s += "    nvvm.wgmma.fence.aligned\n";
    if (mutation == Mutation::LateA)
      s += loadA("%c0", "a0_", aSteps[0]);
    for (uint32_t j = 0; j < c.kSteps; ++j) {
      std::string jn = std::to_string(j);
      if (j) {
        s += "    %dB" + jn + " = arith.addi %dB" + std::to_string(j - 1) +
             ", %stepB : i64\n";
        s += extract("%r" + std::to_string(j - 1), "acc" + jn + "_", words,
                     accNames);
      }
      aNames = aSteps[j];
      s += mmaAsm(c, "%r" + jn, accNames, aNames, "%dB" + jn);
    }
    result = "%r" + std::to_string(c.kSteps - 1);
    s += "    nvvm.wgmma.commit.group.sync.aligned\n";
    if (mutation == Mutation::EarlyReadA)
      s += "    %own = arith.muli %t, %c4 : index\n"
           "    memref.store " +
           aNames[0] + ", %aTab[%own] : memref<?xi32>\n";
    if (c.emptyGroupAfter)
      s += asmStatement("wgmma.commit_group.sync.aligned;");
    bool oneInFlight = mutation == Mutation::EarlyReadD ||
                       mutation == Mutation::EmptyFirstEarlyReadD ||
                       c.emptyGroupAfter;
    s += std::string("    nvvm.wgmma.wait.group.sync.aligned ") +
         (oneInFlight ? "1" : "0") + "\n";
  } else {
    s += "    %init0 = llvm.mlir.poison : " + acc + "\n";
    for (uint32_t i = 0; i < words; ++i)
      s += "    %init" + std::to_string(i + 1) + " = llvm.insertvalue %cv" +
           std::to_string(i) + ", %init" + std::to_string(i) + "[" +
           std::to_string(i) + "] : " + acc + "\n";
    s += "    %steps = arith.constant " + std::to_string(c.kSteps) +
         " : index\n"
         "    %fin:2 = scf.for %j = %c0 to %steps step %c1 iter_args(%d = "
         "%init" +
         std::to_string(words) + ", %b = %dB0) -> (" + acc + ", i64) {\n";
    s += loadA("%j", "al_", aNames);
    s += extract("%d", "dl_", words, accNames);
    s += asmStatement("wgmma.fence.sync.aligned;");
    s += mmaAsm(c, "%rl", accNames, aNames, "%b");
    s += asmStatement("wgmma.commit_group.sync.aligned;");
    s += asmStatement("wgmma.wait_group.sync.aligned 1;");
    s += "      %bn = arith.addi %b, %stepB : i64\n"
         "      scf.yield %rl, %bn : " +
         acc +
         ", i64\n"
         "    }\n";
    s += asmStatement("wgmma.wait_group.sync.aligned 0;");
    result = "%fin#0";
  }
  // An empty template tied to D pins the registers after the wait.
  std::vector<std::string> out;
  s += extract(result, "o", words, out);
  std::string constraints, types;
  for (uint32_t i = 0; i < words; ++i) {
    constraints += "=f,";
    types += i ? ", f32" : "f32";
  }
  for (uint32_t i = 0; i < words; ++i)
    constraints += std::to_string(i) + (i + 1 < words ? "," : "");
  std::string operands;
  for (uint32_t i = 0; i < words; ++i)
    operands += (i ? ", " : "") + out[i];
  s += "    %pinned = llvm.inline_asm has_side_effects asm_dialect = att \"\", "
       "\"" +
       constraints + "\" " + operands + " : (" + types + ") -> " + acc + "\n";
  std::vector<std::string> pinned;
  s += extract("%pinned", "p", words, pinned);
  for (uint32_t i = 0; i < words; ++i)
    s += "    memref.store " + pinned[i] + ", %out[%ix" + std::to_string(i) +
         "] : memref<?xf32>\n";
  return s + "    gpu.return\n  }\n";
}

/// Packs step `step`'s A fragment: element (row, col) of A (64 x K, the
/// step's columns) for each thread's four registers, per the ISA's figure.
std::vector<int32_t> packA(const std::vector<uint32_t> &bits, uint32_t K,
                           uint32_t kStep, uint32_t step, uint32_t bytes) {
  std::vector<int32_t> regs(128 * 4);
  for (uint32_t t = 0; t < 128; ++t) {
    uint32_t w = t / 32, g = (t % 32) / 4, q = t % 4;
    for (uint32_t r = 0; r < 4; ++r) {
      uint32_t row = 16 * w + g + (r % 2 ? 8 : 0);
      uint32_t perReg = 4 / bytes;
      uint32_t col0 = perReg * q + (r >= 2 ? 8 * (bytes == 2 ? 1 : 2) : 0);
      uint32_t packed = 0;
      for (uint32_t e = 0; e < perReg; ++e)
        packed |= bits[row * K + step * kStep + col0 + e] << (8 * bytes * e);
      regs[t * 4 + r] = int32_t(packed);
    }
  }
  return regs;
}

Outcome runCase(const Case &c, const std::string &kernelName, uint32_t seed) {
  uint32_t kStep = kOf(c.a), K = kStep * c.kSteps, N = c.n, e = bytesOf(c.a);
  std::mt19937 rng(seed);
  std::vector<uint32_t> aBits(64 * K);
  std::vector<double> A(64 * K), B(size_t(N) * K);
  for (uint32_t i = 0; i < 64 * K; ++i)
    std::tie(aBits[i], A[i]) = randomElement(c.a, rng);
  uint32_t bytesB = footprint(c.lb, e, N, K);
  std::vector<uint8_t> image(bytesB, 0xee);
  for (uint32_t n = 0; n < N; ++n)
    for (uint32_t x = 0; x < K; ++x) {
      auto [bits, v] = randomElement(c.b, rng);
      B[n * K + x] = v;
      for (uint32_t i = 0; i < e; ++i)
        image[layoutOffset(c.lb, e, n, x) + i] = uint8_t(bits >> (8 * i));
    }
  Buffer<int32_t> aTab(128 * 4 * c.kSteps);
  for (uint32_t j = 0; j < c.kSteps; ++j) {
    std::vector<int32_t> regs = packA(aBits, K, kStep, j, e);
    std::copy(regs.begin(), regs.end(), aTab.ptr() + j * 128 * 4);
  }
  uint32_t words = N / 2;
  Buffer<int32_t> img(image.size() / 4), tab(128 * words);
  std::memcpy(img.ptr(), image.data(), image.size());
  for (uint32_t t = 0; t < 128; ++t)
    for (uint32_t i = 0; i < words; ++i)
      tab[t * words + i] = int32_t(accumulatorIndex(N, t, i));
  Buffer<float> cin(64 * N), out(64 * N, std::nanf(""));
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  for (size_t i = 0; i < cin.size(); ++i)
    cin[i] = dist(rng);
  Args args;
  args.memref(aTab).memref(img).memref(tab).memref(cin).memref(out);
  args.scalar(int64_t(descriptor(c.lb, 0)))
      .scalar(int64_t(32 >> 4))
      .scalar(int64_t(img.size()))
      .scalar(int32_t(c.accumulate));
  Outcome r;
  r.launched = succeeded(launch(kernelName, {1, 1, 1}, {128, 1, 1}, args,
                                uint32_t(img.size() * 4)));
  r.out.assign(out.ptr(), out.ptr() + out.size());
  referenceMatmul(r, A, B, cin.ptr(), N, K, c.negateA, c.negateB, c.accumulate);
  return r;
}

std::vector<Case> cases() {
  auto kMajor = [](uint32_t swizzle) {
    return Layout{swizzle, false, 0, 8 * swizzle};
  };
  std::vector<Case> v;
  v.push_back({"rs_bf16_sw128_n64", Elem::BF16, Elem::BF16, 64, kMajor(128)});
  // B MN-major (imm-trans-b 1), A negated, the widest N.
  v.push_back({"rs_f16_mn_sw64_n256_neg", Elem::F16, Elem::F16, 256,
               Layout{64, true, 1024, 512}, true, false});
  // fp8 (k32), mixed formats, B negated, scale-d 0 from the argument.
  Case fp8{"rs_e4m3_e5m2_sw32_n24",
           Elem::E4M3,
           Elem::E5M2,
           24,
           kMajor(32),
           false,
           true};
  fp8.accumulate = false;
  v.push_back(fp8);
  // A group with no wgmma may be the oldest in flight (a path that issues
  // nothing still commits, so that every path counts the same groups).
  Case empty{"rs_f16_sw128_n32_empty_group", Elem::F16, Elem::F16, 32,
             kMajor(128)};
  empty.emptyGroupAfter = true;
  v.push_back(empty);
  // K of 64 bf16: four steps chained, unrolled and in a loop.
  Case chain{"rs_bf16_sw128_chain", Elem::BF16, Elem::BF16, 128, kMajor(128)};
  chain.kSteps = 4;
  v.push_back(chain);
  chain.name = "rs_bf16_sw128_loop";
  chain.loop = true;
  v.push_back(chain);
  return v;
}

const std::vector<Hazard<Mutation>> kHazards = {
    {"earlyreada", Mutation::EarlyReadA,
     "reads the registers of the wgmma.mma_async"},
    {"latea", Mutation::LateA,
     "without a wgmma.fence between the definition of its A registers"},
    {"earlyreadd", Mutation::EarlyReadD,
     "reads the registers of the wgmma.mma_async"},
    {"nofence", Mutation::NoFence,
     "without a wgmma.fence between the last write of its accumulator "
     "registers"},
    {"emptyfirst", Mutation::EmptyFirstEarlyReadD,
     "reads the registers of the wgmma.mma_async"},
};

class WgmmaRegistersTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    ok = prepare(moduleWithHazards("rs", cases(), kHazards, kernel));
  }
  static bool ok;
};
bool WgmmaRegistersTest::ok = false;

TEST_F(WgmmaRegistersTest, MatchesFloat64Reference) {
  ASSERT_TRUE(ok);
  uint32_t seed = 11;
  for (const Case &c : cases()) {
    SCOPED_TRACE(c.name);
    Outcome r = runCase(c, c.name, seed++);
    expectMatchesReference(r, c.n);
  }
  const LaunchStats &stats = Emulator::get().getLaunchStats().back();
  EXPECT_EQ(stats.wgmmaOps, 4u);
  EXPECT_EQ(stats.wgmmaShapes.at("m64n128k16.f32.bf16"), 4u);
}

TEST_F(WgmmaRegistersTest, EveryHazardIsReported) {
  ASSERT_TRUE(ok);
  Case base = cases().front();
  expectHazardsReported(base.name, kHazards, [&](const std::string &name) {
    return runCase(base, name, 5).launched;
  });
}

} // namespace
