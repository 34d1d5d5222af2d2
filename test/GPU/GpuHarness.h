//===- GpuHarness.h - kv functions as emulated GPU kernels ------*- C++ -*-===//
//
// Runs the test functions of test/Unit's harness (KernelSource: kv.paged_view
// + an op + kv.store_state, every buffer an argument) through
// convert-kv-to-gpu instead of kv-to-loops: the kernels run in kvir's
// emulator (lib/Emulator), the host launch code is JIT-compiled with MLIR's
// ExecutionEngine. Each compile checks that the ops under test really became
// kernel launches (no silent fallback to host loops); each call records the
// emulator's per-launch counters and reports (memcheck, racecheck, barrier).
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_TEST_GPU_GPUHARNESS_H
#define KVIR_TEST_GPU_GPUHARNESS_H

#include "Harness/Harness.h"

#include "kvir/Dialect/KVGPU/IR/KVGPUDialect.h"
#include "kvir/Emulator/Emulator.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir {
class ExecutionEngine;
} // namespace mlir

namespace kvir::test::gpu {

/// What convert-kv-to-gpu made of a test function.
struct LoweringSummary {
  /// gpu.launch_func ops in the host code and gpu.func kernels built.
  int launches = 0, kernels = 0;
  /// kv ops of the kinds the test expects lowered that are still there.
  int leftover = 0;
  std::vector<std::string> kernelNames;
  /// The module's launch plans.
  llvm::SmallVector<kvgpu::LaunchPlanAttr> plans;
};

class GpuKernel {
public:
  ~GpuKernel();
  /// Parses `source`, runs kv-to-nvvm's kv-level lowering for `chip`
  /// (buildKVToGPUPipeline: no host loops, so an op without a kernel fails
  /// the compile), prepares the kernels for the emulator and JIT-compiles
  /// the host code. Fails if an op named in `mustLower` (e.g. "kv.decode")
  /// is left or no kernel is launched.
  static llvm::Expected<std::unique_ptr<GpuKernel>>
  compile(const std::string &source, const std::string &funcName,
          const std::string &chip, const std::vector<std::string> &mustLower,
          int64_t graphMaxBatch = 0);

  /// Calls the function. The tensors of `args` are registered with the
  /// emulator as live allocations for the call.
  llvm::Error call(llvm::ArrayRef<KernelArg> args) const;

  const LoweringSummary &summary() const { return lowering; }

private:
  GpuKernel() = default;
  std::unique_ptr<mlir::ExecutionEngine> engine;
  std::string funcName;
  LoweringSummary lowering;
};

/// The compiled kernel for (source, chip), compiled once per process.
llvm::Expected<const GpuKernel *>
getGpuKernel(const std::string &source, const std::string &funcName,
             const std::string &chip, const std::vector<std::string> &mustLower,
             int64_t graphMaxBatch = 0);

/// Destroys every cached kernel (done by a gtest environment at the end of
/// a test run; programs without gtest's main call it before exiting).
void clearGpuKernelCache();

/// Clears the kernel cache when it goes out of scope: programs without
/// gtest's main hold one in main(), so that every return destroys the host
/// engines before static destruction.
struct GpuKernelCacheScope {
  GpuKernelCacheScope() = default;
  GpuKernelCacheScope(const GpuKernelCacheScope &) = delete;
  GpuKernelCacheScope &operator=(const GpuKernelCacheScope &) = delete;
  ~GpuKernelCacheScope() { clearGpuKernelCache(); }
};

/// The launches and reports of one call.
struct RunResult {
  std::vector<emu::LaunchStats> launches;
  std::vector<std::string> reports;
  const GpuKernel *kernel = nullptr;

