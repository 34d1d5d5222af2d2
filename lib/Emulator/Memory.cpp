//===- Memory.cpp - Access checks, race detection and traffic counters ----===//
#include "Cluster.h"
#include "DependentLaunch.h"
#include "HostMemory.h"
#include "Runtime.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/bit.h"

#include <algorithm>
#include <optional>

using namespace kvir::emu;

AllocationTable &kvir::emu::allocations() {
  static AllocationTable table;
  return table;
}

static std::string hex(uint64_t v) { return "0x" + llvm::utohexstr(v); }

void AllocationTable::add(uint64_t addr, uint64_t bytes, std::string what) {
  // Memory handed out again is no longer "freed".
  for (auto it = freed.lower_bound(addr);
       it != freed.end() && it->first < addr + std::max<uint64_t>(bytes, 1);)
    it = freed.erase(it);
  auto before = freed.lower_bound(addr);
  if (before != freed.begin()) {
    --before;
    if (before->first + before->second.bytes > addr)
      freed.erase(before);
  }
  live[addr] = {bytes, std::move(what)};
}

void AllocationTable::remove(uint64_t addr) {
  auto it = live.find(addr);
  if (it == live.end())
    return;
  if (freedOrder.size() >= kMaxFreed) {
    freed.erase(freedOrder.front());
    freedOrder.erase(freedOrder.begin(), freedOrder.begin() + kMaxFreed / 2);
  }
  freed[addr] = std::move(it->second);
  freedOrder.push_back(addr);
  live.erase(it);
}

const std::pair<const uint64_t, AllocationTable::Entry> *
AllocationTable::find(uint64_t addr, uint64_t bytes) const {
  auto it = live.upper_bound(addr);
  if (it == live.begin())
    return nullptr;
  --it;
  if (addr >= it->first && addr + bytes <= it->first + it->second.bytes)
    return &*it;
  return nullptr;
}

static std::string range(uint64_t lo, const AllocationTable::Entry &e) {
  return e.what + " [" + hex(lo) + ", " + hex(lo + e.bytes) + ") of " +
         std::to_string(e.bytes) + " bytes";
}

std::string AllocationTable::describeMiss(uint64_t addr, uint64_t bytes) const {
  auto f = freed.upper_bound(addr);
  if (f != freed.begin() &&
      addr < std::prev(f)->first + std::prev(f)->second.bytes)
    return "inside " + range(std::prev(f)->first, std::prev(f)->second) +
           ", which was freed (use after free)";
  auto above = live.upper_bound(addr);
  const std::pair<const uint64_t, Entry> *below =
      above == live.begin() ? nullptr : &*std::prev(above);
  if (below && addr < below->first + below->second.bytes)
    return "the last " +
           std::to_string(addr + bytes - below->first - below->second.bytes) +
           " bytes are past the end of " + range(below->first, below->second);
  uint64_t gapBelow =
      below ? addr - (below->first + below->second.bytes) : UINT64_MAX;
  uint64_t gapAbove = above != live.end() ? above->first - addr : UINT64_MAX;
  if (!below && above == live.end())
    return "no allocation is live";
  if (gapBelow <= gapAbove)
    return std::to_string(gapBelow) + " bytes past the end of " +
           range(below->first, below->second);
  return std::to_string(gapAbove) + " bytes before the start of " +
         range(above->first, above->second);
}

std::string AllocationTable::describeOutside(
    const std::pair<const uint64_t, Entry> &own, uint64_t addr,
    uint64_t bytes) const {
  std::string where;
  uint64_t end = own.first + own.second.bytes;
  if (addr >= end)
    where = std::to_string(addr - end) + " bytes past the end of ";
  else if (addr + bytes <= own.first)
    where = std::to_string(own.first - addr - bytes) +
            " bytes before the start of ";
  else if (addr + bytes > end)
    where = "the last " + std::to_string(addr + bytes - end) +
            " bytes are past the end of ";
  else
    where = "the first " + std::to_string(own.first - addr) +
            " bytes are before the start of ";
  where += range(own.first, own.second);
  if (const auto *other = find(addr, bytes))
    where += " (inside " + range(other->first, other->second) +
             ", another allocation)";
  return where;
}

