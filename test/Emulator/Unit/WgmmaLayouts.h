//===- WgmmaLayouts.h - The ISA's wgmma layouts, for the tests -*- C++ -*-===//
//
// What the wgmma tests lay out and compare, derived from the PTX ISA's
// text and figures independently of the emulator: element formats, the
// canonical shared-memory layouts and swizzles of operands (9.7.15.5.1.2),
// descriptors, and where a thread's accumulator registers sit in D.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_TEST_EMULATOR_UNIT_WGMMALAYOUTS_H
#define KVIR_TEST_EMULATOR_UNIT_WGMMALAYOUTS_H

#include "TestSupport.h"

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace kvir::emu::test {

enum class Elem { F16, BF16, E4M3, E5M2 };

inline const char *ptxName(Elem e) {
  switch (e) {
  case Elem::F16:
    return "f16";
  case Elem::BF16:
    return "bf16";
  case Elem::E4M3:
    return "e4m3";
  case Elem::E5M2:
    return "e5m2";
  }
  return "";
}

inline uint32_t bytesOf(Elem e) {
  return e == Elem::E4M3 || e == Elem::E5M2 ? 1 : 2;
}

/// fp8 decoding from the formats' definitions: e4m3 has bias 7, no
/// infinities, NaN at S.1111.111; e5m2 bias 15 with IEEE infinities/NaNs.
inline double decodeFp8(uint32_t bits, bool e4m3) {
  int mant = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
  int exp = (bits >> mant) & ((1 << (7 - mant)) - 1);
  double frac = bits & ((1 << mant) - 1);
  double v = exp ? std::ldexp(1.0 + frac / (1 << mant), exp - bias)
                 : std::ldexp(frac / (1 << mant), 1 - bias);
  return bits & 0x80 ? -v : v;
}

/// A random value of type `e` (finite), as bits and as a double.
inline std::pair<uint32_t, double> randomElement(Elem e, std::mt19937 &rng) {
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  switch (e) {
  case Elem::F16: {
    uint16_t h = floatToHalfBits(dist(rng));
    return {h, halfBitsToFloat(h)};
  }
  case Elem::BF16: {
    float f = dist(rng);
    uint32_t w;
    std::memcpy(&w, &f, 4);
    uint16_t h = uint16_t((w + 0x7fff + ((w >> 16) & 1)) >> 16);
    return {h, bf16BitsToFloat(h)};
  }
  case Elem::E4M3:
  case Elem::E5M2: {
    bool e4m3 = e == Elem::E4M3;
    // Exponents 0-8 (e4m3) / 0-16 (e5m2): magnitudes up to about 2-4.
    std::uniform_int_distribution<uint32_t> code(0, e4m3 ? 0x47 : 0x43);
    uint32_t bits = code(rng) | (rng() & 1 ? 0x80 : 0);
    return {bits, decodeFp8(bits, e4m3)};
  }
  }
  return {0, 0};
}

/// An operand's shared-memory layout, as a descriptor describes it.
struct Layout {
  uint32_t swizzle = 0; // 0, 32, 64, 128 bytes
  bool mnMajor = false;
  uint32_t leading = 0, stride = 0; // byte offsets (LBO, SBO)
};

/// Byte offset (from the operand's 1024-aligned start) of element (mn, k),
/// from the ISA's canonical layouts and its swizzle figures.
inline uint32_t layoutOffset(const Layout &l, uint32_t bytes, uint32_t mn,
                             uint32_t k) {
  uint32_t perChunk = 16 / bytes;
  auto permuted = [&](uint32_t row, uint32_t byteInRow) {
    uint32_t chunk = byteInRow / 16, within = byteInRow % 16;
    uint32_t r = row % 8;
    uint32_t phase = l.swizzle == 128 ? r : l.swizzle == 64 ? r / 2 : r / 4;
    return (chunk ^ phase) * 16 + within;
  };
  if (!l.swizzle) {
    if (!l.mnMajor) // core matrix (mn / 8, k / perChunk): 8 mn-rows of 16 B
      return (mn / 8) * l.stride + (k / perChunk) * l.leading + (mn % 8) * 16 +
             (k % perChunk) * bytes;
    // core matrix (mn / perChunk, k / 8): 8 k-rows of 16 B along MN
    return (mn / perChunk) * l.stride + (k / 8) * l.leading + (k % 8) * 16 +
           (mn % perChunk) * bytes;
  }
  if (!l.mnMajor) // rows of `swizzle` bytes along K, 8-row atoms SBO apart
    return (mn / 8) * l.stride + (mn % 8) * l.swizzle +
           permuted(mn % 8, k * bytes);
  // rows of `swizzle` bytes along MN, one per k; 8-k atoms SBO apart,
  // swizzle-wide blocks along MN LBO apart
  uint32_t perRow = l.swizzle / bytes;
  return (mn / perRow) * l.leading + (k / 8) * l.stride + (k % 8) * l.swizzle +
         permuted(k % 8, (mn % perRow) * bytes);
}

inline uint64_t descriptor(const Layout &l, uint32_t start) {
  uint64_t mode = l.swizzle == 128  ? 1
                  : l.swizzle == 64 ? 2
                  : l.swizzle       ? 3
                                    : 0;
  return uint64_t(start >> 4) | uint64_t(l.leading >> 4) << 16 |
         uint64_t(l.stride >> 4) << 32 | mode << 62;
}

inline uint32_t kOf(Elem e) { return bytesOf(e) == 1 ? 32 : 16; }

inline std::string structType(uint32_t words) {
  std::string s = "!llvm.struct<(";
  for (uint32_t i = 0; i < words; ++i)
    s += i ? ", f32" : "f32";
  return s + ")>";
}

/// D's register i of thread t: the 16 x 8 blocks of mma.m16n8 accumulators,
/// warp w owning rows 16w..16w+15, block i / 4 the columns 8 (i / 4)...
inline uint32_t accumulatorIndex(uint32_t n, uint32_t t, uint32_t i) {
  uint32_t w = t / 32, lane = t % 32, g = lane / 4, tig = lane % 4;
  uint32_t reg = i % 4, block = i / 4;
  uint32_t row = 16 * w + g + (reg >= 2 ? 8 : 0);
  uint32_t col = 8 * block + 2 * tig + reg % 2;
  return row * n + col;
}

/// Bytes an operand of `rows` x `k` occupies in layout `l`.
inline uint32_t footprint(const Layout &l, uint32_t bytes, uint32_t rows,
                          uint32_t k) {
  uint32_t end = 0;
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t x = 0; x < k; ++x)
      end = std::max(end, layoutOffset(l, bytes, r, x) + bytes);
  return (end + 1023) / 1024 * 1024;
}

