//===- Cluster.cpp - Thread block clusters (sm_90) ------------------------===//
//
// barrier.cluster, mapa, distributed shared memory and the cross-CTA race
// check (Cluster.h says how it orders accesses).
//
//===----------------------------------------------------------------------===//
#include "Cluster.h"
#include "Runtime.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>

using namespace kvir::emu;

void ClusterRun::reset(std::vector<BlockRun *> ranks) {
  blocks = std::move(ranks);
  phase = 0;
  shadow.resize(blocks.size());
  for (size_t r = 0; r < blocks.size(); ++r) {
    if (blocks.size() > 1)
      shadow[r].assign(blocks[r]->sharedBytes * (1 + blocks.size()), Access());
    else
      shadow[r].clear();
  }
}

namespace {

/// Whether access `a` (of another CTA's thread) happens before what thread
/// `later` does now: the accessing thread arrived with release semantics
/// after it, at a phase `later` has waited for.
bool orderedBefore(const ClusterRun &c, const ClusterRun::Access &a,
                   const GpuThread &later) {
  const GpuThread &x = c.blocks[a.rank]->threads[a.thread - 1];
  auto it = std::upper_bound(x.clusterReleases.begin(), x.clusterReleases.end(),
                             a.stamp);
  return it != x.clusterReleases.end() && *it <= later.clusterWaits;
}

std::string describeAccess(const ClusterRun &c, const ClusterRun::Access &a) {
  const GpuThread &x = c.blocks[a.rank]->threads[a.thread - 1];
  return "thread (" + std::to_string(x.tid[0]) + "," +
         std::to_string(x.tid[1]) + "," + std::to_string(x.tid[2]) +
         ") of CTA rank " + std::to_string(a.rank) + " at " +
         describeSite(a.site);
}

bool exited(const BlockRun &b) {
  return llvm::all_of(b.threads, [](const GpuThread &t) { return t.done; });
}

} // namespace

void kvir::emu::checkClusterRace(BlockRun &target, GpuThread &t,
                                 uint64_t offset, uint64_t bytes, bool write,
                                 uint32_t site) {
  ClusterRun &c = *target.cluster;
  if (c.size() < 2)
    return;
  uint32_t mine = current.block->clusterRank, stride = 1 + c.size();
  std::vector<ClusterRun::Access> &shadow = c.shadow[target.clusterRank];
  const char *verb = write ? "write" : "read";
  for (uint64_t i = offset; i < offset + bytes; ++i) {
    ClusterRun::Access *entry = &shadow[i * stride];
    auto race = [&](const ClusterRun::Access &other, const char *otherVerb) {
      fail(std::string("shared-memory race across the cluster: a ") + verb +
               " of shared offset " + std::to_string(i) + " of CTA rank " +
               std::to_string(target.clusterRank) +
               " is not ordered after the " + otherVerb + " by " +
               describeAccess(c, other) +
               " (only barrier.cluster, a release arrive and the wait that "
               "observes its phase, orders accesses of different CTAs)",
           site);
    };
    if (entry[0].thread && entry[0].rank != mine &&
        !orderedBefore(c, entry[0], t))
      race(entry[0], "write");
    if (write)
      for (uint32_t r = 0; r < c.size(); ++r)
        if (r != mine && entry[1 + r].thread &&
            !orderedBefore(c, entry[1 + r], t))
          race(entry[1 + r], "read");
    ClusterRun::Access access{t.linear + 1, mine, t.clusterArrivals, site};
    if (write) {
      std::fill(entry, entry + stride, ClusterRun::Access());
      entry[0] = access;
    } else if (!entry[1 + mine].thread ||
               entry[1 + mine].stamp <= access.stamp) {
      // Of one CTA's reads, the one with the most recent arrival count is
      // the last a later write must be ordered after.
      entry[1 + mine] = access;
    }
  }
}

