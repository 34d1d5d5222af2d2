//===- WarpOps.h - Warp-level collectives -----------------------*- C++ -*-===//
//
// Reductions across lanes with shfl.sync.bfly (gpu.shuffle xor): a group of
// `lanes` consecutive lanes (a power of two up to 32) combines its values
// in log2(lanes) steps and every lane of the group ends with the result.
// The decode kernel reduces a head-dim dot product over its x-lanes; the
// tensor-core kernels reduce a fragment row's max and sum over the 4 lanes
// of a quad. The whole warp executes every shuffle (full membermask).
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_CODEGEN_WARPOPS_H
#define KVIR_CODEGEN_WARPOPS_H

#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace kvir::codegen {

enum class WarpReduction { sum, max };

/// Reduces the f32 `value` over each aligned group of `lanes` lanes.
mlir::Value warpReduce(mlir::ImplicitLocOpBuilder &b, mlir::Value value,
                       int64_t lanes, WarpReduction kind);

/// Whether `pred` (i1) holds in any lane of the warp (vote.sync.any over
/// the full warp): the same i1 in every lane, so a branch on it is uniform.
mlir::Value warpAny(mlir::ImplicitLocOpBuilder &b, mlir::Value pred);

/// The lane index within the warp (threadIdx linearized, mod 32).
mlir::Value laneId(mlir::ImplicitLocOpBuilder &b);

} // namespace kvir::codegen

#endif // KVIR_CODEGEN_WARPOPS_H
