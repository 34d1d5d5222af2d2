//===- Barriers.cpp - Named barriers and mbarriers ------------------------===//
//
// The synchronization objects warp-specialized kernels use, as the PTX ISA
// defines them:
//  - named barriers (9.7.13.1, bar.sync / bar.arrive a, b): 16 per CTA; a
//    warp arrives once all its non-exited threads did and counts 32; the
//    barrier completes when b threads (all of the CTA without b) arrived,
//    releases the threads waiting at it and resets;
//  - mbarrier objects (9.7.13.15) in shared memory: a phase, the pending
//    arrivals of the current phase, the expected arrivals of each phase and
//    a transaction count; a phase completes when both counts reach zero.
// Both order memory between the threads they synchronize (vector clocks,
// Memory.cpp). Misuse the ISA leaves undefined is reported: counts out of
// range or in disagreement, an mbarrier used before init or after inval,
// and deadlocks (Scheduler.cpp names what every thread waits for).
//
//===----------------------------------------------------------------------===//
#include "HostMemory.h"
#include "Runtime.h"

using namespace kvir::emu;

static std::string threadName(const GpuThread &t) {
  return "(" + std::to_string(t.tid[0]) + "," + std::to_string(t.tid[1]) + "," +
         std::to_string(t.tid[2]) + ")";
}

//===----------------------------------------------------------------------===//
// Named barriers
//===----------------------------------------------------------------------===//

/// The thread count a named barrier instance expects: `count`, or the whole
/// CTA (in warps) when 0.
static uint32_t expectedThreads(const BlockRun &b, uint32_t count) {
  return count ? count : uint32_t(b.liveLanes.size()) * 32;
}

/// Completes named barrier `id` if every expected warp arrived.
static void completeNamedBarrier(BlockRun &b, uint32_t id) {
  NamedBarrierState &nb = b.namedBarriers[id];
  if (nb.arrived < nb.count)
    return;
  for (uint32_t linear : nb.participants) {
    GpuThread &t = b.threads[linear];
    if (t.wait == Wait::NamedBarrier && t.waitObject == id) {
      acquireClock(b, t, nb.joined);
      t.wait = Wait::None;
    }
    // A cp.async still in flight may land at any time after the barrier.
    markPendingCopies(b, t);
  }
  b.stats->namedBarriers++;
  nb = NamedBarrierState();
}

/// A warp's arrival is counted once all its non-exited lanes arrived; an
/// exiting lane may complete it (Scheduler.cpp calls this at each exit).
static void countWarps(BlockRun &b, uint32_t id) {
  NamedBarrierState &nb = b.namedBarriers[id];
  if (!nb.count)
    return;
  for (uint32_t w = 0; w < nb.lanes.size(); ++w) {
    uint32_t lanes = nb.lanes[w];
    if (!lanes || nb.countedWarps >> w & 1)
      continue;
    if ((lanes | b.doneLanes[w]) == b.warpLanes[w]) {
      nb.countedWarps |= 1u << w;
      nb.arrived += 32;
    }
  }
}

static void arriveNamed(uint32_t id, uint32_t count, uint32_t site, bool wait) {
  BlockRun &b = *current.block;
  GpuThread &t = *current.thread;
  const char *name = wait ? "bar.sync" : "bar.arrive";
  if (id > 15)
    fail(std::string(name) + " " + std::to_string(id) +
             ": barrier ids are 0 to 15",
         site);
  if (count % 32)
    fail(std::string(name) + " " + std::to_string(id) + ", " +
             std::to_string(count) +
             ": the thread count must be a multiple of the warp size",
         site);
  if (!wait && !count)
    fail("bar.arrive " + std::to_string(id) +
             " needs a non-zero thread count (PTX ISA 9.7.13.1)",
         site);
  uint32_t expected = expectedThreads(b, count);
  if (expected > b.liveLanes.size() * 32)
    fail(std::string(name) + " " + std::to_string(id) + " expects " +
             std::to_string(expected) + " threads; the block has " +
             std::to_string(b.threads.size()),
         site);
  NamedBarrierState &nb = b.namedBarriers[id];
  if (!nb.count) {
    nb.count = expected;
    nb.firstSite = site;
    nb.firstThread = t.linear;
    nb.lanes.assign(b.liveLanes.size(), 0);
  } else if (nb.count != expected) {
    fail(std::string(name) + " " + std::to_string(id) + " with " +
             std::to_string(expected) + " threads while thread " +
             threadName(b.threads[nb.firstThread]) + " arrived with " +
             std::to_string(nb.count) + " at " + describeSite(nb.firstSite) +
             " (one barrier instance, two thread counts)",
         site);
  }
  if (nb.countedWarps >> t.warp & 1 || nb.lanes[t.warp] >> t.lane & 1)
    fail(std::string(name) + " " + std::to_string(id) +
             ": the thread's warp arrives again before the barrier completed",
         site);
  nb.lanes[t.warp] |= 1u << t.lane;
  nb.participants.push_back(t.linear);
  releaseClock(b, t, nb.joined);
  countWarps(b, id);
  if (nb.arrived > nb.count)
    fail(std::string(name) + " " + std::to_string(id) + ": " +
             std::to_string(nb.arrived) + " threads arrived at a barrier of " +
             std::to_string(nb.count),
         site);
  if (wait) {
    t.wait = Wait::NamedBarrier;
    t.waitObject = id;
    t.waitSite = site;
  }
  completeNamedBarrier(b, id);
  if (wait && t.wait == Wait::NamedBarrier)
    yieldToScheduler();
}