  /// Names of the launched kernels, in order.
  std::vector<std::string> kernelNames() const;
  std::string describeLaunches() const;
  /// Size `size` of the launch plan of the first `op` (e.g. "kv.decode",
  /// "num_partitions"), evaluated from `inputs` (e.g. {"batch", 4}) with
  /// the plan's own expressions.
  std::optional<int64_t> planSize(llvm::StringRef op, llvm::StringRef size,
                                  const std::map<std::string, int64_t> &inputs) const;
  /// The items and query tiles the prefill work schedule of the first
  /// `op`'s plan gives a batch of `qoIndptr` rows and `kvLens` keys
  /// (kvir_schedule_prefill_work with the plan's parameters; `inputs` the
  /// sizes the plan reads from its arguments), or nullopt without one.
  struct PrefillScheduleCounts {
    /// Items, query tiles and the workspace rows the cut tiles take.
    int64_t items = 0, tiles = 0, partialRows = 0;
    bool cut() const { return items > tiles; }
  };
  std::optional<PrefillScheduleCounts>
  scheduledPrefill(llvm::StringRef op, const std::vector<int32_t> &qoIndptr,
                   const std::vector<int64_t> &kvLens,
                   const std::map<std::string, int64_t> &inputs) const;
  /// The configuration of the first `op`'s plan as MLIR prints it ("" if
  /// none).
  std::string planConfig(llvm::StringRef op) const;
  /// The items the work schedule of the first `op`'s plan gives requests
  /// of `kvLens` (kvir_schedule_work with the plan's parameters).
  std::optional<int64_t> scheduledItems(llvm::StringRef op,
                                        const std::vector<int64_t> &kvLens) const;
};

/// Poisons `outputs` (NaN), compiles (or reuses) the GPU lowering of `src`
/// for `chip` and calls it; `result` receives the emulator's launches and
/// reports of this call. Fails on compile or call errors only: the caller
/// checks the reports (expectNoReports). `graphMaxBatch` > 0 lowers with
/// fixed grids for that batch (convert-kv-to-gpu's graph-max-batch).
::testing::AssertionResult
runGpu(const KernelSource &src, const std::vector<Tensor> &outputs,
       const std::string &chip, const std::vector<std::string> &mustLower,
       RunResult &result, int64_t graphMaxBatch = 0);

/// Succeeds if the emulator reported nothing (no out-of-bounds access, race,
/// barrier divergence or other failed check).
::testing::AssertionResult noReports(const RunResult &result);

/// Compares a GPU state with the reference: per (row, head) the harness's
/// relative error metric within outputTolerance(outputType), |lse - ref| <=
/// `lseTolerance` (any output type), never NaN, empty rows exactly
/// (0, -inf).
::testing::AssertionResult compareGpuState(const StateBuffers &got,
                                           const ref::State &expected,
                                           DType outputType,
                                           double lseTolerance = 1e-3);

/// The largest relative output error over (row, head) of `got` against
/// `expected` (max |got - ref| over max |ref|, the latter at least 1e-4; NaN
/// counts as infinite): the figure the benches report.
double maxRelativeError(const StateBuffers &got, const ref::State &expected);

/// A test's target: a chip name ("sm_90a"), optionally followed by
/// "/mma_sync" to keep its tensor-core kernels on mma.sync where the chip
/// would choose wgmma (kv-tile's mma option). Every `chip` below is one.
struct GpuTarget {
  std::string chip, mma = "auto";
};
GpuTarget parseGpuTarget(const std::string &target);
/// The target that runs `chip`'s tensor-core kernels on mma.sync.
inline std::string onMmaSync(const std::string &chip) {
  return chip + "/mma_sync";
}

/// Appends, for each case of `cases` that `takesTwin` picks, a twin named
/// `<name>MmaSync` on `onMmaSync(chip)`: the sm_90a cases whose
/// tensor-core kernels the chooser puts on wgmma run on both atoms.
template <typename Case, typename Pred>
void addMmaSyncTwins(std::vector<Case> &cases, Pred takesTwin) {
  for (size_t i = 0, n = cases.size(); i < n; ++i)
    if (cases[i].chip == "sm_90a" && takesTwin(cases[i])) {
      Case twin = cases[i];
      twin.name += "MmaSync";
      twin.chip = onMmaSync(twin.chip);
      cases.push_back(std::move(twin));
    }
}

/// SMs of a chip (its TargetInfo).
int64_t smCountOf(const std::string &chip);

/// Whether a kernel name is a split-KV kernel: names end in
/// "_split_<hash>" (the storage kind "split" also appears earlier).
bool isSplitKernel(const std::string &name);

/// The integer in environment variable `name`, or `fallback` when unset
/// (the sweeps' seed ranges).
int64_t envInteger(const char *name, int64_t fallback);

} // namespace kvir::test::gpu

#endif // KVIR_TEST_GPU_GPUHARNESS_H
