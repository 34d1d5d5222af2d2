//===- Pipelines.cpp - kvir's pass pipelines ------------------------------===//
#include "kvir/Pipelines/Pipelines.h"
#include "kvir/Target/GPU/TargetInfo.h"
#include "kvir/Conversion/Passes.h"
#include "kvir/Dialect/KV/Transforms/Passes.h"
#include "kvir/Dialect/KVGPU/Transforms/Passes.h"
#include "kvir/Target/GPU/KernelPipeline.h"
#include "kvir/Target/Host/Passes.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/GPUCommon/GPUCommonPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void kvir::buildKVToGPUPipeline(OpPassManager &pm,
                                const KVToGPUPipelineOptions &options) {
  // Regions that are built-ins get the built-ins' kernels.
  pm.addPass(kv::createKVCanonicalizeVariants());
  pm.addPass(kv::createKVExpandCascade());
  pm.addPass(kv::createKVSpecializeLayout());
  kvgpu::KVTileOptions tile;
  tile.chip = options.chip;
  tile.mma = options.mma;
  pm.addPass(kvgpu::createKVTile(tile));
  ConvertKVToGPUOptions gpu;
  gpu.chip = options.chip;
  gpu.allowHostLoops = options.allowHostLoops;
  gpu.graphMaxBatch = options.graphMaxBatch;
  pm.addPass(createConvertKVToGPU(gpu));
  // Views and state plumbing (and, with allowHostLoops, the ops without a
  // kernel) become host code.
  pm.addPass(createConvertKVToLoops());
  pm.addPass(createCanonicalizerPass());
}

void kvir::buildKVToNVVMPipeline(OpPassManager &pm,
                                 const KVToGPUPipelineOptions &options) {
  buildKVToGPUPipeline(pm, options);
  pm.addPass(kvgpu::createKVGPUBareKernelABI());
  target::buildGpuKernelLoweringPipeline(pm);
  // kv-tile has rejected an unknown chip by the time this runs.
  if (const target::TargetInfo *t = target::TargetInfo::lookup(options.chip))
    target::addNVVMTarget(pm, *t);
}

void kvir::buildKVToPTXPipeline(OpPassManager &pm,
                                const KVToGPUPipelineOptions &options) {
  buildKVToNVVMPipeline(pm, options);
  // NVVM ops without an LLVM intrinsic (sm_90a's wgmma among them) become
  // the inline PTX their op defines. Here, not in the kernel lowering the
  // emulator shares: it executes those ops themselves.
  pm.addNestedPass<gpu::GPUModuleOp>(createConvertNVVMToLLVMPass());
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = "isa";
  pm.addPass(createGpuModuleToBinaryPass(binary));
}

void kvir::buildHostToLLVMPipeline(OpPassManager &pm,
                                   const HostLoweringOptions &options) {
  if (options.gpuRuntime) {
    // gpu-to-llvm lowers only the async forms of gpu.alloc, gpu.memcpy,
    // gpu.memset and gpu.dealloc; make synchronous ones async (with a
    // gpu.wait), as a CUDA program's implicit default stream would.
    pm.addNestedPass<func::FuncOp>(createGpuAsyncRegionPass());
    pm.addPass(createCanonicalizerPass());
  }
  target::addLoopLoweringPasses(pm);
  pm.addPass(createConvertVectorToLLVMPass());
  if (options.gpuRuntime) {
    // Launches pass the bare pointers kernels take (kvgpu-bare-kernel-abi).
    GpuToLLVMConversionPassOptions launches;
    launches.kernelBarePtrCallConv = true;
    pm.addPass(createGpuToLLVMConversionPass(launches));
  }
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  // The same results on every host CPU (no f16/bf16 libcalls, no
  // backend-chosen fusion or rounding).
  pm.addPass(target::createLLVMHostIndependentFloat());
}

void kvir::buildKVLowerToLLVMPipeline(OpPassManager &pm) {
  pm.addPass(kv::createKVRejectGPUKernels());
  pm.addPass(kv::createKVCanonicalizeVariants());
  pm.addPass(createConvertKVToLoops());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  buildHostToLLVMPipeline(pm, HostLoweringOptions{});
}

namespace {
struct ChipOptions : PassPipelineOptions<ChipOptions> {
  Option<std::string> chip{*this, "chip",
                           llvm::cl::desc("Target chip: sm_80, sm_86, sm_89, "
                                          "sm_90 or sm_90a"),
                           llvm::cl::init("sm_90a")};
  Option<int64_t> graphMaxBatch{
      *this, "graph-max-batch",
      llvm::cl::desc("Fixed grids for batches of at most this many requests "
                     "(CUDA-graph capture; 0: grids sized per call)"),
      llvm::cl::init(0)};
  Option<std::string> mma{
      *this, "mma",
      llvm::cl::desc("Tensor-core instruction: auto (the chip's best each "
                     "kernel takes: wgmma on sm_90a) or mma_sync"),
      llvm::cl::init("auto")};
};
} // namespace

/// Registers a pipeline taking ChipOptions. Unlike PassPipelineRegistration,
/// option errors (an unknown option, an unknown chip) go through the
/// driver's error handler, so they print as errors.
static void registerChipPipeline(
    StringRef arg, StringRef description,
    std::function<void(OpPassManager &, const kvir::KVToGPUPipelineOptions &)>
        builder) {
  registerPassPipeline(
      arg, description,
      [builder](OpPassManager &pm, StringRef text,
                function_ref<LogicalResult(const Twine &)> errorHandler) {
        ChipOptions options;
        std::string message;
        llvm::raw_string_ostream os(message);
        if (failed(options.parseFromString(text, os)))
          return errorHandler(StringRef(message).trim());
        if (!kvir::target::TargetInfo::lookup(options.chip))
          return errorHandler("unknown chip '" + options.chip +
                              "', expected " +
                              kvir::target::TargetInfo::supportedChips());
        if (options.graphMaxBatch < 0)
          return errorHandler("graph-max-batch must be >= 0 (0: grids sized "
                              "per call), got " +
                              std::to_string(options.graphMaxBatch));
        if (options.mma != "auto" && options.mma != "mma_sync")
          return errorHandler("unknown mma '" + options.mma +
                              "', expected auto or mma_sync");
        kvir::KVToGPUPipelineOptions pipeline;
        pipeline.chip = options.chip;
        pipeline.mma = options.mma;
        pipeline.graphMaxBatch = options.graphMaxBatch;
        builder(pm, pipeline);
        return success();
      },
      [](function_ref<void(const detail::PassOptions &)> optHandler) {
        optHandler(ChipOptions());
      });
}

void kvir::registerKVIRPipelines() {
  PassPipelineRegistration<>(
      "kv-lower-to-llvm",
      "Lower kv ops through kv-to-loops to the LLVM dialect, ready for "
      "mlir-runner or the ExecutionEngine",
      [](OpPassManager &pm) { buildKVLowerToLLVMPipeline(pm); });
  registerChipPipeline(
      "kv-to-nvvm",
      "Lower kv ops to gpu.module kernels in the NVVM dialect with launch "
      "plans and host launch code; fails on any kv op without a kernel",
      buildKVToNVVMPipeline);
  registerChipPipeline(
      "kv-to-ptx",
      "kv-to-nvvm followed by gpu-module-to-binary{format=isa}: gpu.binary "
      "ops holding PTX, for kvir-translate",
      buildKVToPTXPipeline);
}
