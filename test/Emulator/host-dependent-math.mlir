// RUN: not kvir-runner %s -e main --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s
// RUN: not kvir-opt %s --kv-to-ptx 2>&1 | FileCheck %s

// An LLVM math intrinsic PTX has no instruction for (here tan, which would
// be a libm call) is rejected at the op by the kernel pipeline, for the
// emulator and for PTX alike: LLVM's NVPTX backend would end the process,
// and the emulator would have to call the host's libm, whose results
// differ from CPU to CPU (docs/Emulator.md).

// CHECK: host-dependent-math.mlir{{"?}}:[[@LINE+8]]:{{[0-9]+}}{{\)?}}: error: 'llvm.intr.tan' op cannot be compiled for the GPU: PTX has no instruction for it
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