static std::string accessName(uint32_t flags) {
  if (flags & kabi::Atomic)
    return "atomic";
  return flags & kabi::Store ? "store" : "load";
}

static std::string threadOf(BlockRun &b, uint32_t linearPlusOne) {
  if (linearPlusOne - 1 >= b.threads.size()) {
    uint32_t key = b.agentKeys[linearPlusOne - 1 - b.threads.size()];
    if (key & BlockRun::kWarpgroupAgent)
      return "(the wgmma.mma_async of warpgroup " +
             std::to_string(key & ~BlockRun::kWarpgroupAgent) + ")";
    return "(a bulk copy completing on the mbarrier at shared offset " +
           std::to_string(key) + ")";
  }
  const GpuThread &t = b.threads[linearPlusOne - 1];
  return "(" + std::to_string(t.tid[0]) + "," + std::to_string(t.tid[1]) + "," +
         std::to_string(t.tid[2]) + ")";
}

/// Whether the last write of a shared byte may still race: a thread's
/// within its epoch (a block barrier orders it), a bulk copy's within the
/// block (only its mbarrier orders it; Tma.cpp).
static bool writeLive(const BlockRun &b, const BlockRun::Shadow &sh) {
  if (sh.writer.thread > b.threads.size())
    return sh.writeEpoch >= b.blockEpoch;
  return sh.writeEpoch == b.epoch;
}

/// Happens-before between threads of a block: a block barrier orders all
/// accesses (epochs); bar.warp.sync orders those of its members (the warp
/// vector clocks of GpuThread). Two accesses to a shared byte in the same
/// epoch by different threads, at least one a store, that no bar.warp.sync
/// orders, race; so do an atomic and a plain access (the PTX memory model:
/// conflicting accesses that are not both strong form a data race), not
/// two atomics. Up to two readers and two atomic updaters per byte are
/// remembered. Each pair of sites is reported once per launch.
static bool ordered(BlockRun &b, const GpuThread &t,
                    const BlockRun::Accessor &other) {
  uint32_t who = other.thread - 1;
  if (who >= b.threads.size()) // an async agent (a TMA / bulk copy)
    return clockCovers(b, t, who, other.segment);
  const GpuThread &o = b.threads[who];
  return (o.warp == t.warp && t.clock[o.lane] >= other.clock) ||
         clockCovers(b, t, who, other.segment);
}

bool kvir::emu::writeOrderedBefore(BlockRun &b, const GpuThread &t,
                                   const BlockRun::Shadow &sh) {
  if (!sh.writer.thread || !writeLive(b, sh) ||
      sh.writer.thread == t.linear + 1)
    return true;
  return ordered(b, t, sh.writer);
}

/// Columns of the vector clocks: the block's threads, then its async
/// agents (one per mbarrier that bulk copies complete on).
static size_t clockWidth(const BlockRun &b) {
  return b.threads.size() + b.agentKeys.size();
}

static void allocateClocks(BlockRun &b) {
  if (b.clocks.empty())
    b.clocks.assign(b.threads.size() * clockWidth(b), 0);
}

bool kvir::emu::clockCovers(const BlockRun &b, const GpuThread &t,
                            uint32_t other, uint32_t segment) {
  if (b.clocks.empty())
    return false;
  return b.clocks[size_t(t.linear) * clockWidth(b) + other] >= segment;
}

void kvir::emu::releaseClock(BlockRun &b, GpuThread &t,
                             std::vector<uint32_t> &into) {
  allocateClocks(b);
  size_t width = clockWidth(b);
  into.resize(width, 0);
  const uint32_t *mine = &b.clocks[size_t(t.linear) * width];
  for (size_t i = 0; i < width; ++i)
    into[i] = std::max(into[i], mine[i]);
  into[t.linear] = std::max(into[t.linear], t.segment);
  t.segment++;
}

