//===- Compile.cpp - gpu.module -> instrumented host JIT code -------------===//
#include "DependentLaunch.h"
#include "Runtime.h"
#include "kvir/Dialect/KVGPU/Transforms/Passes.h"
#include "kvir/Emulator/Instrument.h"
#include "kvir/Target/GPU/KernelPipeline.h"
#include "kvir/Target/Host/JitTarget.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "llvm/Support/TargetSelect.h"

using namespace mlir;
using namespace kvir;
using namespace kvir::emu;

std::vector<std::unique_ptr<CompiledModule>> &compiledModules() {
  static std::vector<std::unique_ptr<CompiledModule>> modules;
  return modules;
}

llvm::orc::SymbolMap hookSymbols(llvm::orc::MangleAndInterner interner);

/// Lowers the kernels of the gpu.module in `scratch` with the one kernel
/// pipeline kv-to-nvvm uses: the emulator runs what becomes PTX, and only
/// adds its instrumentation afterwards.
static LogicalResult lowerToNvvm(ModuleOp scratch) {
  PassManager pm(scratch.getContext());
  kvir::target::buildGpuKernelLoweringPipeline(pm);
  return pm.run(scratch);
}

/// The largest value a kernel may hold: 64 KiB, far past what a GPU
/// thread's 255 registers (1 KiB) hold; the host JIT would spend gigabytes
/// (or crash) compiling a value of several GiB.
static constexpr uint64_t kMaxValueBytes = 64 * 1024;

