//===- Emulator.h - Run GPU kernels on the CPU ------------------*- C++ -*-===//
//
// kvir's GPU emulator (docs/Emulator.md): the kernels of a gpu.module are
// lowered to NVVM, instrumented (Instrument.h) and JIT-compiled for the host;
// each GPU thread runs on its own fiber, blocks one after another. Barriers
// and warp collectives (shuffles, votes, mma.sync, ldmatrix) switch fibers
// with exact PTX semantics. Every global and shared access is checked against
// live allocations (naming use after free) and the kernel's shared size, and
// for the alignment it assumes; shared-memory races between barriers,
// divergent barriers and mismatched warp collectives are reported. Per-launch
// counters measure traffic, coalescing, bank conflicts, barriers and mma.
//
// Host code reaches the emulator through the CUDA-runtime wrapper API that
// MLIR's gpu-to-llvm lowering calls (mgpuLaunchKernel, mgpuMemAlloc, ...):
// getRuntimeSymbols() provides those functions to an ExecutionEngine.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_EMULATOR_EMULATOR_H
#define KVIR_EMULATOR_EMULATOR_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ExecutionEngine/Orc/Core.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kvir::emu {

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
  uint64_t count() const { return uint64_t(x) * y * z; }
};

/// What cuLaunchKernelEx's attributes can ask of a launch.
struct LaunchAttributes {
  /// CTAs per cluster (at most 8; the grid a multiple of it).
  Dim3 cluster;
  /// Programmatic stream serialization: the grid may overlap the previous
  /// launch until its threads execute griddepcontrol.wait; their accesses
  /// before it are checked against the previous grid's (which must have
  /// been recorded: a kernel using griddepcontrol was compiled before it
  /// ran).
  bool programmaticDependent = false;
};

/// Counters of one kernel launch.
struct LaunchStats {
  std::string kernel;
  Dim3 grid, block;
  uint32_t dynamicSharedBytes = 0;
  /// The kernel's own static shared memory (not its module's).
  uint64_t staticSharedBytes = 0;
  uint64_t globalBytesLoaded = 0, globalBytesStored = 0;
  /// Warp-level global requests, the 32-byte sectors they touched and the
  /// distinct bytes they asked for: coalescing = usefulBytes / (sectors * 32).
  uint64_t globalRequests = 0, globalSectors = 0, globalUsefulBytes = 0;
  uint64_t sharedBytesLoaded = 0, sharedBytesStored = 0;
  /// Warp-level shared requests and the extra wavefronts bank conflicts cost.
  uint64_t sharedRequests = 0, bankConflicts = 0;
  /// Completed block barriers (per block), warp-wide mma.sync and
  /// shfl.sync (per warp), and thread suspensions.
  uint64_t barriers = 0, mmaOps = 0, shuffles = 0, fiberSwitches = 0;
  /// sm_90: warpgroup MMAs (per warpgroup) and their count by shape
  /// ("m64n128k16.f32.bf16"), completed named barriers, completed mbarrier
  /// phases, mbarrier waits and those that found the phase incomplete
  /// (would have spun or suspended on a GPU).
  uint64_t wgmmaOps = 0, namedBarriers = 0, mbarrierPhases = 0,
           mbarrierWaits = 0, mbarrierSpins = 0;
  /// Bulk and tensor (TMA) copies, the global bytes they moved, and the
  /// 32-byte sectors their loads touched (each copy's distinct sectors).
  uint64_t tmaCopies = 0, tmaBytesLoaded = 0, tmaBytesStored = 0,
           tmaSectorsLoaded = 0;
  /// Clusters: CTAs per cluster (1: none) and completed barrier.cluster
  /// phases (per CTA).
  Dim3 cluster;
  uint64_t clusterBarriers = 0;
  std::map<std::string, uint64_t> wgmmaShapes;
  /// Multiply-accumulates of every tensor-core op (m x n x k per mma.sync
  /// and per wgmma): the work of either instruction in one unit.
  uint64_t tensorCoreMacs = 0;
  double seconds = 0;
  /// Per block, in launch order (x fastest): the work it did, for load
  /// balance (the busiest block against the mean).
  struct BlockWork {
    /// mma.sync per warp, wgmma.mma_async per warpgroup; global bytes of
    /// loads, stores and bulk / tensor copies.
    uint64_t mmaOps = 0, globalBytes = 0, wgmmaOps = 0;
    /// Tensor-core multiply-accumulates of either instruction.
    uint64_t tensorCoreMacs = 0;
  };
  std::vector<BlockWork> blocks;

  double sectorEfficiency() const {
    return globalSectors ? double(globalUsefulBytes) / (globalSectors * 32.0)
                         : 1.0;
  }
  /// The counters as one JSON object.
  std::string toJson() const;
};

