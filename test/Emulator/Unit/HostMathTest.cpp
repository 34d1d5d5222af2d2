//===- HostMathTest.cpp - The emulator's host-independent math ------------===//
//
// lib/Emulator/HostMath: the transcendentals kernels reach (.approx
// intrinsics, LLVM math intrinsics, libdevice) against the host's long
// double and double libm as an independent reference. The single-precision
// functions are LLVM's libc and must be correctly rounded: equal to the
// double reference rounded to float, except where that reference lies
// within 2^-40 of a rounding boundary (where a double reference cannot
// decide). The double tanh and erf are kvir's own: within 0.6 ulp of
// the long double reference.
//
//===----------------------------------------------------------------------===//
#include "HostMath.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <random>

using namespace kvir::emu;

namespace {

template <typename F> F *function(const char *name) {
  const math::Function *f = math::lookup(name);
  EXPECT_NE(f, nullptr) << name;
  return f ? reinterpret_cast<F *>(f->address) : nullptr;
}

/// Whether `exact` is too close to the midpoint of two floats for a double
/// reference to say which way it rounds.
bool nearFloatMidpoint(double exact) {
  float f = float(exact);
  if (!std::isfinite(f) || f == 0.0f)
    return false;
  double up = std::nextafter(f, INFINITY), down = std::nextafter(f, -INFINITY);
  double mid = exact > f ? (double(f) + up) / 2 : (double(f) + down) / 2;
  return std::fabs(exact - mid) <= std::fabs(exact) * 0x1p-40;
}

struct UnaryCase {
  const char *name;
  std::function<double(double)> reference;
  float lo, hi;
};

TEST(HostMath, SinglePrecisionIsCorrectlyRounded) {
  const UnaryCase cases[] = {
      {"expf", [](double x) { return std::exp(x); }, -104, 89},
      {"exp2f", [](double x) { return std::exp2(x); }, -150, 128},
      {"expm1f", [](double x) { return std::expm1(x); }, -20, 88},
      {"logf", [](double x) { return std::log(x); }, 0, 1e30f},
      {"log2f", [](double x) { return std::log2(x); }, 0, 1e30f},
      {"log1pf", [](double x) { return std::log1p(x); }, -0.99f, 1e30f},
      {"sinf", [](double x) { return std::sin(x); }, -1e6f, 1e6f},
      {"cosf", [](double x) { return std::cos(x); }, -1e6f, 1e6f},
      {"tanhf", [](double x) { return std::tanh(x); }, -12, 12},
      {"erff", [](double x) { return std::erf(x); }, -5, 5},
  };
  std::mt19937 rng(20261126);
  for (const UnaryCase &c : cases) {
    auto *fn = function<float(float)>(c.name);
    ASSERT_NE(fn, nullptr);
    int checked = 0, wrong = 0;
    for (int i = 0; i < 200000 && wrong < 5; ++i) {
      // Uniform in the range, and half of the draws log-uniform in
      // magnitude (small arguments, huge ones for sin / cos).
      std::uniform_real_distribution<float> uniform(c.lo, c.hi);
      float x = uniform(rng);
      if (i % 2 && c.lo < 0) {
        x = std::ldexp(1.0f, int(rng() % 200) - 100) *
            (rng() % 2 ? 1.0f : -1.0f);
        x = std::fmin(std::fmax(x, c.lo), c.hi);
      }
      double exact = c.reference(x);
      if (nearFloatMidpoint(exact))
        continue;
      ++checked;
      float got = fn(x), want = float(exact);
      if (std::memcmp(&got, &want, 4) != 0 &&
          !(std::isnan(got) && std::isnan(want))) {
        ++wrong;
        ADD_FAILURE() << c.name << "(" << std::hexfloat << x << ") = " << got
                      << ", correctly rounded " << want;
      }
    }
    EXPECT_GT(checked, 150000) << c.name;
  }
  // Huge sine arguments need the whole of 2/pi: sin(2^100), sin(FLT_MAX).
  auto *sinf = function<float(float)>("sinf");
  for (float x : {0x1p100f, 3.4028234663852886e38f, 1e30f, -7.5e20f}) {
    double exact = std::sin(double(x));
    if (!nearFloatMidpoint(exact))
      EXPECT_EQ(sinf(x), float(exact)) << std::hexfloat << x;
  }
}

TEST(HostMath, PowfIsCorrectlyRounded) {
  auto *powf = function<float(float, float)>("powf");
  ASSERT_NE(powf, nullptr);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> base(0.0f, 100.0f), power(-20, 20);
  int wrong = 0;
  for (int i = 0; i < 100000 && wrong < 5; ++i) {
    float x = base(rng), y = power(rng);
    double exact = std::pow(double(x), double(y));
    if (nearFloatMidpoint(exact))
      continue;
    float got = powf(x, y), want = float(exact);
    if (got != want) {
      ++wrong;
      ADD_FAILURE() << "powf(" << x << ", " << y << ") = " << got
                    << ", correctly rounded " << want;
    }
  }
}

/// |got - want| in units of the last place of the double nearest `want`.
double ulpError(double got, long double want) {
  double w = double(want);
  double ulp = std::nextafter(std::fabs(w), INFINITY) - std::fabs(w);
  if (w == 0.0)
    ulp = std::nextafter(0.0, 1.0);
  return double(std::fabs((long double)got - want) / ulp);
}

TEST(HostMath, DoubleTanhAndErfWithinSixTenthsOfAnUlp) {
  auto *tanh = function<double(double)>("tanh");
  auto *erf = function<double(double)>("erf");
  ASSERT_TRUE(tanh && erf);
  std::mt19937_64 rng(11);
  double worstTanh = 0, worstErf = 0;
  for (int i = 0; i < 100000; ++i) {
    std::uniform_real_distribution<double> wide(-8, 8);
    double x = i % 2 ? wide(rng)
                     : std::ldexp(1.0, int(rng() % 70) - 66) *
                           (rng() % 2 ? 1.0 : -1.0);
    worstTanh = std::max(worstTanh, ulpError(tanh(x), std::tanh((long double)x)));
    worstErf = std::max(worstErf, ulpError(erf(x), std::erf((long double)x)));
  }
  EXPECT_LE(worstTanh, 0.6);
  EXPECT_LE(worstErf, 0.6);
  EXPECT_EQ(tanh(0.0), 0.0);
  EXPECT_TRUE(std::signbit(tanh(-0.0)));
  EXPECT_EQ(tanh(INFINITY), 1.0);
  EXPECT_EQ(erf(-INFINITY), -1.0);
  EXPECT_TRUE(std::isnan(erf(NAN)) && std::isnan(tanh(NAN)));
}

TEST(HostMath, MaxAndMinNumberOrderSignedZeros) {
  EXPECT_FALSE(std::signbit(math::maxNumber(-0.0f, 0.0f)));
  EXPECT_FALSE(std::signbit(math::maxNumber(0.0f, -0.0f)));
  EXPECT_TRUE(std::signbit(math::minNumber(-0.0f, 0.0f)));
  EXPECT_TRUE(std::signbit(math::minNumber(0.0f, -0.0f)));
  EXPECT_EQ(math::maxNumber(NAN, 2.0f), 2.0f);
  EXPECT_EQ(math::minNumber(1.0f, NAN), 1.0f);
  EXPECT_TRUE(std::isnan(math::maxNumber(NAN, NAN)));
}

TEST(HostMath, EveryFunctionIsListedInBothPrecisions) {
  for (const char *name : {"exp", "exp2", "expm1", "log", "log2", "log1p",
                           "sin", "cos", "tanh", "erf", "pow"}) {
    const math::Function *d = math::lookup(name);
    const math::Function *f = math::lookup(std::string(name) + "f");
    ASSERT_TRUE(d && f) << name;
    EXPECT_TRUE(d->isDouble);
    EXPECT_FALSE(f->isDouble);
  }
}

} // namespace
