//===- BenchSupport.h - What the CPU-side benches share ---------*- C++ -*-===//
//
// Compiling a test function to PTX with the real tools (kvir-opt
// --kv-to-ptx | kvir-translate, timed), ptxas -v per kernel, occupancy from
// the chip's TargetInfo, and the emulator's counters summed over a call.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_BENCH_COMMON_BENCHSUPPORT_H
#define KVIR_BENCH_COMMON_BENCHSUPPORT_H

#include "kvir/Emulator/Emulator.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kvir::bench {

/// Per-kernel numbers from `ptxas -v`.
struct PtxasInfo {
  int registers = -1;
  int64_t smem = 0, spillStores = 0, spillLoads = 0;
};

/// The tools next to the running bench, ptxas if there is one, and a
/// scratch directory (removed by the destructor).
class Toolbox {
public:
  Toolbox(const char *argv0, bool usePtxas);
  ~Toolbox();
  const std::string &ptxas() const { return ptxasPath; }

  struct Compiled {
    /// kernel name -> ptxas numbers (empty without ptxas).
    std::map<std::string, PtxasInfo> kernels;
    /// The PTX text, and the wall time of kvir-opt + kvir-translate.
    std::string ptx;
    /// kvir-opt's output: the kernels' module with its launch plans.
    std::string lowered;
    double compileSeconds = 0;
    bool ok = false;
  };
  /// kvir-opt --kv-to-ptx=chip=<chip> | kvir-translate, then ptxas -v.
  Compiled compile(const std::string &source, const std::string &chip);

private:
  std::string binDir, ptxasPath, dir;
};

/// Resident warps over the SM's maximum (TargetInfo's model).
double occupancy(const std::string &chip, int registers, int64_t sharedBytes,
                 int64_t threads);

/// The emulator's global counters over a call's launches.
struct Traffic {
  uint64_t loaded = 0, stored = 0, sectors = 0, useful = 0;
  uint64_t sharedRequests = 0, bankConflicts = 0, mma = 0;
  /// Tensor-core multiply-accumulates (mma.sync and wgmma alike).
  uint64_t macs = 0;
  double sectorEfficiency() const {
    return sectors ? double(useful) / (32.0 * sectors) : 1.0;
  }
};
Traffic sumTraffic(const std::vector<emu::LaunchStats> &launches);
/// One launch's global bytes loaded and stored, TMA's included.
inline uint64_t globalBytesLoaded(const emu::LaunchStats &l) {
  return l.globalBytesLoaded + l.tmaBytesLoaded;
}
inline uint64_t globalBytesStored(const emu::LaunchStats &l) {
  return l.globalBytesStored + l.tmaBytesStored;
}

/// The busiest SM's share of `blockWork` (any unit) when blocks, in launch
/// order, go to the least-loaded of `sms` SMs (a GPU's block dispatcher).
double busiestSmWork(const std::vector<double> &blockWork, int64_t sms);

/// A memory-bound launch's estimated seconds: max(total bytes / roof, the
/// busiest SM's bytes / (roof / sms)).
double memoryBoundSeconds(const std::vector<double> &blockBytes,
                          double roofBytesPerSecond, int64_t sms);

/// The PTX statements of the loop of `kernel` in `ptx` whose header block
/// is the `occurrence`-th (from 0) holding a statement containing `marker`
/// (whitespace collapsed to single spaces, e.g. "cp.async.wait_group 1;"):
/// the natural loop of that header (every basic block that reaches one of
/// its back edges without passing the header, wherever ptxas' input places
/// it), all paths counted once. A static count; SASS differs, ptxas being
/// the compiler.
struct LoopStatements {
  int64_t statements = 0, mma = 0;
};
std::optional<LoopStatements> hotLoopStatements(const std::string &ptx,
                                                const std::string &kernel,
                                                const std::string &marker,
                                                int64_t occurrence = 0);

/// PTX statements per tensor-core instruction (mma.sync or wgmma) in the
/// loop of `kernel` that waits for cp.async group depth 1 (the prefill
/// kernels' key loop), or in a warp-specialized kernel the consumers' loop
/// (headed by an mbarrier wait).
std::optional<double> ptxInstructionsPerMma(const std::string &ptx,
                                            const std::string &kernel);

} // namespace kvir::bench

#endif // KVIR_BENCH_COMMON_BENCHSUPPORT_H
