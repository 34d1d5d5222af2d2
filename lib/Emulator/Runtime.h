//===- Runtime.h - Emulator execution state ---------------------*- C++ -*-===//
#ifndef KVIR_LIB_EMULATOR_RUNTIME_H
#define KVIR_LIB_EMULATOR_RUNTIME_H

#include "kvir/Emulator/Emulator.h"
#include "kvir/Emulator/RuntimeABI.h"

#include "llvm/ADT/DenseMap.h"

#include <boost/context/detail/fcontext.hpp>

#include <cstdint>
#include <cstring>
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
  /// Whether its kernels use griddepcontrol.
  bool usesGridDependencyControl = false;
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

/// Where a thread is blocked: a block barrier, a warp collective, a
/// warpgroup collective (the .sync.aligned wgmma and setmaxnreg
/// instructions), a named barrier or an mbarrier phase.
enum class Wait {
  None,
  Barrier,
  Warp,
  Warpgroup,
  NamedBarrier,
  MBarrier,
  Cluster
};

/// A pending cp.async copy.
struct AsyncCopy {
  void *dst;
  const void *src;
  uint32_t size, srcSize, site;
};

/// What a lane brings to a warp collective.
struct Arrival {
  enum Kind { Shfl, Vote, Mma, LdMatrix, StMatrix, SyncWarp } kind;
  uint32_t mask, site;
  uint32_t mode, value, b, c;        // shfl / vote operands
  uint32_t m, n, k, types;           // mma shape and types
  const uint32_t *a, *bFrag, *cFrag; // mma fragments; stmatrix sources
  uint32_t *out;                     // mma D / ldmatrix destination
  const void *ptr;                   // ldmatrix / stmatrix row address
  uint32_t num, trans;               // ldmatrix / stmatrix
};

/// One thread's part of a wgmma.mma_async (Wgmma.cpp): the operands as
/// the instrumented kernel passes them.
struct WgmmaIssue {
  uint32_t n, k;
  uint32_t typeA, typeB, typeD;  // kabi::WgmmaType
  uint32_t flags;                // kabi::WgmmaFlags
  uint64_t descA, descB;         // descA unused with A in registers
  const uint32_t *aRegs;         // A fragment (RS form), or null
  uint32_t *acc;                 // accumulators in, D out (n / 2 words)
  uint32_t accTicket;            // the wgmma that produced them, or 0
  uint64_t accDefined, aDefined; // register clocks of their definitions
};

/// What a thread brings to a warpgroup collective.
struct WarpgroupArrival {
  enum Kind { Fence, Mma, Commit, WaitGroup, SetMaxNReg } kind;
  uint32_t site;
  uint32_t value; // wait_group N, setmaxnreg count (bit 31: .inc)
  WgmmaIssue *mma;
};

struct GpuThread {
  uint32_t tid[3];
  uint32_t linear, lane, warp;
  ctx::fcontext_t context = nullptr;
  char *stackLo = nullptr, *stackHi = nullptr;
  bool done = false;
  /// griddepcontrol.wait executed: the primary grid's memory operations
  /// are complete and visible (DependentLaunch.h).
  bool gridDependencySynced = false;
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
  WarpgroupArrival wgArrival;
  /// Register clock (Wgmma.cpp): advanced when a value a wgmma reads from
  /// registers is defined and at each wgmma.fence, so that a wgmma can tell
  /// whether a fence lies between the definition of its register operands
  /// and itself.
  uint64_t regClock = 0, lastWgmmaFence = 0;
  /// fence.proxy.async executed so far: a generic write to shared memory
  /// is visible to the async proxy once its writer fenced after it.
  uint32_t proxyFences = 0;
  /// Tensor maps (their addresses) the thread acquired for the tensormap
  /// proxy (fence.proxy.tensormap::generic.acquire) since its launch.
  std::vector<uint64_t> acquiredTensorMaps;
  /// The named barrier or mbarrier the thread waits on (Wait::NamedBarrier:
  /// its id; Wait::MBarrier: its shared offset and the phase parity).
  uint32_t waitObject = 0, waitParity = 0;
  /// Bulk async-groups (cp.async.bulk ... .bulk_group): the number of the
  /// open group and of the oldest one not yet waited for.
  uint32_t bulkOpen = 0, bulkOldest = 0;
  /// The thread's own segment in the block's vector clocks (BlockRun::
  /// clocks), advanced at each release (named barrier, mbarrier arrive).
  uint32_t segment = 1;
  /// barrier.cluster (Cluster.cpp): arrivals and completed waits so far
  /// (its k-th arrival is for phase k), and the phases it arrived at with
  /// release semantics (not .relaxed).
  uint32_t clusterArrivals = 0, clusterWaits = 0;
  std::vector<uint32_t> clusterReleases;
};

