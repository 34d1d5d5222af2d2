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
// copies issued after it may refill that stage. (An mbarrier pipeline, for
// TMA, makes acquire and release waits and arrivals on per-stage barriers.)
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

  /// A ring of `stages` (>= 2) buffers, each tile's copies committed as
  /// `groupsPerTile` groups, refilled as `refill` says.
  CpAsyncPipeline(int64_t stages, int64_t groupsPerTile = 1,
                  Refill refill = Refill::afterWait);

  int64_t getStages() const { return stages; }
  /// Tiles issued before the loop: 0 ... stages - 2 (the loop refills a
  /// stage with tile i + stages - 1 in iteration i).
  int64_t tilesAhead() const { return stages - 1; }
  /// The ring stage of tile `index`.
  mlir::Value stageOf(mlir::ImplicitLocOpBuilder &b, mlir::Value index) const;

  /// Producer: closes the copies issued since the last commit into a group.
  /// Every group of every tile is committed, even an empty one (a tile past
  /// the last), so that the consumer's wait counts stay fixed.
  void commit(mlir::ImplicitLocOpBuilder &b) const;
  /// Consumer, in the loop's steady state: waits until the next group of
  /// the oldest tile in flight has landed in every thread's copies and
  /// makes them visible to the block. The younger groups that may stay in
  /// flight follow from the schedule: (stages - 1) tiles' groups, less the
  /// one waited on, plus (Refill::beforeWait) the refill's.
  void wait(mlir::ImplicitLocOpBuilder &b) const;
  /// Waits for every group (the prologue's last group, or the loop's end),
  /// without a barrier.
  void drain(mlir::ImplicitLocOpBuilder &b) const;
  /// The groups `wait` leaves in flight.
  int64_t pendingAtWait() const;

private:
  int64_t stages, groupsPerTile;
  Refill refill;
};

} // namespace kvir::codegen

#endif // KVIR_CODEGEN_PIPELINE_H