void kvir::emu::acquireClock(BlockRun &b, GpuThread &t,
                             const std::vector<uint32_t> &from) {
  allocateClocks(b);
  size_t width = clockWidth(b);
  uint32_t *mine = &b.clocks[size_t(t.linear) * width];
  for (size_t i = 0; i < from.size() && i < width; ++i)
    mine[i] = std::max(mine[i], from[i]);
}

uint32_t kvir::emu::asyncAgent(BlockRun &b, uint32_t key) {
  for (uint32_t a = 0; a < b.agentKeys.size(); ++a)
    if (b.agentKeys[a] == key)
      return uint32_t(b.threads.size()) + a;
  // A new column: widen every thread's clock.
  size_t n = b.threads.size(), oldWidth = clockWidth(b);
  b.agentKeys.push_back(key);
  b.agentSegments.push_back(1);
  if (!b.clocks.empty()) {
    std::vector<uint32_t> wider(n * (oldWidth + 1), 0);
    for (size_t t = 0; t < n; ++t)
      std::copy(&b.clocks[t * oldWidth], &b.clocks[t * oldWidth] + oldWidth,
                &wider[t * (oldWidth + 1)]);
    b.clocks = std::move(wider);
  }
  return uint32_t(oldWidth);
}

void kvir::emu::joinClocks(BlockRun &b,
                           const std::vector<GpuThread *> &members) {
  allocateClocks(b);
  size_t width = clockWidth(b);
  std::vector<uint32_t> joined(width, 0);
  for (GpuThread *t : members)
    releaseClock(b, *t, joined);
  for (GpuThread *t : members)
    acquireClock(b, *t, joined);
}

void kvir::emu::releaseAgent(BlockRun &b, uint32_t agent,
                             std::vector<uint32_t> &into) {
  into.resize(clockWidth(b), 0);
  uint32_t &segment = b.agentSegments[agent - b.threads.size()];
  into[agent] = std::max(into[agent], segment);
  segment++;
}

namespace {
/// The kind of a shared-memory access, for the race checks.
enum class Access { load, store, atomic };

/// An earlier access of another thread that an access races with.
struct Conflict {
  uint32_t thread = 0, site = 0;
  Access kind = Access::load;
};
} // namespace

/// The first access recorded in `sh` (this epoch) that `t`'s access of
/// `kind` races with.
static Conflict findConflict(BlockRun &b, GpuThread &t,
                             const BlockRun::Shadow &sh, Access kind) {
  uint32_t me = t.linear + 1, epoch = b.epoch;
  auto races = [&](const BlockRun::Accessor &other) {
    return other.thread && other.thread != me && !ordered(b, t, other);
  };
  auto inSet = [&](const BlockRun::Accessors &set,
                   Access setKind) -> std::optional<Conflict> {
    if (set.epoch != epoch)
      return std::nullopt;
    for (const BlockRun::Accessor &other : {set.first, set.second})
      if (races(other))
        return Conflict{other.thread, other.site, setKind};
    return std::nullopt;
  };
  // Plain stores race with everything; loads with stores and atomics;
  // atomics with plain accesses.
  if (writeLive(b, sh) && races(sh.writer))
    return {sh.writer.thread, sh.writer.site, Access::store};
  if (kind != Access::load)
    if (std::optional<Conflict> c = inSet(sh.readers, Access::load))
      return *c;
  if (kind != Access::atomic)
    if (std::optional<Conflict> c = inSet(sh.atomics, Access::atomic))
      return *c;
  return {};
}

