//===- Runtime.h - Emulator execution state ---------------------*- C++ -*-===//
#ifndef KVIR_LIB_EMULATOR_RUNTIME_H
#define KVIR_LIB_EMULATOR_RUNTIME_H

#include "kvir/Emulator/Emulator.h"
#include "kvir/Emulator/RuntimeABI.h"

#include "llvm/ADT/DenseMap.h"

#include <boost/context/detail/fcontext.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace kvir::emu {

namespace ctx = boost::context::detail;

/// A JIT-compiled, instrumented kernel module.
struct KernelHandle;

struct CompiledModule {
  CompiledModule();
  ~CompiledModule();
  std::string name;
  uint64_t staticSharedBytes = 0;
  /// Static shared bytes per kernel (Instrument.h).
  std::map<std::string, uint64_t> kernelSharedBytes;
  std::vector<std::string> sites;
  std::map<std::string, void (*)(void **)> kernels;
  /// Bytes of each kernel parameter, in order (for launch records).
  std::map<std::string, std::vector<uint32_t>> kernelParamBytes;
  std::shared_ptr<void> engine; // Keeps the ExecutionEngine alive.
  /// The handles mgpuModuleGetFunction gave out, one per kernel: host code
  /// asks for a kernel before every launch.
  std::map<std::string, std::unique_ptr<KernelHandle>> handles;
};

/// A kernel handle as mgpuModuleGetFunction returns it.
struct KernelHandle {
  CompiledModule *module;
  std::string name;
  void (*entry)(void **);
};

inline CompiledModule::CompiledModule() = default;
inline CompiledModule::~CompiledModule() = default;

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
  uint32_t mode, value, b, c;        // shfl / vote operands
  uint32_t m, n, k, types;           // mma shape and types
  const uint32_t *a, *bFrag, *cFrag; // mma fragments
  uint32_t *out;                     // mma D / ldmatrix destination
  const void *ptr;                   // ldmatrix row address
  uint32_t num, trans;               // ldmatrix
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
  /// A vector clock over the lanes of the thread's warp, advanced by
  /// bar.warp.sync (__syncwarp), which orders the shared-memory accesses of
  /// its members (block barriers order everything; see BlockRun::epoch).
  /// clock[lane] is the own segment; clock[l] the last segment of lane l
  /// this thread has synchronized with.
  uint32_t clock[32] = {};
};

/// One warp-level memory request being assembled from its lanes: the n-th
/// execution of one access site by the lanes of one warp.
struct Request {
  uint32_t mask = 0; // lanes that took part
  bool shared = false;
  uint64_t addr[32];
  uint32_t bytes[32];
};

/// The state of the block being executed.
struct BlockRun {
  const KernelHandle *kernel;
  void **params;
  Dim3 grid, block, ctaid;
  std::vector<GpuThread> threads;
  std::vector<uint32_t> liveLanes; // per warp
  /// Per warp: the lanes that exist, and those that have exited.
  std::vector<uint32_t> warpLanes, doneLanes;
  /// How often each thread executed each access site (thread-major), which
  /// pairs the accesses of a warp's lanes into requests.
  std::vector<uint32_t> occurrences;
  uint32_t numSites = 0;
  char *shared = nullptr;
  uint64_t sharedBytes = 0;
  uint32_t epoch = 1;
  /// Race shadow, one entry per shared byte: the last writer, up to two
  /// distinct readers and up to two distinct threads that updated it
  /// atomically since the last barrier (epoch), as linear thread id + 1
  /// with the access site and the thread's own clock segment.
  struct Accessor {
    uint32_t thread, site, clock; // thread 0: none
  };
  /// The first two distinct threads of an epoch that read a byte, or that
  /// updated it atomically.
  struct Accessors {
    uint32_t epoch;
    Accessor first, second;
  };
  struct Shadow {
    uint32_t writeEpoch;
    Accessor writer;
    Accessors readers, atomics;
  };
  std::vector<Shadow> shadow;
  /// Races already reported (kind, site, other site) and how many more were
  /// found at the same pair of sites.
  std::set<std::tuple<bool, uint32_t, uint32_t>> racesSeen;
  uint64_t racesNotShown = 0;
  /// Open warp requests by (warp, site, occurrence), as slots of a pool
  /// (a request is created and retired once per warp-wide access, so the
  /// pool avoids an allocation each time).
  llvm::DenseMap<uint64_t, uint32_t> requests;
  std::vector<Request> requestPool;
  std::vector<uint32_t> freeRequests;
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
  /// Recently released allocations (not reused since), to name
  /// use-after-free in reports; at most kMaxFreed, oldest dropped first.
  std::map<uint64_t, Entry> freed;
  std::vector<uint64_t> freedOrder;
  static constexpr size_t kMaxFreed = 4096;

  void add(uint64_t addr, uint64_t bytes, std::string what);
  void remove(uint64_t addr);
  /// The allocation containing [addr, addr + bytes), or null.
  const std::pair<const uint64_t, Entry> *find(uint64_t addr,
                                               uint64_t bytes) const;
  /// Where [addr, addr + bytes) lies relative to the allocations, for
  /// out-of-bounds reports.
  std::string describeMiss(uint64_t addr, uint64_t bytes) const;
  /// Where [addr, addr + bytes) lies relative to allocation `own`, which it
  /// leaves, naming any other allocation it falls in.
  std::string describeOutside(const std::pair<const uint64_t, Entry> &own,
                              uint64_t addr, uint64_t bytes) const;
};
AllocationTable &allocations();
/// Checks (and counts) an access of `bytes` at `ptr`. A global access
/// derived from kernel pointer argument `arg` (`base`, or null) must stay
/// inside the allocation that argument points into.
void checkAccess(const void *ptr, uint64_t bytes, uint32_t flags,
                 uint32_t site, const void *base = nullptr, int32_t arg = -1);
/// A cp.async destination is written at some moment between the copy's
/// issue and the wait that completes it (PTX ISA, cp.async): the race check
/// treats it as written by its thread at issue and in every epoch it stays
/// in flight. Data lands (and is counted) at the wait.
void markAsyncCopyDestination(BlockRun &block, GpuThread &thread,
                              const AsyncCopy &copy);
/// markAsyncCopyDestination for every copy `thread` has in flight.
void markPendingCopies(BlockRun &block, GpuThread &thread);
/// Folds the block's open warp requests into the launch counters.
void flushRequests(BlockRun &block);

/// Warp collectives (Warp.cpp): executes the collective of `lanes` (the
/// members of one mask, all arrived) and stores each lane's result.
void executeCollective(BlockRun &block, std::vector<GpuThread *> &lanes);

/// Runs a whole launch (Scheduler.cpp).
llvm::LogicalResult runLaunch(const KernelHandle &kernel, Dim3 grid, Dim3 block,
                              uint32_t dynamicShared, void **params,
                              LaunchStats &stats,
                              std::vector<std::string> &reports,
                              size_t stackBytes);

} // namespace kvir::emu

#endif // KVIR_LIB_EMULATOR_RUNTIME_H
