//===- Scheduler.cpp - Fibers, blocks, barriers and warp collectives ------===//
//
// Each GPU thread of a block is a fiber (Boost.Context's fcontext); blocks run
// one after another. A thread runs until it reaches a barrier or a warp
// collective, or exits. When no thread can run, the scheduler completes the
// collectives whose members have all arrived, then the barrier if every
// thread of the block reached it; if neither is possible the block is stuck
// (a divergent barrier or mismatched collective participation), which is
// reported instead of hanging.
//
//===----------------------------------------------------------------------===//
#include "Cluster.h"
#include "DependentLaunch.h"
#include "HostMemory.h"
#include "Runtime.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MathExtras.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace kvir::emu;

Current kvir::emu::current;

std::string kvir::emu::describeThread() {
  BlockRun &b = *current.block;
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "block (" << b.ctaid.x << "," << b.ctaid.y << "," << b.ctaid.z << ")";
  if (GpuThread *t = current.thread)
    os << " thread (" << t->tid[0] << "," << t->tid[1] << "," << t->tid[2]
       << ")";
  return s;
}

std::string kvir::emu::describeSite(uint32_t site) {
  const auto &sites = current.block->kernel->module->sites;
  return site < sites.size() ? sites[site] : "<unknown site>";
}

static std::string header(BlockRun &b) {
  return "kvir-emu: kernel '" + b.kernel->name + "': ";
}

void kvir::emu::fail(const std::string &what, uint32_t site) {
  BlockRun &b = *current.block;
  // ~0u: no instrumented site (the message says where).
  b.reports->push_back(header(b) + what + "\n  " + describeThread() +
                       (site == ~0u ? "" : "\n  at " + describeSite(site)));
  b.aborted = true;
  ctx::jump_fcontext(current.scheduler, nullptr);
  __builtin_unreachable();
}

void kvir::emu::report(const std::string &what) {
  BlockRun &b = *current.block;
  b.reports->push_back(header(b) + what);
}

void kvir::emu::yieldToScheduler() {
  current.block->stats->fiberSwitches++;
  ctx::transfer_t t = ctx::jump_fcontext(current.scheduler, nullptr);
  current.scheduler = t.fctx;
}

/// Performs and drops every cp.async group but the newest `keep`.
void performCopies(GpuThread &t, size_t keep);

static void threadEntry(ctx::transfer_t t) {
  current.scheduler = t.fctx;
  BlockRun &b = *current.block;
  b.kernel->entry(b.params);
  GpuThread &self = *current.thread;
  // Copies never waited for still land before the thread retires.
  self.copyGroups.push_back(std::move(self.openCopies));
  self.openCopies.clear();
  performCopies(self, 0);
  self.done = true;
  b.liveLanes[self.warp]--;
  b.doneLanes[self.warp] |= 1u << self.lane;
  namedBarrierExit(b);
  ctx::jump_fcontext(current.scheduler, nullptr);
  __builtin_unreachable();
}

static void resume(GpuThread &t) {
  current.thread = &t;
  ctx::transfer_t r = ctx::jump_fcontext(t.context, nullptr);
  t.context = r.fctx;
  current.thread = nullptr;
}

static std::string threadName(const GpuThread &t) {
  return "(" + std::to_string(t.tid[0]) + "," + std::to_string(t.tid[1]) + "," +
         std::to_string(t.tid[2]) + ")";
}

static const char *collectiveName(Arrival::Kind kind) {
  switch (kind) {
  case Arrival::Shfl:
    return "shfl.sync";
  case Arrival::Vote:
    return "vote.sync";
  case Arrival::Mma:
    return "mma.sync";
  case Arrival::LdMatrix:
    return "ldmatrix";
  case Arrival::StMatrix:
    return "stmatrix";
  case Arrival::SyncWarp:
    return "bar.warp.sync";
  }
  return "warp collective";
}

