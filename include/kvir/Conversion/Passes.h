//===- Passes.h - kvir conversion passes ------------------------*- C++ -*-===//
#ifndef KVIR_CONVERSION_PASSES_H
#define KVIR_CONVERSION_PASSES_H

#include "kvir/Conversion/KVToGPU/KVToGPU.h"
#include "kvir/Conversion/KVToLoops/KVToLoops.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace kvir {

#define GEN_PASS_REGISTRATION
#include "kvir/Conversion/Passes.h.inc"

} // namespace kvir

#endif // KVIR_CONVERSION_PASSES_H
