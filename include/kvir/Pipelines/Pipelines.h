//===- Pipelines.h - kvir's pass pipelines ----------------------*- C++ -*-===//
//
// Every pass list kvir runs is built here, and only here: kvir-opt's
// registered pipelines, kvir-runner, the emulator's host lowering, the C++
// test harnesses and the bench all call these builders.
//
//   kv-lower-to-llvm   kv-reject-gpu-kernels, kv-to-loops, then the host
//                      lowering: the CPU reference
//   kv-to-nvvm{chip}   the kv-level GPU lowering (kv-expand-cascade,
//                      kv-specialize-layout, kv-tile, convert-kv-to-gpu,
//                      kv-to-loops for the host plumbing), the kernels to
//                      NVVM (lib/Target/GPU), nvvm-attach-target
//   kv-to-ptx{chip}    kv-to-nvvm, then gpu-module-to-binary{format=isa}
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_PIPELINES_PIPELINES_H
#define KVIR_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"

#include <string>

namespace kvir {

struct KVToGPUPipelineOptions {
  std::string chip = "sm_90a";
  /// Leave kv ops without a kernel to host loops (kvir-runner: device memory
  /// is host memory) instead of failing.
  bool allowHostLoops = false;
  /// Fixed grids for at most this many requests (CUDA-graph capture); 0:
  /// grids sized per call.
  int64_t graphMaxBatch = 0;
  /// The tensor-core instruction kv-tile may choose: "auto" (the chip's
  /// best for each op: wgmma on sm_90a where the kernel takes it) or
  /// "mma_sync".
  std::string mma = "auto";
};

/// The kv-level GPU lowering: kv ops become gpu.module kernels, launch plans
/// and host launches; what remains of kv (views, state plumbing) becomes
/// host code.
void buildKVToGPUPipeline(mlir::OpPassManager &pm,
                          const KVToGPUPipelineOptions &options);
/// buildKVToGPUPipeline, the kernels lowered to NVVM, an #nvvm.target.
void buildKVToNVVMPipeline(mlir::OpPassManager &pm,
                           const KVToGPUPipelineOptions &options);
/// buildKVToNVVMPipeline then gpu-module-to-binary{format=isa} (PTX).
void buildKVToPTXPipeline(mlir::OpPassManager &pm,
                          const KVToGPUPipelineOptions &options);

struct HostLoweringOptions {
  /// The host code launches kernels through MLIR's GPU runtime API
  /// (gpu-to-llvm; synchronous gpu ops made async first).
  bool gpuRuntime = false;
};
/// Host code in func / scf / memref / arith / math / vector (and gpu host
/// ops) to the LLVM dialect.
void buildHostToLLVMPipeline(mlir::OpPassManager &pm,
                             const HostLoweringOptions &options);

/// kv-to-loops, canonicalize, cse, and the host lowering: the module runs
/// under mlir-runner or MLIR's ExecutionEngine.
void buildKVLowerToLLVMPipeline(mlir::OpPassManager &pm);

/// Registers kv-lower-to-llvm, kv-to-nvvm and kv-to-ptx.
void registerKVIRPipelines();

} // namespace kvir

#endif // KVIR_PIPELINES_PIPELINES_H