/// Reports an error that stops the block, in the same shape as fail():
/// the problem, the block and thread, the site.
static void blockError(BlockRun &b, const std::string &what, const GpuThread &t,
                       uint32_t site) {
  current.thread = const_cast<GpuThread *>(&t);
  b.reports->push_back(header(b) + what + "\n  " + describeThread() +
                       "\n  at " + describeSite(site));
  current.thread = nullptr;
  b.aborted = true;
}

/// Whether two arrivals at a collective agree on what it is. PTX lets the
/// threads of a membermask meet at different instructions as long as they
/// have the same qualifiers (PTX ISA, shfl.sync and vote.sync).
static bool sameCollective(const Arrival &a, const Arrival &b) {
  if (a.kind != b.kind)
    return false;
  switch (a.kind) {
  case Arrival::Shfl:
  case Arrival::Vote:
    return a.mode == b.mode;
  case Arrival::Mma:
    return a.m == b.m && a.n == b.n && a.k == b.k && a.types == b.types;
  case Arrival::LdMatrix:
  case Arrival::StMatrix:
    return a.num == b.num && a.trans == b.trans;
  case Arrival::SyncWarp:
    return true;
  }
  return false;
}

/// Completes the warp collectives whose members have all arrived. Returns
/// whether any thread became runnable; sets b.aborted on a participation
/// error that can never resolve.
///
/// Stricter than PTX on one point: PTX waits only for the non-exited threads
/// of a membermask, but a lane of the mask that exits without joining is
/// almost always a collective in divergent code (undefined values at best),
/// so it is reported.
static bool resolveCollectives(BlockRun &b) {
  bool progressed = false;
  uint32_t numWarps = b.liveLanes.size();
  for (uint32_t w = 0; w < numWarps; ++w) {
    uint32_t first = w * 32;
    uint32_t last = std::min<uint32_t>(first + 32, b.threads.size());
    for (uint32_t i = first; i < last; ++i) {
      GpuThread &t = b.threads[i];
      if (t.done || t.wait != Wait::Warp)
        continue;
      uint32_t mask = t.arrival.mask;
      const char *name = collectiveName(t.arrival.kind);
      if (!(mask >> t.lane & 1)) {
        blockError(b,
                   std::string(name) + " with membermask 0x" +
                       llvm::utohexstr(mask) + " excludes the executing lane " +
                       std::to_string(t.lane),
                   t, t.arrival.site);
        return false;
      }
      std::vector<GpuThread *> members;
      bool complete = true;
      for (uint32_t lane = 0; lane < 32 && complete; ++lane) {
        if (!(mask >> lane & 1))
          continue;
        uint32_t idx = first + lane;
        if (idx >= last) {
          blockError(b,
                     std::string(name) + " membermask 0x" +
                         llvm::utohexstr(mask) + " names lane " +
                         std::to_string(lane) +
                         ", which does not exist in a block of " +
                         std::to_string(b.threads.size()) + " threads",
                     t, t.arrival.site);
          return false;
        }
        GpuThread &m = b.threads[idx];
        if (m.done) {
          blockError(b,
                     std::string(name) + " participation mismatch: lane " +
                         std::to_string(lane) + " of membermask 0x" +
                         llvm::utohexstr(mask) + " exited without joining",
                     t, t.arrival.site);
          return false;
        }
        if (m.wait != Wait::Warp || m.arrival.mask != mask) {
          complete = false;
          break;
        }
        members.push_back(&m);
      }
      if (!complete)
        continue;
      for (GpuThread *m : members)
        if (!sameCollective(m->arrival, t.arrival)) {
          blockError(b,
                     "warp collective mismatch: thread " + threadName(t) +
                         " executes " + name + " at " +
                         describeSite(t.arrival.site) + " but thread " +
                         threadName(*m) + " executes " +
                         collectiveName(m->arrival.kind) + " at " +
                         describeSite(m->arrival.site),
                     t, t.arrival.site);
          return false;
        }
      executeCollective(b, members);
      if (b.aborted)
        return false;
      for (GpuThread *m : members)
        m->wait = Wait::None;
      progressed = true;
    }
  }
  return progressed;
}