/// Emulator-wide settings and results.
struct EmulatorOptions {
  /// Print a report and exit(1) on the first failing launch (kvir-runner's
  /// behaviour). Otherwise the launch fails and reports accumulate.
  bool exitOnError = true;
  /// Stack bytes per GPU thread fiber.
  size_t stackBytes = 64 * 1024;
  /// Refuse kernels that call libdevice (`__nv_*`): kvir's PTX is built
  /// without a CUDA path, where such calls stay unresolved, even though
  /// the emulator could run them (kvir-runner allows them for user
  /// kernels; kvir's GPU tests do not).
  bool rejectLibdevice = false;
  /// Keep a LaunchRecord of every launch (getLaunchRecords): enough to
  /// replay the launches elsewhere, e.g. on a GPU, on the same inputs.
  bool recordLaunches = false;
  /// Launch every grid whose kernel's module uses griddepcontrol as a
  /// programmatic dependent of the grid before it, when that grid was
  /// recorded: the overlap a host launching every kernel with programmatic
  /// stream serialization may cause, checked (kvir's GPU tests and the C
  /// API's emulated runs set it).
  bool launchWaitingKernelsAsDependents = false;
};

/// One launch as a replay needs it: the kernel, its shape and each
/// parameter's bytes. A parameter whose 8 bytes point into a live allocation
/// names that allocation (its base) and the offset into it, so that a replay
/// can substitute its own buffers.
struct LaunchRecord {
  struct Param {
    std::vector<uint8_t> bytes;
    uint64_t allocation = 0, offset = 0;
  };
  std::string kernel;
  Dim3 grid, block;
  uint32_t dynamicSharedBytes = 0;
  std::vector<Param> params;
};

/// An allocation a recorded launch referenced, with its contents when first
/// referenced (what the host had written into it by then).
struct RecordedAllocation {
  std::string what;
  std::vector<uint8_t> firstUse;
};

class Emulator {
public:
  static Emulator &get();

  EmulatorOptions &options() { return opts; }

  /// Gives the kernels of `module` and their launches kvir's kernel ABI
  /// (kvgpu-bare-kernel-abi), lowers each gpu.module to NVVM, instruments
  /// and JIT-compiles it for the host, and replaces it by a gpu.binary whose
  /// object names the compiled module, so that gpu-to-llvm's launch code
  /// reaches the emulator.
  llvm::LogicalResult prepareModule(mlir::ModuleOp module);

  /// The CUDA-runtime wrapper functions (mgpu*), libdevice functions (__nv_*)
  /// kernels may call, and allocation-tracking malloc/free for host code.
  llvm::orc::SymbolMap getRuntimeSymbols(llvm::orc::MangleAndInterner interner);

  /// Launches a kernel of a prepared module by name (its packed arguments as
  /// gpu-to-llvm passes them). Returns failure if a check fired.
  llvm::LogicalResult launch(llvm::StringRef kernel, Dim3 grid, Dim3 block,
                             uint32_t dynamicSharedBytes, void **params,
                             const LaunchAttributes &attributes = {});

  /// Whether a launch now may be a programmatic dependent: the grid before
  /// it was recorded, so its accesses can be checked against that grid's.
  bool canCheckDependentLaunch() const;

  /// The byte size of each parameter of a compiled kernel (its PTX entry's
  /// parameters in kvir's kernel ABI), or nullopt if no kernel has the name.
  std::optional<std::vector<uint32_t>>
  getKernelParamBytes(llvm::StringRef kernel) const;

  /// Tracks [ptr, ptr + bytes) as a live allocation kernels may access.
  void registerAllocation(const void *ptr, uint64_t bytes,
                          llvm::StringRef what);
  void unregisterAllocation(const void *ptr);

  const std::vector<LaunchStats> &getLaunchStats() const { return stats; }
  const std::vector<std::string> &getReports() const { return reports; }
  /// With EmulatorOptions::recordLaunches: the launches since the last
  /// clearResults and the allocations they referenced (keyed by base).
  const std::vector<LaunchRecord> &getLaunchRecords() const { return records; }
  const std::map<uint64_t, RecordedAllocation> &getRecordedAllocations() const {
    return recordedAllocations;
  }
  void clearResults() {
    stats.clear();
    reports.clear();
    records.clear();
    recordedAllocations.clear();
  }

  /// Internal: records a launch's outcome.
  void addStats(LaunchStats s) { stats.push_back(std::move(s)); }
  void addReport(std::string r) { reports.push_back(std::move(r)); }
  /// Internal: keeps a LaunchRecord of a launch (`paramBytes`: the size of
  /// each of the kernel's parameters).
  void recordLaunch(const std::vector<uint32_t> &paramBytes,
                    llvm::StringRef kernel, Dim3 grid, Dim3 block,
                    uint32_t dynamicSharedBytes, void **params);

private:
  EmulatorOptions opts;
  std::vector<LaunchStats> stats;
  std::vector<std::string> reports;
  std::vector<LaunchRecord> records;
  std::map<uint64_t, RecordedAllocation> recordedAllocations;
};

} // namespace kvir::emu

#endif // KVIR_EMULATOR_EMULATOR_H
