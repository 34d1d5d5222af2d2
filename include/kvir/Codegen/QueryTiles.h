//===- QueryTiles.h - Ragged query rows in fixed-size tiles -----*- C++ -*-===//
//
// How a tensor-core kernel finds its work without a host-side plan. The
// `nnz` query rows of a batch, request b owning rows
// qo_indptr[b] .. qo_indptr[b + 1], times a GQA group of G heads packed
// into rows (packed row r = query row r / G, head r % G), are cut into
// tiles of T packed rows that never straddle two requests. Request b's
// tiles get the block slots
//   start(b) + i,  start(b) = floor(qo_indptr[b] * G / T) + b,
//   i < ceil(qo_len(b) * G / T),
// which never overlap and all lie below floor(nnz * G / T) + batch: the
// grid needs only sizes the host knows. A block finds its request by a
// binary search of start() over qo_indptr (log2(batch) loads); slots past
// a request's tiles (at most one per request) have no work. Within a
// request the slots run backwards over the tiles, so under causal masking
// the heaviest tiles (the last rows see the most keys) are dispatched
// first.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_CODEGEN_QUERYTILES_H
#define KVIR_CODEGEN_QUERYTILES_H

#include "kvir/Dialect/KVGPU/IR/KVGPUDialect.h"

#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace kvir::codegen {

struct QueryTile {
  /// The request, its first query row and its query row count.
  mlir::Value request, qoStart, qoLen;
  /// The tile's first packed row within the request.
  mlir::Value firstRow;
  /// i1: whether the slot holds a tile.
  mlir::Value valid;
};

class QueryTiles {
public:
  QueryTiles(int64_t group, int64_t tileRows)
      : group(group), tileRows(tileRows) {}

  /// The number of block slots: floor(nnz * G / T) + batch.
  kvgpu::SizeExprAttr numSlots(kvgpu::SizeExprAttr nnz,
                               kvgpu::SizeExprAttr batch) const;

  /// The tile of slot `slot` (index), reading `qoIndptr` (i32, batch + 1
  /// entries).
  QueryTile locate(mlir::ImplicitLocOpBuilder &b, mlir::Value qoIndptr,
                   mlir::Value batch, mlir::Value slot) const;

  /// Batches of one query row per request (no qo_indptr): request b's
  /// ceil(G / T) tiles take slots b ceil(G / T) + i.
  kvgpu::SizeExprAttr numSlotsOneRowEach(kvgpu::SizeExprAttr batch) const;
  QueryTile locateOneRowEach(mlir::ImplicitLocOpBuilder &b, mlir::Value batch,
                             mlir::Value slot) const;

private:
  int64_t group, tileRows;
};

} // namespace kvir::codegen

#endif // KVIR_CODEGEN_QUERYTILES_H