static const char *warpgroupName(WarpgroupArrival::Kind kind) {
  switch (kind) {
  case WarpgroupArrival::Fence:
    return "wgmma.fence";
  case WarpgroupArrival::Mma:
    return "wgmma.mma_async";
  case WarpgroupArrival::Commit:
    return "wgmma.commit_group";
  case WarpgroupArrival::WaitGroup:
    return "wgmma.wait_group";
  case WarpgroupArrival::SetMaxNReg:
    return "setmaxnreg";
  }
  return "warpgroup collective";
}

/// Completes the warpgroup collectives (.sync.aligned: all 128 threads of
/// the warpgroup at the same instruction) whose threads have all arrived.
/// Returns whether any did; sets b.aborted on a participation error.
static bool resolveWarpgroups(BlockRun &b) {
  bool progressed = false;
  for (uint32_t g = 0; g < b.warpgroups.size(); ++g) {
    uint32_t first = g * 128;
    GpuThread *arrived = nullptr;
    for (uint32_t i = first; i < first + 128 && i < b.threads.size(); ++i)
      if (!b.threads[i].done && b.threads[i].wait == Wait::Warpgroup) {
        arrived = &b.threads[i];
        break;
      }
    if (!arrived)
      continue;
    const char *name = warpgroupName(arrived->wgArrival.kind);
    if (first + 128 > b.threads.size()) {
      blockError(b,
                 std::string(name) + " needs the 128 threads of warpgroup " +
                     std::to_string(g) + "; the block has " +
                     std::to_string(b.threads.size()) + " threads",
                 *arrived, arrived->wgArrival.site);
      return false;
    }
    std::vector<GpuThread *> members;
    bool complete = true;
    for (uint32_t i = first; i < first + 128; ++i) {
      GpuThread &t = b.threads[i];
      if (t.done) {
        blockError(b,
                   std::string(name) + " is .aligned: thread " + threadName(t) +
                       " of warpgroup " + std::to_string(g) +
                       " exited without executing it",
                   *arrived, arrived->wgArrival.site);
        return false;
      }
      if (t.wait != Wait::Warpgroup) {
        complete = false;
        break;
      }
      if (t.wgArrival.kind != arrived->wgArrival.kind ||
          t.wgArrival.site != arrived->wgArrival.site) {
        blockError(b,
                   "warpgroup collective mismatch: thread " +
                       threadName(*arrived) + " executes " + name + " at " +
                       describeSite(arrived->wgArrival.site) + " but thread " +
                       threadName(t) + " executes " +
                       warpgroupName(t.wgArrival.kind) + " at " +
                       describeSite(t.wgArrival.site) +
                       " (.aligned: the whole warpgroup executes the same "
                       "instruction)",
                   *arrived, arrived->wgArrival.site);
        return false;
      }
      members.push_back(&t);
    }
    if (!complete)
      continue;
    executeWarpgroupCollective(b, g, members);
    if (b.aborted)
      return false;
    for (GpuThread *m : members)
      m->wait = Wait::None;
    progressed = true;
  }
  return progressed;
}

