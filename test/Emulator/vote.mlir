// RUN: kvir-runner %s -e main --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs | FileCheck %s

// vote.sync (PTX ISA, "vote.sync") on two warps of a 64-thread block; row w of
// the result belongs to warp w, with lane l = tid % 32:
//   col 0: ballot(l % 3 == 0)  = bits 0, 3, ..., 30 = 0x49249249 = 1227133513
//   col 1: any(tid == 40)      = 0 for warp 0, 1 for warp 1
//   col 2: all(tid < 48)       = 1 for warp 0, 0 for warp 1 (tids 48..63)
//   col 3: uni(tid < 32)       = 1: each warp is uniform
//   col 4: uni(l < 16)         = 0: half of each warp differs
//   col 5: ballot(l % 2 == 0) taken by lanes 0..15 only, membermask 0xffff
//          = 0x5555 = 21845

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @votes(%out: memref<2x6xi32>) kernel {
      %tid = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %c4 = arith.constant 4 : index
      %c5 = arith.constant 5 : index
      %c16 = arith.constant 16 : index
      %c32 = arith.constant 32 : index
      %c40 = arith.constant 40 : index
      %c48 = arith.constant 48 : index
      %full = arith.constant -1 : i32
      %half = arith.constant 65535 : i32
      %warp = arith.divui %tid, %c32 : index
      %lane = arith.remui %tid, %c32 : index
      %lead = arith.cmpi eq, %lane, %c0 : index

      %m3 = arith.remui %lane, %c3 : index
      %p0 = arith.cmpi eq, %m3, %c0 : index
      %ballot = nvvm.vote.sync ballot %full, %p0 -> i32

      %p1 = arith.cmpi eq, %tid, %c40 : index
      %any = nvvm.vote.sync any %full, %p1 -> i1
      %p2 = arith.cmpi ult, %tid, %c48 : index
      %all = nvvm.vote.sync all %full, %p2 -> i1
      %p3 = arith.cmpi ult, %tid, %c32 : index
      %uni1 = nvvm.vote.sync uni %full, %p3 -> i1
      %p4 = arith.cmpi ult, %lane, %c16 : index
      %uni2 = nvvm.vote.sync uni %full, %p4 -> i1

      scf.if %lead {
        memref.store %ballot, %out[%warp, %c0] : memref<2x6xi32>
        %a = arith.extui %any : i1 to i32
        memref.store %a, %out[%warp, %c1] : memref<2x6xi32>
        %b = arith.extui %all : i1 to i32
        memref.store %b, %out[%warp, %c2] : memref<2x6xi32>
        %u1 = arith.extui %uni1 : i1 to i32
        memref.store %u1, %out[%warp, %c3] : memref<2x6xi32>
        %u2 = arith.extui %uni2 : i1 to i32
        memref.store %u2, %out[%warp, %c4] : memref<2x6xi32>
      }

      // A divergent vote: only the lower half-warp, which its mask names.
      scf.if %p4 {
        %m2 = arith.remui %lane, %c2 : index
        %even = arith.cmpi eq, %m2, %c0 : index
        %hb = nvvm.vote.sync ballot %half, %even -> i32
        scf.if %lead {
          memref.store %hb, %out[%warp, %c5] : memref<2x6xi32>
        }
      }
      gpu.return
    }
  }

  func.func @main() {
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %out = memref.alloc() : memref<2x6xi32>
    gpu.launch_func @kernels::@votes blocks in (%c1, %c1, %c1)
        threads in (%c64, %c1, %c1) args(%out : memref<2x6xi32>)
    %u = memref.cast %out : memref<2x6xi32> to memref<*xi32>
    call @printMemrefI32(%u) : (memref<*xi32>) -> ()
    return
  }
  func.func private @printMemrefI32(memref<*xi32>)
}

// CHECK: [1227133513,   0,   1,   1,   0,   21845],
// CHECK-NEXT: [1227133513,   1,   0,   1,   0,   21845]]
