// RUN: kvir-runner %s -e main --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs | FileCheck %s

// Transcendentals the way kernels reach them: NVVM intrinsics called by name
// (ex2.approx, lg2.approx, rcp, sqrt, as kvir's attention kernels emit
// them) and math dialect ops, which convert-gpu-to-nvvm turns into
// libdevice calls (__nv_expf, __nv_logf, __nv_tanhf). The inputs are chosen
// so that the results are exact in f32:
//   ex2(3) = 8, lg2(8) = 3, ex2(-1) = 0.5, rcp(4) = 0.25, sqrt(16) = 4,
//   exp(0) = 1, log(1) = 0, tanh(0) = 0.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @math(%out: memref<8xf32>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %c4 = arith.constant 4 : index
      %c5 = arith.constant 5 : index
      %c6 = arith.constant 6 : index
      %c7 = arith.constant 7 : index
      %three = arith.constant 3.0 : f32
      %eight = arith.constant 8.0 : f32
      %mone = arith.constant -1.0 : f32
      %four = arith.constant 4.0 : f32
      %sixteen = arith.constant 16.0 : f32
      %zero = arith.constant 0.0 : f32
      %one = arith.constant 1.0 : f32
      %a = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"(%three) : (f32) -> f32
      %b = llvm.call_intrinsic "llvm.nvvm.lg2.approx.ftz.f"(%eight) : (f32) -> f32
      %c = llvm.call_intrinsic "llvm.nvvm.ex2.approx.f"(%mone) : (f32) -> f32
      %d = llvm.call_intrinsic "llvm.nvvm.rcp.approx.ftz.f"(%four) : (f32) -> f32
      %e = llvm.call_intrinsic "llvm.nvvm.sqrt.approx.f"(%sixteen) : (f32) -> f32
      %f = math.exp %zero : f32
      %g = math.log %one : f32
      %h = math.tanh %zero : f32
      memref.store %a, %out[%c0] : memref<8xf32>
      memref.store %b, %out[%c1] : memref<8xf32>
      memref.store %c, %out[%c2] : memref<8xf32>
      memref.store %d, %out[%c3] : memref<8xf32>
      memref.store %e, %out[%c4] : memref<8xf32>
      memref.store %f, %out[%c5] : memref<8xf32>
      memref.store %g, %out[%c6] : memref<8xf32>
      memref.store %h, %out[%c7] : memref<8xf32>
      gpu.return
    }
  }

  func.func @main() {
    %c1 = arith.constant 1 : index
    %out = memref.alloc() : memref<8xf32>
    gpu.launch_func @kernels::@math blocks in (%c1, %c1, %c1)
        threads in (%c1, %c1, %c1) args(%out : memref<8xf32>)
    %u = memref.cast %out : memref<8xf32> to memref<*xf32>
    call @printMemrefF32(%u) : (memref<*xf32>) -> ()
    return
  }
  func.func private @printMemrefF32(memref<*xf32>)
}

// CHECK: [8,  3,  0.5,  0.25,  4,  1,  0,  0]
