//===- KernelPipeline.cpp - gpu.module kernels to NVVM --------------------===//
#include "kvir/Target/GPU/KernelPipeline.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/NVGPUToNVVM/NVGPUToNVVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void kvir::target::addLoopLoweringPasses(OpPassManager &pm) {
  pm.addPass(createLowerAffinePass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  // expand-strided-metadata leaves affine.apply for the offsets it computes.
  pm.addPass(createLowerAffinePass());
  // Transfer ops with masks or out-of-bounds dims become scf + vector loads.
  pm.addPass(createConvertVectorToSCFPass());
  pm.addPass(createSCFToControlFlowPass());
}

void kvir::target::buildGpuKernelLoweringPipeline(OpPassManager &modulePm) {
  OpPassManager &kernels = modulePm.nest<gpu::GPUModuleOp>();
  addLoopLoweringPasses(kernels);
  kernels.addPass(createConvertNVGPUToNVVMPass());
  // convert-gpu-to-nvvm maps the GPU address spaces and lowers gpu, memref,
  // arith, cf and func; vector ops (and the arith and ub ops their lowering
  // creates) follow, now that every memref has an integer address space.
  // Kernels take bare pointers (kvgpu-bare-kernel-abi has given every
  // memref argument a static rank-0 type), not memref descriptors.
  ConvertGpuOpsToNVVMOpsOptions nvvm;
  nvvm.useBarePtrCallConv = true;
  kernels.addPass(createConvertGpuOpsToNVVMOps(nvvm));
  kernels.addPass(createConvertVectorToLLVMPass());
  kernels.addPass(createArithToLLVMConversionPass());
  kernels.addPass(createUBToLLVMConversionPass());
  kernels.addPass(createReconcileUnrealizedCastsPass());
  kernels.addPass(createCanonicalizerPass());
}

void kvir::target::addNVVMTarget(OpPassManager &modulePm,
                                 const TargetInfo &target) {
  GpuNVVMAttachTargetOptions options;
  options.chip = target.chip.str();
  options.features = TargetInfo::ptxFeatures().str();
  options.optLevel = 3;
  modulePm.addPass(createGpuNVVMAttachTarget(options));
}