/// Nothing can run: names what each kind of waiting thread waits for. A
/// block whose live threads all wait on named barriers, mbarriers or
/// warpgroup collectives that can never complete is deadlocked.
static void reportStuck(BlockRun &b) {
  for (GpuThread &t : b.threads) {
    if (t.done)
      continue;
    switch (t.wait) {
    case Wait::Warp:
      blockError(b,
                 std::string(collectiveName(t.arrival.kind)) +
                     " participation mismatch: thread " + threadName(t) +
                     " waits for the lanes of membermask 0x" +
                     llvm::utohexstr(t.arrival.mask) +
                     ", which will never all arrive",
                 t, t.arrival.site);
      return;
    case Wait::Warpgroup: {
      std::string other;
      uint32_t first = t.linear / 128 * 128;
      for (uint32_t i = first; i < first + 128; ++i)
        if (b.threads[i].wait != Wait::Warpgroup) {
          other = "thread " + threadName(b.threads[i]) + " waits at " +
                  describeSite(b.threads[i].waitSite);
          break;
        }
      blockError(b,
                 std::string("deadlock: ") + warpgroupName(t.wgArrival.kind) +
                     " waits for all 128 threads of its warpgroup, but " +
                     other,
                 t, t.waitSite);
      return;
    }
    case Wait::Cluster: {
      // Some thread of the cluster never arrives at the phase.
      std::string missing;
      for (BlockRun *o : b.cluster->blocks)
        for (const GpuThread &x : o->threads)
          if (!x.done && x.clusterArrivals < t.waitObject && missing.empty())
            missing = "thread " + threadName(x) + " of CTA rank " +
                      std::to_string(o->clusterRank) +
                      (x.wait == Wait::None
                           ? std::string()
                           : " waits at " + describeSite(x.waitSite));
      blockError(b,
                 "deadlock: barrier.cluster.wait for phase " +
                     std::to_string(t.waitObject) +
                     " of the cluster barrier, at which " + missing +
                     " never arrives",
                 t, t.waitSite);
      return;
    }
    case Wait::NamedBarrier:
    case Wait::MBarrier: {
      std::string what;
      size_t waiting = 0;
      for (GpuThread &o : b.threads) {
        if (o.done ||
            (o.wait != Wait::NamedBarrier && o.wait != Wait::MBarrier))
          continue;
        if (waiting++ < 4) {
          what += "\n  thread " + threadName(o) + " at " +
                  describeSite(o.waitSite) + " waits on ";
          if (o.wait == Wait::MBarrier) {
            what += describeMBarrierWait(b, o);
          } else {
            const NamedBarrierState &nb = b.namedBarriers[o.waitObject];
            what += "named barrier " + std::to_string(o.waitObject) + " (" +
                    std::to_string(nb.arrived) + " of " +
                    std::to_string(nb.count) + " threads arrived)";
          }
        }
      }
      if (waiting > 4)
        what += "\n  and " + std::to_string(waiting - 4) + " more";
      blockError(b,
                 "deadlock: every live thread waits and no wait can "
                 "complete:" +
                     what,
                 t, t.waitSite);
      return;
    }
    default:
      break;
    }
  }
}

void kvir::emu::orderAllThreads(BlockRun &b) {
  b.epoch++;
  // What named barriers or mbarriers let one thread see, all see now.
  if (!b.clocks.empty()) {
    std::vector<GpuThread *> all;
    for (GpuThread &t : b.threads)
      all.push_back(&t);
    joinClocks(b, all);
  }
  // A cp.async still in flight may land at any time in the new epoch.
  for (GpuThread &t : b.threads)
    markPendingCopies(b, t);
}

