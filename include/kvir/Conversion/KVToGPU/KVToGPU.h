//===- KVToGPU.h - kv ops to GPU kernels ------------------------*- C++ -*-===//
#ifndef KVIR_CONVERSION_KVTOGPU_KVTOGPU_H
#define KVIR_CONVERSION_KVTOGPU_KVTOGPU_H

#include "kvir/Dialect/KV/IR/KVOps.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

#include <optional>
#include <string>

namespace kvir {

#define GEN_PASS_DECL_CONVERTKVTOGPU
#include "kvir/Conversion/Passes.h.inc"

/// Module attribute where convert-kv-to-gpu records, per lowered op, the
/// kernels and how to launch them (grid/block formulas, arguments with shape
/// expressions, the split-KV heuristic, workspace bytes); kvir-translate
/// writes it out as the JSON manifest.
extern const char *const kPlansAttrName;

/// Why convert-kv-to-gpu leaves `op` to kv-to-loops, or nullopt if it lowers
/// it to a kernel.
std::optional<std::string> whyNotGpuDecode(kv::DecodeOp op);

/// convert-kv-to-gpu{chip}, kv-to-loops for the rest, the kernels lowered to
/// NVVM and an #nvvm.target attached.
void buildKVToNVVMPipeline(mlir::OpPassManager &pm, llvm::StringRef chip);
/// buildKVToNVVMPipeline then gpu-module-to-binary{format=isa} (PTX).
void buildKVToPTXPipeline(mlir::OpPassManager &pm, llvm::StringRef chip);
/// Registers the `kv-to-nvvm` and `kv-to-ptx` pipelines (option chip=...).
void registerKVToPTXPipelines();

} // namespace kvir

#endif // KVIR_CONVERSION_KVTOGPU_KVTOGPU_H