/// Records `t`'s access of `kind` in `sh`.
static void recordAccess(BlockRun &b, GpuThread &t, BlockRun::Shadow &sh,
                         Access kind, uint32_t site) {
  uint32_t epoch = b.epoch;
  BlockRun::Accessor me{t.linear + 1, site, t.clock[t.lane], t.segment};
  if (kind == Access::store) {
    sh.writer = me;
    sh.writeEpoch = epoch;
    sh.writerProxyFences = t.proxyFences;
    return;
  }
  // Loads and atomics keep the first two distinct threads of the epoch.
  BlockRun::Accessors &set = kind == Access::load ? sh.readers : sh.atomics;
  if (set.epoch != epoch)
    set = {epoch, me, {}};
  else if (set.first.thread == me.thread)
    set.first = me;
  else if (!set.second.thread || set.second.thread == me.thread)
    set.second = me;
}

std::string kvir::emu::describeWriter(BlockRun &b, const BlockRun::Shadow &sh) {
  return "thread " + threadOf(b, sh.writer.thread);
}

std::string kvir::emu::unfencedGenericWrite(BlockRun &b, uint64_t offset,
                                            const std::string &reader) {
  const BlockRun::Shadow &sh = b.shadow[offset];
  uint32_t writer = sh.writer.thread;
  // Bulk copies (agents) write through the async proxy themselves.
  if (!writer || sh.writeEpoch < b.blockEpoch || writer > b.threads.size() ||
      b.threads[writer - 1].proxyFences != sh.writerProxyFences)
    return "";
  return reader + " (async proxy) reads shared offset " +
         std::to_string(offset) + ", which " + describeWriter(b, sh) +
         " wrote through the generic proxy without a fence.proxy.async "
         "since\n  write at " +
         describeSite(sh.writer.site);
}

static const char *accessVerb(Access kind, bool past) {
  switch (kind) {
  case Access::load:
    return past ? "read" : "reads";
  case Access::store:
    return past ? "wrote" : "writes";
  case Access::atomic:
    return past ? "updated atomically" : "updates atomically";
  }
  return "";
}

static void checkRace(BlockRun &b, GpuThread &t, uint64_t offset,
                      uint64_t bytes, Access kind, uint32_t site) {
  uint32_t me = t.linear + 1;
  bool reported = false;
  for (uint64_t i = offset; i < offset + bytes; ++i) {
    BlockRun::Shadow &sh = b.shadow[i];
    if (!reported) {
      Conflict other = findConflict(b, t, sh, kind);
      if (other.thread) {
        reported = true;
        bool otherWrote = other.kind != Access::load;
        if (!b.racesSeen.insert({otherWrote, site, other.site}).second) {
          ++b.racesNotShown;
        } else {
          const char *what =
              kind == Access::atomic || other.kind == Access::atomic
                  ? "atomic/plain"
              : kind == Access::store && other.kind == Access::store
                  ? "write/write"
                  : "read/write";
          report(std::string("shared-memory ") + what + " race: thread " +
                 threadOf(b, me) + " " + accessVerb(kind, false) +
                 " shared offset " + std::to_string(i) + ", which thread " +
                 threadOf(b, other.thread) + " " +
                 accessVerb(other.kind, true) + " since the last barrier\n  " +
                 describeThread() + "\n  at " + describeSite(site) +
                 "\n  other access at " + describeSite(other.site));
        }
      }
    }
    recordAccess(b, t, sh, kind, site);
  }
}

void kvir::emu::recordAsyncWrite(BlockRun &b, GpuThread &issuer, uint32_t agent,
                                 uint64_t offset, uint64_t bytes,
                                 uint32_t site) {
  // The copy is ordered after what its issuer did before it: conflicts are
  // the issuer's. Readers must then be ordered after the agent — through
  // the mbarrier the copy completes on.
  checkNotMBarrier(b, offset, bytes, "a bulk copy writes", site);
  checkWgmmaOperandWrite(b, offset, bytes, "a bulk copy writes", site);
  checkAsyncSourceWrite(b, offset, bytes, "a bulk copy writes", site);
  checkRace(b, issuer, offset, bytes, Access::store, site);
  BlockRun::Accessor me{agent + 1, site, 0,
                        b.agentSegments[agent - b.threads.size()]};
  for (uint64_t i = offset; i < offset + bytes; ++i) {
    BlockRun::Shadow &sh = b.shadow[i];
    sh.writer = me;
    sh.writeEpoch = b.epoch;
    sh.writerProxyFences = 0;
  }
  b.stats->sharedBytesStored += bytes;
}