static bool resolveBarrier(BlockRun &b) {
  size_t live = 0, waiting = 0;
  const GpuThread *waiter = nullptr, *exited = nullptr, *other = nullptr;
  for (const GpuThread &t : b.threads) {
    if (t.done) {
      exited = exited ? exited : &t;
      continue;
    }
    ++live;
    if (t.wait == Wait::Barrier) {
      ++waiting;
      waiter = waiter ? waiter : &t;
    } else {
      other = other ? other : &t;
    }
  }
  if (waiting == 0)
    return false;
  if (waiting == live && live == b.threads.size()) {
    // Every thread arrived, but a CTA barrier in divergent code (threads at
    // different barrier instructions) is still undefined behaviour in CUDA:
    // report it rather than let the two barriers pair up.
    for (const GpuThread &t : b.threads)
      if (t.waitSite != waiter->waitSite) {
        blockError(b,
                   "barrier divergence: thread " + threadName(*waiter) +
                       " waits at " + describeSite(waiter->waitSite) +
                       " while thread " + threadName(t) + " waits at " +
                       describeSite(t.waitSite),
                   *waiter, waiter->waitSite);
        return false;
      }
    for (GpuThread &t : b.threads)
      t.wait = Wait::None;
    b.stats->barriers++;
    orderAllThreads(b);
    return true;
  }
  if (waiting == live)
    blockError(b,
               "barrier divergence: " + std::to_string(waiting) + " of " +
                   std::to_string(b.threads.size()) +
                   " threads wait at the barrier but thread " +
                   threadName(*exited) + " has exited",
               *waiter, waiter->waitSite);
  else
    blockError(b,
               "barrier divergence: " + std::to_string(waiting) + " of " +
                   std::to_string(live) +
                   " live threads wait at the barrier while thread " +
                   threadName(*other) + " waits at " +
                   describeSite(other->waitSite),
               *waiter, waiter->waitSite);
  return false;
}

/// Runs the CTAs of a cluster (one, without clusters) together until all
/// their threads exit, or a report stops them.
static void runCluster(ClusterRun &c) {
  auto aborted = [&] {
    return llvm::any_of(c.blocks, [](BlockRun *b) { return b->aborted; });
  };
  for (;;) {
    bool anyLive = false;
    for (BlockRun *b : c.blocks) {
      current.block = b;
      for (GpuThread &t : b->threads) {
        if (t.done)
          continue;
        anyLive = true;
        if (t.wait == Wait::None) {
          resume(t);
          if (b->aborted)
            return;
        }
      }
    }
    if (!anyLive)
      return;
    // A thread may have released others (a named barrier or an mbarrier
    // phase it completed) that this pass had already gone by.
    if (llvm::any_of(c.blocks, [](BlockRun *b) {
          return llvm::any_of(b->threads, [](const GpuThread &t) {
            return !t.done && t.wait == Wait::None;
          });
        }))
      continue;
    bool progressed = false;
    for (BlockRun *b : c.blocks) {
      current.block = b;
      for (bool (*resolve)(BlockRun &) :
           {resolveCollectives, resolveWarpgroups, wakeMBarrierWaiters}) {
        progressed = resolve(*b);
        if (progressed || b->aborted)
          break;
      }
      if (progressed || b->aborted)
        break;
    }
    if (aborted())
      return;
    // Before block barriers: threads of a CTA may wait at barrier.cluster
    // while the others wait at bar.sync, which is not divergence.
    if (progressed || resolveClusterBarrier(c))
      continue;
    for (BlockRun *b : c.blocks) {
      current.block = b;
      progressed = resolveBarrier(*b);
      if (progressed || b->aborted)
        break;
    }
    if (aborted())
      return;
    if (progressed)
      continue;
    // Nothing can progress.
    for (BlockRun *b : c.blocks)
      if (llvm::any_of(b->threads,
                       [](const GpuThread &t) { return !t.done; })) {
        current.block = b;
        reportStuck(*b);
        return;
      }
    return;
  }
}

