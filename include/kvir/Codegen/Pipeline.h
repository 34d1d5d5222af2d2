//===- Pipeline.h - Rings of shared-memory stages -------------*- C++ -*-===//
//
// A software pipeline: tiles stream through a ring of `stages` shared
// buffers, tile n into stage n % stages. The producer issues a tile's
// copies and commits them (one group, or one group per part of the tile,
// e.g. K then V); the consumer waits until a group has landed before it
// reads the stage. The protocol, whatever the copies ride on:
//   producer: acquire(stage) ... copies ... commit
//   consumer: wait ... reads ... release(stage)
// `CpAsyncPipeline` runs it over cp.async commit groups and block barriers
// (sm_80 on): a wait is cp.async.wait_group, which counts the calling
// thread's groups still in flight, and a barrier that makes every thread's
// copies visible. That barrier is also every release and acquire: once a
// thread passed it, every thread is done with the stage read before it, so
// copies issued after it may refill that stage. `MBarrierPipeline` runs it
// over per-stage mbarriers (sm_90), acquire and release being waits and
// arrivals.
//
// A ring of one stage holds one K and one V buffer (FlashAttention-2's
// schedule, two groups a tile): at the wait for K_i every thread is done
// with V_{i-1}, so V_i is issued there and loads while S_i is computed; at
// the wait for V_i every thread is done with K_i, so K_{i+1} is issued
// there and loads while P_i V_i is. Each wait finds one group in flight.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_CODEGEN_PIPELINE_H
#define KVIR_CODEGEN_PIPELINE_H

#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace kvir::codegen {

class CpAsyncPipeline {
public:
  /// When the producer refills a stage relative to the consumer's wait on
  /// the same group: right after it (the refill reuses the stage of the
  /// tile before, which the wait's barrier released), or just before it (a
  /// barrier at the end of the previous iteration released the stage).
  enum class Refill { afterWait, beforeWait };

  /// Who reads the tiles: threads (ldmatrix, loads: the generic proxy),
  /// or the async proxy (wgmma's descriptors), which sees the bytes a
  /// thread's copies wrote only after that thread's fence.proxy.async.
  enum class Readers { threads, asyncProxy };

  /// A ring of `stages` buffers, each tile's copies committed as
  /// `groupsPerTile` groups, refilled as `refill` says; one stage: a K and
  /// a V buffer (two groups a tile, refilled after their waits).
  CpAsyncPipeline(int64_t stages, int64_t groupsPerTile = 1,
                  Refill refill = Refill::afterWait,
                  Readers readers = Readers::threads);

  int64_t getStages() const { return stages; }
  /// One K and one V buffer (see above): tile i's V is issued at the wait
  /// for its K, tile i + 1's K at the wait for its V.
  bool isSingleBuffered() const { return stages == 1; }
  /// Tiles issued before the loop: 0 ... stages - 2 (the loop refills a
  /// stage with tile i + stages - 1 in iteration i); single-buffered, none
  /// whole (K_0 alone).
  int64_t tilesAhead() const { return stages - 1; }
  /// The ring stage of tile `index`.
  mlir::Value stageOf(mlir::ImplicitLocOpBuilder &b, mlir::Value index) const;

  /// Producer: closes the copies issued since the last commit into a group.
  /// Every group of every tile is committed, even an empty one (a tile past
  /// the last), so that the consumer's wait counts stay fixed.
  void commit(mlir::ImplicitLocOpBuilder &b) const;
  /// Consumer, in the loop's steady state: waits until the next group of
  /// the oldest tile in flight has landed in every thread's copies and
  /// makes them visible to the block (and its async proxy). The younger
  /// groups that may stay in flight follow from the schedule: (stages - 1)
  /// tiles' groups, less the one waited on, plus (Refill::beforeWait) the
  /// refill's.
  void wait(mlir::ImplicitLocOpBuilder &b) const;
  /// Waits for every group (the prologue's last group, or the loop's end),
  /// without a barrier (a barrier after it makes them the block's).
  void drain(mlir::ImplicitLocOpBuilder &b) const;
  /// What a thread does after its copies (or its own shared writes) landed
  /// and before the barrier that hands them to the readers: with the async
  /// proxy reading, fence.proxy.async.shared::cta; else nothing.
  void publish(mlir::ImplicitLocOpBuilder &b) const;
  /// The groups `wait` leaves in flight.
  int64_t pendingAtWait() const;

private:
  int64_t stages, groupsPerTile;
  Refill refill;
  Readers readers;
};

