//===- JitTarget.h - The CPU kvir's JIT compilers generate code for -*- C++ -*-===//
//
// Every place kvir JIT-compiles code for the machine it runs on (the
// emulator's kernels and host code, the C API, kvir-runner, the test
// harnesses) takes its CPU from here: the host's own by default, or the one
// KVIR_JIT_CPU names. Results do not depend on the choice (the emulator's
// code is made host-independent by llvm-host-independent-float and calls
// no host math library); the setting exists so that CI can prove it on a
// baseline CPU (docs/Emulator.md).
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_TARGET_HOST_JITTARGET_H
#define KVIR_TARGET_HOST_JITTARGET_H

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "llvm/Support/CodeGen.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>

namespace llvm {
class Module;
class TargetMachine;
} // namespace llvm

namespace kvir::target {

/// The environment variable that selects the JIT's CPU.
constexpr const char *kJitCpuVariable = "KVIR_JIT_CPU";

struct JitTarget {
  /// LLVM's name of the CPU ("x86-64", "znver4", "neoverse-v1") and its
  /// feature string ("+f16c,-avx512f"), added to the CPU's own features.
  std::string cpu, features;
  /// Whether this is the host's CPU with every feature it has.
  bool isHost = true;

  /// The host's CPU and features.
  static JitTarget host();
  /// "host" (or "") -> host(); "<cpu>" or "<cpu>:<features>" -> that CPU
  /// of the host's architecture. Errors say what is wrong with `spec`.
  static llvm::Expected<JitTarget> parse(llvm::StringRef spec);
  /// parse(KVIR_JIT_CPU), host() when unset; errors name the variable.
  static llvm::Expected<JitTarget> fromEnvironment();

  /// A target machine of the host's triple for this CPU.
  llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
  createTargetMachine(llvm::CodeGenOptLevel level) const;
  /// Marks every function defined in `module` with this CPU and features,
  /// which code generation honours whatever target machine runs it (for
  /// drivers that build their own, as mlir-runner's does).
  void pinFunctions(llvm::Module &module) const;
  /// "host (znver3)" or "x86-64:+sse4.1".
  std::string describe() const;
};

/// mlir::ExecutionEngine::create for `module` on JitTarget::fromEnvironment():
/// LLVM IR optimized at `irOptLevel` (0-3), machine code at `codegenLevel`,
/// every function pinned to the target. `options`' transformer is replaced.
llvm::Expected<std::unique_ptr<mlir::ExecutionEngine>>
createJitEngine(mlir::Operation *module, unsigned irOptLevel,
                llvm::CodeGenOptLevel codegenLevel,
                mlir::ExecutionEngineOptions options = {});
/// The same on `target`.
llvm::Expected<std::unique_ptr<mlir::ExecutionEngine>>
createJitEngine(mlir::Operation *module, const JitTarget &target,
                unsigned irOptLevel, llvm::CodeGenOptLevel codegenLevel,
                mlir::ExecutionEngineOptions options = {});

} // namespace kvir::target

#endif // KVIR_TARGET_HOST_JITTARGET_H
