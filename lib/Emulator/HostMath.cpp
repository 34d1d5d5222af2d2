//===- HostMath.cpp - Transcendentals that are the same on every host ----===//
#include "HostMath.h"

#include <cmath>

// LLVM's libc, linked with its C names prefixed (lib/Emulator/CMakeLists.txt)
// so that it never stands in for the process's libm.
extern "C" {
#define KVIR_LIBC(name)                                                        \
  float __kvir_libc_##name##f(float);                                          \
  double __kvir_libc_##name(double);
KVIR_LIBC(exp)
KVIR_LIBC(exp2)
KVIR_LIBC(expm1)
KVIR_LIBC(log)
KVIR_LIBC(log2)
KVIR_LIBC(log1p)
KVIR_LIBC(sin)
KVIR_LIBC(cos)
#undef KVIR_LIBC
float __kvir_libc_tanhf(float);
float __kvir_libc_erff(float);
float __kvir_libc_powf(float, float);
double __kvir_libc_pow(double, double);
}

namespace {

/// A double-double: hi + lo, |lo| <= ulp(hi) / 2 (Dekker's exact products
/// and Knuth's exact sums, which need IEEE arithmetic without contraction).
struct DoubleDouble {
  double hi, lo;
};

DoubleDouble twoSum(double a, double b) {
  double s = a + b;
  double bPart = s - a;
  return {s, (a - (s - bPart)) + (b - bPart)};
}

DoubleDouble fastTwoSum(double a, double b) {
  double s = a + b;
  return {s, b - (s - a)};
}

DoubleDouble twoProduct(double a, double b) {
  auto split = [](double v, double &hi, double &lo) {
    double t = 134217729.0 * v; // 2^27 + 1
    hi = t - (t - v);
    lo = v - hi;
  };
  double p = a * b, ah, al, bh, bl;
  split(a, ah, al);
  split(b, bh, bl);
  return {p, ((ah * bh - p) + ah * bl + al * bh) + al * bl};
}

DoubleDouble add(DoubleDouble a, DoubleDouble b) {
  DoubleDouble s = twoSum(a.hi, b.hi);
  return fastTwoSum(s.hi, s.lo + (a.lo + b.lo));
}

DoubleDouble multiply(DoubleDouble a, DoubleDouble b) {
  DoubleDouble p = twoProduct(a.hi, b.hi);
  return fastTwoSum(p.hi, p.lo + (a.hi * b.lo + a.lo * b.hi));
}

DoubleDouble divide(DoubleDouble a, double b) {
  double q = a.hi / b;
  DoubleDouble p = twoProduct(q, b);
  double r = ((a.hi - p.hi) - p.lo) + a.lo;
  return fastTwoSum(q, r / b);
}

DoubleDouble divide(DoubleDouble a, DoubleDouble b) {
  double q = a.hi / b.hi;
  DoubleDouble qb = multiply(b, {q, 0.0});
  DoubleDouble r = add(a, {-qb.hi, -qb.lo});
  return fastTwoSum(q, r.hi / b.hi);
}

DoubleDouble scale(DoubleDouble a, int exponent) {
  return {std::ldexp(a.hi, exponent), std::ldexp(a.lo, exponent)};
}

/// e^(-a) for 0 <= a < 700 in double-double: a = k ln 2 + r, |r| <= ln 2 / 2,
/// e^(-r) by its Taylor series (30 terms: below 2^-110).
DoubleDouble expNegative(DoubleDouble a) {
  const DoubleDouble ln2 = {0x1.62e42fefa39efp-1, 0x1.abc9e3b39803fp-56};
  double k = std::nearbyint(a.hi / ln2.hi);
  DoubleDouble kLn2 = twoProduct(ln2.hi, k);
  kLn2 = fastTwoSum(kLn2.hi, kLn2.lo + k * ln2.lo);
  DoubleDouble r = add(a, {-kLn2.hi, -kLn2.lo});
  DoubleDouble minusR = {-r.hi, -r.lo};
  DoubleDouble term = {1.0, 0.0}, sum = term;
  for (int n = 1; n <= 30; ++n) {
    term = divide(multiply(term, minusR), double(n));
    sum = add(sum, term);
  }
  return scale(sum, -int(k));
}

/// tanh|x| = (1 - e^(-2|x|)) / (1 + e^(-2|x|)) in double-double, signed:
/// only the final rounding is left.
double tanhDouble(double x) {
  double a = std::fabs(x);
  if (a != a)
    return x + x;
  if (a > 22.0) // 1 - tanh(22) < 2^-63
    return std::copysign(1.0, x);
  if (a < 0x1p-28) // tanh x = x - x^3/3 + ...: x rounds the same
    return x;
  DoubleDouble e = expNegative({2.0 * a, 0.0});
  DoubleDouble r = divide(add({1.0, 0.0}, {-e.hi, -e.lo}), add({1.0, 0.0}, e));
  return std::copysign(r.hi + r.lo, x);
}

/// erf(x) = 2/sqrt(pi) e^(-x^2) sum_n 2^n x^(2n+1) / (1 3 ... (2n+1)): a
/// series of positive terms, everything in double-double (x^2 exact), so
/// only the final rounding is left: within about half an ulp.
double erfDouble(double x) {
  double a = std::fabs(x);
  if (a != a)
    return x + x;
  if (a >= 6.0) // 1 - erf(6) < 2^-55
    return std::copysign(1.0, x);
  DoubleDouble square = twoProduct(a, a);
  DoubleDouble twiceSquare = {2.0 * square.hi, 2.0 * square.lo};
  DoubleDouble term = {a, 0.0}, sum = term;
  for (int n = 0; n < 400 && term.hi > sum.hi * 0x1p-110; ++n) {
    term = divide(multiply(term, twiceSquare), 2.0 * n + 3.0);
    sum = add(sum, term);
  }
  DoubleDouble damping = expNegative(square);
  const DoubleDouble twoOverSqrtPi = {0x1.20dd750429b6dp+0,
                                      0x1.1ae3a914fed80p-56};
  DoubleDouble r = multiply(multiply(sum, damping), twoOverSqrtPi);
  return std::copysign(r.hi + r.lo, x);
}

float tanhFloat(float x) { return __kvir_libc_tanhf(x); }
float erfFloat(float x) { return __kvir_libc_erff(x); }

} // namespace