void kvir::emu::namedBarrierExit(BlockRun &b) {
  for (uint32_t id = 0; id < 16; ++id) {
    countWarps(b, id);
    if (b.namedBarriers[id].count)
      completeNamedBarrier(b, id);
  }
}

//===----------------------------------------------------------------------===//
// mbarrier
//===----------------------------------------------------------------------===//

uint32_t kvir::emu::mbarrierAt(const void *ptr, const std::string &op,
                               uint32_t site) {
  BlockRun &b = *current.block;
  uint64_t addr = reinterpret_cast<uint64_t>(ptr);
  uint64_t arena = reinterpret_cast<uint64_t>(b.shared);
  if (addr < arena || addr + 8 > arena + b.sharedBytes)
    fail(op + ": the mbarrier address is not in the block's shared memory",
         site);
  if (addr % 8)
    fail(op + ": the mbarrier address is not 8-byte aligned", site);
  return uint32_t(addr - arena);
}

namespace {

constexpr int64_t kMaxCount = (1 << 20) - 1;

const char *opName(uint32_t kind) {
  static const char *names[] = {"mbarrier.init",
                                "mbarrier.inval",
                                "mbarrier.arrive",
                                "mbarrier.arrive_drop",
                                "mbarrier.expect_tx",
                                "mbarrier.complete_tx",
                                "mbarrier.arrive.expect_tx",
                                "mbarrier.arrive_drop.expect_tx",
                                "mbarrier.test_wait",
                                "mbarrier.test_wait.parity",
                                "mbarrier.try_wait",
                                "mbarrier.try_wait.parity"};
  return kind < std::size(names) ? names[kind] : "mbarrier";
}

std::string where(uint32_t offset) {
  return "the mbarrier at shared offset " + std::to_string(offset);
}

/// Completes the current phase if no arrival and no transaction is pending.
void maybeComplete(BlockRun &b, MBarrierState &m) {
  if (m.pending || m.tx)
    return;
  m.phase++;
  m.pending = m.expected;
  m.completed = std::move(m.releases);
  m.releases.clear();
  m.observed = false;
  b.stats->mbarrierPhases++;
}

void arrive(BlockRun &b, GpuThread &t, MBarrierState &m, uint32_t offset,
            uint32_t count, bool drop, uint32_t site) {
  if (!m.observed)
    fail("arrives on " + where(offset) + " in phase " +
             std::to_string(m.phase) +
             " before any wait observed the completion of phase " +
             std::to_string(m.phase - 1) +
             " (PTX ISA 9.7.13.15.16: one test_wait / try_wait must return "
             "true for each phase before an arrive on the next)",
         site);
  if (count == 0)
    fail("mbarrier.arrive" + std::string(drop ? "_drop" : "") +
             " with a count of 0 (the count is in [1, 2^20 - 1])",
         site);
  if (drop) {
    if (count >= m.expected)
      fail("mbarrier.arrive_drop of " + std::to_string(count) + " on " +
               where(offset) + ", which expects " + std::to_string(m.expected) +
               " arrivals per phase",
           site);
    m.expected -= count;
  }
  if (count > m.pending)
    fail("mbarrier.arrive" + std::string(drop ? "_drop" : "") + " of " +
             std::to_string(count) + " on " + where(offset) + " with " +
             std::to_string(m.pending) + " arrivals pending in phase " +
             std::to_string(m.phase) +
             " (more arrivals than the phase expects)",
         site);
  m.pending -= count;
  releaseClock(b, t, m.releases);
  maybeComplete(b, m);
}

void addTx(MBarrierState &m, int64_t delta, uint32_t offset, const char *op,
           uint32_t site) {
  int64_t tx = m.tx + delta;
  if (tx > kMaxCount || tx < -kMaxCount)
    fail(std::string(op) + " takes the transaction count of " + where(offset) +
             " to " + std::to_string(tx) + ", outside [-(2^20 - 1), 2^20 - 1]",
         site);
  m.tx = tx;
}

/// A wait that observes the completion of the last completed phase:
/// acquires what its arrivals released.
void observe(BlockRun &b, GpuThread &t, MBarrierState &m) {
  m.observed = true;
  acquireClock(b, t, m.completed);
}

} // namespace

