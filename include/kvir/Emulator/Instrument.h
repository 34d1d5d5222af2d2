//===- Instrument.h - Rewrite a kernel module for CPU execution -*- C++ -*-===//
#ifndef KVIR_EMULATOR_INSTRUMENT_H
#define KVIR_EMULATOR_INSTRUMENT_H

#include "mlir/IR/BuiltinOps.h"

#include <map>
#include <string>
#include <vector>

namespace kvir::emu {

/// What instrumentation learned about a kernel module.
struct InstrumentedModule {
  /// Bytes of static shared memory of each kernel (the address-space-3
  /// globals it uses, one after another at their alignment, rounded up to
  /// 16 bytes); its dynamic shared memory starts at this offset.
  std::map<std::string, uint64_t> kernelSharedBytes;
  /// The largest of them.
  uint64_t staticSharedBytes = 0;
  /// One description ("file:line:col op") per instrumented site, indexed by
  /// the site id passed to the runtime.
  std::vector<std::string> sites;
  /// Names of the kernels (llvm.func with nvvm.kernel or gpu.kernel).
  std::vector<std::string> kernels;
  /// Whether a kernel uses griddepcontrol (programmatic dependent launch).
  bool usesGridDependencyControl = false;
};

/// Rewrites a module of LLVM-dialect kernels (the body of a gpu.module after
/// convert-gpu-to-nvvm) so that it runs on the host: NVVM special registers,
/// barriers, shuffles, votes, mma.sync, ldmatrix and cp.async become calls
/// into the emulator runtime (RuntimeABI.h); every load, store and atomic is
/// preceded by an access check; shared-memory globals become offsets into a
/// per-block arena. Fails with a diagnostic on NVVM ops it cannot emulate.
mlir::FailureOr<InstrumentedModule>
instrumentKernelModule(mlir::ModuleOp module);

/// Makes an instrumented kernel module compute the same bits on every host
/// CPU (docs/Emulator.md, "The same results on every host"): runs
/// llvm-host-independent-float, turns the math intrinsics whose host code
/// would call the host's libm (exp, exp2, log, log2, sin, cos, tanh, pow)
/// into calls of the emulator's own (lib/Emulator/HostMath.h), and fails,
/// naming the op, on one it has none for and on calls of external functions
/// other than the emulator's runtime, libdevice, vprintf and __assertfail
/// (which a GPU kernel could not call either).
mlir::LogicalResult makeHostIndependent(mlir::ModuleOp module);

} // namespace kvir::emu

#endif // KVIR_EMULATOR_INSTRUMENT_H
