//===- Jit.cpp - JIT-compile kv functions through kv-to-loops -------------===//
#include "Jit.h"

#include "kvir/Pipelines/Pipelines.h"
#include "kvir/Registration/InitAll.h"

#include "kvir/Target/Host/JitTarget.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

using namespace kvir::test;

static JitStats stats;

const JitStats &kvir::test::getJitStats() { return stats; }

static void initializeNativeTarget() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

JitKernel::~JitKernel() = default;

llvm::Expected<std::unique_ptr<JitKernel>>
JitKernel::compile(const std::string &source, const std::string &funcName) {
  initializeNativeTarget();
  mlir::DialectRegistry registry;
  kvir::registerAllDialects(registry);
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();

  std::string diagnostics;
  llvm::raw_string_ostream diagStream(diagnostics);
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &diag) {
    diagStream << diag.getLocation() << ": " << diag << "\n";
    for (mlir::Diagnostic &note : diag.getNotes())
      diagStream << "  note: " << note << "\n";
    return mlir::success();
  });
  auto fail = [&](const char *what) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "%s:\n%s\n--- source ---\n%s", what,
                                   diagnostics.c_str(), source.c_str());
  };

  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(source, &context);
  if (!module)
    return fail("failed to parse the test function");
  mlir::PassManager pm(&context);
  kvir::buildKVLowerToLLVMPipeline(pm);
  if (mlir::failed(pm.run(*module)))
    return fail("kv-to-LLVM pipeline failed");

  // Moderate optimization keeps both compile time (tens of milliseconds per
  // kernel) and run time of the scalar loop nests small.
  auto engine = kvir::target::createJitEngine(*module, /*irOptLevel=*/1,
                                              llvm::CodeGenOptLevel::Less);
  if (!engine) {
    std::string message = llvm::toString(engine.takeError());
    diagStream << message;
    return fail("ExecutionEngine creation failed");
  }
  (*engine)->initialize();

  auto kernel = std::unique_ptr<JitKernel>(new JitKernel());
  kernel->engine = std::move(*engine);
  kernel->funcName = funcName;
  return kernel;
}

llvm::Error JitKernel::call(llvm::ArrayRef<KernelArg> args) const {
  // Each C-interface argument is a pointer to a memref descriptor (or an f32
  // by value); invokePacked takes a pointer to each argument.
  std::vector<std::vector<int64_t>> descriptors;
  descriptors.reserve(args.size());
  std::vector<void *> descriptorPtrs(args.size(), nullptr);
  std::vector<float> scalars(args.size(), 0.0f);
  std::vector<void *> packed(args.size(), nullptr);
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].kind == KernelArg::Kind::F32) {
      scalars[i] = args[i].scalar;
      packed[i] = &scalars[i];
      continue;
    }
    descriptors.push_back(args[i].tensor.descriptor());
    descriptorPtrs[i] = descriptors.back().data();
    packed[i] = &descriptorPtrs[i];
  }
  return engine->invokePacked("_mlir_ciface_" + funcName, packed);
}

static std::map<std::string, std::unique_ptr<JitKernel>> &kernelCache() {
  static std::map<std::string, std::unique_ptr<JitKernel>> cache;
  return cache;
}

void kvir::test::clearKernelCache() { kernelCache().clear(); }

namespace {
/// Destroys the compiled kernels when the tests are done, before static
/// destruction. An ExecutionEngine torn down from exit() (a static cache's
/// destructor) runs its JIT deinitializers too late: LLVM then reports a
/// spurious codegen error and the process exits with status 1.
class KernelCacheEnvironment : public ::testing::Environment {
public:
  void TearDown() override {
    if (std::getenv("KVIR_UNIT_VERBOSE"))
      std::printf("kvir-unit-tests: %d kernels JIT-compiled in %.2f s\n",
                  stats.compiles, stats.seconds);
    clearKernelCache();
  }
};

[[maybe_unused]] ::testing::Environment *const kernelCacheEnvironment =
    ::testing::AddGlobalTestEnvironment(new KernelCacheEnvironment);
} // namespace

llvm::Expected<const JitKernel *>
kvir::test::getKernel(const std::string &source, const std::string &funcName) {
  auto &cache = kernelCache();
  auto it = cache.find(source);
  if (it != cache.end())
    return it->second.get();
  auto start = std::chrono::steady_clock::now();
  auto kernel = JitKernel::compile(source, funcName);
  if (!kernel)
    return kernel.takeError();
  stats.compiles++;
  stats.seconds += std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count();
  const JitKernel *result = kernel->get();
  cache.emplace(source, std::move(*kernel));
  return result;
}