void kvir::emu::mbarrierCompleteTx(BlockRun &b, uint32_t offset, uint64_t bytes,
                                   uint32_t agent, const std::string &op,
                                   uint32_t site) {
  MBarrierState &m = b.mbarriers[offset];
  if (!m.valid)
    fail(op + " completes transactions on " + where(offset) +
             ", which holds no valid mbarrier",
         site);
  releaseAgent(b, agent, m.releases);
  addTx(m, -int64_t(bytes), offset, op.c_str(), site);
  maybeComplete(b, m);
}

void kvir::emu::checkNotMBarrier(BlockRun &b, uint64_t offset, uint64_t bytes,
                                 const std::string &what, uint32_t site) {
  if (b.mbarriers.empty())
    return;
  auto it = b.mbarriers.lower_bound(uint32_t(offset >= 7 ? offset - 7 : 0));
  for (; it != b.mbarriers.end() && it->first < offset + bytes; ++it)
    if (it->second.valid)
      fail(what + " shared bytes [" + std::to_string(offset) + ", " +
               std::to_string(offset + bytes) + "), which hold " +
               where(it->first) + " (initialized at " +
               describeSite(it->second.initSite) +
               "): only mbarrier instructions may access a valid mbarrier "
               "(PTX ISA 9.7.13.15.1)",
           site);
}

bool kvir::emu::wakeMBarrierWaiters(BlockRun &b) {
  bool woke = false;
  for (GpuThread &t : b.threads) {
    if (t.done || t.wait != Wait::MBarrier)
      continue;
    MBarrierState &m = b.mbarriers[t.waitObject];
    if (m.valid && (m.phase & 1) != t.waitParity) {
      observe(b, t, m);
      t.wait = Wait::None;
      woke = true;
    }
  }
  return woke;
}

std::string kvir::emu::describeMBarrierWait(BlockRun &b, const GpuThread &t) {
  const MBarrierState &m = b.mbarriers[t.waitObject];
  return where(t.waitObject) + " for the completion of a phase of parity " +
         std::to_string(t.waitParity) + " (current phase " +
         std::to_string(m.phase) + ", " + std::to_string(m.pending) + " of " +
         std::to_string(m.expected) + " arrivals pending, transaction count " +
         std::to_string(m.tx) + ")";
}

