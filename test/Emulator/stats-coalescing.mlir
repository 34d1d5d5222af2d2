// RUN: kvir-runner %s -e main --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs --emu-stats 2>&1 | FileCheck %s

// --emu-stats: global memory coalescing, measured in 32-byte sectors per warp
// request. Buffers come from gpu.alloc, which (like cudaMalloc) is 256-byte
// aligned. Each kernel runs 2 blocks of 128 threads = 8 warps; each thread
// loads one f32 and stores one f32, so every launch makes 16 warp requests
// of 32 * 4 = 128 useful bytes each (2048 bytes).
//
// @copy: thread i copies element i. A warp touches 128 contiguous bytes
//   starting at a multiple of 128: 4 sectors per request, 64 in total,
//   sector_efficiency = 2048 / (64 * 32) = 1.0.
// @stride2: thread i copies element 2 i. A warp spans 256 bytes, 8 sectors
//   per request, 128 in total: 2048 / (128 * 32) = 0.5.
// @stride8: thread i copies element 8 i (32 bytes apart): every lane is alone
//   in its sector, 32 sectors per request, 512 in total:
//   2048 / (512 * 32) = 0.125.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @copy(%in: memref<2048xf32>, %out: memref<2048xf32>) kernel {
      %t = gpu.thread_id x
      %b = gpu.block_id x
      %n = gpu.block_dim x
      %base = arith.muli %b, %n : index
      %i = arith.addi %base, %t : index
      %v = memref.load %in[%i] : memref<2048xf32>
      memref.store %v, %out[%i] : memref<2048xf32>
      gpu.return
    }
    gpu.func @stride2(%in: memref<2048xf32>, %out: memref<2048xf32>) kernel {
      %t = gpu.thread_id x
      %b = gpu.block_id x
      %n = gpu.block_dim x
      %c2 = arith.constant 2 : index
      %base = arith.muli %b, %n : index
      %g = arith.addi %base, %t : index
      %i = arith.muli %g, %c2 : index
      %v = memref.load %in[%i] : memref<2048xf32>
      memref.store %v, %out[%i] : memref<2048xf32>
      gpu.return
    }
    gpu.func @stride8(%in: memref<2048xf32>, %out: memref<2048xf32>) kernel {
      %t = gpu.thread_id x
      %b = gpu.block_id x
      %n = gpu.block_dim x
      %c8 = arith.constant 8 : index
      %base = arith.muli %b, %n : index
      %g = arith.addi %base, %t : index
      %i = arith.muli %g, %c8 : index
      %v = memref.load %in[%i] : memref<2048xf32>
      memref.store %v, %out[%i] : memref<2048xf32>
      gpu.return
    }
  }

  func.func @main() {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c128 = arith.constant 128 : index
    %in = gpu.alloc () : memref<2048xf32>
    %out = gpu.alloc () : memref<2048xf32>
    gpu.launch_func @kernels::@copy blocks in (%c2, %c1, %c1)
        threads in (%c128, %c1, %c1) args(%in : memref<2048xf32>, %out : memref<2048xf32>)
    gpu.launch_func @kernels::@stride2 blocks in (%c2, %c1, %c1)
        threads in (%c128, %c1, %c1) args(%in : memref<2048xf32>, %out : memref<2048xf32>)
    gpu.launch_func @kernels::@stride8 blocks in (%c2, %c1, %c1)
        threads in (%c128, %c1, %c1) args(%in : memref<2048xf32>, %out : memref<2048xf32>)
    gpu.dealloc %in : memref<2048xf32>
    gpu.dealloc %out : memref<2048xf32>
    return
  }
}

// CHECK: "kernel": "copy"
// CHECK-SAME: "global_bytes_loaded": 1024, "global_bytes_stored": 1024, "global_requests": 16, "global_sectors": 64, "global_useful_bytes": 2048, "sector_efficiency": 1.0000,
// CHECK: "kernel": "stride2"
// CHECK-SAME: "global_requests": 16, "global_sectors": 128, "global_useful_bytes": 2048, "sector_efficiency": 0.5000,
// CHECK: "kernel": "stride8"
// CHECK-SAME: "global_requests": 16, "global_sectors": 512, "global_useful_bytes": 2048, "sector_efficiency": 0.1250,
