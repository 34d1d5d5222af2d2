//===- LaunchEmitter.h - Host launches from a launch plan -------*- C++ -*-===//
//
// The host code of a lowered kv op is derived from its #kvgpu.plan, as the
// manifests and the C header are: evaluate the plan's sizes (argument dims,
// then expressions), choose the split or unsplit kernels by the partition
// count, allocate the workspace the launched kernels take, launch each
// kernel with its grid (empty grids skipped) and dynamic shared memory,
// free the workspace.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_CODEGEN_LAUNCHEMITTER_H
#define KVIR_CODEGEN_LAUNCHEMITTER_H

#include "kvir/Dialect/KVGPU/IR/KVGPUDialect.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "llvm/ADT/StringMap.h"

namespace kvir::codegen {

/// An index value computing `expr`, reading symbols through `lookup`.
mlir::Value emitSizeExpr(mlir::ImplicitLocOpBuilder &b, kvgpu::SizeExprAttr expr,
                         llvm::function_ref<mlir::Value(llvm::StringRef)> lookup);

/// Emits the launches of `plan` at `b`'s insertion point. `args` binds every
/// non-workspace argument of the plan to a value of its type; the kernels
/// are looked up in `kernels`.
mlir::LogicalResult emitLaunches(mlir::ImplicitLocOpBuilder &b,
                                 kvgpu::LaunchPlanAttr plan,
                                 const llvm::StringMap<mlir::Value> &args,
                                 mlir::gpu::GPUModuleOp kernels);

} // namespace kvir::codegen

#endif // KVIR_CODEGEN_LAUNCHEMITTER_H