/// A wgmma.mma_async in flight (issued, not yet retired by a wait).
struct WgmmaOp {
  uint32_t ticket, site, n, k, types;
  /// The shared bytes it reads: operand element offsets, each `bytes` long.
  std::vector<uint64_t> operands;
  uint32_t bytes;
};

/// The wgmma state of one warpgroup (4 consecutive warps). Tickets are
/// numbered across the launch, increasing, so a warpgroup's pending ops are
/// those from its oldest unretired one on.
struct WarpgroupState {
  std::vector<WgmmaOp> uncommitted;
  std::vector<std::vector<WgmmaOp>> groups; // committed, oldest first
  /// setmaxnreg's register count per thread, 0 until the warpgroup sets it.
  uint32_t maxRegisters = 0;
  /// The ticket of the oldest wgmma not retired (`next`: none). Groups may
  /// be empty (a commit_group with no wgmma since the last one).
  uint32_t oldestPending(uint32_t next) const {
    for (const std::vector<WgmmaOp> &group : groups)
      if (!group.empty())
        return group.front().ticket;
    return uncommitted.empty() ? next : uncommitted.front().ticket;
  }
  const WgmmaOp *find(uint32_t ticket) const;
};

/// An mbarrier object in shared memory (MBarrier.cpp), by its offset.
struct MBarrierState {
  bool valid = false;      // initialized and not invalidated
  uint32_t initThread = 0; // linear id + 1 of the initializing thread
  uint32_t initSite = 0;
  uint32_t expected = 0; // arrivals per phase (arrive_drop lowers it)
  uint32_t pending = 0;  // arrivals still missing in the current phase
  int64_t tx = 0;        // transaction count of the current phase
  uint64_t phase = 0;    // completed phases
  /// Whether a wait observed the completion of the last completed phase
  /// (needed before an arrive on the next: PTX ISA 9.7.13.15.16).
  bool observed = true;
  uint32_t initEpoch = 0, initSegment = 0;
  /// Releases into the current phase, and those of the last completed one
  /// (acquired by the waits that observe it), as vector clocks.
  std::vector<uint32_t> releases, completed;
};

/// A named barrier (bar.sync / bar.arrive with an id) while threads are at
/// it.
struct NamedBarrierState {
  uint32_t count = 0;   // threads expected (0: no instance open)
  uint32_t arrived = 0; // threads arrived, in warp units of 32
  uint32_t firstSite = 0, firstThread = 0;
  /// Per warp, the lanes that arrived; a warp counts 32 once all its
  /// non-exited lanes did.
  std::vector<uint32_t> lanes;
  uint32_t countedWarps = 0;          // bit w: warp w's arrival is counted
  std::vector<uint32_t> participants; // linear ids
  /// What the arrivals released (each at its arrive), for the waiters.
  std::vector<uint32_t> joined;
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
struct ClusterRun;

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
    uint32_t segment;             // the thread's synchronization segment
  };
  /// The first two distinct threads of an epoch that read a byte, or that
  /// updated it atomically.
  struct Accessors {
    uint32_t epoch;
    Accessor first, second;
  };
  struct Shadow {
    uint32_t writeEpoch;
    /// The writer's fence.proxy.async count at the write.
    uint32_t writerProxyFences;
    Accessor writer;
    Accessors readers, atomics;
  };
  std::vector<Shadow> shadow;
  /// The epoch at which the running block began: shadow records of earlier
  /// epochs belong to other blocks.
  uint32_t blockEpoch = 1;
  /// Per shared byte and warpgroup, the newest wgmma that reads it as an
  /// operand (its ticket; allocated at the first wgmma of a launch).
  static constexpr unsigned kMaxWarpgroups = 8;
  std::vector<uint32_t> wgmmaReaders;
  std::vector<WarpgroupState> warpgroups;
  uint32_t nextTicket = 1;
  /// mbarrier objects by shared offset, and named barriers by id.
  std::map<uint32_t, MBarrierState> mbarriers;
  /// Vector clocks of the synchronization that orders some threads only —
  /// named barriers and mbarriers (block barriers order all: epochs; warp
  /// barriers: GpuThread::clock): row t, column o is the last segment of
  /// thread o that thread t synchronized with. Allocated at the block's
  /// first such synchronization.
  std::vector<uint32_t> clocks;
  /// The async agents of the vector clocks, each with its key and current
  /// segment; agent a is column (and "thread") threads.size() + a. The
  /// bulk copies completing on one mbarrier are one agent (key: the
  /// mbarrier's shared offset); the wgmmas of one warpgroup another (key:
  /// kWarpgroupAgent | warpgroup), whose operand reads count from their
  /// retiring wait.
  static constexpr uint32_t kWarpgroupAgent = 0x80000000u;
  std::vector<uint32_t> agentKeys, agentSegments;
  /// Shared bytes that bulk stores in flight read (until their bulk group
  /// is waited for with .read): writes to them are reported.
  struct AsyncRead {
    uint64_t offset, bytes;
    uint32_t thread, group, site;
  };
  std::vector<AsyncRead> asyncReads;
  NamedBarrierState namedBarriers[16];
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
  /// Its own share of the launch's counters (LaunchStats::blocks).
  LaunchStats::BlockWork work;
  /// The cluster the block belongs to (one block: a cluster of one), and
  /// its rank there.
  ClusterRun *cluster = nullptr;
  uint32_t clusterRank = 0;
  std::vector<std::string> *reports;
};