/// Makes `b` block `ctaid` of the launch, its threads at their entry, their
/// fiber stacks from `firstStack` on.
static void startBlock(BlockRun &b, Dim3 ctaid, uint64_t firstStack,
                       size_t stackBytes) {
  uint64_t numThreads = b.block.count();
  uint32_t numWarps = (numThreads + 31) / 32;
  b.ctaid = ctaid;
  b.epoch++;
  b.blockEpoch = b.epoch;
  b.work = LaunchStats::BlockWork();
  b.warpgroups.assign((numThreads + 127) / 128, WarpgroupState());
  b.mbarriers.clear();
  for (NamedBarrierState &nb : b.namedBarriers)
    nb = NamedBarrierState();
  b.clocks.clear();
  b.agentKeys.clear();
  b.agentSegments.clear();
  b.asyncReads.clear();
  // Uninitialized shared memory reads as NaN / all-ones, never as a
  // plausible leftover of the previous block.
  std::memset(b.shared, 0xff, b.sharedBytes);
  b.threads.assign(numThreads, GpuThread());
  b.liveLanes.assign(numWarps, 0);
  b.warpLanes.assign(numWarps, 0);
  b.doneLanes.assign(numWarps, 0);
  b.occurrences.assign(numThreads * b.numSites, 0);
  for (uint32_t i = 0; i < numThreads; ++i) {
    GpuThread &t = b.threads[i];
    t.tid[0] = i % b.block.x;
    t.tid[1] = (i / b.block.x) % b.block.y;
    t.tid[2] = i / (b.block.x * b.block.y);
    t.linear = i;
    t.lane = i % 32;
    t.warp = i / 32;
    t.clock[t.lane] = 1; // own segment 1; nothing synchronized yet
    t.stackLo = fiberStackLo(firstStack + i);
    t.stackHi = t.stackLo + stackBytes;
    t.context = ctx::make_fcontext(t.stackHi, stackBytes, threadEntry);
    b.liveLanes[t.warp]++;
    b.warpLanes[t.warp] |= 1u << t.lane;
  }
}

