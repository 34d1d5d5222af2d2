//===- GpuHarness.cpp - kv functions as emulated GPU kernels --------------===//
#include "GpuHarness.h"
#include "CaseDump.h"
#include "Golden.h"
#include "kvir/Runtime/WorkSchedule.h"

#include "kvir/Pipelines/Pipelines.h"
#include "kvir/Target/GPU/TargetInfo.h"
#include "kvir/Target/Manifest/Manifest.h"
#include "kvir/Emulator/HostLowering.h"
#include "kvir/Registration/InitAll.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "kvir/Target/Host/JitTarget.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <mutex>
#include <sstream>
#include <tuple>

using namespace kvir::test;
using namespace kvir::test::gpu;

static mlir::MLIRContext &context() {
  static mlir::MLIRContext *ctx = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    mlir::DialectRegistry registry;
    kvir::registerEverything(registry);
    auto *c = new mlir::MLIRContext(registry);
    c->loadAllAvailableDialects();
    return c;
  }();
  return *ctx;
}

GpuKernel::~GpuKernel() = default;

llvm::Expected<std::unique_ptr<GpuKernel>>
GpuKernel::compile(const std::string &source, const std::string &funcName,
                   const std::string &chip,
                   const std::vector<std::string> &mustLower,
                   int64_t graphMaxBatch) {
  mlir::MLIRContext &ctx = context();
  std::string diagnostics;
  llvm::raw_string_ostream diagStream(diagnostics);
  mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &diag) {
    diagStream << diag.getLocation() << ": " << diag << "\n";
    for (mlir::Diagnostic &note : diag.getNotes())
      diagStream << "  note: " << note << "\n";
    return mlir::success();
  });
  auto fail = [&](const std::string &what) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "%s:\n%s\n--- source ---\n%s", what.c_str(),
                                   diagnostics.c_str(), source.c_str());
  };

  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(source, &ctx);
  if (!module)
    return fail("failed to parse the test function");

  auto kernel = std::unique_ptr<GpuKernel>(new GpuKernel());
  kernel->funcName = funcName;
  {
    // kv-to-nvvm's kv-level lowering, without host loops: an op that gets
    // no kernel fails the compile with the pass's diagnostic.
    mlir::PassManager pm(&ctx);
    kvir::KVToGPUPipelineOptions options;
    GpuTarget target = parseGpuTarget(chip);
    options.chip = target.chip;
    options.mma = target.mma;
    options.graphMaxBatch = graphMaxBatch;
    kvir::buildKVToGPUPipeline(pm, options);
    if (mlir::failed(pm.run(*module)))
      return fail("kvir's GPU lowering failed");
  }
  LoweringSummary &s = kernel->lowering;
  module->walk([&](mlir::Operation *op) {
    if (llvm::isa<mlir::gpu::LaunchFuncOp>(op))
      ++s.launches;
    if (auto fn = llvm::dyn_cast<mlir::gpu::GPUFuncOp>(op)) {
      ++s.kernels;
      s.kernelNames.push_back(fn.getName().str());
    }
    for (const std::string &name : mustLower)
      if (op->getName().getStringRef() == name)
        ++s.leftover;
  });
  s.plans = kvir::manifest::getLaunchPlans(*module);
  if (s.leftover || !s.launches || !s.kernels) {
    std::string text;
    llvm::raw_string_ostream os(text);
    module->print(os);
    return fail("the GPU lowering left " + std::to_string(s.leftover) +
                " op(s) on the host and built " + std::to_string(s.launches) +
                " launches; after it:\n" + text);
  }
  kvir::emu::Emulator::get().options().exitOnError = false;
  kvir::emu::Emulator::get().options().rejectLibdevice = true;
  // Every sm_90 kernel launched as a programmatic dependent of the grid
  // before it, as a host may: what it touches before griddepcontrol.wait
  // is checked against that grid.
  kvir::emu::Emulator::get().options().launchWaitingKernelsAsDependents = true;
  if (mlir::failed(kvir::emu::lowerHostForEmulator(*module)))
    return fail("lowering the host code for the emulator failed");

  mlir::ExecutionEngineOptions options;
  options.enablePerfNotificationListener = false;
  // The host code only allocates and launches: no need to optimize it.
  auto engine = kvir::target::createJitEngine(
      *module, /*irOptLevel=*/0, llvm::CodeGenOptLevel::None, options);
  if (!engine) {
    diagStream << llvm::toString(engine.takeError());
    return fail("ExecutionEngine creation failed");
  }
  // gpu-to-llvm loads the kernel module from a global constructor: the
  // emulated CUDA runtime must resolve before initialize() runs it.
  (*engine)->registerSymbols([](llvm::orc::MangleAndInterner interner) {
    return kvir::emu::Emulator::get().getRuntimeSymbols(interner);
  });
  (*engine)->initialize();
  kernel->engine = std::move(*engine);
  return kernel;
}

