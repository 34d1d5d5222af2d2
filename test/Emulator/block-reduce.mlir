// RUN: kvir-runner %s -e main --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs | FileCheck %s

// A block-wide sum the way CUDA kernels write it: each warp reduces its 32
// values with xor shuffles, lane 0 of each warp puts the warp's sum into
// shared memory, a barrier, then warp 0 reduces the 4 partial sums with down
// shuffles. 3 blocks of 128 threads; x[i] = i. Block b sums
// i = 128b .. 128b + 127, i.e. 128 * 128 b + (0 + ... + 127) = 16384 b + 8128:
// 8128, 24512, 40896. All values are integers below 2^24, exact in f32.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @block_sum(%x: memref<384xf32>, %sums: memref<3xf32>)
        workgroup(%partial: memref<4xf32, #gpu.address_space<workgroup>>) kernel {
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %c0 = arith.constant 0 : index
      %c4 = arith.constant 4 : index
      %c32 = arith.constant 32 : index
      %c128 = arith.constant 128 : index
      %w = arith.constant 32 : i32
      %base = arith.muli %bid, %c128 : index
      %i = arith.addi %base, %tid : index
      %v = memref.load %x[%i] : memref<384xf32>

      %c16i = arith.constant 16 : i32
      %c8i = arith.constant 8 : i32
      %c4i = arith.constant 4 : i32
      %c2i = arith.constant 2 : i32
      %c1i = arith.constant 1 : i32
      %r1, %p1 = gpu.shuffle xor %v, %c16i, %w : f32
      %s1 = arith.addf %v, %r1 : f32
      %r2, %p2 = gpu.shuffle xor %s1, %c8i, %w : f32
      %s2 = arith.addf %s1, %r2 : f32
      %r3, %p3 = gpu.shuffle xor %s2, %c4i, %w : f32
      %s3 = arith.addf %s2, %r3 : f32
      %r4, %p4 = gpu.shuffle xor %s3, %c2i, %w : f32
      %s4 = arith.addf %s3, %r4 : f32
      %r5, %p5 = gpu.shuffle xor %s4, %c1i, %w : f32
      %warpSum = arith.addf %s4, %r5 : f32

      %warp = arith.divui %tid, %c32 : index
      %lane = arith.remui %tid, %c32 : index
      %lead = arith.cmpi eq, %lane, %c0 : index
      scf.if %lead {
        memref.store %warpSum, %partial[%warp] : memref<4xf32, #gpu.address_space<workgroup>>
      }
      gpu.barrier

      %first = arith.cmpi eq, %warp, %c0 : index
      scf.if %first {
        // Lanes 4..31 contribute 0.
        %has = arith.cmpi ult, %lane, %c4 : index
        %p = scf.if %has -> f32 {
          %l = memref.load %partial[%lane] : memref<4xf32, #gpu.address_space<workgroup>>
          scf.yield %l : f32
        } else {
          %z = arith.constant 0.0 : f32
          scf.yield %z : f32
        }
        %d1, %q1 = gpu.shuffle down %p, %c2i, %w : f32
        %t1 = arith.addf %p, %d1 : f32
        %d2, %q2 = gpu.shuffle down %t1, %c1i, %w : f32
        %t2 = arith.addf %t1, %d2 : f32
        scf.if %lead {
          memref.store %t2, %sums[%bid] : memref<3xf32>
        }
      }
      gpu.return
    }
  }

  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c128 = arith.constant 128 : index
    %c384 = arith.constant 384 : index
    %x = memref.alloc() : memref<384xf32>
    %sums = memref.alloc() : memref<3xf32>
    scf.for %i = %c0 to %c384 step %c1 {
      %ii = arith.index_cast %i : index to i32
      %f = arith.sitofp %ii : i32 to f32
      memref.store %f, %x[%i] : memref<384xf32>
    }
    gpu.launch_func @kernels::@block_sum blocks in (%c3, %c1, %c1)
        threads in (%c128, %c1, %c1)
        args(%x : memref<384xf32>, %sums : memref<3xf32>)
    %u = memref.cast %sums : memref<3xf32> to memref<*xf32>
    call @printMemrefF32(%u) : (memref<*xf32>) -> ()
    memref.dealloc %x : memref<384xf32>
    memref.dealloc %sums : memref<3xf32>
    return
  }
  func.func private @printMemrefF32(memref<*xf32>)
}

// CHECK: [8128,  24512,  40896]
