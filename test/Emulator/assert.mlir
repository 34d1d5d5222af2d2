// RUN: not kvir-runner %s -e main --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s

// cf.assert in a kernel (lowered to CUDA's __assertfail) stops the launch
// like any other check: 4 threads assert t < 2; thread (2,0,0) is the first
// to fail.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @check() kernel {
      %t = gpu.thread_id x
      %c2 = arith.constant 2 : index
      %ok = arith.cmpi ult, %t, %c2 : index
      cf.assert %ok, "t must be below 2"
      gpu.return
    }
  }

  func.func @main() {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    gpu.launch_func @kernels::@check blocks in (%c1, %c1, %c1)
        threads in (%c4, %c1, %c1)
    return
  }
}

// CHECK: kvir-emu: kernel 'check': device assertion failed: t must be below 2 ({{.*}}assert.mlir:14
// CHECK-NEXT: block (0,0,0) thread (2,0,0)
// CHECK-NEXT: kvir-emu: the launch failed its checks
