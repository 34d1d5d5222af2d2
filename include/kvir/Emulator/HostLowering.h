//===- HostLowering.h - Host code launching emulated kernels ----*- C++ -*-===//
//
// Lowers a module with gpu.launch / gpu.launch_func host code and gpu.module
// kernels to the LLVM dialect so that an ExecutionEngine runs the host code
// and every launch executes in the emulator (Emulator.h):
//   - gpu.launch bodies are outlined, each gpu.module is prepared
//     (Emulator::prepareModule: compiled for the host, replaced by a
//     gpu.binary naming the compiled module);
//   - the host code is lowered with gpu-to-llvm (launches become mgpu*
//     calls), synchronous gpu.alloc / memcpy made async first;
//   - host malloc / aligned_alloc / calloc / free are renamed kvemu_*, the
//     emulator's tracking allocators, so kernels may access host buffers;
//   - host globals with an initializer (memref.global constants such as page
//     tables) are registered with the emulator by a global constructor.
//
// The JIT that runs the result must resolve the mgpu* and kvemu_* symbols
// before it runs global constructors (gpu-to-llvm loads kernel modules from
// one): Emulator::getRuntimeSymbols() provides the mgpu* wrappers; the
// kvemu_* allocators are in getRuntimeSymbols() too under their C names
// (kvemu_malloc, ...) and as exported functions of the emulator library.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_EMULATOR_HOSTLOWERING_H
#define KVIR_EMULATOR_HOSTLOWERING_H

#include "mlir/IR/BuiltinOps.h"

namespace kvir::emu {

/// Lowers `module` (host functions in func/scf/memref/arith/vector/math and
/// gpu host ops, plus gpu.module kernels) to the LLVM dialect for running
/// with the emulator. kv ops must have been lowered already.
llvm::LogicalResult lowerHostForEmulator(mlir::ModuleOp module);

} // namespace kvir::emu

#endif // KVIR_EMULATOR_HOSTLOWERING_H
