//===- RejectGPUKernels.cpp - The CPU path takes no GPU kernels -----------===//
#include "kvir/Dialect/KV/Transforms/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace kvir::kv {
#define GEN_PASS_DEF_KVREJECTGPUKERNELS
#include "kvir/Dialect/KV/Transforms/Passes.h.inc"
} // namespace kvir::kv

using namespace mlir;

namespace {

struct KVRejectGPUKernels
    : kvir::kv::impl::KVRejectGPUKernelsBase<KVRejectGPUKernels> {
  void runOnOperation() override {
    WalkResult result = getOperation()->walk([](Operation *op) {
      if (!isa<gpu::GPUModuleOp, gpu::LaunchFuncOp, gpu::LaunchOp>(op))
        return WalkResult::advance();
      op->emitError()
          << "'" << op->getName()
          << "': kv-lower-to-llvm lowers for the CPU, which runs no GPU "
             "kernels; run this module with kvir-runner (kvir's GPU "
             "emulator) or compile it with kv-to-ptx";
      return WalkResult::interrupt();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
