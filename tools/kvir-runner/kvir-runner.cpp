//===- kvir-runner.cpp - mlir-runner with GPU kernels on the emulator -----===//
//
// A drop-in for mlir-runner (same flags: -e, --entry-point-result,
// --shared-libs, -O...) that accepts modules at every stage kvir produces:
// host code with gpu.launch not yet outlined, gpu.launch_func with a
// gpu.module, or kv ops (then kvir's lowering runs first). Every kernel
// launch executes in kvir's emulator (lib/Emulator); --emu-stats prints the
// per-launch counters as JSON on stderr at exit.
//
//===----------------------------------------------------------------------===//
#include "kvir/Conversion/KVToLoops/KVToLoops.h"
#include "kvir/Dialect/KV/IR/KVDialect.h"
#include "kvir/Emulator/Emulator.h"
#include "kvir/Registration/InitAll.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/GPUCommon/GPUCommonPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/ExecutionEngine/JitRunner.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

using namespace mlir;

static llvm::cl::opt<bool> emuStats(
    "emu-stats",
    llvm::cl::desc("Print the emulator's per-launch counters as JSON"),
    llvm::cl::init(false));

static bool hasKVOps(ModuleOp module) {
  bool found = false;
  module.walk([&](Operation *op) {
    if (isa<kvir::kv::KVDialect>(op->getDialect())) {
      found = true;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return found;
}

static LogicalResult lowerForEmulator(Operation *op, JitRunnerOptions &) {
  auto module = cast<ModuleOp>(op);
  MLIRContext *context = module.getContext();
  if (hasKVOps(module)) {
    // kvir's GPU pipeline is not there yet: kv ops run as CPU loops.
    PassManager pm(context);
    pm.addPass(kvir::createConvertKVToLoops());
    if (failed(pm.run(module)))
      return failure();
  }
  {
    PassManager pm(context);
    pm.addPass(createGpuKernelOutliningPass());
    if (failed(pm.run(module)))
      return failure();
  }
  if (!module.getOps<gpu::GPUModuleOp>().empty()) {
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    UnitAttr::get(context));
    if (failed(kvir::emu::Emulator::get().prepareModule(module)))
      return failure();
  }
  PassManager pm(context);
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertVectorToLLVMPass());
  pm.addPass(createGpuToLLVMConversionPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  if (failed(pm.run(module)))
    return failure();
  // Host allocations go through the emulator so kernels may access them.
  static const std::pair<StringRef, StringRef> renames[] = {
      {"malloc", "kvemu_malloc"},
      {"aligned_alloc", "kvemu_aligned_alloc"},
      {"calloc", "kvemu_calloc"},
      {"free", "kvemu_free"}};
  for (auto [from, to] : renames)
    if (auto fn = module.lookupSymbol<LLVM::LLVMFuncOp>(from)) {
      if (failed(SymbolTable::replaceAllSymbolUses(
              fn, StringAttr::get(context, to), module)))
        return failure();
      fn.setSymName(to);
    }
  return success();
}

static void printStats() {
  if (!emuStats)
    return;
  const auto &stats = kvir::emu::Emulator::get().getLaunchStats();
  llvm::errs() << "[";
  for (size_t i = 0; i < stats.size(); ++i)
    llvm::errs() << (i ? ",\n " : "") << stats[i].toJson();
  llvm::errs() << "]\n";
}

int main(int argc, char **argv) {
  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
  kvir::registerAllDialects(registry);

  JitRunnerConfig config;
  config.mlirTransformer = lowerForEmulator;
  config.runtimesymbolMap = [](llvm::orc::MangleAndInterner interner) {
    return kvir::emu::Emulator::get().getRuntimeSymbols(interner);
  };
  int rc = JitRunnerMain(argc, argv, registry, config);
  printStats();
  if (rc == 0 && !kvir::emu::Emulator::get().getReports().empty()) {
    for (const std::string &r : kvir::emu::Emulator::get().getReports())
      llvm::errs() << r << "\n";
    return 1;
  }
  return rc;
}