extern "C" uint64_t __kvemu_mbarrier(uint32_t kind, const void *ptr, uint32_t a,
                                     uint64_t state, uint32_t enabled,
                                     uint32_t site) {
  if (!enabled)
    return 0;
  BlockRun &b = *current.block;
  GpuThread &t = *current.thread;
  uint32_t offset = mbarrierAt(ptr, opName(kind), site);
  MBarrierState &m = b.mbarriers[offset];
  if (kind == kabi::MbInit) {
    if (m.valid)
      fail("mbarrier.init on " + where(offset) +
               ", which holds a valid mbarrier (initialized at " +
               describeSite(m.initSite) + "; mbarrier.inval it first)",
           site);
    if (a < 1 || a > kMaxCount)
      fail("mbarrier.init with an arrival count of " + std::to_string(a) +
               ", outside [1, 2^20 - 1]",
           site);
    m = MBarrierState();
    m.valid = true;
    m.initThread = t.linear + 1;
    m.initSite = site;
    m.expected = m.pending = a;
    m.initEpoch = b.epoch;
    m.initSegment = t.segment;
    // The init is a release of its thread: other threads may use the
    // object once a barrier or its fence orders them after it.
    releaseClock(b, t, m.releases);
    m.completed = m.releases;
    m.releases.clear();
    return 0;
  }
  if (!m.valid)
    fail(std::string(opName(kind)) + " on " + where(offset) +
             (m.initSite || m.initThread
                  ? ", which was invalidated (mbarrier.inval)"
                  : ", which holds no mbarrier (no mbarrier.init before)"),
         site);
  if (m.initThread != t.linear + 1 && b.epoch == m.initEpoch &&
      !clockCovers(b, t, m.initThread - 1, m.initSegment))
    fail(std::string(opName(kind)) + " on " + where(offset) +
             " before its "
             "mbarrier.init by thread " +
             threadName(b.threads[m.initThread - 1]) + " at " +
             describeSite(m.initSite) +
             " is ordered before it (a barrier after the init, with "
             "fence.mbarrier_init for other CTAs of a cluster)",
         site);
  switch (kind) {
  case kabi::MbInval:
    m.valid = false;
    return 0;
  case kabi::MbArrive:
  case kabi::MbArriveDrop: {
    uint64_t token = m.phase;
    arrive(b, t, m, offset, a, kind == kabi::MbArriveDrop, site);
    return token;
  }
  case kabi::MbArriveExpectTx:
  case kabi::MbArriveDropExpectTx: {
    uint64_t token = m.phase;
    addTx(m, a, offset, opName(kind), site);
    arrive(b, t, m, offset, 1, kind == kabi::MbArriveDropExpectTx, site);
    return token;
  }
  case kabi::MbExpectTx:
    addTx(m, a, offset, opName(kind), site);
    return 0;
  case kabi::MbCompleteTx:
    addTx(m, -int64_t(a), offset, opName(kind), site);
    maybeComplete(b, m);
    return 0;
  case kabi::MbTestWait:
  case kabi::MbTryWait:
  case kabi::MbTestWaitParity:
  case kabi::MbTryWaitParity: {
    bool parity =
        kind == kabi::MbTestWaitParity || kind == kabi::MbTryWaitParity;
    uint32_t waitParity;
    if (parity) {
      if (a > 1)
        fail(std::string(opName(kind)) + " with parity " + std::to_string(a) +
                 " (0 or 1)",
             site);
      waitParity = a;
    } else {
      // The state an arrive returned: its phase, which must be the current
      // or the preceding one.
      if (state > m.phase || m.phase - state > 1)
        fail(std::string(opName(kind)) + " on " + where(offset) +
                 " with the state of phase " + std::to_string(state) +
                 "; the current phase is " + std::to_string(m.phase) +
                 " (only it and the one before may be waited on)",
             site);
      waitParity = state & 1;
    }
    if ((m.phase & 1) != waitParity) {
      observe(b, t, m);
      b.stats->mbarrierWaits++;
      return 1;
    }
    // Not complete: the thread is suspended until it is (try_wait may
    // return false after a time limit; test_wait returns false at once —
    // the emulator lets the thread run again only when the answer is
    // true, which a thread that slow would see too).
    b.stats->mbarrierWaits++;
    b.stats->mbarrierSpins++;
    t.wait = Wait::MBarrier;
    t.waitObject = offset;
    t.waitParity = waitParity;
    t.waitSite = site;
    yieldToScheduler();
    return 1;
  }
  }
  fail("unknown mbarrier operation " + std::to_string(kind), site);
}

extern "C" void __kvemu_fence_mbarrier_init(uint32_t) {}

extern "C" void __kvemu_barrier(uint32_t id, uint32_t count, uint32_t site) {
  GpuThread &t = *current.thread;
  // Barrier 0 without a thread count is __syncthreads: every thread of the
  // block at the same barrier (Scheduler.cpp), ordering everything. With a
  // count it is a named barrier like the others, which bar.arrive may use.
  if (id == 0 && count == 0) {
    t.wait = Wait::Barrier;
    t.waitSite = site;
    yieldToScheduler();
    return;
  }
  arriveNamed(id, count, site, /*wait=*/true);
}

extern "C" void __kvemu_barrier_arrive(uint32_t id, uint32_t count,
                                       uint32_t site) {
  arriveNamed(id, count, site, /*wait=*/false);
}