void kvir::emu::recordWgmmaReads(BlockRun &b, uint32_t group,
                                 const WgmmaOp &op) {
  uint32_t agent = asyncAgent(b, BlockRun::kWarpgroupAgent | group);
  uint32_t &segment = b.agentSegments[agent - b.threads.size()];
  BlockRun::Accessor me{agent + 1, op.site, 0, segment};
  for (uint64_t offset : op.operands)
    for (uint64_t i = offset; i < offset + op.bytes; ++i) {
      BlockRun::Accessors &set = b.shadow[i].readers;
      if (set.epoch != b.epoch)
        set = {b.epoch, me, {}};
      else if (set.first.thread == me.thread)
        set.first = me;
      else if (!set.second.thread || set.second.thread == me.thread)
        set.second = me;
    }
  // The warpgroup's threads saw the reads complete at their wait.
  allocateClocks(b);
  size_t width = clockWidth(b);
  for (uint32_t t = group * 128; t < group * 128 + 128; ++t)
    b.clocks[t * width + agent] =
        std::max(b.clocks[t * width + agent], segment);
  segment++;
}

void kvir::emu::recordAsyncRead(BlockRun &b, GpuThread &issuer, uint64_t offset,
                                uint64_t bytes, uint32_t site) {
  checkNotMBarrier(b, offset, bytes, "a bulk copy reads", site);
  checkRace(b, issuer, offset, bytes, Access::load, site);
  b.stats->sharedBytesLoaded += bytes;
}

static void finishRequest(BlockRun &b, const Request &r) {
  LaunchStats &s = *b.stats;
  if (r.shared) {
    // 32 banks of 4-byte words. A warp request is served in phases: lanes
    // accessing 16 bytes in groups of 8 (each ldmatrix matrix, or a 128-bit
    // access), 8 bytes in groups of 16, narrower all 32 at once. A phase
    // needs as many wavefronts as its most-used bank has distinct words (a
    // word read by several lanes is a broadcast); more than the
    // ceil(words / 32) minimum are conflicts.
    uint32_t widest = 0;
    for (uint32_t m = r.mask; m; m &= m - 1)
      widest = std::max(widest, r.bytes[llvm::countr_zero(m)]);
    unsigned lanesPerPhase = widest > 8 ? 8 : widest > 4 ? 16 : 32;
    uint64_t wavefronts = 0, ideal = 0;
    for (unsigned first = 0; first < 32; first += lanesPerPhase) {
      uint32_t phaseMask =
          r.mask & (uint32_t((uint64_t(1) << lanesPerPhase) - 1) << first);
      if (!phaseMask)
        continue;
      llvm::SmallVector<uint64_t, 64> words;
      for (uint32_t m = phaseMask; m; m &= m - 1) {
        unsigned lane = llvm::countr_zero(m);
        for (uint64_t w = r.addr[lane] / 4;
             w <= (r.addr[lane] + r.bytes[lane] - 1) / 4; ++w)
          words.push_back(w);
      }
      llvm::sort(words);
      words.erase(std::unique(words.begin(), words.end()), words.end());
      uint32_t perBank[32] = {};
      for (uint64_t w : words)
        perBank[w % 32]++;
      wavefronts += *std::max_element(perBank, perBank + 32);
      ideal += (words.size() + 31) / 32;
    }
    s.sharedRequests++;
    s.bankConflicts += wavefronts - ideal;
    return;
  }
  // Global: the distinct 32-byte sectors the lanes touched, and the distinct
  // bytes they asked for.
  llvm::SmallVector<std::pair<uint64_t, uint64_t>, 32> spans;
  for (uint32_t m = r.mask; m; m &= m - 1) {
    unsigned lane = llvm::countr_zero(m);
    spans.push_back({r.addr[lane], r.addr[lane] + r.bytes[lane]});
  }
  llvm::sort(spans);
  uint64_t useful = 0, sectors = 0, lastSector = UINT64_MAX, end = 0;
  for (auto [lo, hi] : spans) {
    uint64_t from = std::max(lo, end);
    if (hi > from)
      useful += hi - from;
    end = std::max(end, hi);
    for (uint64_t sct = lo / 32; sct <= (hi - 1) / 32; ++sct)
      if (lastSector == UINT64_MAX || sct > lastSector) {
        ++sectors;
        lastSector = sct;
      }
  }
  s.globalRequests++;
  s.globalSectors += sectors;
  s.globalUsefulBytes += useful;
}