float kvir::emu::math::maxNumber(float x, float y) {
  if (std::isnan(y))
    return x;
  if (std::isnan(x))
    return y;
  if (x == y) // +0 and -0: the one without the sign bit
    return std::signbit(x) ? y : x;
  return x > y ? x : y;
}

float kvir::emu::math::minNumber(float x, float y) {
  if (std::isnan(y))
    return x;
  if (std::isnan(x))
    return y;
  if (x == y)
    return std::signbit(x) ? x : y;
  return x < y ? x : y;
}

llvm::ArrayRef<kvir::emu::math::Function> kvir::emu::math::functions() {
  static const Function table[] = {
#define KVIR_PAIR(name)                                                        \
  {#name "f", reinterpret_cast<void *>(&__kvir_libc_##name##f), false},        \
      {#name, reinterpret_cast<void *>(&__kvir_libc_##name), true},
      KVIR_PAIR(exp) KVIR_PAIR(exp2) KVIR_PAIR(expm1) KVIR_PAIR(log)
          KVIR_PAIR(log2) KVIR_PAIR(log1p) KVIR_PAIR(sin) KVIR_PAIR(cos)
#undef KVIR_PAIR
      {"powf", reinterpret_cast<void *>(&__kvir_libc_powf), false},
      {"pow", reinterpret_cast<void *>(&__kvir_libc_pow), true},
      {"tanhf", reinterpret_cast<void *>(&tanhFloat), false},
      {"tanh", reinterpret_cast<void *>(&tanhDouble), true},
      {"erff", reinterpret_cast<void *>(&erfFloat), false},
      {"erf", reinterpret_cast<void *>(&erfDouble), true},
  };
  return table;
}

const kvir::emu::math::Function *
kvir::emu::math::lookup(llvm::StringRef name) {
  for (const Function &f : functions())
    if (name == f.name)
      return &f;
  return nullptr;
}

void kvir::emu::math::addSymbols(llvm::orc::SymbolMap &map,
                                 llvm::orc::MangleAndInterner &interner,
                                 llvm::StringRef prefix) {
  for (const Function &f : functions())
    map[interner((prefix + f.name).str())] = {
        llvm::orc::ExecutorAddr::fromPtr(f.address),
        llvm::JITSymbolFlags::Exported};
}
