// RUN: kvir-runner %s -e main --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs | FileCheck %s

// Each shuffle mode of gpu.shuffle on one full warp (width 32). Lane l
// contributes the value l; a lane whose source lane is out of range gets the
// valid flag false, and the kernel stores -1 for it. PTX ISA, shfl.sync: the
// source lane is j = l ^ b (bfly), l - b (up, valid iff j >= 0 at width 32),
// l + b (down, valid iff j <= 31), b (idx, valid iff b <= 31); only b[4:0]
// takes part, so an offset of 37 acts as 5 and 33 as 1.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @shuffles(%out: memref<6x32xi32>) kernel {
      %lane = gpu.thread_id x
      %l = arith.index_cast %lane : index to i32
      %w = arith.constant 32 : i32
      %c3 = arith.constant 3 : i32
      %c5 = arith.constant 5 : i32
      %c33 = arith.constant 33 : i32
      %c37 = arith.constant 37 : i32
      %m1 = arith.constant -1 : i32
      %r0 = arith.constant 0 : index
      %r1 = arith.constant 1 : index
      %r2 = arith.constant 2 : index
      %r3 = arith.constant 3 : index
      %r4 = arith.constant 4 : index
      %r5 = arith.constant 5 : index

      %x, %xv = gpu.shuffle xor %l, %c5, %w : i32
      %xs = arith.select %xv, %x, %m1 : i32
      memref.store %xs, %out[%r0, %lane] : memref<6x32xi32>

      %u, %uv = gpu.shuffle up %l, %c3, %w : i32
      %us = arith.select %uv, %u, %m1 : i32
      memref.store %us, %out[%r1, %lane] : memref<6x32xi32>

      %d, %dv = gpu.shuffle down %l, %c3, %w : i32
      %ds = arith.select %dv, %d, %m1 : i32
      memref.store %ds, %out[%r2, %lane] : memref<6x32xi32>

      %i, %iv = gpu.shuffle idx %l, %c5, %w : i32
      %is = arith.select %iv, %i, %m1 : i32
      memref.store %is, %out[%r3, %lane] : memref<6x32xi32>

      %i37, %i37v = gpu.shuffle idx %l, %c37, %w : i32
      %i37s = arith.select %i37v, %i37, %m1 : i32
      memref.store %i37s, %out[%r4, %lane] : memref<6x32xi32>

      %d33, %d33v = gpu.shuffle down %l, %c33, %w : i32
      %d33s = arith.select %d33v, %d33, %m1 : i32
      memref.store %d33s, %out[%r5, %lane] : memref<6x32xi32>
      gpu.return
    }
  }

  func.func @main() {
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %out = memref.alloc() : memref<6x32xi32>
    gpu.launch_func @kernels::@shuffles blocks in (%c1, %c1, %c1)
        threads in (%c32, %c1, %c1) args(%out : memref<6x32xi32>)
    %u = memref.cast %out : memref<6x32xi32> to memref<*xi32>
    call @printMemrefI32(%u) : (memref<*xi32>) -> ()
    memref.dealloc %out : memref<6x32xi32>
    return
  }
  func.func private @printMemrefI32(memref<*xi32>)
}

// xor 5: l ^ 5 flips bits 0 and 2 within each group of 8.
// CHECK: [5,   4,   7,   6,   1,   0,   3,   2,   13,   12,   15,   14,   9,   8,   11,   10,   21,   20,   23,   22,   17,   16,   19,   18,   29,   28,   31,   30,   25,   24,   27,   26],
// up 3: lanes 0..2 have no source.
// CHECK-NEXT: [-1,   -1,   -1,   0,   1,   2,   3,   4,   5,   6,   7,   8,   9,   10,   11,   12,   13,   14,   15,   16,   17,   18,   19,   20,   21,   22,   23,   24,   25,   26,   27,   28],
// down 3: lanes 29..31 have no source.
// CHECK-NEXT: [3,   4,   5,   6,   7,   8,   9,   10,   11,   12,   13,   14,   15,   16,   17,   18,   19,   20,   21,   22,   23,   24,   25,   26,   27,   28,   29,   30,   31,   -1,   -1,   -1],
// idx 5: a broadcast of lane 5.
// CHECK-NEXT: [5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5],
// idx 37: 37 & 31 = 5.
// CHECK-NEXT: [5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5,   5],
// down 33: 33 & 31 = 1, so only lane 31 has no source.
// CHECK-NEXT: [1,   2,   3,   4,   5,   6,   7,   8,   9,   10,   11,   12,   13,   14,   15,   16,   17,   18,   19,   20,   21,   22,   23,   24,   25,   26,   27,   28,   29,   30,   31,   -1]]
