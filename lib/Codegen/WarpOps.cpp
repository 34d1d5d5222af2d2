//===- WarpOps.cpp - Warp-level collectives -------------------------------===//
#include "kvir/Codegen/WarpOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using namespace kvir::codegen;

Value kvir::codegen::warpReduce(ImplicitLocOpBuilder &b, Value value,
                                int64_t lanes, WarpReduction kind) {
  assert(lanes >= 1 && lanes <= 32 && llvm::isPowerOf2_64(lanes) &&
         "reduce over a power-of-two group of at most 32 lanes");
  for (int64_t offset = lanes / 2; offset >= 1; offset /= 2) {
    Value other = gpu::ShuffleOp::create(b, value, offset, /*width=*/32,
                                         gpu::ShuffleMode::XOR)
                      .getShuffleResult();
    value = kind == WarpReduction::sum
                ? Value(arith::AddFOp::create(b, value, other))
                : Value(arith::MaximumFOp::create(b, value, other));
  }
  return value;
}

Value kvir::codegen::warpAny(ImplicitLocOpBuilder &b, Value pred) {
  Value fullMask = arith::ConstantOp::create(b, b.getI32IntegerAttr(-1));
  return NVVM::VoteSyncOp::create(b, b.getI1Type(), fullMask, pred,
                                  NVVM::VoteSyncKind::any);
}

Value kvir::codegen::laneId(ImplicitLocOpBuilder &b) {
  return gpu::LaneIdOp::create(b, /*upperBound=*/nullptr);
}