/// Fails, naming the value and its kernel, if a kernel of `kernels` holds
/// a value no GPU thread could and the host JIT cannot compile.
static LogicalResult checkCompilable(ModuleOp kernels) {
  DataLayout layout = DataLayout::closest(kernels);
  auto tooLarge = [&](Type type) -> std::optional<uint64_t> {
    if (!isa<VectorType, LLVM::LLVMArrayType, LLVM::LLVMStructType>(type))
      return std::nullopt;
    uint64_t bytes = layout.getTypeSize(type).getFixedValue();
    if (bytes <= kMaxValueBytes)
      return std::nullopt;
    return bytes;
  };
  WalkResult result = kernels.walk([&](Operation *op) {
    // Allocas of registers' spill space count by element type and count.
    SmallVector<Type> types(op->getResultTypes());
    if (auto alloca = dyn_cast<LLVM::AllocaOp>(op))
      types.push_back(alloca.getElemType());
    for (Type type : types) {
      std::optional<uint64_t> bytes = tooLarge(type);
      if (!bytes)
        continue;
      StringRef kernel = "?";
      if (auto fn = op->getParentOfType<LLVM::LLVMFuncOp>())
        kernel = fn.getSymName();
      else if (auto fn = op->getParentOfType<gpu::GPUFuncOp>())
        kernel = fn.getName();
      op->emitError() << "emulator: kernel '" << kernel
                      << "' holds a value of type " << type << " (" << *bytes
                      << " bytes), more than the " << kMaxValueBytes
                      << " bytes a GPU thread's registers and stack can hold; "
                         "the emulator does not compile it";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

static FailureOr<CompiledModule *> compile(gpu::GPUModuleOp gpuModule) {
  MLIRContext *context = gpuModule.getContext();
  Location loc = gpuModule.getLoc();
  OwningOpRef<ModuleOp> scratch = ModuleOp::create(loc);
  OpBuilder builder(context);
  builder.setInsertionPointToStart(scratch->getBody());
  builder.clone(*gpuModule);
  // Before lowering too: lowering a multi-GiB vector constant is where the
  // time and memory would go.
  if (failed(checkCompilable(*scratch)))
    return failure();
  if (failed(lowerToNvvm(*scratch)))
    return gpuModule.emitError("emulator: lowering the kernels to NVVM failed");

  // The kernels become a plain module compiled for the host.
  OwningOpRef<ModuleOp> kernels = ModuleOp::create(loc);
  auto lowered = *scratch->getOps<gpu::GPUModuleOp>().begin();
  builder.setInsertionPointToStart(kernels->getBody());
  for (Operation &op : lowered.getBody()->without_terminator())
    builder.clone(op);

  if (failed(checkCompilable(*kernels)))
    return failure();
  if (Emulator::get().options().rejectLibdevice)
    for (auto fn : kernels->getOps<LLVM::LLVMFuncOp>())
      if (fn.isExternal() && fn.getSymName().starts_with("__nv_"))
        return gpuModule.emitError("emulator: the kernels call libdevice's ")
               << fn.getSymName()
               << ", which PTX compiled without a CUDA path leaves "
                  "unresolved";
  FailureOr<InstrumentedModule> info = instrumentKernelModule(*kernels);
  if (failed(info) || failed(makeHostIndependent(*kernels)))
    return failure();
  if (info->usesGridDependencyControl)
    enableGridAccessRecording();

  auto compiled = std::make_unique<CompiledModule>();
  compiled->name = gpuModule.getName().str();
  compiled->staticSharedBytes = info->staticSharedBytes;
  compiled->kernelSharedBytes = info->kernelSharedBytes;
  compiled->sites = info->sites;
  compiled->usesGridDependencyControl = info->usesGridDependencyControl;

  // Globals the kernels read (constants) are allocations kernels may touch.
  DataLayout layout = DataLayout::closest(*kernels);
  SmallVector<std::pair<std::string, uint64_t>> globals;
  for (auto global : kernels->getOps<LLVM::GlobalOp>())
    globals.push_back({global.getSymName().str(),
                       layout.getTypeSize(global.getGlobalType())});

  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  DialectRegistry registry;
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  context->appendDialectRegistry(registry);
  // Kernels must become ordinary host functions. With the NVVM translation
  // registered (kvir-runner registers all of them) nvvm.kernel turns into the
  // ptx_kernel calling convention; the packed wrapper ExecutionEngine adds
  // calls with the C convention, a mismatch the optimizer folds into
  // `unreachable`. That is why IR-level optimization looked as if it dropped
  // the packed entry wrappers. Launch bounds (nvvm.maxntid, ...) mean nothing
  // on the host either.
  for (auto fn : kernels->getOps<LLVM::LLVMFuncOp>()) {
    SmallVector<StringAttr> drop;
    for (NamedAttribute attr : fn->getDiscardableAttrs())
      if (attr.getName().strref().starts_with("nvvm.") ||
          attr.getName() == "gpu.kernel")
        drop.push_back(attr.getName());
    for (StringAttr name : drop)
      fn->removeDiscardableAttr(name);
    if (fn.getCConv() == LLVM::cconv::CConv::PTX_Kernel ||
        fn.getCConv() == LLVM::cconv::CConv::PTX_Device)
      fn.setCConv(LLVM::cconv::CConv::C);
  }
  ExecutionEngineOptions options;
  options.enablePerfNotificationListener = false;
  if (getenv("KVEMU_DUMP"))
    kernels->print(llvm::errs());
  auto engine = kvir::target::createJitEngine(
      *kernels, /*irOptLevel=*/2, llvm::CodeGenOptLevel::Default, options);
  if (!engine)
    return gpuModule.emitError(
               "emulator: JIT compilation of the kernels failed: ")
           << llvm::toString(engine.takeError());
  (*engine)->registerSymbols(hookSymbols);
  for (const std::string &name : info->kernels) {
    auto entry = (*engine)->lookupPacked(name);
    if (!entry) {
      llvm::consumeError(entry.takeError());
      return gpuModule.emitError("emulator: kernel '") << name << "' not found";
    }
    compiled->kernels[name] = *entry;
    if (auto fn = kernels->lookupSymbol<LLVM::LLVMFuncOp>(name)) {
      std::vector<uint32_t> &bytes = compiled->kernelParamBytes[name];
      for (Type type : fn.getArgumentTypes())
        bytes.push_back(uint32_t(layout.getTypeSize(type)));
    }
  }
  for (auto &[name, bytes] : globals) {
    auto address = (*engine)->lookup(name);
    if (!address) {
      llvm::consumeError(address.takeError());
      continue;
    }
    Emulator::get().registerAllocation(*address, bytes,
                                       "global '" + name + "'");
  }
  compiled->engine = std::shared_ptr<void>(engine->release(), [](void *p) {
    delete static_cast<ExecutionEngine *>(p);
  });
  compiledModules().push_back(std::move(compiled));
  return compiledModules().back().get();
}

LogicalResult Emulator::prepareModule(ModuleOp module) {
  // Kernels take kvir's kernel ABI (bare pointers, then extents), as in the
  // PTX; launches in `module` are rewritten with them.
  {
    PassManager pm(module.getContext());
    pm.addPass(kvgpu::createKVGPUBareKernelABI());
    if (failed(pm.run(module)))
      return failure();
  }
  SmallVector<gpu::GPUModuleOp> gpuModules(module.getOps<gpu::GPUModuleOp>());
  for (gpu::GPUModuleOp gpuModule : gpuModules) {
    FailureOr<CompiledModule *> compiled = compile(gpuModule);
    if (failed(compiled))
      return failure();
    // Launch code loads "kvemu:<index>" through mgpuModuleLoad.
    MLIRContext *context = module.getContext();
    OpBuilder builder(gpuModule);
    std::string id = "kvemu:" + std::to_string(compiledModules().size() - 1);
    auto object =
        gpu::ObjectAttr::get(context, NVVM::NVVMTargetAttr::get(context),
                             gpu::CompilationTarget::Binary,
                             builder.getStringAttr(id), nullptr, nullptr);
    gpu::BinaryOp::create(builder, gpuModule.getLoc(), gpuModule.getName(),
                          nullptr, ArrayRef<Attribute>{object});
    gpuModule.erase();
  }
  return success();
}