/// The same protocol over mbarriers (sm_90; PTX ISA, "mbarrier"), for
/// copies that complete on a barrier (cp.async.bulk, TMA) and for
/// producers and consumers that are different warps: per stage a `full`
/// barrier, which the producer arrives on once, announcing the tile's bytes
/// as expected transactions that the copies complete (or, for copies that
/// complete per thread, each producer thread once its own copies landed),
/// and an `empty`
/// barrier, which each consumer thread arrives on when done with the
/// stage. Tile n uses stage n % stages in the ring's (n / stages)-th round;
/// a barrier's round-r phase has parity r % 2. The producer of tile n waits
/// on empty with parity (round + 1) % 2 — satisfied at once in round 0,
/// whose stages no one has used — and the consumer on full with parity
/// round % 2.
class MBarrierPipeline {
public:
  /// A ring of `stages` (>= 2) stages filled by `producerArrivals` and
  /// released by `consumerArrivals` arrivals each.
  MBarrierPipeline(int64_t stages, int64_t consumerArrivals,
                   int64_t producerArrivals = 1);

  int64_t getStages() const { return stages; }
  /// The barriers' shared buffer: memref<barrierCount() x i64>, 8-byte
  /// aligned (a full and an empty barrier per stage).
  static int64_t barrierCount(int64_t stages) { return 2 * stages; }
  int64_t barrierCount() const { return barrierCount(stages); }

  /// Thread `leader` initializes every barrier and fences the inits
  /// (fence.mbarrier_init); the caller synchronizes the block (a barrier)
  /// before any thread uses them.
  void init(mlir::ImplicitLocOpBuilder &b, mlir::Value barriers,
            mlir::Value leader) const;
  /// Tile `index`'s stage and the parity of its round.
  std::pair<mlir::Value, mlir::Value> slot(mlir::ImplicitLocOpBuilder &b,
                                           mlir::Value index) const;
  /// The full barrier of `stage` (what the tile's copies complete on), as
  /// a shared pointer.
  mlir::Value fullBarrier(mlir::ImplicitLocOpBuilder &b, mlir::Value barriers,
                          mlir::Value stage) const;

  /// Producer (one thread): waits until the consumers released the stage,
  /// then arrives on its full barrier expecting `bytes` (i32) of copies.
  void producerAcquire(mlir::ImplicitLocOpBuilder &b, mlir::Value barriers,
                       mlir::Value stage, mlir::Value parity,
                       mlir::Value bytes) const;
  /// Producer: waits until the consumers released the stage.
  void producerWaitEmpty(mlir::ImplicitLocOpBuilder &b, mlir::Value barriers,
                         mlir::Value stage, mlir::Value parity) const;
  /// Producer thread: its share of the stage's copies has landed (and is
  /// visible to the readers): one of the producerArrivals.
  void producerArrive(mlir::ImplicitLocOpBuilder &b, mlir::Value barriers,
                      mlir::Value stage) const;
  /// Producer thread: one of the producerArrivals, announcing `bytes` (i32)
  /// of copies that complete on the stage's full barrier (TMA's).
  void producerArriveExpecting(mlir::ImplicitLocOpBuilder &b,
                               mlir::Value barriers, mlir::Value stage,
                               mlir::Value bytes) const;
  /// Consumer: waits until the tile's copies have landed.
  void consumerWait(mlir::ImplicitLocOpBuilder &b, mlir::Value barriers,
                    mlir::Value stage, mlir::Value parity) const;
  /// Consumer: done with the stage (one of the consumerArrivals).
  void consumerRelease(mlir::ImplicitLocOpBuilder &b, mlir::Value barriers,
                       mlir::Value stage) const;
  /// Barrier `i` of those a kernel keeps after the ring's in the same
  /// buffer (memref<barrierCount() + extras x i64>), as a shared pointer.
  mlir::Value barrierAfterRing(mlir::ImplicitLocOpBuilder &b,
                               mlir::Value barriers, int64_t i) const;

private:
  mlir::Value barrier(mlir::ImplicitLocOpBuilder &b, mlir::Value barriers,
                      int64_t kind, mlir::Value stage) const;
  /// Waits until the `kind` barrier of `stage` completed the phase of
  /// `parity`; arrives on it once (no transactions).
  void waitPhase(mlir::ImplicitLocOpBuilder &b, mlir::Value barriers,
                 int64_t kind, mlir::Value stage, mlir::Value parity) const;
  void arrive(mlir::ImplicitLocOpBuilder &b, mlir::Value barriers, int64_t kind,
              mlir::Value stage) const;

  int64_t stages, consumerArrivals, producerArrivals;
};

} // namespace kvir::codegen

#endif // KVIR_CODEGEN_PIPELINE_H