/// A launch's D (64 x N, row-major) and the float64 reference with, per
/// element, the sum of the magnitudes of its terms (the tolerance's scale).
struct Outcome {
  bool launched = false;
  std::vector<float> out;
  std::vector<double> reference, magnitude;
};

/// D = (sa A) (sb B)^T + (accumulate ? C : 0): A is 64 x K, B N x K and
/// C 64 x N, row-major.
inline void referenceMatmul(Outcome &r, const std::vector<double> &A,
                            const std::vector<double> &B, const float *C,
                            uint32_t N, uint32_t K, bool negateA, bool negateB,
                            bool accumulate) {
  double sa = negateA ? -1 : 1, sb = negateB ? -1 : 1;
  for (uint32_t m = 0; m < 64; ++m)
    for (uint32_t n = 0; n < N; ++n) {
      double sum = accumulate ? C[m * N + n] : 0.0;
      double mag = std::fabs(sum);
      for (uint32_t x = 0; x < K; ++x) {
        double p = sa * A[m * K + x] * sb * B[n * K + x];
        sum += p;
        mag += std::fabs(p);
      }
      r.reference.push_back(sum);
      r.magnitude.push_back(mag);
    }
}

/// Every element written and within f32 accumulation error of the
/// reference.
inline void expectMatchesReference(const Outcome &r, uint32_t N) {
  ASSERT_TRUE(r.launched) << reports();
  for (size_t i = 0; i < r.out.size(); ++i) {
    ASSERT_FALSE(std::isnan(r.out[i])) << "D[" << i << "] not written";
    ASSERT_NEAR(r.out[i], r.reference[i], 1e-5 * std::max(1.0, r.magnitude[i]))
        << "D[" << i / N << "][" << i % N << "]";
  }
}

/// A case's kernel mutated to break one rule, and what the emulator's
/// report of it must say.
template <typename Mutation> struct Hazard {
  std::string suffix;
  Mutation mutation;
  const char *report;
};

/// gpu.module `name`: every case's kernel, then the first case's once per
/// hazard, named <case>_<suffix>.
template <typename Case, typename Mutation, typename KernelFn>
std::string moduleWithHazards(const std::string &name,
                              const std::vector<Case> &cases,
                              const std::vector<Hazard<Mutation>> &hazards,
                              KernelFn kernel) {
  std::string src =
      "module attributes {gpu.container_module} {\n gpu.module @" + name +
      " {\n";
  for (const Case &c : cases)
    src += kernel(c, Mutation::None);
  for (const Hazard<Mutation> &h : hazards) {
    Case m = cases.front();
    m.name += "_" + h.suffix;
    src += kernel(m, h.mutation);
  }
  return src + " }\n}\n";
}

/// Each hazard's kernel of case `base` must fail its launch
/// (`launched(kernelName)` false) with a new report saying its text.
template <typename Mutation, typename LaunchFn>
void expectHazardsReported(const std::string &base,
                           const std::vector<Hazard<Mutation>> &hazards,
                           LaunchFn launched) {
  for (const Hazard<Mutation> &h : hazards) {
    SCOPED_TRACE(h.suffix);
    size_t before = Emulator::get().getReports().size();
    EXPECT_FALSE(launched(base + "_" + h.suffix));
    EXPECT_GT(Emulator::get().getReports().size(), before);
    std::string all = reports();
    EXPECT_NE(all.find(h.report), std::string::npos) << all;
  }
}

} // namespace kvir::emu::test

#endif // KVIR_TEST_EMULATOR_UNIT_WGMMALAYOUTS_H
