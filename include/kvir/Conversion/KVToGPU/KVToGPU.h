//===- KVToGPU.h - kv ops to GPU kernels ------------------------*- C++ -*-===//
#ifndef KVIR_CONVERSION_KVTOGPU_KVTOGPU_H
#define KVIR_CONVERSION_KVTOGPU_KVTOGPU_H

#include "kvir/Dialect/KV/IR/KVOps.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Pass/Pass.h"

#include <optional>
#include <string>

namespace kvir {

#define GEN_PASS_DECL_CONVERTKVTOGPU
#include "kvir/Conversion/Passes.h.inc"

/// SMs of the flagship part of `chip` (sm_80, sm_86, sm_89, sm_90[a]), or 0.
int64_t getSmCount(llvm::StringRef chip);

/// Why convert-kv-to-gpu leaves `op` to kv-to-loops, or nullopt if it lowers
/// it to a kernel.
std::optional<std::string> whyNotGpuDecode(kv::DecodeOp op);

} // namespace kvir

#endif // KVIR_CONVERSION_KVTOGPU_KVTOGPU_H
