//===- InitAll.cpp - Register kvir's dialects and passes ------------------===//
#include "kvir/Registration/InitAll.h"
#include "kvir/Conversion/Passes.h"
#include "kvir/Dialect/KV/IR/KVDialect.h"
#include "kvir/Dialect/KV/Transforms/Passes.h"
#include "kvir/Dialect/KVGPU/IR/KVGPUDialect.h"
#include "kvir/Dialect/KVGPU/Transforms/Passes.h"
#include "kvir/Pipelines/Pipelines.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

void kvir::registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<kv::KVDialect, kvgpu::KVGPUDialect, mlir::affine::AffineDialect,
                  mlir::arith::ArithDialect, mlir::cf::ControlFlowDialect,
                  mlir::func::FuncDialect, mlir::LLVM::LLVMDialect,
                  mlir::math::MathDialect, mlir::memref::MemRefDialect,
                  mlir::scf::SCFDialect, mlir::gpu::GPUDialect,
                  mlir::nvgpu::NVGPUDialect,
                  mlir::vector::VectorDialect>();
}

void kvir::registerAllPasses() {
  kv::registerKVPasses();
  kvgpu::registerKVGPUPasses();
  registerKVIRConversionPasses();
  registerKVIRPipelines();
}
