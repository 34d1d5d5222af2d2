//===- CAPI.cpp - kvir's C API ---------------------------------------------===//
#include "kvir-c/KVIR.h"

#include "kvir/CAPI/Spec.h"
#include "kvir/Emulator/Emulator.h"
#include "kvir/Emulator/HostLowering.h"
#include "kvir/Emulator/TensorMap.h"
#include "kvir/Pipelines/Pipelines.h"
#include "kvir/Registration/InitAll.h"
#include "kvir/Target/GPU/TargetInfo.h"
#include "kvir/Target/Manifest/Manifest.h"

#include "kvir/Target/Host/JitTarget.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

using namespace mlir;

namespace {
thread_local std::string lastError;
thread_local std::string lastLaunches = "[]";

int fail(const std::string &message) {
  lastError = message;
  return -1;
}

/// A function lowered for a chip, ready to call.
struct Compiled {
  std::unique_ptr<ExecutionEngine> engine;
  FunctionType type;
};
} // namespace

struct kvir_module {
  std::unique_ptr<MLIRContext> context;
  OwningOpRef<ModuleOp> module;
  std::map<std::pair<std::string, std::string>, Compiled> compiled;
};

namespace {
std::unique_ptr<MLIRContext> makeContext() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  DialectRegistry registry;
  kvir::registerEverything(registry);
  auto context = std::make_unique<MLIRContext>(registry);
  context->loadAllAvailableDialects();
  // Messages name the op and its location; the op's generic form would
  // only repeat the spec.
  context->printOpOnDiagnostic(false);
  return context;
}