/// The executing context, valid while a block runs.
struct Current {
  BlockRun *block = nullptr;
  GpuThread *thread = nullptr;
  ctx::fcontext_t scheduler = nullptr;
};
extern Current current;

/// The bits of an f32 register and back.
inline float wordToFloat(uint32_t w) {
  float f;
  std::memcpy(&f, &w, 4);
  return f;
}
inline uint32_t floatToWord(float f) {
  uint32_t w;
  std::memcpy(&w, &f, 4);
  return w;
}

/// An f16 or bf16 value as the f32 it is exactly (Warp.cpp).
float halfToFloat(uint16_t bits, bool bf16);

/// A shared-memory swizzle of `spanBytes` (32, 64 or 128; 0: none), as TMA
/// writes and wgmma descriptors read it: the 16-byte chunk bits [4, 4+B)
/// of the address are XORed with bits [7, 7+B), B = log2(spanBytes / 16).
inline uint64_t swizzleOffset(uint64_t offset, uint32_t spanBytes) {
  if (!spanBytes)
    return offset;
  uint64_t mask = uint64_t(spanBytes / 16 - 1) << 4;
  return offset ^ ((offset >> 3) & mask);
}

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
/// Happens-before through named barriers and mbarriers (Memory.cpp): joins
/// `t`'s vector clock into `into` and starts a new segment of `t`;
/// acquires `from` into `t`'s clock.
void releaseClock(BlockRun &block, GpuThread &t, std::vector<uint32_t> &into);
void acquireClock(BlockRun &block, GpuThread &t,
                  const std::vector<uint32_t> &from);
/// Whether `t` has synchronized with segment `segment` of thread `other`
/// (linear id) through named barriers or mbarriers.
bool clockCovers(const BlockRun &block, const GpuThread &t, uint32_t other,
                 uint32_t segment);
/// The async agent with `key` (its column in the vector clocks; see
/// BlockRun::agentKeys), created on first use; releaseAgent joins its
/// current segment into `into` (an mbarrier's releases) and starts a new
/// one.
uint32_t asyncAgent(BlockRun &block, uint32_t key);
/// Orders everything `members` did before everything they do next: a
/// block barrier, bar.warp.sync (Memory.cpp).
void joinClocks(BlockRun &block, const std::vector<GpuThread *> &members);
/// Records the reads of warpgroup `group`'s retired wgmma `op` as its agent's
/// and lets the warpgroup's threads acquire them (Memory.cpp): a later
/// write must be ordered after the retiring wait.
void recordWgmmaReads(BlockRun &block, uint32_t group, const WgmmaOp &op);
/// A bulk store's read of its shared source by `issuer`: generic writes of
/// it must be ordered before (Memory.cpp).
void recordAsyncRead(BlockRun &block, GpuThread &issuer, uint64_t offset,
                     uint64_t bytes, uint32_t site);
