//===- HostFloatTest.cpp - llvm-host-independent-float, bit for bit -------===//
//
// Each conversion and narrow-float operation llvm-host-independent-float
// rewrites runs JIT-compiled over many inputs (every 16-bit pattern where
// there are 2^16, the rounding boundaries and their neighbours, seeded
// random values) and must give the bits llvm::APFloat gives: IEEE 754
// round-to-nearest-even done in software, independent of the pass. Each
// runs for the host CPU and, on x86-64, for the baseline x86-64 CPU (no
// F16C, no FMA, no AVX-512), the CPUs the issue was found on: the same bits.
//
//===----------------------------------------------------------------------===//
#include "kvir/Registration/InitAll.h"
#include "kvir/Target/Host/JitTarget.h"
#include "kvir/Target/Host/Passes.h"

#include "Support/Random.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <functional>

using namespace kvir;
using llvm::APFloat;
using llvm::APInt;

namespace {

/// The CPUs every case runs for.
std::vector<target::JitTarget> jitTargets() {
  std::vector<target::JitTarget> targets = {target::JitTarget::host()};
  if (llvm::Triple(llvm::sys::getProcessTriple()).getArch() ==
      llvm::Triple::x86_64)
    targets.push_back(llvm::cantFail(target::JitTarget::parse("x86-64")));
  return targets;
}

/// A function applying `body` to element i of up to three input arrays
/// (%a, %b, %c of `inType`, `inType2`, ...) and storing %y to %out[i].
std::string loopFunction(const std::string &inType, const std::string &inType2,
                         const std::string &outType, const std::string &body) {
  std::string in2 = inType2.empty() ? inType : inType2;
  return "llvm.func @f(%pa: !llvm.ptr, %pb: !llvm.ptr, %pc: !llvm.ptr, "
         "%out: !llvm.ptr, %n: i64) {\n"
         "  %c0 = llvm.mlir.constant(0 : i64) : i64\n"
         "  %c1 = llvm.mlir.constant(1 : i64) : i64\n"
         "  llvm.br ^loop(%c0 : i64)\n"
         "^loop(%i: i64):\n"
         "  %done = llvm.icmp \"uge\" %i, %n : i64\n"
         "  llvm.cond_br %done, ^exit, ^body\n"
         "^body:\n"
         "  %qa = llvm.getelementptr %pa[%i] : (!llvm.ptr, i64) -> !llvm.ptr, " +
         inType + "\n  %a = llvm.load %qa : !llvm.ptr -> " + inType +
         "\n  %qb = llvm.getelementptr %pb[%i] : (!llvm.ptr, i64) -> "
         "!llvm.ptr, " +
         in2 + "\n  %b = llvm.load %qb : !llvm.ptr -> " + in2 +
         "\n  %qc = llvm.getelementptr %pc[%i] : (!llvm.ptr, i64) -> "
         "!llvm.ptr, " +
         in2 + "\n  %c = llvm.load %qc : !llvm.ptr -> " + in2 + "\n" + body +
         "\n  %qo = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> "
         "!llvm.ptr, " +
         outType + "\n  llvm.store %y, %qo : " + outType +
         ", !llvm.ptr\n"
         "  %next = llvm.add %i, %c1 : i64\n"
         "  llvm.br ^loop(%next : i64)\n"
         "^exit:\n"
         "  llvm.return\n}\n";
}

/// Runs the pass on `source` and the result for `target` over `n`
/// elements: inputs of `inBytes` (and `inBytes2` for %b, %c), outputs of
/// `outBytes` per element.
std::vector<uint8_t> run(const std::string &source,
                         const target::JitTarget &target,
                         const std::vector<uint8_t> &a,
                         const std::vector<uint8_t> &b,
                         const std::vector<uint8_t> &c, size_t n,
                         size_t outBytes) {
  static bool initialized = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    return true;
  }();
  (void)initialized;
  mlir::DialectRegistry registry;
  kvir::registerAllDialects(registry);
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(source, &context);
  EXPECT_TRUE(module) << source;
  if (!module)
    return {};
  mlir::PassManager pm(&context);
  pm.addPass(target::createLLVMHostIndependentFloat());
  EXPECT_TRUE(mlir::succeeded(pm.run(*module)));
  auto engine = target::createJitEngine(*module, target, /*irOptLevel=*/2,
                                        llvm::CodeGenOptLevel::Default);
  if (!engine) {
    ADD_FAILURE() << llvm::toString(engine.takeError());
    return {};
  }
  std::vector<uint8_t> out(n * outBytes, 0xa5);
  const void *pa = a.data(), *pb = b.data(), *pc = c.data();
  void *po = out.data();
  int64_t count = int64_t(n);
  void *args[] = {&pa, &pb, &pc, &po, &count};
  auto fn = (*engine)->lookupPacked("f");
  if (!fn) {
    ADD_FAILURE() << llvm::toString(fn.takeError());
    return {};
  }
  (*fn)(args);
  return out;
}

