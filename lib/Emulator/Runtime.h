//===- Runtime.h - Emulator execution state ---------------------*- C++ -*-===//
#ifndef KVIR_LIB_EMULATOR_RUNTIME_H
#define KVIR_LIB_EMULATOR_RUNTIME_H

#include "kvir/Emulator/Emulator.h"
#include "kvir/Emulator/RuntimeABI.h"

#include <boost/context/detail/fcontext.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace kvir::emu {

namespace ctx = boost::context::detail;

/// A JIT-compiled, instrumented kernel module.
struct CompiledModule {
  std::string name;
  uint64_t staticSharedBytes = 0;
  std::vector<std::string> sites;
  std::map<std::string, void (*)(void **)> kernels;
  std::shared_ptr<void> engine; // Keeps the ExecutionEngine alive.
};

/// A kernel handle as mgpuModuleGetFunction returns it.
struct KernelHandle {
  CompiledModule *module;
  std::string name;
  void (*entry)(void **);
};

/// Where a thread is blocked.
enum class Wait { None, Barrier, Warp };

/// A pending cp.async copy.
struct AsyncCopy {
  void *dst;
  const void *src;
  uint32_t size, srcSize, site;
};

/// What a lane brings to a warp collective.
struct Arrival {
  enum Kind { Shfl, Vote, Mma, LdMatrix, SyncWarp } kind;
  uint32_t mask, site;
  uint32_t mode, value, b, c;          // shfl / vote operands
  uint32_t m, n, k, types;             // mma shape and types
  const uint32_t *a, *bFrag, *cFrag;   // mma fragments
  uint32_t *out;                       // mma D / ldmatrix destination
  const void *ptr;                     // ldmatrix row address
  uint32_t num, trans;                 // ldmatrix
};

struct GpuThread {
  uint32_t tid[3];
  uint32_t linear, lane, warp;
  ctx::fcontext_t context = nullptr;
  char *stackLo = nullptr, *stackHi = nullptr;
  bool done = false;
  Wait wait = Wait::None;
  uint32_t waitSite = 0;
  Arrival arrival;
  uint64_t result = 0;
  std::vector<AsyncCopy> openCopies;
  std::vector<std::vector<AsyncCopy>> copyGroups;
  std::unordered_map<uint32_t, uint32_t> occurrences;
};

/// One warp-level memory request being assembled from its lanes.
struct Request {
  std::vector<std::pair<uint64_t, uint32_t>> ranges;
  uint32_t lanes = 0;
  bool shared = false;
};

/// The state of the block being executed.
struct BlockRun {
  const KernelHandle *kernel;
  void **params;
  Dim3 grid, block, ctaid;
  std::vector<GpuThread> threads;
  std::vector<uint32_t> liveLanes; // per warp
  char *shared = nullptr;
  uint64_t sharedBytes = 0;
  uint32_t epoch = 1;
  // Race shadow, one entry per shared byte.
  std::vector<uint32_t> writer, writeEpoch, reader, readEpoch;
  std::vector<uint8_t> multiReader;
  std::unordered_map<uint64_t, Request> requests;
  LaunchStats *stats;
  bool aborted = false;
  std::vector<std::string> *reports;
};

/// The executing context, valid while a block runs.
struct Current {
  BlockRun *block = nullptr;
  GpuThread *thread = nullptr;
  ctx::fcontext_t scheduler = nullptr;
};
extern Current current;

/// Reports a fatal error for the current thread and stops it for good.
[[noreturn]] void fail(const std::string &what, uint32_t site);
/// Records a non-fatal finding (a race); the launch fails at its end.
void report(const std::string &what);
/// Describes the current thread and block for reports.
std::string describeThread();
std::string describeSite(uint32_t site);

/// Suspends the current thread until the scheduler resumes it.
void yieldToScheduler();

/// Memory checking (Memory.cpp).
struct AllocationTable {
  struct Entry {
    uint64_t bytes;
    std::string what;
  };
  std::map<uint64_t, Entry> live;
  /// The allocation containing [addr, addr + bytes), or null.
  const std::pair<const uint64_t, Entry> *find(uint64_t addr, uint64_t bytes) const;
};
AllocationTable &allocations();
void checkAccess(const void *ptr, uint64_t bytes, uint32_t flags, uint32_t site);
/// Folds finished warp requests into the launch counters.
void flushRequests(BlockRun &block, bool all);

/// Warp collectives (Warp.cpp): executes the collective of `lanes` (the
/// members of one mask, all arrived) and stores each lane's result.
void executeCollective(BlockRun &block, std::vector<GpuThread *> &lanes);

/// Runs a whole launch (Scheduler.cpp).
llvm::LogicalResult runLaunch(const KernelHandle &kernel, Dim3 grid,
                              Dim3 block, uint32_t dynamicShared,
                              void **params, LaunchStats &stats,
                              std::vector<std::string> &reports,
                              size_t stackBytes);

} // namespace kvir::emu

#endif // KVIR_LIB_EMULATOR_RUNTIME_H