/// `file:line:col: ` of the first file location in `loc` (as compilers
/// print them), or "" if it has none.
std::string locationText(Location loc) {
  std::string text;
  loc->walk([&](Location l) {
    if (auto file = dyn_cast<FileLineColLoc>(l)) {
      text = (file.getFilename().str() + ":" + std::to_string(file.getLine()) +
              ":" + std::to_string(file.getColumn()) + ": ");
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return text;
}

/// Collects a context's diagnostics (with their locations and notes) while
/// alive, for the C API's error messages.
class DiagnosticCollector {
public:
  explicit DiagnosticCollector(MLIRContext *context)
      : handler(context, [this](Diagnostic &diag) {
          os << locationText(diag.getLocation()) << diag << "\n";
          for (Diagnostic &note : diag.getNotes())
            os << "  note: " << locationText(note.getLocation()) << note
               << "\n";
          return success();
        }) {}
  /// `what`, then the diagnostics.
  int fail(const std::string &what) {
    std::string text = what;
    if (!messages.empty())
      text += ":\n" + StringRef(messages).rtrim().str();
    return ::fail(text);
  }

private:
  std::string messages;
  llvm::raw_string_ostream os{messages};
  ScopedDiagnosticHandler handler;
};

kvir_module_t parseModule(const std::string &source, const char *what) {
  auto result = std::make_unique<kvir_module>();
  result->context = makeContext();
  DiagnosticCollector diags(result->context.get());
  result->module = parseSourceString<ModuleOp>(source, result->context.get(),
                                               "input.mlir");
  if (!result->module) {
    diags.fail(std::string("cannot parse ") + what);
    return nullptr;
  }
  return result.release();
}

bool checkChip(const char *chip) {
  if (chip && kvir::target::TargetInfo::lookup(chip))
    return true;
  fail("unknown chip '" + std::string(chip ? chip : "(null)") +
       "', expected " + kvir::target::TargetInfo::supportedChips());
  return false;
}

/// Erases the functions of `module` that `root` does not reach through
/// symbol uses: a module's other entry points (a @main printing with
/// runtime functions the JIT does not have) are not compiled.
void keepReachable(ModuleOp module, func::FuncOp root) {
  llvm::SmallPtrSet<Operation *, 8> reached{root};
  SmallVector<Operation *> work{root};
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    std::optional<SymbolTable::UseRange> uses =
        SymbolTable::getSymbolUses(&op->getRegion(0));
    if (!uses)
      continue;
    for (const SymbolTable::SymbolUse &use : *uses)
      if (Operation *callee = SymbolTable::lookupNearestSymbolFrom(
              module, use.getSymbolRef()))
        if (isa<func::FuncOp>(callee) && reached.insert(callee).second)
          work.push_back(callee);
  }
  for (func::FuncOp fn : llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
    if (!reached.contains(fn))
      fn.erase();
}

/// Compiles `func` of `m` for `chip` with its kernels run by the emulator.
const Compiled *compileForEmulator(kvir_module &m, const std::string &func,
                                   const std::string &chip) {
  auto key = std::make_pair(func, chip);
  auto it = m.compiled.find(key);
  if (it != m.compiled.end())
    return &it->second;
  MLIRContext *context = m.context.get();
  DiagnosticCollector diags(context);
  auto fn = m.module->lookupSymbol<func::FuncOp>(func);
  if (!fn || fn.isExternal()) {
    diags.fail("the module has no function '" + func + "' with a body");
    return nullptr;
  }
  Compiled compiled;
  compiled.type = fn.getFunctionType();
  if (compiled.type.getNumResults() != 0) {
    diags.fail("function '" + func + "' returns values; kvir_emulate calls "
               "functions that write their results into buffers");
    return nullptr;
  }
  OwningOpRef<ModuleOp> module(cast<ModuleOp>(m.module->clone()));
  auto root = module->lookupSymbol<func::FuncOp>(func);
  root->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                UnitAttr::get(context));
  keepReachable(*module, root);
  PassManager pm(context);
  kvir::KVToGPUPipelineOptions options;
  options.chip = chip;
  kvir::buildKVToGPUPipeline(pm, options);
  if (failed(pm.run(*module))) {
    diags.fail("lowering '" + func + "' to kernels for " + chip + " failed");
    return nullptr;
  }
  kvir::emu::Emulator &emu = kvir::emu::Emulator::get();
  emu.options().exitOnError = false;
  emu.options().rejectLibdevice = true;
  // kvir's sm_90 kernels may be launched as programmatic dependents: every
  // run checks that they touch nothing of the grid before them first.
  emu.options().launchWaitingKernelsAsDependents = true;
  if (failed(kvir::emu::lowerHostForEmulator(*module))) {
    diags.fail("lowering the host code of '" + func + "' failed");
    return nullptr;
  }
  ExecutionEngineOptions engineOptions;
  engineOptions.enablePerfNotificationListener = false;
  auto engine = kvir::target::createJitEngine(
      *module, /*irOptLevel=*/0, llvm::CodeGenOptLevel::None, engineOptions);
  if (!engine) {
    diags.fail("JIT compilation of '" + func +
               "' failed: " + llvm::toString(engine.takeError()));
    return nullptr;
  }
  // The host code loads its kernels from a global constructor: the
  // emulated CUDA runtime must resolve before initialize() runs it.
  (*engine)->registerSymbols([](llvm::orc::MangleAndInterner interner) {
    return kvir::emu::Emulator::get().getRuntimeSymbols(interner);
  });
  (*engine)->initialize();
  compiled.engine = std::move(*engine);
  return &m.compiled.emplace(key, std::move(compiled)).first->second;
}

/// Keeps the emulator's counters of the launches just made for
/// kvir_last_launches_json.
void keepLaunchStats(const kvir::emu::Emulator &emu) {
  std::string launches = "[";
  for (auto [i, s] : llvm::enumerate(emu.getLaunchStats()))
    launches += (i ? ", " : "") + s.toJson();
  lastLaunches = launches + "]";
}

std::string shapeText(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(shape))
    s += (i ? ", " : "") +
         (ShapedType::isDynamic(d) ? std::string("?") : std::to_string(d));
  return s + "]";
}
} // namespace

