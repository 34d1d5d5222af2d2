// RUN: kvir-runner %s -e main --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs | FileCheck %s

// Device buffers through the gpu dialect: gpu.alloc, gpu.memcpy both ways,
// gpu.memset, gpu.dealloc, with async tokens as gpu-to-llvm expects them.
// host[i] = i is copied to dev, the kernel computes dev2[i] = dev[i] * 2 + k
// where dev2 was memset to k = 7 (each thread reads its own element), and the
// result comes back: [7, 9, 11, ..., 37] for i = 0..15.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @axpy(%x: memref<16xf32>, %y: memref<16xf32>) kernel {
      %t = gpu.thread_id x
      %two = arith.constant 2.0 : f32
      %a = memref.load %x[%t] : memref<16xf32>
      %b = memref.load %y[%t] : memref<16xf32>
      %p = arith.mulf %a, %two : f32
      %s = arith.addf %p, %b : f32
      memref.store %s, %y[%t] : memref<16xf32>
      gpu.return
    }
  }

  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %seven = arith.constant 7.0 : f32
    %host = memref.alloc() : memref<16xf32>
    scf.for %i = %c0 to %c16 step %c1 {
      %ii = arith.index_cast %i : index to i32
      %f = arith.sitofp %ii : i32 to f32
      memref.store %f, %host[%i] : memref<16xf32>
    }
    %t0 = gpu.wait async
    %dev, %t1 = gpu.alloc async [%t0] () : memref<16xf32>
    %dev2, %t2 = gpu.alloc async [%t1] () : memref<16xf32>
    %t3 = gpu.memcpy async [%t2] %dev, %host : memref<16xf32>, memref<16xf32>
    %t4 = gpu.memset async [%t3] %dev2, %seven : memref<16xf32>, f32
    gpu.wait [%t4]
    gpu.launch_func @kernels::@axpy blocks in (%c1, %c1, %c1)
        threads in (%c16, %c1, %c1) args(%dev : memref<16xf32>, %dev2 : memref<16xf32>)
    %t5 = gpu.wait async
    %t6 = gpu.memcpy async [%t5] %host, %dev2 : memref<16xf32>, memref<16xf32>
    %t7 = gpu.dealloc async [%t6] %dev : memref<16xf32>
    %t8 = gpu.dealloc async [%t7] %dev2 : memref<16xf32>
    gpu.wait [%t8]
    %u = memref.cast %host : memref<16xf32> to memref<*xf32>
    call @printMemrefF32(%u) : (memref<*xf32>) -> ()
    return
  }
  func.func private @printMemrefF32(memref<*xf32>)
}

// CHECK: [7,  9,  11,  13,  15,  17,  19,  21,  23,  25,  27,  29,  31,  33,  35,  37]
