//===- JitTarget.cpp - The CPU kvir's JIT compilers generate code for -----===//
#include "kvir/Target/Host/JitTarget.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"

#include <cstdlib>

using namespace kvir::target;

static llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

static llvm::Triple hostTriple() {
  return llvm::Triple(llvm::sys::getProcessTriple());
}

JitTarget JitTarget::host() {
  JitTarget target;
  target.cpu = llvm::sys::getHostCPUName().str();
  llvm::SubtargetFeatures features;
  for (auto &feature : llvm::sys::getHostCPUFeatures())
    features.AddFeature(feature.first(), feature.second);
  target.features = features.getString();
  target.isHost = true;
  return target;
}

/// The subtarget information of the host's architecture, to check names.
static llvm::Expected<std::unique_ptr<llvm::MCSubtargetInfo>>
hostSubtargetInfo() {
  llvm::InitializeNativeTarget();
  llvm::Triple triple = hostTriple();
  std::string message;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, message);
  if (!target)
    return error("no LLVM target for the host triple " + triple.str() + ": " +
                 message);
  return std::unique_ptr<llvm::MCSubtargetInfo>(
      target->createMCSubtargetInfo(triple, "", ""));
}

llvm::Expected<JitTarget> JitTarget::parse(llvm::StringRef spec) {
  spec = spec.trim();
  if (spec.empty() || spec == "host")
    return host();
  auto [cpu, features] = spec.split(':');
  auto info = hostSubtargetInfo();
  if (!info)
    return info.takeError();
  if (!(*info)->isCPUStringValid(cpu)) {
    std::string known;
    for (const llvm::SubtargetSubTypeKV &kv :
         (*info)->getAllProcessorDescriptions())
      if (llvm::StringRef(kv.Key).starts_with("x86-64") ||
          llvm::StringRef(kv.Key) == "generic")
        known += (known.empty() ? "" : ", ") + std::string(kv.Key);
    return error("'" + cpu + "' is not a CPU of " + hostTriple().str() +
                 " (expected 'host', an LLVM CPU name such as " +
                 (known.empty() ? std::string("generic") : known) +
                 ", optionally followed by ':' and features like "
                 "+f16c,-fma)");
  }
  llvm::StringSet<> known;
  for (const llvm::SubtargetFeatureKV &kv : (*info)->getAllProcessorFeatures())
    known.insert(kv.Key);
  llvm::SmallVector<llvm::StringRef> list;
  features.split(list, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef feature : list) {
    feature = feature.trim();
    if ((!feature.starts_with("+") && !feature.starts_with("-")) ||
        !known.contains(feature.drop_front()))
      return error("'" + feature + "' is not a feature of " +
                   hostTriple().str() +
                   " (expected +name or -name, e.g. +f16c or -avx512f)");
  }
  JitTarget target;
  target.cpu = cpu.str();
  target.features = features.trim().str();
  target.isHost = false;
  return target;
}

llvm::Expected<JitTarget> JitTarget::fromEnvironment() {
  const char *spec = std::getenv(kJitCpuVariable);
  if (!spec)
    return host();
  auto target = parse(spec);
  if (!target)
    return error(llvm::Twine(kJitCpuVariable) + "=" + spec + ": " +
                 llvm::toString(target.takeError()));
  return target;
}

llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
JitTarget::createTargetMachine(llvm::CodeGenOptLevel level) const {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::orc::JITTargetMachineBuilder builder(hostTriple());
  builder.setCPU(cpu);
  builder.getFeatures() = llvm::SubtargetFeatures(features);
  builder.setCodeGenOptLevel(level);
  return builder.createTargetMachine();
}

void JitTarget::pinFunctions(llvm::Module &module) const {
  for (llvm::Function &fn : module) {
    if (fn.isDeclaration())
      continue;
    fn.addFnAttr("target-cpu", cpu);
    fn.addFnAttr("tune-cpu", cpu);
    fn.addFnAttr("target-features", features);
  }
}

std::string JitTarget::describe() const {
  if (isHost)
    return "host (" + cpu + ")";
  return features.empty() ? cpu : cpu + ":" + features;
}

llvm::Expected<std::unique_ptr<mlir::ExecutionEngine>>
kvir::target::createJitEngine(mlir::Operation *module, unsigned irOptLevel,
                              llvm::CodeGenOptLevel codegenLevel,
                              mlir::ExecutionEngineOptions options) {
  auto target = JitTarget::fromEnvironment();
  if (!target)
    return target.takeError();
  return createJitEngine(module, *target, irOptLevel, codegenLevel, options);
}

llvm::Expected<std::unique_ptr<mlir::ExecutionEngine>>
kvir::target::createJitEngine(mlir::Operation *module, const JitTarget &target,
                              unsigned irOptLevel,
                              llvm::CodeGenOptLevel codegenLevel,
                              mlir::ExecutionEngineOptions options) {
  auto machine = target.createTargetMachine(codegenLevel);
  if (!machine)
    return machine.takeError();
  // The engine compiles with `machine`; options.jitCodeGenOptLevel would
  // only apply to a machine it made itself.
  std::function<llvm::Error(llvm::Module *)> optimize =
      mlir::makeOptimizingTransformer(irOptLevel, /*sizeLevel=*/0,
                                      /*targetMachine=*/nullptr);
  std::function<llvm::Error(llvm::Module *)> transform =
      [&](llvm::Module *m) {
        target.pinFunctions(*m);
        return optimize(m);
      };
  // options.transformer is a function_ref: `transform` outlives create().
  options.transformer = transform;
  options.jitCodeGenOptLevel = codegenLevel;
  return mlir::ExecutionEngine::create(module, options, std::move(*machine));
}
