// RUN: kvir-runner %s -e main --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs | FileCheck %s

// Shuffles narrower than a warp.
//
// @narrow: a block of 13 threads, gpu.shuffle xor 4 with width 13. The lowering
// passes membermask 0x1fff and clamp 12 (PTX ISA, shfl.sync: c[4:0] = 12,
// segmask = 0), so lane l reads l ^ 4 when l ^ 4 <= 12 and is invalid (-1)
// otherwise: lanes 9, 10, 11 (9^4 = 13, 10^4 = 14, 11^4 = 15).
//
// @segments: nvvm.shfl.sync on a full warp with 8-lane segments, as CUDA's
// __shfl_*_sync(mask, v, b, 8) does: c = ((32 - 8) << 8) | 7 for idx/down
// and c = (32 - 8) << 8 for up. segmask = 24, so minLane = l & 24 (the
// segment start s) and maxLane = s + 7 (idx, down) or s (up).
//   idx 2:  j = s | 2, always valid        -> s + 2
//   down 5: j = l + 5, valid iff j <= s + 7 -> positions 0..2 of a segment
//   up 2:   j = l - 2, valid iff j >= s     -> positions 2..7 of a segment

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @narrow(%out: memref<13xi32>) kernel {
      %tid = gpu.thread_id x
      %l = arith.index_cast %tid : index to i32
      %width = arith.constant 13 : i32
      %offset = arith.constant 4 : i32
      %m1 = arith.constant -1 : i32
      %v, %valid = gpu.shuffle xor %l, %offset, %width : i32
      %r = arith.select %valid, %v, %m1 : i32
      memref.store %r, %out[%tid] : memref<13xi32>
      gpu.return
    }

    gpu.func @segments(%out: memref<3x32xi32>) kernel {
      %tid = gpu.thread_id x
      %l = arith.index_cast %tid : index to i32
      %full = arith.constant -1 : i32
      %m1 = arith.constant -1 : i32
      %c2 = arith.constant 2 : i32
      %c5 = arith.constant 5 : i32
      // (24 << 8) | 7 and 24 << 8.
      %clamp = arith.constant 6151 : i32
      %clampUp = arith.constant 6144 : i32
      %r0 = arith.constant 0 : index
      %r1 = arith.constant 1 : index
      %r2 = arith.constant 2 : index

      %i = nvvm.shfl.sync idx %full, %l, %c2, %clamp {return_value_and_is_valid} : i32 -> !llvm.struct<(i32, i1)>
      %iv = llvm.extractvalue %i[0] : !llvm.struct<(i32, i1)>
      %ip = llvm.extractvalue %i[1] : !llvm.struct<(i32, i1)>
      %is = arith.select %ip, %iv, %m1 : i32
      memref.store %is, %out[%r0, %tid] : memref<3x32xi32>

      %d = nvvm.shfl.sync down %full, %l, %c5, %clamp {return_value_and_is_valid} : i32 -> !llvm.struct<(i32, i1)>
      %dv = llvm.extractvalue %d[0] : !llvm.struct<(i32, i1)>
      %dp = llvm.extractvalue %d[1] : !llvm.struct<(i32, i1)>
      %ds = arith.select %dp, %dv, %m1 : i32
      memref.store %ds, %out[%r1, %tid] : memref<3x32xi32>

      %u = nvvm.shfl.sync up %full, %l, %c2, %clampUp {return_value_and_is_valid} : i32 -> !llvm.struct<(i32, i1)>
      %uv = llvm.extractvalue %u[0] : !llvm.struct<(i32, i1)>
      %up = llvm.extractvalue %u[1] : !llvm.struct<(i32, i1)>
      %us = arith.select %up, %uv, %m1 : i32
      memref.store %us, %out[%r2, %tid] : memref<3x32xi32>
      gpu.return
    }
  }

  func.func @main() {
    %c1 = arith.constant 1 : index
    %c13 = arith.constant 13 : index
    %c32 = arith.constant 32 : index
    %narrow = memref.alloc() : memref<13xi32>
    gpu.launch_func @kernels::@narrow blocks in (%c1, %c1, %c1)
        threads in (%c13, %c1, %c1) args(%narrow : memref<13xi32>)
    %n = memref.cast %narrow : memref<13xi32> to memref<*xi32>
    call @printMemrefI32(%n) : (memref<*xi32>) -> ()

    %seg = memref.alloc() : memref<3x32xi32>
    gpu.launch_func @kernels::@segments blocks in (%c1, %c1, %c1)
        threads in (%c32, %c1, %c1) args(%seg : memref<3x32xi32>)
    %s = memref.cast %seg : memref<3x32xi32> to memref<*xi32>
    call @printMemrefI32(%s) : (memref<*xi32>) -> ()
    return
  }
  func.func private @printMemrefI32(memref<*xi32>)
}

// CHECK: [4,  5,  6,  7,  0,  1,  2,  3,  12,  -1,  -1,  -1,  8]
// CHECK: [2,   2,   2,   2,   2,   2,   2,   2,   10,   10,   10,   10,   10,   10,   10,   10,   18,   18,   18,   18,   18,   18,   18,   18,   26,   26,   26,   26,   26,   26,   26,   26],
// CHECK-NEXT: [5,   6,   7,   -1,   -1,   -1,   -1,   -1,   13,   14,   15,   -1,   -1,   -1,   -1,   -1,   21,   22,   23,   -1,   -1,   -1,   -1,   -1,   29,   30,   31,   -1,   -1,   -1,   -1,   -1],
// CHECK-NEXT: [-1,   -1,   0,   1,   2,   3,   4,   5,   -1,   -1,   8,   9,   10,   11,   12,   13,   -1,   -1,   16,   17,   18,   19,   20,   21,   -1,   -1,   24,   25,   26,   27,   28,   29]]