llvm::Error GpuKernel::call(llvm::ArrayRef<KernelArg> args) const {
  kvir::emu::Emulator &emu = kvir::emu::Emulator::get();
  std::vector<const void *> registered;
  for (const KernelArg &a : args) {
    if (a.kind != KernelArg::Kind::Memref)
      continue;
    const Tensor &t = a.tensor;
    emu.registerAllocation(
        t.data(), uint64_t(t.allocationElements()) * byteSize(t.dtype()),
        "test tensor");
    registered.push_back(t.data());
  }
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
  llvm::Error err = engine->invokePacked("_mlir_ciface_" + funcName, packed);
  for (const void *p : registered)
    emu.unregisterAllocation(p);
  return err;
}

namespace {
using CacheKey = std::tuple<std::string, std::string, int64_t>;
std::map<CacheKey, std::unique_ptr<GpuKernel>> &kernelCache() {
  static std::map<CacheKey, std::unique_ptr<GpuKernel>> cache;
  return cache;
}

/// Destroys the host engines before static destruction (see test/Unit's
/// Jit.cpp: an ExecutionEngine torn down from exit() fails spuriously).
class GpuKernelCacheEnvironment : public ::testing::Environment {
public:
  void TearDown() override { kernelCache().clear(); }
};

[[maybe_unused]] ::testing::Environment *const gpuCacheEnvironment =
    ::testing::AddGlobalTestEnvironment(new GpuKernelCacheEnvironment);
} // namespace

void kvir::test::gpu::clearGpuKernelCache() { kernelCache().clear(); }

llvm::Expected<const GpuKernel *> kvir::test::gpu::getGpuKernel(
    const std::string &source, const std::string &funcName,
    const std::string &chip, const std::vector<std::string> &mustLower,
    int64_t graphMaxBatch) {
  auto &cache = kernelCache();
  CacheKey key{source, chip, graphMaxBatch};
  auto it = cache.find(key);
  if (it != cache.end())
    return it->second.get();
  auto kernel =
      GpuKernel::compile(source, funcName, chip, mustLower, graphMaxBatch);
  if (!kernel)
    return kernel.takeError();
  const GpuKernel *result = kernel->get();
  cache.emplace(key, std::move(*kernel));
  return result;
}

std::vector<std::string> RunResult::kernelNames() const {
  std::vector<std::string> names;
  for (const auto &l : launches)
    names.push_back(l.kernel);
  return names;
}

std::string RunResult::describeLaunches() const {
  std::string s;
  for (const auto &l : launches)
    s += "  " + l.toJson() + "\n";
  return s;
}

