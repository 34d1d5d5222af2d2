//===- Memory.cpp - Access checks, race detection and traffic counters ----===//
#include "Runtime.h"

#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <unordered_set>

using namespace kvir::emu;

char *sharedWindowBase();
uint64_t sharedWindowSize();

AllocationTable &kvir::emu::allocations() {
  static AllocationTable table;
  return table;
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

static std::string hex(uint64_t v) { return "0x" + llvm::utohexstr(v); }

static std::string accessName(uint32_t flags) {
  if (flags & kabi::Atomic)
    return "atomic";
  return flags & kabi::Store ? "store" : "load";
}

/// The allocation nearest to `addr`, for out-of-bounds reports.
static std::string nearest(uint64_t addr) {
  const auto &live = allocations().live;
  auto it = live.upper_bound(addr);
  std::string s;
  if (it != live.begin()) {
    auto prev = std::prev(it);
    s = "; the allocation below is " + prev->second.what + " [" +
        hex(prev->first) + ", " + hex(prev->first + prev->second.bytes) + ")";
  }
  if (it != live.end())
    s += "; the allocation above is " + it->second.what + " [" +
         hex(it->first) + ", " + hex(it->first + it->second.bytes) + ")";
  return s.empty() ? "; no allocation is live" : s;
}

static std::string threadOf(BlockRun &b, uint32_t linearPlusOne) {
  const GpuThread &t = b.threads[linearPlusOne - 1];
  return "(" + std::to_string(t.tid[0]) + "," + std::to_string(t.tid[1]) +
         "," + std::to_string(t.tid[2]) + ")";
}

static void checkRace(BlockRun &b, GpuThread &t, uint64_t offset,
                      uint64_t bytes, bool store, uint32_t site) {
  uint32_t me = t.linear + 1, epoch = b.epoch;
  for (uint64_t i = offset; i < offset + bytes; ++i) {
    const char *kind = nullptr;
    uint32_t other = 0;
    if (b.writeEpoch[i] == epoch && b.writer[i] != me) {
      kind = store ? "write/write" : "read/write";
      other = b.writer[i];
    } else if (store && b.readEpoch[i] == epoch &&
               (b.reader[i] != me || b.multiReader[i])) {
      kind = "read/write";
      other = b.reader[i] != me ? b.reader[i] : 0;
    }
    if (kind) {
      std::string who = other ? "thread " + threadOf(b, other) : "another thread";
      report(std::string("shared-memory ") + kind + " race: thread " +
             threadOf(b, me) + " " + (store ? "writes" : "reads") +
             " shared offset " + std::to_string(i) + ", which " + who +
             (b.writeEpoch[i] == epoch && b.writer[i] != me ? " wrote"
                                                            : " read") +
             " since the last barrier\n  " + describeThread() + "\n  at " +
             describeSite(site));
      // One report per access is enough; do not flood on wide accesses.
      b.writeEpoch[i] = 0;
      return;
    }
    if (store) {
      b.writer[i] = me;
      b.writeEpoch[i] = epoch;
    } else if (b.readEpoch[i] != epoch) {
      b.reader[i] = me;
      b.readEpoch[i] = epoch;
      b.multiReader[i] = 0;
    } else if (b.reader[i] != me) {
      b.multiReader[i] = 1;
    }
  }
}

static void finishRequest(BlockRun &b, const Request &r) {
  LaunchStats &s = *b.stats;
  if (r.shared) {
    std::unordered_set<uint64_t> words;
    for (auto [addr, bytes] : r.ranges)
      for (uint64_t w = addr / 4; w <= (addr + bytes - 1) / 4; ++w)
        words.insert(w);
    uint32_t perBank[32] = {};
    for (uint64_t w : words)
      perBank[w % 32]++;
    uint64_t wavefronts = *std::max_element(perBank, perBank + 32);
    uint64_t ideal = (words.size() + 31) / 32;
    s.sharedRequests++;
    s.bankConflicts += wavefronts > ideal ? wavefronts - ideal : 0;
    return;
  }
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  for (auto [addr, bytes] : r.ranges)
    spans.push_back({addr, addr + bytes});
  std::sort(spans.begin(), spans.end());
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

void kvir::emu::flushRequests(BlockRun &b, bool all) {
  for (auto it = b.requests.begin(); it != b.requests.end();) {
    if (all) {
      finishRequest(b, it->second);
      it = b.requests.erase(it);
    } else {
      ++it;
    }
  }
}

static void track(BlockRun &b, GpuThread &t, uint64_t addr, uint64_t bytes,
                  bool shared, uint32_t site) {
  uint32_t occurrence = t.occurrences[site]++;
  uint64_t key = (uint64_t(t.warp) << 56) | (uint64_t(site & 0xffffff) << 32) |
                 occurrence;
  Request &r = b.requests[key];
  r.shared = shared;
  r.ranges.push_back({addr, uint32_t(bytes)});
  // The request is complete once every live lane of the warp took part.
  if (++r.lanes >= b.liveLanes[t.warp]) {
    finishRequest(b, r);
    b.requests.erase(key);
  }
}

void kvir::emu::checkAccess(const void *ptr, uint64_t bytes, uint32_t flags,
                            uint32_t site) {
  BlockRun &b = *current.block;
  GpuThread &t = *current.thread;
  uint64_t addr = reinterpret_cast<uint64_t>(ptr);
  bool store = flags & kabi::Store;
  // Thread-local memory (allocas) lives on the fiber's stack.
  if (addr >= reinterpret_cast<uint64_t>(t.stackLo) &&
      addr < reinterpret_cast<uint64_t>(t.stackHi))
    return;
  uint64_t window = reinterpret_cast<uint64_t>(sharedWindowBase());
  if (addr >= window && addr < window + sharedWindowSize()) {
    uint64_t arena = reinterpret_cast<uint64_t>(b.shared);
    int64_t offset = int64_t(addr - arena);
    if (addr < arena || offset + bytes > b.sharedBytes)
      fail("out-of-bounds shared " + accessName(flags) + " of " +
               std::to_string(bytes) + " bytes at shared offset " +
               std::to_string(offset) + "; the block has " +
               std::to_string(b.sharedBytes) + " bytes of shared memory",
           site);
    if (!(flags & kabi::Atomic))
      checkRace(b, t, offset, bytes, store, site);
    (store ? b.stats->sharedBytesStored : b.stats->sharedBytesLoaded) += bytes;
    track(b, t, addr, bytes, /*shared=*/true, site);
    return;
  }
  if (!allocations().find(addr, bytes))
    fail("out-of-bounds global " + accessName(flags) + " of " +
             std::to_string(bytes) + " bytes at " + hex(addr) + nearest(addr),
         site);
  (store ? b.stats->globalBytesStored : b.stats->globalBytesLoaded) += bytes;
  track(b, t, addr, bytes, /*shared=*/false, site);
}

extern "C" void __kvemu_access(const void *ptr, uint64_t bytes, uint32_t flags,
                               uint32_t site) {
  checkAccess(ptr, bytes, flags, site);
}
