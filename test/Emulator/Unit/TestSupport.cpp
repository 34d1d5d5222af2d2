//===- TestSupport.cpp - Helpers for the emulator's gtests ----------------===//
#include "TestSupport.h"

#include "kvir/Registration/InitAll.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;

namespace kvir::emu::test {

MLIRContext &context() {
  static MLIRContext *ctx = [] {
    DialectRegistry registry;
    kvir::registerEverything(registry);
    auto *c = new MLIRContext(registry);
    c->loadAllAvailableDialects();
    return c;
  }();
  return *ctx;
}

bool prepare(const std::string &source) {
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  ScopedDiagnosticHandler handler(&context(), [&](Diagnostic &d) {
    os << d.getLocation() << ": " << d << "\n";
    return success();
  });
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(source, &context());
  if (!module) {
    ADD_FAILURE() << "parsing failed:\n" << diagnostics;
    return false;
  }
  if (failed(Emulator::get().prepareModule(*module))) {
    ADD_FAILURE() << "prepareModule failed:\n" << diagnostics;
    return false;
  }
  return true;
}

llvm::LogicalResult launch(const std::string &kernel, Dim3 grid, Dim3 block,
                           Args &args, uint32_t dynamicShared) {
  Emulator &emu = Emulator::get();
  emu.options().exitOnError = false;
  return emu.launch(kernel, grid, block, dynamicShared, args.get());
}

std::string reports() {
  std::string all;
  for (const std::string &r : Emulator::get().getReports())
    all += r + "\n";
  return all;
}

float halfBitsToFloat(uint16_t h) {
  int sign = h >> 15, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  float v;
  if (exponent == 0)
    v = std::ldexp(float(mantissa), -24); // subnormal: m * 2^-24
  else if (exponent == 31)
    v = mantissa ? NAN : INFINITY;
  else
    v = std::ldexp(float(mantissa | 0x400), exponent - 25);
  return sign ? -v : v;
}

float bf16BitsToFloat(uint16_t h) {
  uint32_t w = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &w, 4);
  return f;
}

uint16_t floatToHalfBits(float f) {
  // Via double: scale to the half grid and round to nearest even.
  uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  double a = std::fabs(double(f));
  if (std::isnan(f))
    return 0x7e00;
  if (a >= 65520.0)
    return sign | 0x7c00;
  if (a < std::ldexp(1.0, -14)) {
    double m = std::nearbyint(a * std::ldexp(1.0, 24)); // subnormal units
    return sign | uint16_t(m);
  }
  int e;
  std::frexp(a, &e);    // a = x * 2^e, x in [0.5, 1)
  int exponent = e - 1; // a in [2^exponent, 2^(exponent+1))
  double m = std::nearbyint(a * std::ldexp(1.0, 10 - exponent));
  if (m >= 2048) { // rounded up to the next binade
    m /= 2;
    ++exponent;
  }
  return sign | uint16_t((exponent + 15) << 10) | uint16_t(uint32_t(m) - 1024);
}

} // namespace kvir::emu::test