bool kvir::emu::checkDistributedAccess(uint64_t addr, uint64_t bytes,
                                       bool write, uint32_t site) {
  BlockRun &self = *current.block;
  ClusterRun &c = *self.cluster;
  for (BlockRun *b : c.blocks) {
    uint64_t arena = reinterpret_cast<uint64_t>(b->shared);
    if (b == &self || addr < arena || addr >= arena + kArenaStride)
      continue;
    uint64_t offset = addr - arena;
    std::string what = std::string(write ? "store to" : "load from") +
                       " the shared memory of CTA rank " +
                       std::to_string(b->clusterRank);
    if (offset + bytes > b->sharedBytes)
      fail("out-of-bounds distributed shared-memory " + what + ": " +
               std::to_string(bytes) + " bytes at offset " +
               std::to_string(offset) + " of its " +
               std::to_string(b->sharedBytes) + " bytes",
           site);
    if (exited(*b))
      fail("distributed shared-memory " + what +
               ", which has exited (a CTA's shared memory lives only while "
               "it runs: end with barrier.cluster so that no CTA exits "
               "while others access it)",
           site);
    checkNotMBarrier(*b, offset, bytes, "a " + what + " of", site);
    if (write)
      checkWgmmaOperandWrite(*b, offset, bytes, "a " + what + " at", site);
    checkClusterRace(*b, *current.thread, offset, bytes, write, site);
    (write ? self.stats->sharedBytesStored : self.stats->sharedBytesLoaded) +=
        bytes;
    return true;
  }
  return false;
}

bool kvir::emu::resolveClusterBarrier(ClusterRun &c) {
  bool anyLive = false, complete = true, anyWaiting = false;
  for (BlockRun *b : c.blocks)
    for (const GpuThread &t : b->threads) {
      if (t.done)
        continue;
      anyLive = true;
      complete &= t.clusterArrivals > c.phase;
      anyWaiting |= t.wait == Wait::Cluster;
    }
  if (!anyWaiting)
    return false;
  if (anyLive && complete) {
    c.phase++;
    // The phase orders every thread of the cluster: within a CTA as a
    // barrier does (its race checker's epochs and clocks).
    for (BlockRun *b : c.blocks) {
      orderAllThreads(*b);
      b->stats->clusterBarriers++;
    }
  }
  bool released = false;
  for (BlockRun *b : c.blocks)
    for (GpuThread &t : b->threads)
      if (!t.done && t.wait == Wait::Cluster && t.waitObject <= c.phase) {
        t.wait = Wait::None;
        released = true;
      }
  return released;
}

extern "C" {

/// barrier.cluster.arrive[.release|.relaxed]: arrive and wait alternate.
void __kvemu_cluster_arrive(uint32_t relaxed, uint32_t site) {
  GpuThread &t = *current.thread;
  if (t.clusterArrivals > t.clusterWaits)
    fail("barrier.cluster.arrive again before barrier.cluster.wait (each "
         "thread alternates arrive and wait)",
         site);
  t.clusterArrivals++;
  if (!relaxed)
    t.clusterReleases.push_back(t.clusterArrivals);
}

/// barrier.cluster.wait[.acquire]: waits until every non-exited thread of
/// the cluster arrived at the phase of this thread's last arrive.
void __kvemu_cluster_wait(uint32_t site) {
  GpuThread &t = *current.thread;
  if (t.clusterWaits == t.clusterArrivals)
    fail("barrier.cluster.wait without a barrier.cluster.arrive before it",
         site);
  if (current.block->cluster->phase < t.clusterArrivals) {
    t.wait = Wait::Cluster;
    t.waitSite = site;
    t.waitObject = t.clusterArrivals;
    yieldToScheduler();
  }
  t.clusterWaits = t.clusterArrivals;
}

/// mapa: the address of the same shared-memory offset in CTA `rank`.
void *__kvemu_mapa(void *ptr, uint32_t rank, uint32_t site) {
  ClusterRun &c = *current.block->cluster;
  if (rank >= c.size())
    fail("mapa to CTA rank " + std::to_string(rank) + " of a cluster of " +
             std::to_string(c.size()),
         site);
  uint64_t addr = reinterpret_cast<uint64_t>(ptr);
  for (BlockRun *b : c.blocks) {
    uint64_t arena = reinterpret_cast<uint64_t>(b->shared);
    if (addr >= arena && addr < arena + b->sharedBytes)
      return c.blocks[rank]->shared + (addr - arena);
  }
  fail("mapa of an address that is not in the shared memory of a CTA of the "
       "cluster",
       site);
  return nullptr;
}

} // extern "C"
