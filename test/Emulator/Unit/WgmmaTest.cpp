//===- WgmmaTest.cpp - wgmma.mma_async against a float64 matmul ----------===//
//
// One warpgroup computes D (64 x N) = A (64 x K) * B (K x N) + C with
// nvvm.wgmma.mma_async, both operands read from shared memory through
// matrix descriptors: f16, bf16, e4m3 and e5m2 inputs, every swizzle mode,
// K-major and MN-major (transposed) operands, negated inputs, scale-d, and
// chains of wgmmas stepping through K (unrolled, and in a loop that keeps a
// group in flight across the back edge). The host lays the operands out in
// shared memory from the PTX ISA's description of the canonical layouts
// (9.7.15.5.1.2: core matrices of 8 rows x 16 bytes; swizzle atoms of 8
// rows whose 16-byte chunks are permuted, the figures' pattern: chunk c of
// row r lands at c ^ (r % 8) for 128 bytes, c ^ (r % 8) / 2 for 64, c ^
// (r % 8) / 4 for 32), decodes the fp8 formats itself, and compares with a
// double-precision matmul. Then one mutation per check: each must report.
//
//===----------------------------------------------------------------------===//
#include "TestSupport.h"
#include "WgmmaLayouts.h"

#include <cmath>
#include <random>

using namespace kvir::emu;
using namespace kvir::emu::test;

