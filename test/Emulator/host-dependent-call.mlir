// RUN: not kvir-runner %s -e main --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s

// A kernel calling a host function (here the host libm's expf, whose
// results differ from CPU to CPU) is rejected: no GPU kernel could call
// it, and the emulator's results must not depend on the host.

// CHECK: error: kernels call 'expf', which is neither a function of their module nor one a GPU kernel can call
// CHECK-NOT: Stack dump

module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @expf(f32) -> f32
    gpu.func @host_call(%out: memref<1xf32>) kernel {
      %c0 = arith.constant 0 : index
      %x = memref.load %out[%c0] : memref<1xf32>
      %y = llvm.call @expf(%x) : (f32) -> f32
      memref.store %y, %out[%c0] : memref<1xf32>
      gpu.return
    }
  }

  func.func @main() {
    %c1 = arith.constant 1 : index
    %out = memref.alloc() : memref<1xf32>
    gpu.launch_func @kernels::@host_call blocks in (%c1, %c1, %c1)
        threads in (%c1, %c1, %c1) args(%out : memref<1xf32>)
    memref.dealloc %out : memref<1xf32>
    return
  }
}
