//===- Pipeline.cpp - Rings of shared-memory stages -----------------------===//
#include "kvir/Codegen/Pipeline.h"
#include "kvir/Codegen/IRBuilder.h"
#include "kvir/Codegen/PagedTileLoader.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

#include <cassert>

using namespace mlir;
using namespace kvir::codegen;

CpAsyncPipeline::CpAsyncPipeline(int64_t stages, int64_t groupsPerTile,
                                 Refill refill)
    : stages(stages), groupsPerTile(groupsPerTile), refill(refill) {
  assert(stages >= 2 && groupsPerTile >= 1 && "a ring of at least two stages");
}

Value CpAsyncPipeline::stageOf(ImplicitLocOpBuilder &b, Value index) const {
  IRBuilder ir{b};
  return ir.remU(index, ir.idx(stages));
}

void CpAsyncPipeline::commit(ImplicitLocOpBuilder &b) const {
  commitAsyncCopies(b);
}

int64_t CpAsyncPipeline::pendingAtWait() const {
  // In flight at the wait: the oldest tile's groups from the one waited on,
  // the groups of tiles i + 1 ... i + stages - 2, and the refill of tile
  // i + stages - 1 up to the group waited on (afterWait: the groups before
  // it; beforeWait: those and the group itself).
  int64_t younger = (stages - 1) * groupsPerTile - 1;
  return refill == Refill::beforeWait ? younger + 1 : younger;
}

void CpAsyncPipeline::wait(ImplicitLocOpBuilder &b) const {
  waitAsyncCopies(b, pendingAtWait());
  gpu::BarrierOp::create(b);
}

void CpAsyncPipeline::drain(ImplicitLocOpBuilder &b) const {
  waitAsyncCopies(b, 0);
}