namespace {

struct Case {
  std::string name;
  Elem a, b;
  uint32_t n;
  Layout la, lb;
  bool negateA = false, negateB = false, accumulate = true;
  /// wgmmas chained through K (each reads the next 32 bytes of K), and
  /// whether a loop issues them, keeping one group in flight.
  uint32_t kSteps = 1;
  bool loop = false;
};

/// The mutations of the hazard tests, applied to the unrolled kernel.
enum class Mutation {
  None,
  NoFence,       // no wgmma.fence before the first wgmma
  NoProxyFence,  // no fence.proxy.async after the generic copy
  EarlyRead,     // wait_group 1 (nothing retired), then read D
  OverwriteA,    // thread 0 stores into A before the wait
  HalfWarpgroup, // threads 64-127 skip the wgmma
};

std::string kernel(const Case &c, Mutation mutation = Mutation::None) {
  uint32_t words = c.n / 2, k = kOf(c.a);
  std::string acc = structType(words);
  std::string ws = "#gpu.address_space<workgroup>";
  std::string s = "  gpu.func @" + c.name +
                  "(%img: memref<?xi32>, %tab: memref<?xi32>, %cin: "
                  "memref<?xf32>, %out: memref<?xf32>, %descA: i64, %descB: "
                  "i64, %stepA: i64, %stepB: i64, %nwords: index) kernel {\n";
  s += "    %t = gpu.thread_id x\n"
       "    %c0 = arith.constant 0 : index\n"
       "    %c1 = arith.constant 1 : index\n"
       "    %c128 = arith.constant 128 : index\n"
       "    %c4 = arith.constant 4 : index\n"
       "    %dyn = gpu.dynamic_shared_memory : memref<?xi8, " +
       ws +
       ">\n"
       "    %nbytes = arith.muli %nwords, %c4 : index\n"
       "    %smem = memref.view %dyn[%c0][%nwords] : memref<?xi8, " +
       ws + "> to memref<?xi32, " + ws +
       ">\n"
       "    scf.for %w = %t to %nwords step %c128 {\n"
       "      %v = memref.load %img[%w] : memref<?xi32>\n"
       "      memref.store %v, %smem[%w] : memref<?xi32, " +
       ws +
       ">\n"
       "    }\n";
  if (mutation != Mutation::NoProxyFence)
    s += "    nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = "
         "#nvvm.shared_space<cta>}\n";
  s += "    gpu.barrier\n"
       "    %baseIdx = memref.extract_aligned_pointer_as_index %dyn : "
       "memref<?xi8, " +
       ws +
       "> -> index\n"
       "    %base64 = arith.index_cast %baseIdx : index to i64\n"
       "    %mask = arith.constant 262143 : i64\n"
       "    %c4i = arith.constant 4 : i64\n"
       "    %low = arith.andi %base64, %mask : i64\n"
       "    %startField = arith.shrui %low, %c4i : i64\n"
       "    %dA0 = arith.addi %descA, %startField : i64\n"
       "    %dB0 = arith.addi %descB, %startField : i64\n"
       "    %cw = arith.constant " +
       std::to_string(words) +
       " : index\n"
       "    %tabBase = arith.muli %t, %cw : index\n"
       "    %acc0_0 = llvm.mlir.poison : " +
       acc + "\n";
  for (uint32_t i = 0; i < words; ++i) {
    std::string n = std::to_string(i);
    s += "    %ti" + n + " = arith.addi %tabBase, %c" + "1_" + n + " : index\n";
    s += "    %ix" + n + "_32 = memref.load %tab[%ti" + n +
         "] : memref<?xi32>\n";
    s += "    %ix" + n + " = arith.index_cast %ix" + n + "_32 : i32 to index\n";
    s += "    %cv" + n + " = memref.load %cin[%ix" + n + "] : memref<?xf32>\n";
    s += "    %acc0_" + std::to_string(i + 1) + " = llvm.insertvalue %cv" + n +
         ", %acc0_" + n + "[" + n + "] : " + acc + "\n";
  }
  // The index constants used above.
  std::string consts;
  for (uint32_t i = 0; i < words; ++i)
    consts += "    %c1_" + std::to_string(i) + " = arith.constant " +
              std::to_string(i) + " : index\n";
  s.insert(s.find("    %acc0_0"), consts);
  std::string init = "%acc0_" + std::to_string(words);
  std::string shape = "#nvvm.shape<m = 64, n = " + std::to_string(c.n) +
                      ", k = " + std::to_string(k) + ">";
  auto wgmma = [&](const std::string &result, const std::string &dA,
                   const std::string &dB, const std::string &in) {
    return "    " + result + " = nvvm.wgmma.mma_async " + dA + ", " + dB +
           ", " + in + ", " + shape + ", D [<f32>, #nvvm.wgmma_scale_out<" +
           (c.accumulate ? "one" : "zero") + ">], A [<" + ptxName(c.a) +
           ">, #nvvm.wgmma_scale_in<" + (c.negateA ? "neg" : "one") +
           ">, #nvvm.mma_layout<" + (c.la.mnMajor ? "col" : "row") +
           ">], B [<" + ptxName(c.b) + ">, #nvvm.wgmma_scale_in<" +
           (c.negateB ? "neg" : "one") + ">, #nvvm.mma_layout<" +
           (c.lb.mnMajor ? "row" : "col") + ">] : " + acc + " -> " + acc + "\n";
  };
  std::string result;
  if (!c.loop) {
    if (mutation != Mutation::NoFence)
      s += "    nvvm.wgmma.fence.aligned\n";
    if (mutation == Mutation::HalfWarpgroup)
      s += "    %c64 = arith.constant 64 : index\n"
           "    %low64 = arith.cmpi ult, %t, %c64 : index\n"
           "    %rh = scf.if %low64 -> (" +
           acc + ") {\n" + wgmma("      %r0", "%dA0", "%dB0", init) +
           "      scf.yield %r0 : " + acc +
           "\n    } else {\n"
           "      scf.yield " +
           init + " : " + acc + "\n    }\n";
    std::string in = init;
    for (uint32_t j = 0; j < c.kSteps && mutation != Mutation::HalfWarpgroup;
         ++j) {
      std::string jn = std::to_string(j);
      if (j) {
        s += "    %dA" + jn + " = arith.addi %dA" + std::to_string(j - 1) +
             ", %stepA : i64\n";
        s += "    %dB" + jn + " = arith.addi %dB" + std::to_string(j - 1) +
             ", %stepB : i64\n";
      }
      s += wgmma("%r" + jn, "%dA" + jn, "%dB" + jn, in);
      in = "%r" + jn;
    }
    result = mutation == Mutation::HalfWarpgroup ? "%rh" : in;
    s += "    nvvm.wgmma.commit.group.sync.aligned\n";
    if (mutation == Mutation::OverwriteA)
      s += "    %isZero = arith.cmpi eq, %t, %c0 : index\n"
           "    scf.if %isZero {\n"
           "      %zi = arith.constant 0 : i32\n"
           "      memref.store %zi, %smem[%c0] : memref<?xi32, " +
           ws +
           ">\n"
           "    }\n";
    s += std::string("    nvvm.wgmma.wait.group.sync.aligned ") +
         (mutation == Mutation::EarlyRead ? "1" : "0") + "\n";
  } else {
    // for j: fence; D = wgmma(D); commit; wait 1 — the group of step j
    // stays in flight across the back edge; wait 0 after the loop.
    s += "    %steps = arith.constant " + std::to_string(c.kSteps) +
         " : index\n"
         "    %fin:3 = scf.for %j = %c0 to %steps step %c1 iter_args(%d = " +
         init + ", %a = %dA0, %b = %dB0) -> (" + acc +
         ", i64, i64) {\n"
         "      nvvm.wgmma.fence.aligned\n" +
         wgmma("      %rl", "%a", "%b", "%d") +
         "      nvvm.wgmma.commit.group.sync.aligned\n"
         "      nvvm.wgmma.wait.group.sync.aligned 1\n"
         "      %an = arith.addi %a, %stepA : i64\n"
         "      %bn = arith.addi %b, %stepB : i64\n"
         "      scf.yield %rl, %an, %bn : " +
         acc +
         ", i64, i64\n"
         "    }\n"
         "    nvvm.wgmma.wait.group.sync.aligned 0\n";
    result = "%fin#0";
  }
  for (uint32_t i = 0; i < words; ++i) {
    std::string n = std::to_string(i);
    s += "    %o" + n + " = llvm.extractvalue " + result + "[" + n +
         "] : " + acc + "\n";
    s += "    memref.store %o" + n + ", %out[%ix" + n + "] : memref<?xf32>\n";
  }
  return s + "    gpu.return\n  }\n";
}

std::vector<Case> cases() {
  std::vector<Case> v;
  // K-major swizzled: rows of W bytes, 8-row atoms of 8W bytes.
  auto kMajor = [](uint32_t swizzle) {
    return Layout{swizzle, false, 0, 8 * swizzle};
  };
  v.push_back({"wg_bf16_sw128_n64", Elem::BF16, Elem::BF16, 64, kMajor(128),
               kMajor(128)});
  v.push_back({"wg_f16_sw64_n32_neg", Elem::F16, Elem::F16, 32, kMajor(64),
               kMajor(64), true, false});
  v.push_back({"wg_bf16_sw32_n256", Elem::BF16, Elem::BF16, 256, kMajor(32),
               kMajor(32), false, true});
  // No swizzle: core matrices along K 128 bytes apart, 8-row groups after
  // both of them (and a gap: LBO and SBO need not be dense).
  v.push_back({"wg_f16_none_n8", Elem::F16, Elem::F16, 8,
               Layout{0, false, 128, 384}, Layout{0, false, 128, 256}});
  // MN-major (transposed) A and B.
  v.push_back({"wg_f16_mn_sw128_n64", Elem::F16, Elem::F16, 64,
               Layout{128, true, 8192, 1024}, Layout{128, true, 8192, 1024}});
  v.push_back({"wg_bf16_mn_sw64_n128", Elem::BF16, Elem::BF16, 128,
               Layout{64, true, 1024, 512}, Layout{64, true, 1024, 512}});
  v.push_back({"wg_f16_mn_none_n16", Elem::F16, Elem::F16, 16,
               Layout{0, true, 1024, 128}, Layout{0, true, 256, 128}});
  v.push_back({"wg_f16_mn_sw32_n16", Elem::F16, Elem::F16, 16,
               Layout{32, true, 512, 256}, Layout{32, true, 512, 256}});
  // fp8 (K-major only), mixed formats, D = A * B (scale-d 0).
  Case fp8{"wg_e4m3_e5m2_sw128_n16",
           Elem::E4M3,
           Elem::E5M2,
           16,
           kMajor(128),
           kMajor(128)};
  fp8.accumulate = false;
  v.push_back(fp8);
  v.push_back({"wg_e4m3_sw64_n128", Elem::E4M3, Elem::E4M3, 128, kMajor(64),
               kMajor(64)});
  // A K of 64 bf16 (one 128-byte row): 4 chained wgmmas advancing the
  // descriptors by 32 bytes, unrolled and in a loop.
  Case chain{"wg_bf16_sw128_chain", Elem::BF16, Elem::BF16, 64,
             kMajor(128),           kMajor(128)};
  chain.kSteps = 4;
  v.push_back(chain);
  chain.name = "wg_bf16_sw128_loop";
  chain.loop = true;
  v.push_back(chain);
  return v;
}

/// Runs `c` (with `mutation`); on success checks D against float64.
Outcome runCase(const Case &c, const std::string &kernelName, uint32_t seed) {
  uint32_t k = kOf(c.a) * c.kSteps, N = c.n, ea = bytesOf(c.a),
           eb = bytesOf(c.b);
  std::mt19937 rng(seed);
  uint32_t bytesA = footprint(c.la, ea, 64, k);
  uint32_t bytesB = footprint(c.lb, eb, N, k);
  std::vector<uint8_t> image(bytesA + bytesB, 0xee);
  std::vector<double> A(64 * k), B(size_t(N) * k);
  auto place = [&](uint32_t offset, uint32_t bits, uint32_t bytes) {
    for (uint32_t i = 0; i < bytes; ++i)
      image[offset + i] = uint8_t(bits >> (8 * i));
  };
  for (uint32_t m = 0; m < 64; ++m)
    for (uint32_t x = 0; x < k; ++x) {
      auto [bits, v] = randomElement(c.a, rng);
      A[m * k + x] = v;
      place(layoutOffset(c.la, ea, m, x), bits, ea);
    }
  for (uint32_t n = 0; n < N; ++n)
    for (uint32_t x = 0; x < k; ++x) {
      auto [bits, v] = randomElement(c.b, rng);
      B[n * k + x] = v;
      place(bytesA + layoutOffset(c.lb, eb, n, x), bits, eb);
    }
  uint32_t words = N / 2;
  Buffer<int32_t> img((image.size() + 3) / 4), tab(128 * words);
  std::memcpy(img.ptr(), image.data(), image.size());
  for (uint32_t t = 0; t < 128; ++t)
    for (uint32_t i = 0; i < words; ++i)
      tab[t * words + i] = int32_t(accumulatorIndex(N, t, i));
  Buffer<float> cin(64 * N), out(64 * N, std::nanf(""));
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  for (size_t i = 0; i < cin.size(); ++i)
    cin[i] = dist(rng);
  // K-major swizzled operands step through K by 32 bytes in the start
  // address (descriptor units of 16 bytes).
  int64_t step = 32 >> 4;
  Args args;
  args.memref(img).memref(tab).memref(cin).memref(out);
  args.scalar(int64_t(descriptor(c.la, 0)))
      .scalar(int64_t(descriptor(c.lb, bytesA)))
      .scalar(step)
      .scalar(step)
      .scalar(int64_t(img.size()));
  Outcome r;
  r.launched = succeeded(launch(kernelName, {1, 1, 1}, {128, 1, 1}, args,
                                uint32_t(img.size() * 4)));
  r.out.assign(out.ptr(), out.ptr() + out.size());
  referenceMatmul(r, A, B, cin.ptr(), N, k, c.negateA, c.negateB, c.accumulate);
  return r;
}

const std::vector<Hazard<Mutation>> kHazards = {
    {"nofence", Mutation::NoFence,
     "without a wgmma.fence between the last write of its accumulator "
     "registers"},
    {"noproxyfence", Mutation::NoProxyFence,
     "through the generic proxy without a fence.proxy.async"},
    {"earlyread", Mutation::EarlyRead,
     "reads the registers of the wgmma.mma_async"},
    {"overwrite", Mutation::OverwriteA,
     "a store to shared offset 0, an operand of the wgmma.mma_async"},
    {"halfwarpgroup", Mutation::HalfWarpgroup,
     "the whole warpgroup executes the same instruction"},
};

class WgmmaTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    ok = prepare(moduleWithHazards("wgmma", cases(), kHazards, kernel));
  }
  static bool ok;
};
bool WgmmaTest::ok = false;