template <typename T> std::vector<uint8_t> bytesOf(const std::vector<T> &v) {
  std::vector<uint8_t> bytes(v.size() * sizeof(T));
  std::memcpy(bytes.data(), v.data(), bytes.size());
  return bytes;
}

template <typename T>
std::vector<T> valuesOf(const std::vector<uint8_t> &bytes) {
  std::vector<T> v(bytes.size() / sizeof(T));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
  return v;
}

const llvm::fltSemantics &narrowSemantics(bool bf16) {
  return bf16 ? APFloat::BFloat() : APFloat::IEEEhalf();
}

/// `value` rounded once to the narrow format (APFloat), as bits.
uint16_t narrowBits(APFloat value, bool bf16) {
  bool lost;
  value.convert(narrowSemantics(bf16), APFloat::rmNearestTiesToEven, &lost);
  return uint16_t(value.bitcastToAPInt().getZExtValue());
}

APFloat narrowValue(uint16_t bits, bool bf16) {
  return APFloat(narrowSemantics(bf16), APInt(16, bits));
}

/// The NaN kvir's rule gives for an f32 NaN: quiet, the sign and the top
/// payload bits kept.
uint16_t nanFromF32(uint32_t x, bool bf16) {
  if (bf16)
    return uint16_t((x >> 16) | 0x40);
  return uint16_t(((x >> 16) & 0x8000) | 0x7e00 | ((x >> 13) & 0x3ff));
}