void kvir::emu::flushRequests(BlockRun &b) {
  for (auto &[key, slot] : b.requests) {
    finishRequest(b, b.requestPool[slot]);
    b.freeRequests.push_back(slot);
  }
  b.requests.clear();
}

/// Adds one lane's access to its warp's request. The n-th execution of a site
/// by each lane belongs to the same request; it is complete once every lane
/// of the warp took part or has exited. Requests of lanes that diverged and
/// never reach the site complete when the block ends.
static void track(BlockRun &b, GpuThread &t, uint64_t addr, uint64_t bytes,
                  bool shared, uint32_t site) {
  uint32_t occurrence = 0;
  if (site < b.numSites)
    occurrence = b.occurrences[size_t(t.linear) * b.numSites + site]++;
  uint64_t key =
      (uint64_t(t.warp) << 56) | (uint64_t(site & 0xffffff) << 32) | occurrence;
  auto [it, inserted] = b.requests.try_emplace(key, 0);
  if (inserted) {
    if (b.freeRequests.empty()) {
      b.freeRequests.push_back(b.requestPool.size());
      b.requestPool.emplace_back();
    }
    it->second = b.freeRequests.back();
    b.freeRequests.pop_back();
    b.requestPool[it->second].mask = 0;
  }
  uint32_t slot = it->second;
  Request &r = b.requestPool[slot];
  r.shared = shared;
  r.addr[t.lane] = addr;
  r.bytes[t.lane] = uint32_t(bytes);
  r.mask |= 1u << t.lane;
  if ((r.mask | b.doneLanes[t.warp]) == b.warpLanes[t.warp]) {
    finishRequest(b, r);
    b.requests.erase(key);
    b.freeRequests.push_back(slot);
  }
}

