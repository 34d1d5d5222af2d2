//===- TestComponents.h - Shared parts of -test-kvir-codegen ----*- C++ -*-===//
//
// What the test components of TestCodegen.cpp and TestWgmma.cpp share.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_TEST_LIB_CODEGEN_TESTCOMPONENTS_H
#define KVIR_TEST_LIB_CODEGEN_TESTCOMPONENTS_H

#include "kvir/Codegen/KernelFunc.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace kvir::test {

/// A kernel named like `stub`, with its arguments, rebuilt by KernelFunc.
codegen::KernelFunc replaceKernel(mlir::gpu::GPUFuncOp stub,
                                  std::array<int64_t, 3> block,
                                  const codegen::SharedMemoryLayout &layout);

/// `body(builder, i)` for i = thread, thread + step, ... < end.
void forStrided(
    mlir::ImplicitLocOpBuilder &b, mlir::Value thread, int64_t end,
    int64_t step,
    llvm::function_ref<void(mlir::ImplicitLocOpBuilder &, mlir::Value)> body);

/// wgmma_gemm, wgmma_chain and mbarrier_ring (TestSm90.cpp).
void buildWgmmaGemm(mlir::gpu::GPUFuncOp stub);
void buildWgmmaChain(mlir::gpu::GPUFuncOp stub);
void buildMBarrierRing(mlir::gpu::GPUFuncOp stub);
/// shared_softmax (TestSharedSoftmax.cpp).
void buildSharedSoftmax(mlir::gpu::GPUFuncOp stub);

} // namespace kvir::test

#endif // KVIR_TEST_LIB_CODEGEN_TESTCOMPONENTS_H
