//===- KVToGPU.h - kv ops to GPU kernels ------------------------*- C++ -*-===//
#ifndef KVIR_CONVERSION_KVTOGPU_KVTOGPU_H
#define KVIR_CONVERSION_KVTOGPU_KVTOGPU_H

#include "kvir/Dialect/KV/IR/KVOps.h"
#include "kvir/Dialect/KVGPU/IR/KVGPUDialect.h"
#include "kvir/Target/GPU/TargetInfo.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Pass/Pass.h"

#include <optional>
#include <string>

namespace kvir {

#define GEN_PASS_DECL_CONVERTKVTOGPU
#include "kvir/Conversion/Passes.h.inc"

/// Why convert-kv-to-gpu builds no kernel for `op` on `target` (null: it
/// does, or the op needs none, as views).
std::optional<std::string> whyNoGpuKernel(mlir::Operation *op,
                                          const target::TargetInfo &target);

} // namespace kvir

#endif // KVIR_CONVERSION_KVTOGPU_KVTOGPU_H