void kvir::emu::checkAccess(const void *ptr, uint64_t bytes, uint32_t flags,
                            uint32_t site, const void *base, int32_t arg) {
  BlockRun &b = *current.block;
  GpuThread &t = *current.thread;
  uint64_t addr = reinterpret_cast<uint64_t>(ptr);
  bool store = flags & kabi::Store;
  // Thread-local memory (allocas) lives on the fiber's stack.
  if (bytes == 0 || (addr >= reinterpret_cast<uint64_t>(t.stackLo) &&
                     addr < reinterpret_cast<uint64_t>(t.stackHi)))
    return;
  uint64_t window = reinterpret_cast<uint64_t>(sharedWindowBase());
  bool shared = addr >= window && addr < window + sharedWindowSize();
  uint64_t align = uint64_t(1) << ((flags >> kabi::AlignShift) & 0x3f);
  if (addr % align)
    fail("misaligned " + std::string(shared ? "shared " : "global ") +
             accessName(flags) + " of " + std::to_string(bytes) + " bytes at " +
             hex(addr) + ": the access assumes " + std::to_string(align) +
             "-byte alignment",
         site);
  if (shared) {
    uint64_t arena = reinterpret_cast<uint64_t>(b.shared);
    int64_t offset = int64_t(addr - arena);
    bool own = addr >= arena && addr < arena + kArenaStride;
    if (!own && b.cluster->size() > 1 &&
        checkDistributedAccess(addr, bytes, store, site))
      return;
    if (addr < arena || offset + bytes > b.sharedBytes)
      fail("out-of-bounds shared " + accessName(flags) + " of " +
               std::to_string(bytes) + " bytes at shared offset " +
               std::to_string(offset) + "; the block has " +
               std::to_string(b.sharedBytes) + " bytes of shared memory",
           site);
    checkNotMBarrier(b, offset, bytes,
                     std::string("a ") + accessName(flags) + " of", site);
    if (store) {
      checkWgmmaOperandWrite(b, offset, bytes, "a store to", site);
      checkAsyncSourceWrite(b, offset, bytes, "a store to", site);
    }
    checkRace(b, t, offset, bytes,
              flags & kabi::Atomic ? Access::atomic
              : store              ? Access::store
                                   : Access::load,
              site);
    checkClusterRace(b, t, offset, bytes, store, site);
    (store ? b.stats->sharedBytesStored : b.stats->sharedBytesLoaded) += bytes;
    track(b, t, addr, bytes, /*shared=*/true, site);
    return;
  }
  // Provenance: an address computed from a kernel argument must stay in
  // that argument's allocation, even where another allocation lies.
  const auto *own =
      base ? allocations().find(reinterpret_cast<uint64_t>(base), 1) : nullptr;
  if (own && (addr < own->first || addr + bytes > own->first + own->second.bytes))
    fail("out-of-bounds global " + accessName(flags) + " of " +
             std::to_string(bytes) + " bytes at " + hex(addr) +
             " through kernel argument #" + std::to_string(arg) + ", " +
             allocations().describeOutside(*own, addr, bytes),
         site);
  const auto *hit = own ? own : allocations().find(addr, bytes);
  if (!hit)
    fail("out-of-bounds global " + accessName(flags) + " of " +
             std::to_string(bytes) + " bytes at " + hex(addr) + ": " +
             allocations().describeMiss(addr, bytes),
         site);
  (store ? b.stats->globalBytesStored : b.stats->globalBytesLoaded) += bytes;
  b.work.globalBytes += bytes;
  noteGlobalAccess(t, addr, bytes, store, site);
  // Sectors are counted as if every allocation started on a 256-byte
  // boundary, as cudaMalloc's (and torch's) do: host buffers start wherever
  // malloc put them, which would make the counters change from run to run.
  track(b, t, addr - hit->first % 256, bytes, /*shared=*/false, site);
}

void kvir::emu::markAsyncCopyDestination(BlockRun &b, GpuThread &t,
                                         const AsyncCopy &copy) {
  uint64_t addr = reinterpret_cast<uint64_t>(copy.dst);
  uint64_t arena = reinterpret_cast<uint64_t>(b.shared);
  // Out-of-bounds destinations are reported when the copy lands.
  if (addr < arena || addr + copy.size > arena + b.sharedBytes)
    return;
  checkRace(b, t, addr - arena, copy.size, Access::store, copy.site);
}

void kvir::emu::markPendingCopies(BlockRun &b, GpuThread &t) {
  for (const AsyncCopy &c : t.openCopies)
    markAsyncCopyDestination(b, t, c);
  for (const std::vector<AsyncCopy> &group : t.copyGroups)
    for (const AsyncCopy &c : group)
      markAsyncCopyDestination(b, t, c);
}

extern "C" void __kvemu_access(const void *ptr, uint64_t bytes, uint32_t flags,
                               uint32_t site, const void *base, int32_t arg) {
  checkAccess(ptr, bytes, flags, site, base, arg);
}

/// A masked vector access touches the elements from the first to the last
/// enabled one (the span is checked and counted as one access).
extern "C" void __kvemu_access_masked(const void *ptr, uint64_t elementBytes,
                                      uint64_t mask, uint32_t flags,
                                      uint32_t site, const void *base,
                                      int32_t arg) {
  if (!mask)
    return;
  unsigned first = llvm::countr_zero(mask), last = 63 - llvm::countl_zero(mask);
  checkAccess(static_cast<const char *>(ptr) + first * elementBytes,
              (last - first + 1) * elementBytes, flags, site, base, arg);
}