llvm::LogicalResult kvir::emu::runLaunch(const KernelHandle &kernel, Dim3 grid,
                                         Dim3 block, uint32_t dynamicShared,
                                         void **params, LaunchStats &stats,
                                         std::vector<std::string> &reports,
                                         size_t stackBytes,
                                         const LaunchAttributes &attributes) {
  auto start = std::chrono::steady_clock::now();
  stats.kernel = kernel.name;
  stats.grid = grid;
  stats.block = block;
  stats.dynamicSharedBytes = dynamicShared;
  stats.cluster = attributes.cluster;
  auto shared = kernel.module->kernelSharedBytes.find(kernel.name);
  stats.staticSharedBytes = shared != kernel.module->kernelSharedBytes.end()
                                ? shared->second
                                : kernel.module->staticSharedBytes;
  size_t reportsBefore = reports.size();
  uint64_t numThreads = block.count();
  uint64_t sharedBytes = stats.staticSharedBytes + dynamicShared;
  // The limits of the CUDA programming guide's compute capability table for
  // sm_80/sm_90, which a launch on the GPU would fail (or a compile reject).
  std::string invalid;
  auto dims = [](Dim3 d) {
    return "(" + std::to_string(d.x) + "," + std::to_string(d.y) + "," +
           std::to_string(d.z) + ")";
  };
  if (numThreads == 0 || numThreads > 1024 || block.x > 1024 ||
      block.y > 1024 || block.z > 64)
    invalid = "block " + dims(block) +
              ": at most 1024 threads, (1024, 1024, 64) per dimension";
  else if (grid.count() == 0 || grid.x > 0x7fffffffu || grid.y > 65535 ||
           grid.z > 65535)
    invalid = "grid " + dims(grid) +
              ": at most (2^31 - 1, 65535, 65535) blocks per dimension";
  else if (stats.staticSharedBytes > 48 * 1024)
    invalid = std::to_string(stats.staticSharedBytes) +
              " bytes of static shared memory; at most 49152 (more must be "
              "dynamic shared memory)";
  else if (sharedBytes > 227 * 1024)
    invalid = std::to_string(sharedBytes) +
              " bytes of shared memory per block; at most 232448 (sm_90)";
  else if (Dim3 c = attributes.cluster;
           c.count() == 0 || c.count() > kMaxClusterSize || grid.x % c.x ||
           grid.y % c.y || grid.z % c.z)
    invalid = "cluster " + dims(c) + " for grid " + dims(grid) +
              ": at most 8 CTAs per cluster, and the grid a multiple of the "
              "cluster in every dimension";
  if (!invalid.empty()) {
    reports.push_back("kvir-emu: kernel '" + kernel.name +
                      "': invalid launch configuration: " + invalid);
    return llvm::failure();
  }
  if (!sharedWindowBase()) {
    reports.push_back("kvir-emu: cannot map the emulator's " +
                      std::to_string(sharedWindowSize() >> 20) +
                      " MiB shared-memory window: " + std::strerror(errno));
    return llvm::failure();
  }
  if (!fitsSharedWindow(sharedBytes)) {
    reports.push_back("kvir-emu: kernel '" + kernel.name +
                      "': " + std::to_string(sharedBytes) +
                      " bytes of shared memory exceed the emulator's window");
    return llvm::failure();
  }
  // Only the pages a fiber touches get committed.
  if (!reserveFiberStacks(numThreads * attributes.cluster.count(),
                          stackBytes)) {
    reports.push_back("kvir-emu: kernel '" + kernel.name +
                      "': cannot map " + std::to_string(numThreads) + " fiber "
                      "stacks of " + std::to_string(stackBytes) +
                      " bytes: " + std::strerror(errno));
    return llvm::failure();
  }
  installStackOverflowHandler();
  if (!beginGrid(kernel.name, attributes.programmaticDependent, reports)) {
    endGrid();
    return llvm::failure();
  }
  stackBytes = fiberStackBytes();
  // One BlockRun per rank of a cluster, each with its own shared memory;
  // the CTAs of a cluster run together.
  uint32_t clusterSize = uint32_t(attributes.cluster.count());
  std::vector<BlockRun> ranks(clusterSize);
  std::vector<BlockRun *> rankPointers;
  ClusterRun cluster;
  cluster.dims = attributes.cluster;
  for (uint32_t r = 0; r < clusterSize; ++r) {
    BlockRun &b = ranks[r];
    b.kernel = &kernel;
    b.params = params;
    b.grid = grid;
    b.block = block;
    b.stats = &stats;
    b.reports = &reports;
    b.numSites = kernel.module->sites.size();
    b.shared = clusterArena(r);
    b.sharedBytes = sharedBytes;
    b.shadow.assign(sharedBytes, BlockRun::Shadow{});
    b.cluster = &cluster;
    b.clusterRank = r;
    rankPointers.push_back(&b);
  }
  stats.blocks.assign(grid.count(), LaunchStats::BlockWork());
  Dim3 cd = attributes.cluster;
  auto aborted = [&] {
    return llvm::any_of(ranks, [](const BlockRun &b) { return b.aborted; });
  };
  for (uint32_t cz = 0; cz < grid.z / cd.z && !aborted(); ++cz)
    for (uint32_t cy = 0; cy < grid.y / cd.y && !aborted(); ++cy)
      for (uint32_t cx = 0; cx < grid.x / cd.x && !aborted(); ++cx) {
        for (uint32_t r = 0; r < clusterSize; ++r) {
          Dim3 ctaid{cx * cd.x + r % cd.x, cy * cd.y + (r / cd.x) % cd.y,
                     cz * cd.z + r / (cd.x * cd.y)};
          startBlock(ranks[r], ctaid, r * numThreads, stackBytes);
        }
        cluster.reset(rankPointers);
        runCluster(cluster);
        for (BlockRun &b : ranks) {
          flushRequests(b);
          stats.blocks[(uint64_t(b.ctaid.z) * grid.y + b.ctaid.y) * grid.x +
                       b.ctaid.x] = b.work;
        }
      }
  for (BlockRun &b : ranks)
    if (b.racesNotShown)
      reports.push_back(header(b) + std::to_string(b.racesNotShown) +
                        " more shared-memory races at the sites reported "
                        "above");
  endGrid();
  current = Current();
  stats.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return llvm::success(!aborted() && reports.size() == reportsBefore);
}
