// RUN: env KVIR_JIT_CPU=no-such-cpu not kvir-runner %s -e main \
// RUN:   --entry-point-result=void --shared-libs=%mlir_runner_libs 2>&1 | \
// RUN:   FileCheck %s --check-prefix=CPU
// RUN: env KVIR_JIT_CPU=generic:+no-such-feature not kvir-runner %s -e main \
// RUN:   --entry-point-result=void --shared-libs=%mlir_runner_libs 2>&1 | \
// RUN:   FileCheck %s --check-prefix=FEATURE
// RUN: env KVIR_JIT_CPU=host kvir-runner %s -e main --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs | FileCheck %s --check-prefix=OUT

// KVIR_JIT_CPU selects the CPU kvir's JIT compilers generate code for
// (docs/Emulator.md); a CPU or feature LLVM does not know is an error
// naming the variable, not a warning on stderr and a host build.

// CPU: kvir-runner: KVIR_JIT_CPU=no-such-cpu: 'no-such-cpu' is not a CPU of {{.*}} (expected 'host', an LLVM CPU name such as
// FEATURE: kvir-runner: KVIR_JIT_CPU=generic:+no-such-feature: '+no-such-feature' is not a feature of {{.*}} (expected +name or -name
// OUT: [3]

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @three(%out: memref<1xf32>) kernel {
      %c0 = arith.constant 0 : index
      %three = arith.constant 3.0 : f32
      memref.store %three, %out[%c0] : memref<1xf32>
      gpu.return
    }
  }

  func.func @main() {
    %c1 = arith.constant 1 : index
    %out = memref.alloc() : memref<1xf32>
    gpu.launch_func @kernels::@three blocks in (%c1, %c1, %c1)
        threads in (%c1, %c1, %c1) args(%out : memref<1xf32>)
    %u = memref.cast %out : memref<1xf32> to memref<*xf32>
    call @printMemrefF32(%u) : (memref<*xf32>) -> ()
    memref.dealloc %out : memref<1xf32>
    return
  }
  func.func private @printMemrefF32(memref<*xf32>)
}
