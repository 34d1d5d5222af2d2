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
#include "kvir/Dialect/KV/IR/KVDialect.h"
#include "kvir/Emulator/Emulator.h"
#include "kvir/Emulator/HostLowering.h"
#include "kvir/Pipelines/Pipelines.h"
#include "kvir/Target/Host/JitTarget.h"
#include "kvir/Registration/InitAll.h"

#include "mlir/ExecutionEngine/JitRunner.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "llvm/Support/InitLLVM.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/TargetSelect.h"
#include "kvir/Dialect/KV/Transforms/Passes.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

using namespace mlir;

static llvm::cl::opt<bool>
    emuStats("emu-stats",
             llvm::cl::desc("Print the emulator's per-launch counters as JSON"),
             llvm::cl::init(false));

static llvm::cl::opt<std::string>
    chip("chip",
         llvm::cl::desc("Chip kvir's kernels are built for (sm_80, sm_86, "
                        "sm_89, sm_90, sm_90a)"),
         llvm::cl::init("sm_90a"));

static llvm::cl::opt<bool> validateTables(
    "validate-tables",
    llvm::cl::desc("Check every page table (and prefill's query rows) before "
                   "kv ops read them, naming the request and entry that is "
                   "wrong (kv-validate-tables)"),
    llvm::cl::init(false));

static llvm::cl::opt<size_t> emuStackBytes(
    "emu-stack-bytes",
    llvm::cl::desc("Stack bytes of each emulated GPU thread (its local "
                   "memory: allocas, spills)"),
    llvm::cl::init(64 * 1024));

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
  // Options are parsed by now; launches happen later.
  kvir::emu::Emulator::get().options().stackBytes = emuStackBytes;
  if (hasKVOps(module)) {
    // kv-to-nvvm's kv-level lowering, so that the emulated kernels are the
    // ones that become PTX; what gets no kernel (and the host-side state
    // plumbing) runs as loops on the host, which may read device memory
    // here because device memory is host memory.
    PassManager pm(module.getContext());
    if (validateTables)
      pm.addPass(kvir::kv::createKVValidateTables());
    kvir::buildKVToGPUPipeline(
        pm, kvir::KVToGPUPipelineOptions{chip, /*allowHostLoops=*/true});
    if (failed(pm.run(module)))
      return failure();
  }
  return kvir::emu::lowerHostForEmulator(module);
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

/// The CPU the host code is compiled for (KVIR_JIT_CPU); the emulator's
/// kernels take it from the same place.
static kvir::target::JitTarget jitTarget;

/// The default translation, with every function pinned to jitTarget:
/// JitRunner builds its own target machine, for the host.
static std::unique_ptr<llvm::Module> translateForJitTarget(Operation *op,
                                                           llvm::LLVMContext &ctx) {
  std::unique_ptr<llvm::Module> module = translateModuleToLLVMIR(op, ctx);
  if (module)
    jitTarget.pinFunctions(*module);
  return module;
}

extern "C" {
int32_t kvemu_cuTensorMapEncodeTiled(void *, uint32_t, uint32_t, void *,
                                     const uint64_t *, const uint64_t *,
                                     const uint32_t *, const uint32_t *,
                                     uint32_t, uint32_t, uint32_t, uint32_t);
/// The driver function host code of TMA kernels calls, as this process's
/// own symbol: JitRunner resolves a program's externals in the process
/// (where the emulator's mgpu* wrappers are), and its symbol map does not
/// reach a name no loaded library has. kvir-runner has no CUDA driver to
/// shadow.
int32_t cuTensorMapEncodeTiled(void *map, uint32_t dataType, uint32_t rank,
                               void *address, const uint64_t *dims,
                               const uint64_t *strides, const uint32_t *box,
                               const uint32_t *elementStrides,
                               uint32_t interleave, uint32_t swizzle,
                               uint32_t l2Promotion, uint32_t oobFill) {
  return kvemu_cuTensorMapEncodeTiled(map, dataType, rank, address, dims,
                                      strides, box, elementStrides, interleave,
                                      swizzle, l2Promotion, oobFill);
}
}

static llvm::orc::SymbolMap
runtimeSymbols(llvm::orc::MangleAndInterner interner) {
  return kvir::emu::Emulator::get().getRuntimeSymbols(interner);
}

int main(int argc, char **argv) {
  // A crash (in the program's host code, or anywhere in the runner) prints
  // a stack dump instead of dying silently.
  llvm::InitLLVM init(argc, argv);
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  DialectRegistry registry;
  kvir::registerEverything(registry);

  llvm::Expected<kvir::target::JitTarget> target =
      kvir::target::JitTarget::fromEnvironment();
  if (!target) {
    llvm::errs() << "kvir-runner: " << llvm::toString(target.takeError())
                 << "\n";
    return 1;
  }
  jitTarget = *target;

  JitRunnerConfig config;
  config.mlirTransformer = lowerForEmulator;
  config.llvmModuleBuilder = translateForJitTarget;
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