TEST_F(WgmmaTest, MatchesFloat64Reference) {
  ASSERT_TRUE(ok);
  uint32_t seed = 1;
  for (const Case &c : cases()) {
    SCOPED_TRACE(c.name);
    Outcome r = runCase(c, c.name, seed++);
    expectMatchesReference(r, c.n);
  }
  const LaunchStats &stats = Emulator::get().getLaunchStats().back();
  EXPECT_EQ(stats.wgmmaOps, 4u); // the loop's 4 steps
  EXPECT_EQ(stats.wgmmaShapes.at("m64n64k16.f32.bf16"), 4u);
}

TEST_F(WgmmaTest, EveryHazardIsReported) {
  ASSERT_TRUE(ok);
  Case base = cases().front();
  expectHazardsReported(base.name, kHazards, [&](const std::string &name) {
    return runCase(base, name, 7).launched;
  });
}

/// A descriptor the emulator must refuse: outside shared memory, or a
/// swizzled operand that does not start on its pattern.
TEST_F(WgmmaTest, BadDescriptorsAreReported) {
  ASSERT_TRUE(ok);
  Case c = cases().front();
  for (auto [start, text] :
       {std::pair<uint32_t, const char *>{1u << 17, "outside the block's"},
        {128, "bytes into its 1024-byte swizzle pattern"}}) {
    SCOPED_TRACE(text);
    uint32_t bytes = footprint(c.la, 2, 64, 16) + footprint(c.lb, 2, 64, 16);
    Buffer<int32_t> img(bytes / 4), tab(128 * 32);
    for (uint32_t t = 0; t < 128; ++t)
      for (uint32_t i = 0; i < 32; ++i)
        tab[t * 32 + i] = int32_t(accumulatorIndex(64, t, i));
    Buffer<float> cin(64 * 64), out(64 * 64);
    Args args;
    args.memref(img).memref(tab).memref(cin).memref(out);
    args.scalar(int64_t(descriptor(c.la, start)))
        .scalar(int64_t(descriptor(c.lb, bytes / 2)))
        .scalar(int64_t(0))
        .scalar(int64_t(0))
        .scalar(int64_t(img.size()));
    EXPECT_FALSE(
        succeeded(launch(c.name, {1, 1, 1}, {128, 1, 1}, args, bytes)));
    EXPECT_NE(reports().find(text), std::string::npos) << reports();
  }
}

} // namespace