::testing::AssertionResult kvir::test::gpu::runGpu(
    const KernelSource &src, const std::vector<Tensor> &outputs,
    const std::string &chip, const std::vector<std::string> &mustLower,
    RunResult &result, int64_t graphMaxBatch) {
  for (Tensor t : outputs)
    t.poison();
  std::string text = src.text();
  collectModule(text, chip, graphMaxBatch);
  auto kernel =
      getGpuKernel(text, src.getName(), chip, mustLower, graphMaxBatch);
  if (!kernel)
    return ::testing::AssertionFailure() << llvm::toString(kernel.takeError());
  kvir::emu::Emulator &emu = kvir::emu::Emulator::get();
  emu.options().exitOnError = false;
  emu.options().recordLaunches = caseDumpEnabled();
  emu.clearResults();
  std::vector<std::string> argumentsBefore;
  if (golden::enabled())
    argumentsBefore = golden::describeArguments(src);
  llvm::Error err = (*kernel)->call(src.args());
  if (!err && caseDumpEnabled())
    dumpCase(src, chip, graphMaxBatch);
  result.kernel = *kernel;
  result.launches = emu.getLaunchStats();
  result.reports = emu.getReports();
  emu.clearResults();
  if (!err && golden::enabled())
    golden::recordCall(src, argumentsBefore, outputs, result);
  if (err)
    return ::testing::AssertionFailure()
           << "call failed: " << llvm::toString(std::move(err)) << "\n"
           << text;
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult kvir::test::gpu::noReports(const RunResult &result) {
  if (result.reports.empty())
    return ::testing::AssertionSuccess();
  auto failure = ::testing::AssertionFailure();
  failure << result.reports.size() << " emulator report(s):\n";
  for (size_t i = 0; i < result.reports.size() && i < 5; ++i)
    failure << result.reports[i] << "\n";
  return failure;
}

double kvir::test::gpu::maxRelativeError(const StateBuffers &got,
                                        const ref::State &expected) {
  double rel = 0.0;
  for (int64_t r = 0; r < expected.rows; ++r)
    for (int64_t h = 0; h < expected.heads; ++h) {
      double refMax = 0.0, err = 0.0;
      for (int64_t d = 0; d < expected.headDimV; ++d) {
        double e = expected.out(r, h, d), g = got.o.get({r, h, d});
        refMax = std::max(refMax, std::fabs(e));
        err = std::max(err, std::isnan(g) ? INFINITY : std::fabs(g - e));
      }
      rel = std::max(rel, err / std::max(refMax, 1e-4));
    }
  return rel;
}

::testing::AssertionResult
kvir::test::gpu::compareGpuState(const StateBuffers &got,
                                 const ref::State &expected, DType outputType,
                                 double lseTolerance) {
  double tol = outputTolerance(outputType);
  int64_t rows = expected.rows, heads = expected.heads, dv = expected.headDimV;
  dumpStateCheck(got, expected, tol, lseTolerance);
  if (got.o.rank() != 3 || got.o.dim(0) != rows || got.o.dim(1) != heads ||
      got.o.dim(2) != dv)
    return ::testing::AssertionFailure() << "state buffer shape mismatch";
  const double inf = std::numeric_limits<double>::infinity();
  int failures = 0;
  double worstO = 0.0, worstLse = 0.0;
  std::ostringstream os;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < heads; ++h) {
      double refLse = expected.lseAt(r, h), gotLse = got.lse.get({r, h});
      bool empty = refLse == -inf;
      double refMax = 0.0, err = 0.0;
      bool zeros = true, nan = std::isnan(gotLse);
      for (int64_t d = 0; d < dv; ++d) {
        double g = got.o.get({r, h, d}), e = expected.out(r, h, d);
        nan |= std::isnan(g);
        zeros &= g == 0.0;
        refMax = std::max(refMax, std::fabs(e));
        err = std::max(err, std::isnan(g) ? inf : std::fabs(g - e));
      }
      double rel = err / std::max(refMax, 1e-4);
      double lseErr = empty ? 0.0 : std::fabs(gotLse - refLse);
      bool ok = !nan &&
                (empty ? zeros && gotLse == -inf
                       : rel <= tol && std::isfinite(gotLse) &&
                             lseErr <= lseTolerance);
      if (!empty) {
        worstO = std::max(worstO, rel);
        worstLse = std::max(worstLse, lseErr);
      }
      if (!ok && failures++ < 8)
        os << "  row " << r << " head " << h << ": lse got " << gotLse
           << " ref " << refLse
           << (empty ? " (empty: needs o == 0, lse == -inf)" : "")
           << "; o rel err " << rel << " (tol " << tol << ")"
           << (nan ? " NaN" : "") << "\n";
    }
  if (failures)
    return ::testing::AssertionFailure()
           << failures << " of " << rows * heads
           << " (row, head) pairs differ from the reference:\n"
           << os.str();
  return ::testing::AssertionSuccess()
         << "max rel err " << worstO << ", max lse err " << worstLse;
}

kvir::test::gpu::GpuTarget
kvir::test::gpu::parseGpuTarget(const std::string &target) {
  size_t slash = target.find('/');
  if (slash == std::string::npos)
    return {target};
  return {target.substr(0, slash), target.substr(slash + 1)};
}

int64_t kvir::test::gpu::smCountOf(const std::string &chip) {
  if (const kvir::target::TargetInfo *t =
          kvir::target::TargetInfo::lookup(parseGpuTarget(chip).chip))
    return t->smCount;
  ADD_FAILURE() << "unknown chip " << chip;
  return 1;
}