void releaseAgent(BlockRun &block, uint32_t agent, std::vector<uint32_t> &into);
/// Records a bulk copy's write of shared [offset, offset + bytes), issued
/// by `issuer`, as agent `agent`'s (Memory.cpp).
void recordAsyncWrite(BlockRun &block, GpuThread &issuer, uint32_t agent,
                      uint64_t offset, uint64_t bytes, uint32_t site);
/// Reports a write of shared bytes a bulk store in flight reads (Tma.cpp).
void checkAsyncSourceWrite(BlockRun &block, uint64_t offset, uint64_t bytes,
                           const std::string &what, uint32_t site);

/// Whether the last write of the shared byte `sh` describes happens before
/// what `t` does now (a barrier, a warp barrier, a named barrier or an
/// mbarrier ordered it, or `t` wrote it).
bool writeOrderedBefore(BlockRun &block, const GpuThread &t,
                        const BlockRun::Shadow &sh);
/// Describes the writer of a shared byte for reports: "thread (x,y,z)" or
/// the bulk copy (async agent).
std::string describeWriter(BlockRun &block, const BlockRun::Shadow &sh);
/// The report for `reader` (an async-proxy operation: wgmma, bulk store)
/// reading shared byte `offset`, written through the generic proxy by a
/// thread that executed no fence.proxy.async since; "" if it may.
std::string unfencedGenericWrite(BlockRun &block, uint64_t offset,
                                 const std::string &reader);

/// Folds the block's open warp requests into the launch counters.
void flushRequests(BlockRun &block);

/// Warp collectives (Warp.cpp): executes the collective of `lanes` (the
/// members of one mask, all arrived) and stores each lane's result.
void executeCollective(BlockRun &block, std::vector<GpuThread *> &lanes);

/// Warpgroup collectives (Wgmma.cpp): executes the collective of the 128
/// threads of warpgroup `group`, all arrived at the same instruction.
void executeWarpgroupCollective(BlockRun &block, uint32_t group,
                                std::vector<GpuThread *> &threads);
/// Reports a write of the shared bytes [offset, offset + bytes) that a
/// wgmma in flight reads (Wgmma.cpp); `what` names the writer.
void checkWgmmaOperandWrite(BlockRun &block, uint64_t offset, uint64_t bytes,
                            const std::string &what, uint32_t site);
/// Wakes the threads whose mbarrier phase completed (MBarrier.cpp);
/// returns whether any did.
bool wakeMBarrierWaiters(BlockRun &block);
/// The shared offset of the mbarrier at `ptr`, which `op` uses; reports
/// one outside shared memory or misaligned (Barriers.cpp).
uint32_t mbarrierAt(const void *ptr, const std::string &op, uint32_t site);
/// A bulk copy's complete_tx of `bytes` on the mbarrier at `offset`: its
/// agent's writes become visible to the waits that observe the phase.
void mbarrierCompleteTx(BlockRun &block, uint32_t offset, uint64_t bytes,
                        uint32_t agent, const std::string &op, uint32_t site);
/// Reports an access of shared [offset, offset + bytes) by anything but an
/// mbarrier instruction where a valid mbarrier lives (Barriers.cpp).
void checkNotMBarrier(BlockRun &block, uint64_t offset, uint64_t bytes,
                      const std::string &what, uint32_t site);
/// What a thread waiting on an mbarrier waits for (Barriers.cpp).
std::string describeMBarrierWait(BlockRun &block, const GpuThread &t);
/// Counts the warps whose remaining lanes exited towards the named barriers
/// they wait at, completing those that are (Barriers.cpp).
void namedBarrierExit(BlockRun &block);

/// Runs a whole launch (Scheduler.cpp).
llvm::LogicalResult runLaunch(const KernelHandle &kernel, Dim3 grid, Dim3 block,
                              uint32_t dynamicShared, void **params,
                              LaunchStats &stats,
                              std::vector<std::string> &reports,
                              size_t stackBytes,
                              const LaunchAttributes &attributes = {});
/// Makes everything each thread of `block` did so far happen before
/// everything any of them does next, as a completed block barrier does
/// (Scheduler.cpp).
void orderAllThreads(BlockRun &block);

} // namespace kvir::emu

#endif // KVIR_LIB_EMULATOR_RUNTIME_H