float floatOf(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// f32 inputs around every narrow rounding boundary: for each top 19 bits,
/// low parts at, next to and between the midpoints of both formats, plus
/// the midpoints of f16 subnormals and random words.
std::vector<uint32_t> f32Inputs() {
  std::vector<uint32_t> in;
  const uint32_t low[] = {0x0,    0x1,    0xfff,  0x1000, 0x1001,
                          0x1fff, 0x7fff, 0x8000, 0x8001, 0xffff};
  for (uint32_t top = 0; top < (1u << 16); ++top)
    for (uint32_t l : low)
      in.push_back((top << 16) | l);
  for (uint32_t k = 0; k <= 1024; ++k)
    for (uint32_t sign : {0u, 0x80000000u}) {
      float mid = (float(k) + 0.5f) * 0x1p-24f;
      uint32_t bits;
      std::memcpy(&bits, &mid, 4);
      for (uint32_t d : {bits - 1, bits, bits + 1})
        in.push_back(d | sign);
    }
  test::Rng rng(20261126);
  for (int i = 0; i < 200000; ++i)
    in.push_back(uint32_t(rng.integer(0, 0xffffffffll)));
  return in;
}

class HostFloat : public ::testing::TestWithParam<target::JitTarget> {};

TEST_P(HostFloat, F32ToNarrowRoundsOnceToNearestEven) {
  std::vector<uint32_t> in = f32Inputs();
  for (bool bf16 : {false, true}) {
    std::string t = bf16 ? "bf16" : "f16";
    std::string src = loopFunction(
        "f32", "", t, "  %y = llvm.fptrunc %a : f32 to " + t);
    auto out = valuesOf<uint16_t>(
        run(src, GetParam(), bytesOf(in), bytesOf(in), bytesOf(in), in.size(),
            2));
    ASSERT_EQ(out.size(), in.size());
    int wrong = 0;
    for (size_t i = 0; i < in.size() && wrong < 5; ++i) {
      float x = floatOf(in[i]);
      uint16_t want = std::isnan(x) ? nanFromF32(in[i], bf16)
                                    : narrowBits(APFloat(x), bf16);
      if (out[i] != want) {
        ++wrong;
        ADD_FAILURE() << t << " of 0x" << std::hex << in[i] << ": got 0x"
                      << out[i] << ", want 0x" << want;
      }
    }
  }
}

TEST_P(HostFloat, NarrowToF32IsExact) {
  std::vector<uint16_t> in(1 << 16);
  for (uint32_t i = 0; i < in.size(); ++i)
    in[i] = uint16_t(i);
  for (bool bf16 : {false, true}) {
    std::string t = bf16 ? "bf16" : "f16";
    std::string src =
        loopFunction(t, "", "f32", "  %y = llvm.fpext %a : " + t + " to f32");
    auto out = valuesOf<uint32_t>(run(src, GetParam(), bytesOf(in),
                                      bytesOf(in), bytesOf(in), in.size(), 4));
    ASSERT_EQ(out.size(), in.size());
    int wrong = 0;
    for (size_t i = 0; i < in.size() && wrong < 5; ++i) {
      APFloat v = narrowValue(in[i], bf16);
      bool lost;
      uint32_t want;
      if (v.isNaN()) {
        // Quiet, sign and payload kept (shifted into place).
        uint32_t payload = bf16 ? (uint32_t(in[i]) << 16)
                                : ((uint32_t(in[i]) & 0x8000) << 16) |
                                      0x7f800000 |
                                      ((uint32_t(in[i]) & 0x3ff) << 13);
        want = payload | 0x00400000;
      } else {
        v.convert(APFloat::IEEEsingle(), APFloat::rmNearestTiesToEven, &lost);
        want = uint32_t(v.bitcastToAPInt().getZExtValue());
      }
      if (out[i] != want) {
        ++wrong;
        ADD_FAILURE() << t << " 0x" << std::hex << in[i] << " -> f32: got 0x"
                      << out[i] << ", want 0x" << want;
      }
    }
  }
}

TEST_P(HostFloat, F64ToNarrowRoundsOnce) {
  // Doubles just off every bf16 / f16 midpoint: rounding to f32 first
  // (to nearest) would land on the midpoint and round the wrong way.
  std::vector<double> in;
  for (bool bf16 : {false, true})
    for (uint32_t bits = 0; bits < (bf16 ? 0x7f7fu : 0x7bffu); bits += 7) {
      APFloat lo = narrowValue(uint16_t(bits), bf16);
      APFloat hi = narrowValue(uint16_t(bits + 1), bf16);
      double mid = (lo.convertToDouble() + hi.convertToDouble()) / 2;
      for (double d : {mid, std::nextafter(mid, 0.0), std::nextafter(mid, 1e300)})
        for (double s : {1.0, -1.0})
          in.push_back(s * d);
    }
  test::Rng rng(7);
  for (int i = 0; i < 20000; ++i)
    in.push_back(rng.uniform(-1, 1) * std::ldexp(1.0, int(rng.integer(-160, 140))));
  in.push_back(1e300);
  in.push_back(-0.0);
  for (bool bf16 : {false, true}) {
    std::string t = bf16 ? "bf16" : "f16";
    std::string src =
        loopFunction("f64", "", t, "  %y = llvm.fptrunc %a : f64 to " + t);
    auto out = valuesOf<uint16_t>(run(src, GetParam(), bytesOf(in),
                                      bytesOf(in), bytesOf(in), in.size(), 2));
    ASSERT_EQ(out.size(), in.size());
    int wrong = 0;
    for (size_t i = 0; i < in.size() && wrong < 5; ++i) {
      uint16_t want = narrowBits(APFloat(in[i]), bf16);
      if (out[i] != want) {
        ++wrong;
        ADD_FAILURE() << t << " of " << in[i] << ": got 0x" << std::hex
                      << out[i] << ", want 0x" << want;
      }
    }
  }
}

TEST_P(HostFloat, IntegersToNarrowRoundOnce) {
  std::vector<int64_t> in = {0, 1, -1, 2049, -2049, 65504, 65519, 65520,
                             INT64_MIN, INT64_MAX, (int64_t(1) << 53) + 1,
                             (int64_t(1) << 53) - 1, int64_t(0x0100800000000001),
                             -int64_t(0x0100800000000001)};
  test::Rng rng(11);
  for (int i = 0; i < 20000; ++i) {
    int64_t v = rng.integer(INT64_MIN, INT64_MAX);
    in.push_back(v >> rng.integer(0, 62));
  }
  for (bool bf16 : {false, true})
    for (std::string op : {"sitofp", "uitofp"})
      for (std::string width : {"i64", "i32"}) {
        std::string t = bf16 ? "bf16" : "f16";
        bool isSigned = op == "sitofp";
        std::string body =
            width == "i64"
                ? "  %y = llvm." + op + " %a : i64 to " + t
                : "  %w = llvm.trunc %a : i64 to i32\n  %y = llvm." + op +
                      " %w : i32 to " + t;
        auto out = valuesOf<uint16_t>(run(loopFunction("i64", "", t, body),
                                          GetParam(), bytesOf(in), bytesOf(in),
                                          bytesOf(in), in.size(), 2));
        ASSERT_EQ(out.size(), in.size());
        int wrong = 0;
        for (size_t i = 0; i < in.size() && wrong < 5; ++i) {
          APInt value(64, uint64_t(in[i]));
          if (width == "i32")
            value = value.trunc(32);
          APFloat f(narrowSemantics(bf16));
          f.convertFromAPInt(value, isSigned, APFloat::rmNearestTiesToEven);
          uint16_t want = uint16_t(f.bitcastToAPInt().getZExtValue());
          if (out[i] != want) {
            ++wrong;
            ADD_FAILURE() << op << " " << width << " " << in[i] << " -> " << t
                          << ": got 0x" << std::hex << out[i] << ", want 0x"
                          << want;
          }
        }
      }
}

/// PTX cvt.rzi: truncation, saturation at the ends, NaN -> 0.
int64_t saturate(double x, unsigned width, bool isSigned) {
  if (std::isnan(x))
    return 0;
  double lo = isSigned ? -std::ldexp(1.0, width - 1) : 0.0;
  double hi = isSigned ? std::ldexp(1.0, width - 1) - 1
                       : std::ldexp(1.0, width) - 1;
  double t = std::trunc(x);
  if (t < lo)
    return int64_t(lo);
  if (t > hi)
    return isSigned ? int64_t(hi) : int64_t(uint64_t(hi));
  return int64_t(t);
}

TEST_P(HostFloat, FloatToIntSaturates) {
  std::vector<uint16_t> narrow(1 << 16);
  for (uint32_t i = 0; i < narrow.size(); ++i)
    narrow[i] = uint16_t(i);
  for (bool bf16 : {false, true})
    for (std::string op : {"fptosi", "fptoui"}) {
      std::string t = bf16 ? "bf16" : "f16";
      auto out = valuesOf<int32_t>(
          run(loopFunction(t, "", "i32",
                           "  %y = llvm." + op + " %a : " + t + " to i32"),
              GetParam(), bytesOf(narrow), bytesOf(narrow), bytesOf(narrow),
              narrow.size(), 4));
      ASSERT_EQ(out.size(), narrow.size());
      int wrong = 0;
      for (size_t i = 0; i < narrow.size() && wrong < 5; ++i) {
        double x = narrowValue(narrow[i], bf16).convertToDouble();
        int32_t want = int32_t(saturate(x, 32, op == "fptosi"));
        if (out[i] != want) {
          ++wrong;
          ADD_FAILURE() << op << " " << t << " " << x << ": got " << out[i]
                        << ", want " << want;
        }
      }
    }
  std::vector<float> f = {0.0f,    -0.0f,   0.99f,   -0.99f,  127.5f,
                          128.0f,  -128.5f, -129.0f, 255.9f,  256.0f,
                          2.2e9f,  -2.2e9f, 4.3e9f,  -1.0f,   1e30f,
                          -1e30f,  INFINITY, -INFINITY, NAN};
  for (auto [op, width] : std::vector<std::pair<std::string, unsigned>>{
           {"fptosi", 8}, {"fptoui", 8}, {"fptosi", 32}, {"fptoui", 32}}) {
    std::string it = "i" + std::to_string(width);
    auto raw = run(loopFunction("f32", "", it,
                                "  %y = llvm." + op + " %a : f32 to " + it),
                   GetParam(), bytesOf(f), bytesOf(f), bytesOf(f), f.size(),
                   width / 8);
    ASSERT_EQ(raw.size(), f.size() * width / 8);
    for (size_t i = 0; i < f.size(); ++i) {
      int64_t got = 0;
      std::memcpy(&got, raw.data() + i * width / 8, width / 8);
      bool isSigned = op == "fptosi";
      int64_t want = saturate(f[i], width, isSigned);
      uint64_t mask = width == 64 ? ~0ull : (1ull << width) - 1;
      EXPECT_EQ(uint64_t(got) & mask, uint64_t(want) & mask)
          << op << " " << f[i] << " to " << it;
    }
  }
}

TEST_P(HostFloat, NarrowArithmeticRoundsOnce) {
  test::Rng rng(3);
  for (bool bf16 : {false, true}) {
    std::vector<uint16_t> a, b, c;
    for (int i = 0; i < 30000; ++i) {
      // Finite values of moderate range, some subnormal.
      auto draw = [&] {
        uint16_t bits = uint16_t(rng.integer(0, 0xffff));
        return (bits & 0x7fff) >= (bf16 ? 0x7f80 : 0x7c00) ? uint16_t(bits & 0x3fff)
                                                          : bits;
      };
      a.push_back(draw());
      b.push_back(draw());
      c.push_back(draw());
    }
    std::string t = bf16 ? "bf16" : "f16";
    struct Case {
      std::string body;
      std::function<APFloat(APFloat, APFloat, APFloat)> want;
    };
    std::vector<Case> cases = {
        {"  %y = llvm.fadd %a, %b : " + t,
         [](APFloat x, APFloat y, APFloat) {
           x.add(y, APFloat::rmNearestTiesToEven);
           return x;
         }},
        {"  %y = llvm.fmul %a, %b : " + t,
         [](APFloat x, APFloat y, APFloat) {
           x.multiply(y, APFloat::rmNearestTiesToEven);
           return x;
         }},
        {"  %y = llvm.fdiv %a, %b : " + t,
         [](APFloat x, APFloat y, APFloat) {
           x.divide(y, APFloat::rmNearestTiesToEven);
           return x;
         }},
        {"  %y = llvm.intr.fma(%a, %b, %c) : (" + t + ", " + t + ", " + t +
             ") -> " + t,
         [](APFloat x, APFloat y, APFloat z) {
           x.fusedMultiplyAdd(y, z, APFloat::rmNearestTiesToEven);
           return x;
         }},
        {"  %y = llvm.intr.fmuladd(%a, %b, %c) : (" + t + ", " + t + ", " + t +
             ") -> " + t,
         [](APFloat x, APFloat y, APFloat z) {
           x.fusedMultiplyAdd(y, z, APFloat::rmNearestTiesToEven);
           return x;
         }},
    };
    for (const Case &k : cases) {
      auto out = valuesOf<uint16_t>(run(loopFunction(t, "", t, k.body),
                                        GetParam(), bytesOf(a), bytesOf(b),
                                        bytesOf(c), a.size(), 2));
      ASSERT_EQ(out.size(), a.size());
      int wrong = 0;
      for (size_t i = 0; i < a.size() && wrong < 5; ++i) {
        APFloat want = k.want(narrowValue(a[i], bf16), narrowValue(b[i], bf16),
                              narrowValue(c[i], bf16));
        bool ok = want.isNaN() ? narrowValue(out[i], bf16).isNaN()
                               : out[i] == want.bitcastToAPInt().getZExtValue();
        if (!ok) {
          ++wrong;
          ADD_FAILURE() << k.body << " on 0x" << std::hex << a[i] << ", 0x"
                        << b[i] << ", 0x" << c[i] << ": got 0x" << out[i]
                        << ", want 0x" << want.bitcastToAPInt().getZExtValue();
        }
      }
    }
  }
}

TEST_P(HostFloat, MaxNumOrdersSignedZeros) {
  std::vector<float> a = {0.0f, -0.0f, NAN, 1.0f, -0.0f, NAN};
  std::vector<float> b = {-0.0f, 0.0f, 2.0f, NAN, -0.0f, NAN};
  for (bool max : {true, false}) {
    std::string op = max ? "maxnum" : "minnum";
    auto out = valuesOf<float>(
        run(loopFunction("f32", "", "f32",
                         "  %y = llvm.intr." + op +
                             "(%a, %b) : (f32, f32) -> f32"),
            GetParam(), bytesOf(a), bytesOf(b), bytesOf(b), a.size(), 4));
    ASSERT_EQ(out.size(), a.size());
    EXPECT_EQ(std::signbit(out[0]), !max) << op << "(+0, -0)";
    EXPECT_EQ(std::signbit(out[1]), !max) << op << "(-0, +0)";
    EXPECT_EQ(out[2], 2.0f) << op << "(NaN, 2)";
    EXPECT_EQ(out[3], 1.0f) << op << "(1, NaN)";
    EXPECT_TRUE(std::signbit(out[4]) && out[4] == 0.0f) << op << "(-0, -0)";
    EXPECT_TRUE(std::isnan(out[5])) << op << "(NaN, NaN)";
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, HostFloat, ::testing::ValuesIn(jitTargets()),
                         [](const auto &info) {
                           return info.param.isHost ? std::string("Host")
                                                    : std::string("Baseline");
                         });

} // namespace
