//===- Jit.h - JIT-compile kv functions through kv-to-loops -----*- C++ -*-===//
//
// Parses the MLIR text of a test function, lowers it with
// kvir::buildKVToLLVMPipeline, JIT-compiles it with MLIR's ExecutionEngine
// and calls its C interface (`_mlir_ciface_<name>`, so the function must
// carry `attributes {llvm.emit_c_interface}`) with memref descriptors built
// from host tensors.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_TEST_UNIT_SUPPORT_JIT_H
#define KVIR_TEST_UNIT_SUPPORT_JIT_H

#include "Tensor.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>

namespace mlir {
class ExecutionEngine;
} // namespace mlir

namespace kvir::test {

/// One argument of a kernel call: a memref (passed by descriptor) or an f32
/// scalar.
struct KernelArg {
  enum class Kind { Memref, F32 } kind;
  Tensor tensor;
  float scalar = 0.0f;

  static KernelArg memref(const Tensor &t) { return {Kind::Memref, t, 0.0f}; }
  static KernelArg f32(float v) { return {Kind::F32, Tensor(), v}; }
};

class JitKernel {
public:
  ~JitKernel();
  /// Parses `source`, runs the kv-to-LLVM pipeline and JIT-compiles the
  /// result. Errors carry the MLIR diagnostics.
  static llvm::Expected<std::unique_ptr<JitKernel>>
  compile(const std::string &source, const std::string &funcName);

  /// Calls `_mlir_ciface_<funcName>` with `args` in order.
  llvm::Error call(llvm::ArrayRef<KernelArg> args) const;

private:
  JitKernel() = default;
  std::unique_ptr<mlir::ExecutionEngine> engine;
  std::string funcName;
};

/// The compiled kernel for `source`, compiled once per process: tests that
/// generate the same text for several random batches share one compile.
llvm::Expected<const JitKernel *> getKernel(const std::string &source,
                                            const std::string &funcName);

/// Destroys every cached kernel.
void clearKernelCache();

/// Number of distinct kernels compiled and the seconds spent compiling.
struct JitStats {
  int compiles = 0;
  double seconds = 0.0;
};
const JitStats &getJitStats();

} // namespace kvir::test

#endif // KVIR_TEST_UNIT_SUPPORT_JIT_H
