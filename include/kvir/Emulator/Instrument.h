//===- Instrument.h - Rewrite a kernel module for CPU execution -*- C++ -*-===//
#ifndef KVIR_EMULATOR_INSTRUMENT_H
#define KVIR_EMULATOR_INSTRUMENT_H

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace kvir::emu {

/// What instrumentation learned about a kernel module.
struct InstrumentedModule {
  /// Bytes of static shared memory (all address-space-3 globals, laid out
  /// one after another at 16-byte alignment). Dynamic shared memory starts
  /// at this offset.
  uint64_t staticSharedBytes = 0;
  /// One description ("file:line:col op") per instrumented site, indexed by
  /// the site id passed to the runtime.
  std::vector<std::string> sites;
  /// Names of the kernels (llvm.func with nvvm.kernel or gpu.kernel).
  std::vector<std::string> kernels;
};

/// Rewrites a module of LLVM-dialect kernels (the body of a gpu.module after
/// convert-gpu-to-nvvm) so that it runs on the host: NVVM special registers,
/// barriers, shuffles, votes, mma.sync, ldmatrix and cp.async become calls
/// into the emulator runtime (RuntimeABI.h); every load, store and atomic is
/// preceded by an access check; shared-memory globals become offsets into a
/// per-block arena. Fails with a diagnostic on NVVM ops it cannot emulate.
mlir::FailureOr<InstrumentedModule> instrumentKernelModule(mlir::ModuleOp module);

} // namespace kvir::emu

#endif // KVIR_EMULATOR_INSTRUMENT_H
