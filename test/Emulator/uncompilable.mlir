// RUN: not kvir-runner %s -e main --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s

// A kernel holding a value no GPU thread could hold (a 16 GiB vector
// constant) is rejected with a diagnostic at the value, and the runner
// exits with an error instead of spending gigabytes compiling it or dying
// in the host JIT.

// CHECK: uncompilable.mlir":[[@LINE+7]]:{{[0-9]+}}): error: emulator: kernel 'huge' holds a value of type 'vector<4294967296xf32>' (17179869184 bytes), more than the 65536 bytes a GPU thread's registers and stack can hold; the emulator does not compile it
// CHECK-NOT: Stack dump

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @huge(%out: memref<1xf32>) kernel {
      %c0 = arith.constant 0 : index
      %v = arith.constant dense<1.0> : vector<4294967296xf32>
      %e = vector.extract %v[0] : f32 from vector<4294967296xf32>
      memref.store %e, %out[%c0] : memref<1xf32>
      gpu.return
    }
  }

  func.func @main() {
    %c1 = arith.constant 1 : index
    %out = memref.alloc() : memref<1xf32>
    gpu.launch_func @kernels::@huge blocks in (%c1, %c1, %c1)
        threads in (%c1, %c1, %c1) args(%out : memref<1xf32>)
    memref.dealloc %out : memref<1xf32>
    return
  }
}
