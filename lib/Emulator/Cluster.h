//===- Cluster.h - Thread block clusters (sm_90) ---------------*- C++ -*-===//
//
// Private to lib/Emulator. The CTAs of a cluster run together (the
// scheduler interleaves their threads), each with its own shared memory;
// `mapa` maps a shared address to another CTA's (distributed shared
// memory) and barrier.cluster synchronizes all threads of the cluster (PTX
// ISA, "barrier.cluster" and "mapa").
//
// Accesses of one CTA's shared memory by threads of different CTAs are
// ordered only by barrier.cluster: thread X's access before its release
// arrival at phase p happens before thread Y's access after its wait
// observed phase p. Each shared byte keeps, per CTA of the cluster, the
// last write and the latest read with the accessing thread's arrival count
// at the time; a conflicting access from another CTA that no phase orders
// after it is reported as a race.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_LIB_EMULATOR_CLUSTER_H
#define KVIR_LIB_EMULATOR_CLUSTER_H

#include "HostMemory.h"
#include "kvir/Emulator/Emulator.h"

#include <cstdint>
#include <vector>

namespace kvir::emu {

struct BlockRun;
struct GpuThread;

/// The portable maximum of CTAs per cluster (CUDA programming guide).
constexpr uint32_t kMaxClusterSize = 8;

struct ClusterRun {
  Dim3 dims;                      // CTAs per cluster dimension
  std::vector<BlockRun *> blocks; // by rank (x fastest)
  /// barrier.cluster phases completed.
  uint32_t phase = 0;
  /// Cross-CTA shadow (clusters of more than one CTA): per block, per byte
  /// of its shared memory, 1 + size() entries: the last write, then the
  /// latest read by each rank.
  struct Access {
    uint32_t thread = 0; // linear id + 1; 0: none
    uint32_t rank = 0, stamp = 0, site = 0;
  };
  std::vector<std::vector<Access>> shadow;

  uint32_t size() const { return uint32_t(blocks.size()); }
  /// Prepares for a new cluster of `blocks` (their shared sizes set).
  void reset(std::vector<BlockRun *> blocks);
};

/// A shared-memory access of `bytes` at `offset` of the shared memory of
/// `target` (the thread's own block or, through distributed shared memory,
/// another of its cluster): the cross-CTA race check. No effect for a
/// cluster of one.
void checkClusterRace(BlockRun &target, GpuThread &t, uint64_t offset,
                      uint64_t bytes, bool write, uint32_t site);

/// An access of shared address `addr` that lies in the shared memory of
/// another CTA of the cluster: its checks (bounds, the CTA still running,
/// mbarrier bytes, races). Returns false if `addr` is in no CTA's shared
/// memory of the cluster.
bool checkDistributedAccess(uint64_t addr, uint64_t bytes, bool write,
                            uint32_t site);

/// Completes barrier.cluster phases all non-exited threads arrived at and
/// releases their waiters. Returns whether a thread was released.
bool resolveClusterBarrier(ClusterRun &cluster);

} // namespace kvir::emu

#endif // KVIR_LIB_EMULATOR_CLUSTER_H