std::optional<int64_t>
RunResult::scheduledItems(llvm::StringRef op,
                          const std::vector<int64_t> &kvLens) const {
  if (!kernel)
    return std::nullopt;
  for (kvir::kvgpu::LaunchPlanAttr plan : kernel->summary().plans) {
    kvir::kvgpu::WorkScheduleAttr s = plan.getSchedule();
    if (plan.getOp() != op || !s || s.isPrefill())
      continue;
    int64_t batch = kvLens.size();
    std::optional<int64_t> uniform =
        planSize(op, s.getUniformChunks(), {{s.getBatch().str(), batch}});
    if (!uniform)
      return std::nullopt;
    int64_t maxItems =
        kvir_schedule_max_items(batch, s.getTargetItems(), *uniform);
    std::vector<int32_t> lengths(kvLens.begin(), kvLens.end());
    std::vector<int32_t> items(maxItems * KVIR_WORK_FIELDS), indptr(batch + 1);
    int64_t n = kvir_schedule_work(lengths.data(), batch, s.getWindowLeft(),
                                   s.getTargetItems(), s.getGranule(),
                                   s.getMinChunk(), *uniform, maxItems,
                                   items.data(), indptr.data());
    if (n < 0)
      return std::nullopt;
    return n;
  }
  return std::nullopt;
}

std::optional<RunResult::PrefillScheduleCounts> RunResult::scheduledPrefill(
    llvm::StringRef op, const std::vector<int32_t> &qoIndptr,
    const std::vector<int64_t> &kvLens,
    const std::map<std::string, int64_t> &inputs) const {
  if (!kernel)
    return std::nullopt;
  for (kvir::kvgpu::LaunchPlanAttr plan : kernel->summary().plans) {
    kvir::kvgpu::WorkScheduleAttr s = plan.getSchedule();
    if (plan.getOp() != op || !s || !s.isPrefill())
      continue;
    std::optional<int64_t> maxItems = planSize(op, "max_work", inputs);
    if (!maxItems)
      return std::nullopt;
    std::optional<int64_t> limit = -1;
    if (!s.getWorkspaceLimit().empty())
      limit = planSize(op, s.getWorkspaceLimit(), inputs);
    if (!limit)
      return std::nullopt;
    int64_t batch = kvLens.size();
    std::vector<int32_t> lengths(kvLens.begin(), kvLens.end());
    // The rows of the buffers (the plan's nnz), at least the requests'.
    auto rows = inputs.find("nnz");
    int64_t numRows = rows == inputs.end() ? qoIndptr.back() : rows->second;
    std::vector<int32_t> items(*maxItems * KVIR_PREFILL_WORK_FIELDS),
        indptr(numRows + 1);
    PrefillScheduleCounts counts;
    counts.items = kvir_schedule_prefill_work(
        qoIndptr.data(), lengths.data(), batch, numRows, s.getTileRows(),
        s.getCausal(),
        s.getWindowLeft(), s.getTargetItems(), s.getGranule(),
        s.getMinChunk(), *maxItems, *limit, items.data(), indptr.data(),
        &counts.tiles);
    counts.partialRows = indptr.back();
    if (counts.items < 0)
      return std::nullopt;
    return counts;
  }
  return std::nullopt;
}

std::string RunResult::planConfig(llvm::StringRef op) const {
  if (!kernel)
    return "";
  for (kvir::kvgpu::LaunchPlanAttr plan : kernel->summary().plans) {
    if (plan.getOp() != op || !plan.getConfig())
      continue;
    std::string text;
    llvm::raw_string_ostream os(text);
    os << plan.getConfig();
    return text;
  }
  return "";
}

std::optional<int64_t> RunResult::planSize(
    llvm::StringRef op, llvm::StringRef size,
    const std::map<std::string, int64_t> &inputs) const {
  if (!kernel)
    return std::nullopt;
  for (kvir::kvgpu::LaunchPlanAttr plan : kernel->summary().plans) {
    if (plan.getOp() != op)
      continue;
    llvm::StringMap<int64_t> values;
    for (const auto &[name, value] : inputs)
      values[name] = value;
    for (kvir::kvgpu::SizeDefAttr def : plan.getSizes()) {
      if (!def.getArg().empty() || values.count(def.getName()))
        continue;
      std::optional<int64_t> v = def.getValue().evaluate(
          [&](llvm::StringRef s) -> std::optional<int64_t> {
            auto it = values.find(s);
            if (it == values.end())
              return std::nullopt;
            return it->second;
          });
      if (v)
        values[def.getName()] = *v;
    }
    auto it = values.find(size);
    if (it != values.end())
      return it->second;
  }
  return std::nullopt;
}

int64_t kvir::test::gpu::envInteger(const char *name, int64_t fallback) {
  const char *value = std::getenv(name);
  return value ? std::strtoll(value, nullptr, 10) : fallback;
}

bool kvir::test::gpu::isSplitKernel(const std::string &name) {
  std::string stem = name.substr(0, name.rfind('_'));
  return stem.size() >= 6 && stem.compare(stem.size() - 6, 6, "_split") == 0;
}
