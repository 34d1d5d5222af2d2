//===- Pipelines.cpp - kv-to-nvvm and kv-to-ptx ---------------------------===//
#include "kvir/Conversion/KVToGPU/KVToGPU.h"
#include "kvir/Conversion/KVToLoops/KVToLoops.h"
#include "kvir/Dialect/KV/Transforms/Passes.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/NVGPUToNVVM/NVGPUToNVVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace {
struct KVToPTXOptions : PassPipelineOptions<KVToPTXOptions> {
  Option<std::string> chip{*this, "chip",
                           llvm::cl::desc("Target chip: sm_80, sm_86, sm_89, "
                                          "sm_90 or sm_90a"),
                           llvm::cl::init("sm_90a")};
};
} // namespace

void kvir::buildKVToNVVMPipeline(OpPassManager &pm, StringRef chip) {
  pm.addPass(kv::createKVExpandCascade());
  pm.addPass(kv::createKVSpecializeLayout());
  kv::KVTileOptions tileOptions;
  tileOptions.chip = chip.str();
  pm.addPass(kv::createKVTile(tileOptions));
  ConvertKVToGPUOptions gpuOptions;
  gpuOptions.chip = chip.str();
  pm.addPass(createConvertKVToGPU(gpuOptions));
  // What convert-kv-to-gpu leaves (host-side state plumbing, unsupported
  // variants) runs as loops on the host.
  pm.addPass(createConvertKVToLoops());
  pm.addPass(createCanonicalizerPass());
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(createLowerAffinePass());
  kernels.addPass(memref::createExpandStridedMetadataPass());
  kernels.addPass(createLowerAffinePass());
  kernels.addPass(createSCFToControlFlowPass());
  kernels.addPass(createConvertNVGPUToNVVMPass());
  kernels.addPass(createConvertGpuOpsToNVVMOps());
  kernels.addPass(createConvertVectorToLLVMPass());
  kernels.addPass(createReconcileUnrealizedCastsPass());
  kernels.addPass(createCanonicalizerPass());
  GpuNVVMAttachTargetOptions target;
  target.chip = chip.str();
  // PTX ISA 8.0 is the first with sm_90a; CUDA 12+ ptxas accepts it for all
  // supported chips.
  target.features = "+ptx80";
  target.optLevel = 3;
  pm.addPass(createGpuNVVMAttachTarget(target));
}

void kvir::buildKVToPTXPipeline(OpPassManager &pm, StringRef chip) {
  buildKVToNVVMPipeline(pm, chip);
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = "isa";
  pm.addPass(createGpuModuleToBinaryPass(binary));
}

void kvir::registerKVToPTXPipelines() {
  PassPipelineRegistration<KVToPTXOptions>(
      "kv-to-nvvm",
      "Lower kv ops to gpu.module kernels in the NVVM dialect with host "
      "launch code (convert-kv-to-gpu, kv-to-loops, gpu-to-nvvm, "
      "nvvm-attach-target)",
      [](OpPassManager &pm, const KVToPTXOptions &options) {
        buildKVToNVVMPipeline(pm, options.chip);
      });
  PassPipelineRegistration<KVToPTXOptions>(
      "kv-to-ptx",
      "kv-to-nvvm followed by gpu-module-to-binary{format=isa}: gpu.binary "
      "ops holding PTX, for kvir-translate",
      [](OpPassManager &pm, const KVToPTXOptions &options) {
        buildKVToPTXPipeline(pm, options.chip);
      });
}
