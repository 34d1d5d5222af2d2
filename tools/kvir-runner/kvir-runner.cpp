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
#include "kvir/Conversion/KVToGPU/KVToGPU.h"
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
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/ExecutionEngine/JitRunner.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

using namespace mlir;

static llvm::cl::opt<bool> emuStats(
    "emu-stats",
    llvm::cl::desc("Print the emulator's per-launch counters as JSON"),
    llvm::cl::init(false));

static llvm::cl::opt<std::string>
    chip("chip",
         llvm::cl::desc("Chip whose SM count drives kvir's split-KV choice"),
         llvm::cl::init("sm_90a"));

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

/// Host globals (memref.global constants such as page tables) are memory
/// kernels may read: a global constructor registers each with the emulator.
static void registerHostGlobals(ModuleOp module) {
  SmallVector<LLVM::GlobalOp> globals;
  for (auto global : module.getOps<LLVM::GlobalOp>())
    if (global.getValueOrNull() || !global.getInitializerRegion().empty())
      globals.push_back(global);
  if (globals.empty())
    return;
  MLIRContext *context = module.getContext();
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  Location loc = module.getLoc();
  auto ptr = LLVM::LLVMPointerType::get(context);
  auto voidType = LLVM::LLVMVoidType::get(context);
  auto hook = LLVM::LLVMFuncOp::create(
      b, loc, "kvemu_register_global",
      LLVM::LLVMFunctionType::get(voidType, {ptr, b.getI64Type()}));
  auto ctor = LLVM::LLVMFuncOp::create(b, loc, "__kvemu_register_host_globals",
                                       LLVM::LLVMFunctionType::get(voidType, {}));
  Block *body = ctor.addEntryBlock(b);
  b.setInsertionPointToStart(body);
  DataLayout layout = DataLayout::closest(module);
  for (LLVM::GlobalOp global : globals) {
    if (global.getAddrSpace() != 0)
      continue;
    Value addr = LLVM::AddressOfOp::create(b, loc, global);
    Value size = LLVM::ConstantOp::create(
        b, loc, b.getI64Type(),
        b.getI64IntegerAttr(layout.getTypeSize(global.getGlobalType())));
    LLVM::CallOp::create(b, loc, hook, ValueRange{addr, size});
  }
  LLVM::ReturnOp::create(b, loc, ValueRange{});
  b.setInsertionPointToEnd(module.getBody());
  LLVM::GlobalCtorsOp::create(
      b, loc, b.getArrayAttr({FlatSymbolRefAttr::get(ctor)}),
      b.getArrayAttr({b.getI32IntegerAttr(0)}),
      b.getArrayAttr({LLVM::ZeroAttr::get(context)}));
}

static LogicalResult lowerForEmulator(Operation *op, JitRunnerOptions &) {
  auto module = cast<ModuleOp>(op);
  MLIRContext *context = module.getContext();
  if (hasKVOps(module)) {
    // kvir's GPU pipeline first; what it does not turn into kernels (and the
    // host-side state plumbing) runs as loops on the host.
    PassManager pm(context);
    kvir::ConvertKVToGPUOptions gpuOptions;
    gpuOptions.chip = chip;
    pm.addPass(kvir::createConvertKVToGPU(gpuOptions));
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
  // gpu-to-llvm lowers only the async forms of gpu.alloc, gpu.memcpy,
  // gpu.memset and gpu.dealloc; this makes synchronous ones async (with a
  // gpu.wait), as a CUDA program's implicit default stream would.
  pm.addNestedPass<func::FuncOp>(createGpuAsyncRegionPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createConvertVectorToSCFPass());
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
  pm.addPass(createUBToLLVMConversionPass());
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
  registerHostGlobals(module);
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

static llvm::orc::SymbolMap
runtimeSymbols(llvm::orc::MangleAndInterner interner) {
  return kvir::emu::Emulator::get().getRuntimeSymbols(interner);
}

int main(int argc, char **argv) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
  kvir::registerAllDialects(registry);

  JitRunnerConfig config;
  config.mlirTransformer = lowerForEmulator;
  // runtimesymbolMap is a function_ref: it must refer to a function that
  // outlives JitRunnerMain, not to a temporary lambda.
  config.runtimesymbolMap = runtimeSymbols;
  int rc = JitRunnerMain(argc, argv, registry, config);
  printStats();
  if (rc == 0 && !kvir::emu::Emulator::get().getReports().empty()) {
    for (const std::string &r : kvir::emu::Emulator::get().getReports())
      llvm::errs() << r << "\n";
    return 1;
  }
  return rc;
}
