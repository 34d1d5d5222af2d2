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
#include "Runtime.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <sys/mman.h>

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
  b.reports->push_back(header(b) + what + "\n  " + describeThread() +
                       "\n  at " + describeSite(site));
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
  return "(" + std::to_string(t.tid[0]) + "," + std::to_string(t.tid[1]) +
         "," + std::to_string(t.tid[2]) + ")";
}

static void blockError(BlockRun &b, const std::string &what) {
  b.reports->push_back(header(b) + what + "\n  block (" +
                       std::to_string(b.ctaid.x) + "," +
                       std::to_string(b.ctaid.y) + "," +
                       std::to_string(b.ctaid.z) + ")");
  b.aborted = true;
}

/// Completes the warp collectives whose members have all arrived. Returns
/// whether any thread became runnable; sets b.aborted on a participation
/// error that can never resolve.
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
      current.thread = &t;
      if (!(mask >> t.lane & 1)) {
        blockError(b, "thread " + threadName(t) +
                          " executes a warp collective with membermask 0x" +
                          llvm::utohexstr(mask) + " that excludes its own lane " +
                          std::to_string(t.lane) + "\n  at " +
                          describeSite(t.arrival.site));
        return false;
      }
      std::vector<GpuThread *> members;
      bool complete = true;
      for (uint32_t lane = 0; lane < 32 && complete; ++lane) {
        if (!(mask >> lane & 1))
          continue;
        uint32_t idx = first + lane;
        if (idx >= last) {
          blockError(b, "warp collective membermask 0x" + llvm::utohexstr(mask) +
                            " names lane " + std::to_string(lane) +
                            ", which does not exist in a block of " +
                            std::to_string(b.threads.size()) + " threads\n  at " +
                            describeSite(t.arrival.site));
          return false;
        }
        GpuThread &m = b.threads[idx];
        if (m.done) {
          blockError(b, "shuffle/vote participation mismatch: lane " +
                            std::to_string(lane) + " of membermask 0x" +
                            llvm::utohexstr(mask) + " exited before joining\n  at " +
                            describeSite(t.arrival.site));
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
        if (m->arrival.kind != t.arrival.kind) {
          blockError(b, "warp collective mismatch: thread " + threadName(t) +
                            " at " + describeSite(t.arrival.site) +
                            " but thread " + threadName(*m) + " at " +
                            describeSite(m->arrival.site));
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
  current.thread = nullptr;
  return progressed;
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
    for (GpuThread &t : b.threads)
      t.wait = Wait::None;
    b.epoch++;
    b.stats->barriers++;
    return true;
  }
  current.thread = const_cast<GpuThread *>(waiter);
  std::string where = describeSite(waiter->waitSite);
  if (waiting == live)
    blockError(b, "barrier divergence: " + std::to_string(waiting) + " of " +
                      std::to_string(b.threads.size()) +
                      " threads wait at the barrier but thread " +
                      threadName(*exited) + " has exited\n  at " + where);
  else
    blockError(b, "barrier divergence: " + std::to_string(waiting) + " of " +
                      std::to_string(live) +
                      " live threads wait at the barrier while thread " +
                      threadName(*other) + " waits at " +
                      describeSite(other->waitSite) + "\n  barrier at " + where);
  current.thread = nullptr;
  return false;
}

static void runBlock(BlockRun &b) {
  for (;;) {
    bool anyLive = false;
    for (GpuThread &t : b.threads) {
      if (t.done)
        continue;
      anyLive = true;
      if (t.wait == Wait::None) {
        resume(t);
        if (b.aborted)
          return;
      }
    }
    if (!anyLive)
      return;
    bool allDone = true;
    for (GpuThread &t : b.threads)
      allDone &= t.done;
    if (allDone)
      return;
    if (resolveCollectives(b))
      continue;
    if (b.aborted)
      return;
    if (resolveBarrier(b))
      continue;
    if (!b.aborted) {
      // Nothing can progress: collectives waiting on lanes stuck elsewhere.
      for (GpuThread &t : b.threads)
        if (!t.done && t.wait == Wait::Warp) {
          current.thread = &t;
          blockError(b, "shuffle/vote participation mismatch: thread " +
                            threadName(t) + " waits for the lanes of membermask 0x" +
                            llvm::utohexstr(t.arrival.mask) +
                            ", which will never all arrive\n  at " +
                            describeSite(t.arrival.site));
          current.thread = nullptr;
          break;
        }
    }
    return;
  }
}

/// Reserved address window for shared memory: accesses that land in the
/// window but outside the block's arena are shared out-of-bounds accesses.
static constexpr uint64_t kSharedWindow = 64ull << 20;
static constexpr uint64_t kSharedArenaOffset = 16ull << 20;

char *sharedWindowBase() {
  static char *base = [] {
    void *p = mmap(nullptr, kSharedWindow, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return static_cast<char *>(p == MAP_FAILED ? nullptr : p);
  }();
  return base;
}
uint64_t sharedWindowSize() { return kSharedWindow; }

llvm::LogicalResult kvir::emu::runLaunch(const KernelHandle &kernel, Dim3 grid,
                                         Dim3 block, uint32_t dynamicShared,
                                         void **params, LaunchStats &stats,
                                         std::vector<std::string> &reports,
                                         size_t stackBytes) {
  auto start = std::chrono::steady_clock::now();
  stats.kernel = kernel.name;
  stats.grid = grid;
  stats.block = block;
  stats.dynamicSharedBytes = dynamicShared;
  stats.staticSharedBytes = kernel.module->staticSharedBytes;
  size_t reportsBefore = reports.size();
  uint64_t numThreads = block.count();
  if (numThreads == 0 || numThreads > 1024 || grid.count() == 0) {
    reports.push_back("kvir-emu: kernel '" + kernel.name +
                      "': invalid launch configuration: " +
                      std::to_string(numThreads) + " threads per block, " +
                      std::to_string(grid.count()) + " blocks");
    return llvm::failure();
  }
  uint64_t sharedBytes = kernel.module->staticSharedBytes + dynamicShared;
  if (sharedBytes + kSharedArenaOffset > kSharedWindow || !sharedWindowBase()) {
    reports.push_back("kvir-emu: kernel '" + kernel.name + "': " +
                      std::to_string(sharedBytes) +
                      " bytes of shared memory exceed the emulator's window");
    return llvm::failure();
  }
  // Uninitialized: only the pages a fiber touches get committed.
  std::unique_ptr<char[]> stacks(new char[numThreads * stackBytes]);
  BlockRun b;
  b.kernel = &kernel;
  b.params = params;
  b.grid = grid;
  b.block = block;
  b.stats = &stats;
  b.reports = &reports;
  b.shared = sharedWindowBase() + kSharedArenaOffset;
  b.sharedBytes = sharedBytes;
  b.writer.assign(sharedBytes, 0);
  b.writeEpoch.assign(sharedBytes, 0);
  b.reader.assign(sharedBytes, 0);
  b.readEpoch.assign(sharedBytes, 0);
  b.multiReader.assign(sharedBytes, 0);
  uint32_t numWarps = (numThreads + 31) / 32;
  current.block = &b;
  for (uint32_t bz = 0; bz < grid.z && !b.aborted; ++bz)
    for (uint32_t by = 0; by < grid.y && !b.aborted; ++by)
      for (uint32_t bx = 0; bx < grid.x && !b.aborted; ++bx) {
        b.ctaid = {bx, by, bz};
        b.epoch++;
        // Uninitialized shared memory reads as NaN / all-ones, never as a
        // plausible leftover of the previous block.
        std::memset(b.shared, 0xff, sharedBytes);
        b.threads.assign(numThreads, GpuThread());
        b.liveLanes.assign(numWarps, 0);
        for (uint32_t i = 0; i < numThreads; ++i) {
          GpuThread &t = b.threads[i];
          t.tid[0] = i % block.x;
          t.tid[1] = (i / block.x) % block.y;
          t.tid[2] = i / (block.x * block.y);
          t.linear = i;
          t.lane = i % 32;
          t.warp = i / 32;
          t.stackLo = stacks.get() + i * stackBytes;
          t.stackHi = t.stackLo + stackBytes;
          t.context = ctx::make_fcontext(t.stackHi, stackBytes, threadEntry);
          b.liveLanes[t.warp]++;
        }
        runBlock(b);
        flushRequests(b, /*all=*/true);
      }
  current = Current();
  stats.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return llvm::success(!b.aborted && reports.size() == reportsBefore);
}
