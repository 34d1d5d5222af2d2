// RUN: not kvir-runner %s -e main --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s

// The emulator computes the same bits on every host CPU (docs/Emulator.md).
// A math function it has no host-independent version of, which the host
// JIT would turn into a call of the host's libm, is rejected at the op.

// CHECK: host-dependent-math.mlir":[[@LINE+8]]:{{[0-9]+}}): error: the emulator has no host-independent 'llvm.intr.tan'
// CHECK-NOT: Stack dump

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @tan(%out: memref<1xf32>) kernel {
      %c0 = arith.constant 0 : index
      %x = memref.load %out[%c0] : memref<1xf32>
      %y = llvm.intr.tan(%x) : (f32) -> f32
      memref.store %y, %out[%c0] : memref<1xf32>
      gpu.return
    }
  }

  func.func @main() {
    %c1 = arith.constant 1 : index
    %out = memref.alloc() : memref<1xf32>
    gpu.launch_func @kernels::@tan blocks in (%c1, %c1, %c1)
        threads in (%c1, %c1, %c1) args(%out : memref<1xf32>)
    memref.dealloc %out : memref<1xf32>
    return
  }
}
