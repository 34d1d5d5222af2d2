//===- HostMath.h - Transcendentals that are the same on every host -*- C++ -*-===//
//
// The functions kernels reach through NVVM approximation intrinsics
// (ex2.approx, lg2.approx, sin.approx, ...), LLVM math intrinsics and
// libdevice (__nv_expf, __nv_erf, ...), computed the same way on every
// host: the single-precision ones and most double ones are LLVM's libc
// (llvm-libc, libllvmlibc-22-dev), correctly rounded, so no host's libm,
// with its CPU-dependent variants (glibc selects FMA versions at run time),
// is ever called; tanh and erf in double, which llvm-libc 22 lacks, are
// kvir's own in double-double arithmetic, rounded once (kvir is compiled
// without floating-point contraction, so Dekker's products stay exact).
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_LIB_EMULATOR_HOSTMATH_H
#define KVIR_LIB_EMULATOR_HOSTMATH_H

#include "llvm/ADT/StringRef.h"
#include "llvm/ExecutionEngine/Orc/Core.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"

namespace kvir::emu::math {

/// The functions, by their C name ("exp2f", "tanh"), with their addresses.
struct Function {
  const char *name;
  void *address;
  bool isDouble;
};
llvm::ArrayRef<Function> functions();
/// The function named `name` (a C math name), or null.
const Function *lookup(llvm::StringRef name);

/// Host-independent fmax / fmin: a NaN operand gives the other, -0 < +0.
float maxNumber(float x, float y);
float minNumber(float x, float y);

/// Adds each function under `prefix + name` (e.g. "__kvemu_math_exp2f").
void addSymbols(llvm::orc::SymbolMap &map,
                llvm::orc::MangleAndInterner &interner,
                llvm::StringRef prefix);

} // namespace kvir::emu::math

#endif // KVIR_LIB_EMULATOR_HOSTMATH_H