extern "C" {

const char *kvir_last_error(void) { return lastError.c_str(); }

kvir_module_t kvir_module_parse(const char *source) {
  lastError.clear();
  if (!source) {
    fail("kvir_module_parse: no source (NULL)");
    return nullptr;
  }
  return parseModule(source, "the module");
}

kvir_module_t kvir_module_from_spec(const char *specJson) {
  lastError.clear();
  if (!specJson) {
    fail("kvir_module_from_spec: no spec (NULL)");
    return nullptr;
  }
  llvm::Expected<std::string> text = kvir::capi::buildSpecModule(specJson);
  if (!text) {
    fail(llvm::toString(text.takeError()));
    return nullptr;
  }
  return parseModule(*text, "the module built from the spec");
}

void kvir_module_destroy(kvir_module_t module) { delete module; }

char *kvir_module_to_string(kvir_module_t module) {
  if (!module)
    return nullptr;
  std::string text;
  llvm::raw_string_ostream os(text);
  module->module->print(os);
  return strdup(text.c_str());
}

void kvir_free_string(char *text) { free(text); }

int kvir_compile(kvir_module_t m, const char *chip, const char *outDir) {
  lastError.clear();
  if (!m)
    return fail("kvir_compile: no module (NULL)");
  if (!outDir)
    return fail("kvir_compile: no output directory (NULL)");
  if (!checkChip(chip))
    return -1;
  DiagnosticCollector diags(m->context.get());
  OwningOpRef<ModuleOp> module(cast<ModuleOp>(m->module->clone()));
  PassManager pm(m->context.get());
  kvir::KVToGPUPipelineOptions options;
  options.chip = chip;
  kvir::buildKVToPTXPipeline(pm, options);
  if (failed(pm.run(*module)))
    return diags.fail(std::string("compiling the module for ") + chip +
                      " failed");
  if (failed(kvir::manifest::writeOutputs(*module, outDir)))
    return diags.fail(std::string("writing the kernels to ") + outDir +
                      " failed");
  return 0;
}

int kvir_emulate(kvir_module_t m, const char *func, const char *chip,
                 const kvir_arg_t *args, int64_t numArgs) {
  lastError.clear();
  lastLaunches = "[]";
  if (!m)
    return fail("kvir_emulate: no module (NULL)");
  if (!func)
    return fail("kvir_emulate: no function name (NULL)");
  if (!checkChip(chip))
    return -1;
  const Compiled *compiled = compileForEmulator(*m, func, chip);
  if (!compiled)
    return -1;
  FunctionType type = compiled->type;
  if (numArgs != int64_t(type.getNumInputs()) || (numArgs && !args))
    return fail("kvir_emulate: '" + std::string(func) + "' takes " +
                std::to_string(type.getNumInputs()) + " arguments, got " +
                std::to_string(numArgs));
  DataLayout layout = DataLayout::closest(*m->module);
  std::vector<std::vector<int64_t>> descriptors(numArgs);
  std::vector<void *> descriptorPtrs(numArgs, nullptr);
  std::vector<float> floats(numArgs, 0.0f);
  std::vector<int64_t> ints(numArgs, 0);
  std::vector<void *> packed(numArgs, nullptr);
  std::vector<std::pair<const void *, uint64_t>> buffers;
  for (int64_t i = 0; i < numArgs; ++i) {
    Type expected = type.getInput(i);
    const kvir_arg_t &a = args[i];
    std::string which = "argument #" + std::to_string(i);
    if (auto memref = dyn_cast<MemRefType>(expected)) {
      if (a.kind != KVIR_ARG_BUFFER)
        return fail(which + ": expected a buffer for " +
                    std::string(llvm::formatv("{0}", expected)));
      if (!memref.getLayout().isIdentity())
        return fail(which + ": kvir_emulate passes contiguous buffers; the "
                            "function takes a strided memref");
      if (a.rank != memref.getRank() || (a.rank && !a.shape))
        return fail(which + ": a buffer of rank " + std::to_string(a.rank) +
                    ", expected rank " + std::to_string(memref.getRank()) +
                    " (" + shapeText(memref.getShape()) + ")");
      // A buffer without elements may have no address (an empty torch
      // tensor's is null): it gets one nothing reads.
      alignas(64) static char noElements[64];
      bool empty = llvm::any_of(ArrayRef<int64_t>(a.shape, a.rank),
                                [](int64_t n) { return n == 0; });
      void *data = a.data ? a.data : empty ? noElements : nullptr;
      if (!data)
        return fail(which + ": expected a buffer for " +
                    std::string(llvm::formatv("{0}", expected)) +
                    ", got a null pointer");
      std::vector<int64_t> &d = descriptors[i];
      d = {int64_t(reinterpret_cast<uintptr_t>(data)),
           int64_t(reinterpret_cast<uintptr_t>(data)), 0};
      int64_t elements = 1;
      for (int64_t k = 0; k < a.rank; ++k) {
        int64_t want = memref.getDimSize(k);
        if (a.shape[k] < 0 || (!ShapedType::isDynamic(want) &&
                               a.shape[k] != want))
          return fail(which + ": shape " +
                      shapeText(ArrayRef<int64_t>(a.shape, a.rank)) +
                      ", expected " + shapeText(memref.getShape()));
        d.push_back(a.shape[k]);
        elements *= a.shape[k];
      }
      int64_t stride = 1;
      std::vector<int64_t> strides(a.rank);
      for (int64_t k = a.rank - 1; k >= 0; --k) {
        strides[k] = stride;
        stride *= a.shape[k];
      }
      d.insert(d.end(), strides.begin(), strides.end());
      uint64_t bytes =
          elements * layout.getTypeSize(memref.getElementType()).getFixedValue();
      buffers.push_back({data, bytes ? bytes : 1});
      descriptorPtrs[i] = d.data();
      packed[i] = &descriptorPtrs[i];
    } else if (expected.isF32()) {
      if (a.kind != KVIR_ARG_F32)
        return fail(which + ": expected an f32 scalar");
      floats[i] = float(a.scalar);
      packed[i] = &floats[i];
    } else if (expected.isIndex() || expected.isSignlessInteger(64)) {
      if (a.kind != KVIR_ARG_INDEX)
        return fail(which + ": expected an index scalar");
      ints[i] = int64_t(a.scalar);
      packed[i] = &ints[i];
    } else {
      return fail(which + ": kvir_emulate cannot pass a " +
                  std::string(llvm::formatv("{0}", expected)));
    }
  }
  kvir::emu::Emulator &emu = kvir::emu::Emulator::get();
  emu.clearResults();
  for (auto [ptr, bytes] : buffers)
    emu.registerAllocation(ptr, bytes, "kvir_emulate buffer");
  llvm::Error err =
      compiled->engine->invokePacked(std::string("_mlir_ciface_") + func,
                                     packed);
  for (auto [ptr, bytes] : buffers)
    emu.unregisterAllocation(ptr);
  keepLaunchStats(emu);
  if (err)
    return fail("calling '" + std::string(func) +
                "' failed: " + llvm::toString(std::move(err)));
  if (!emu.getReports().empty()) {
    std::string text = "a kernel failed the emulator's checks:";
    for (const std::string &r : emu.getReports())
      text += "\n" + r;
    return fail(text);
  }
  return 0;
}

char *kvir_last_launches_json(void) { return strdup(lastLaunches.c_str()); }

int kvir_emulator_load(kvir_module_t m, const char *func, const char *chip) {
  lastError.clear();
  if (!m || !func)
    return fail("kvir_emulator_load: no module or function (NULL)");
  if (!checkChip(chip))
    return -1;
  return compileForEmulator(*m, func, chip) ? 0 : -1;
}

int64_t kvir_emulator_kernel_params(const char *kernel) {
  if (!kernel)
    return -1;
  std::optional<std::vector<uint32_t>> params =
      kvir::emu::Emulator::get().getKernelParamBytes(kernel);
  return params ? int64_t(params->size()) : -1;
}

void kvir_emulator_register(const void *ptr, uint64_t bytes) {
  kvir::emu::Emulator::get().registerAllocation(ptr, bytes ? bytes : 1,
                                                "kvir_emulator_register");
}

void kvir_emulator_unregister(const void *ptr) {
  kvir::emu::Emulator::get().unregisterAllocation(ptr);
}

int kvir_emulator_encode_tensor_map(void *map, int dataType, unsigned rank,
                                    void *address, const uint64_t *dims,
                                    const uint64_t *strides,
                                    const unsigned *box,
                                    const unsigned *elementStrides,
                                    int interleave, int swizzle,
                                    int l2Promotion, int oobFill) {
  lastError.clear();
  if (!map || !dims || !box || !elementStrides || (rank > 1 && !strides))
    return fail("kvir_emulator_encode_tensor_map: a required argument is "
                "NULL");
  std::string error = kvir::emu::encodeTensorMapTiled(
      map, uint32_t(dataType), rank, address, dims, strides, box,
      elementStrides, uint32_t(interleave), uint32_t(swizzle),
      uint32_t(l2Promotion), uint32_t(oobFill));
  if (!error.empty())
    return fail("kvir_emulator_encode_tensor_map: " + error);
  return 0;
}

int kvir_emulator_launch(const char *kernel, const uint32_t grid[3],
                         const uint32_t block[3], uint32_t dynamicShared,
                         void **params, int64_t numParams) {
  return kvir_emulator_launch_ex(kernel, grid, block, dynamicShared, params,
                                 numParams, 0);
}

int kvir_emulator_can_check_dependent_launch(void) {
  return kvir::emu::Emulator::get().canCheckDependentLaunch() ? 1 : 0;
}

int kvir_emulator_launch_ex(const char *kernel, const uint32_t grid[3],
                            const uint32_t block[3], uint32_t dynamicShared,
                            void **params, int64_t numParams, uint32_t flags) {
  lastError.clear();
  lastLaunches = "[]";
  if (!kernel || !grid || !block || (numParams && !params))
    return fail("kvir_emulator_launch: a required argument is NULL");
  if (flags & ~KVIR_LAUNCH_PROGRAMMATIC_DEPENDENT)
    return fail("kvir_emulator_launch_ex: unknown launch flags 0x" +
                llvm::utohexstr(flags & ~KVIR_LAUNCH_PROGRAMMATIC_DEPENDENT));
  kvir::emu::Emulator &emu = kvir::emu::Emulator::get();
  std::optional<std::vector<uint32_t>> expected =
      emu.getKernelParamBytes(kernel);
  if (!expected)
    return fail(std::string("kvir_emulator_launch: no loaded kernel '") +
                kernel + "' (kvir_emulator_load its module first)");
  if (int64_t(expected->size()) != numParams)
    return fail(std::string("kvir_emulator_launch: kernel '") + kernel +
                "' takes " + std::to_string(expected->size()) +
                " parameters, got " + std::to_string(numParams));
  for (int k = 0; k < 3; ++k)
    if (!grid[k] || !block[k])
      return fail(std::string("kvir_emulator_launch: kernel '") + kernel +
                  "': an empty grid or block");
  emu.clearResults();
  llvm::LogicalResult result =
      emu.launch(kernel, {grid[0], grid[1], grid[2]},
                 {block[0], block[1], block[2]}, dynamicShared, params,
                 {{}, bool(flags & KVIR_LAUNCH_PROGRAMMATIC_DEPENDENT)});
  keepLaunchStats(emu);
  if (failed(result) || !emu.getReports().empty()) {
    std::string text = std::string("kernel '") + kernel +
                       "' failed the emulator's checks:";
    for (const std::string &r : emu.getReports())
      text += "\n" + r;
    return fail(text);
  }
  return 0;
}

} // extern "C"
