//===- KernelPipeline.h - gpu.module kernels to NVVM ------------*- C++ -*-===//
//
// The one lowering of kernel code: gpu.func bodies in gpu / nvgpu / vector /
// scf / memref / arith to the LLVM + NVVM dialects. kv-to-nvvm (and so the
// PTX kvir emits) and the emulator both call it; the emulator only adds
// instrumentation after it, so the kernels it runs are the ones that become
// PTX.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_TARGET_GPU_KERNELPIPELINE_H
#define KVIR_TARGET_GPU_KERNELPIPELINE_H

#include "kvir/Target/GPU/TargetInfo.h"

#include "mlir/Pass/PassManager.h"

namespace kvir::target {

/// The alignment (an i64 of bytes, over 16) a kernel's dynamic shared
/// buffers need from their base: a hardware swizzle's 1024-byte pattern.
/// The kernel lowering aligns its module's dynamic shared memory to the
/// largest such alignment.
constexpr llvm::StringLiteral kDynamicSharedAlignmentAttr =
    "kvgpu.dynamic_shared_alignment";

/// Adds to `pm` the lowering both kernel and host code start with: affine
/// ops and strided memref metadata to arith, vector transfers to scf, scf
/// to cf.
void addLoopLoweringPasses(mlir::OpPassManager &pm);

/// Adds, nested on every gpu.module of the pass manager's module, the passes
/// that lower its kernels to LLVM + NVVM.
void buildGpuKernelLoweringPipeline(mlir::OpPassManager &modulePm);

/// Adds nvvm-attach-target for `target` (chip, PTX features, -O3).
void addNVVMTarget(mlir::OpPassManager &modulePm, const TargetInfo &target);

} // namespace kvir::target

#endif // KVIR_TARGET_GPU_KERNELPIPELINE_H
