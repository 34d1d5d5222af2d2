//===- Random.h - Seeded random inputs --------------------------*- C++ -*-===//
#ifndef KVIR_TEST_UNIT_SUPPORT_RANDOM_H
#define KVIR_TEST_UNIT_SUPPORT_RANDOM_H

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace kvir::test {

/// A seeded std::mt19937_64 with the draws the tests need. Every test seeds
/// its own generator so that a failure reproduces with the printed seed.
class Rng {
public:
  explicit Rng(uint64_t seed) : engine(seed), seed(seed) {}

  uint64_t getSeed() const { return seed; }
  /// Uniform in [lo, hi).
  double uniform(double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(engine);
  }
  /// Uniform integer in [lo, hi] (inclusive).
  int64_t integer(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(engine);
  }
  bool coin(double p = 0.5) {
    return std::bernoulli_distribution(p)(engine);
  }
  template <typename T> void shuffle(std::vector<T> &values) {
    std::shuffle(values.begin(), values.end(), engine);
  }
  /// A random permutation of [0, n).
  std::vector<int64_t> permutation(int64_t n) {
    std::vector<int64_t> p(n);
    for (int64_t i = 0; i < n; ++i)
      p[i] = i;
    shuffle(p);
    return p;
  }

private:
  std::mt19937_64 engine;
  uint64_t seed;
};

} // namespace kvir::test

#endif // KVIR_TEST_UNIT_SUPPORT_RANDOM_H
