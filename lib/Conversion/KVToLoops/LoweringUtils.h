//===- LoweringUtils.h - Shared pieces of kv-to-loops -----------*- C++ -*-===//
#ifndef KVIR_LIB_CONVERSION_KVTOLOOPS_LOWERINGUTILS_H
#define KVIR_LIB_CONVERSION_KVTOLOOPS_LOWERINGUTILS_H

#include "kvir/Dialect/KV/IR/KVOps.h"
#include "kvir/Dialect/KV/IR/PoolLayout.h"
#include "kvir/Dialect/KV/Utils/PagedAddressing.h"
#include "kvir/Dialect/KV/Utils/Quantization.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace kvir::kv::loops {

using mlir::ImplicitLocOpBuilder;
using mlir::Value;

/// A state lowered to buffers: o[[P,] N, H, Dv] in the state's element type
/// and lse[[P,] N, H] in f32.
struct StateBuffers {
  Value output;
  Value lse;
};

//===--- Scalar helpers (Numerics.cpp) ------------------------------------===//

Value indexConst(ImplicitLocOpBuilder &b, int64_t value);
Value f32Const(ImplicitLocOpBuilder &b, double value);
/// Loads an i32 and casts it to index.
inline Value loadIndex(ImplicitLocOpBuilder &b, Value memref,
                       mlir::ValueRange indices) {
  return loadIndexValue(b, memref, indices);
}
inline Value loadIndex(ImplicitLocOpBuilder &b, Value memref, Value index) {
  return loadIndexValue(b, memref, mlir::ValueRange{index});
}
/// Allocates a state's buffers; `rows` (and `partitions`) give dynamic sizes.
StateBuffers allocState(ImplicitLocOpBuilder &b, StateType type, Value rows,
                        Value partitions = {});
/// Writes the empty state (0, -inf) into every row of `buffers`.
void fillEmpty(ImplicitLocOpBuilder &b, StateBuffers buffers);

//===--- KV access (PagedAccess.cpp) --------------------------------------===//

/// Reads and writes a paged or ragged KV through its view op: table forms,
/// layouts and dequantization resolved into plain loads.
class KVAccess {
public:
  /// `kv` must be defined by kv.paged_view or kv.ragged_view.
  static mlir::FailureOr<KVAccess> get(mlir::Operation *user, Value kv);

  /// kv_len of request `req`.
  Value kvLen(ImplicitLocOpBuilder &b, Value req) const;
  /// Element `dim` of token `token` of request `req`, head `head`, dequantized
  /// to f32. `role` is K or V (for MLA: K = ckv, V = kpe).
  Value load(ImplicitLocOpBuilder &b, PoolRole role, Value req, Value token,
             Value head, Value dim) const;

  /// (page, slot) of token `token` of request `req`.
  std::pair<Value, Value> locate(ImplicitLocOpBuilder &b, Value req,
                                 Value token) const;
  /// Pool indices of (page, slot, head, dim) for `role`.
  llvm::SmallVector<Value> poolIndices(ImplicitLocOpBuilder &b, PoolRole role,
                                       Value page, Value slot, Value head,
                                       Value dim) const;
  /// The memref that holds `role`.
  Value pool(PoolRole role) const;

  PagedType getPagedType() const { return paged.type; }
  bool isRagged() const { return !paged.type; }
  Value getKScale() const { return paged.kScale; }
  Value getVScale() const { return paged.vScale; }

private:
  PagedOperands paged;      // Null type for ragged KV.
  Value raggedK, raggedV, raggedIndptr;
};

//===--- Op lowerings -----------------------------------------------------===//

/// Lowers decode, prefill and MLA decode to loop nests producing buffers.
mlir::FailureOr<StateBuffers> lowerDecode(ImplicitLocOpBuilder &b, DecodeOp op);
mlir::FailureOr<StateBuffers> lowerPrefill(ImplicitLocOpBuilder &b,
                                           PrefillOp op);
mlir::FailureOr<StateBuffers> lowerMlaDecode(ImplicitLocOpBuilder &b,
                                             MlaDecodeOp op);
mlir::LogicalResult lowerAppend(ImplicitLocOpBuilder &b, AppendOp op);
/// Fills kv.cascade_positions' buffer, one query row at a time.
mlir::LogicalResult lowerCascadePositions(ImplicitLocOpBuilder &b,
                                          CascadePositionsOp op);

/// Merges `inputs` (same type) row by row; with `partitioned` the single
/// input's partition axis is reduced instead.
StateBuffers lowerMerge(ImplicitLocOpBuilder &b, StateType resultType,
                        llvm::ArrayRef<StateBuffers> inputs);
/// A state merged with the sink logit sinks[head] of each row's heads.
StateBuffers lowerMergeSinks(ImplicitLocOpBuilder &b, StateType type,
                             StateBuffers input, Value sinks);
StateBuffers lowerMergePartitions(ImplicitLocOpBuilder &b,
                                  StateType resultType, StateBuffers input);
StateBuffers lowerRebase(ImplicitLocOpBuilder &b, StateType from,
                         StateType to, StateBuffers input);
/// Copies state buffers element by element (no runtime library needed).
void copyState(ImplicitLocOpBuilder &b, StateBuffers from, StateBuffers to);

} // namespace kvir::kv::loops

#endif // KVIR_LIB_CONVERSION_KVTOLOOPS_LOWERINGUTILS_H

namespace kvir::kv::loops {
/// Builds `scf.for iv = lb to ub step 1` carrying `inits`; `body` returns the
/// values to yield. Returns the loop results.
mlir::ValueRange
forLoop(ImplicitLocOpBuilder &b, Value lb, Value ub, mlir::ValueRange inits,
        llvm::function_ref<llvm::SmallVector<Value>(
            ImplicitLocOpBuilder &, Value, mlir::ValueRange)>
            body);
/// A loop without carried values.
void forLoop(ImplicitLocOpBuilder &b, Value lb, Value ub,
             llvm::function_ref<void(ImplicitLocOpBuilder &, Value)> body);
} // namespace kvir::kv::loops
