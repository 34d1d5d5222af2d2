// RUN: kvir-runner %s -e main --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs | FileCheck %s

// The .ftz forms of the approximation intrinsics flush subnormal inputs and
// results to zero of the same sign (PTX ISA, subnormal numbers); the forms
// without .ftz keep them:
//   ex2.approx.ftz(-130) = 0, ex2.approx(-130) = 2^-130 (subnormal),
//   lg2.approx.ftz(1e-40) = lg2(0) = -inf, lg2.approx(1e-40) = -132.9.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @ftz(%out: memref<4xf32>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %x = arith.constant -130.0 : f32
      %tiny = arith.constant 1.0e-40 : f32
      %a = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"(%x) : (f32) -> f32
      %b = llvm.call_intrinsic "llvm.nvvm.ex2.approx.f"(%x) : (f32) -> f32
      %c = llvm.call_intrinsic "llvm.nvvm.lg2.approx.ftz.f"(%tiny) : (f32) -> f32
      %d = llvm.call_intrinsic "llvm.nvvm.lg2.approx.f"(%tiny) : (f32) -> f32
      memref.store %a, %out[%c0] : memref<4xf32>
      memref.store %b, %out[%c1] : memref<4xf32>
      memref.store %c, %out[%c2] : memref<4xf32>
      memref.store %d, %out[%c3] : memref<4xf32>
      gpu.return
    }
  }

  func.func @main() {
    %c1 = arith.constant 1 : index
    %out = memref.alloc() : memref<4xf32>
    gpu.launch_func @kernels::@ftz blocks in (%c1, %c1, %c1)
        threads in (%c1, %c1, %c1) args(%out : memref<4xf32>)
    %u = memref.cast %out : memref<4xf32> to memref<*xf32>
    call @printMemrefF32(%u) : (memref<*xf32>) -> ()
    return
  }
  func.func private @printMemrefF32(memref<*xf32>)
}

// CHECK: [0,  7.34684e-40,  -inf,  -132.877]
