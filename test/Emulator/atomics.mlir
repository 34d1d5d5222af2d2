// RUN: kvir-runner %s -e main --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs | FileCheck %s

// Atomics on global and on shared memory. 4 blocks of 64 threads, global
// thread id g = 64 b + t:
//   global[0] += 1 by every thread                 -> 256
//   global[1] = max(global[1], g) (from 0)         -> 255
//   global[2 + t % 4] += 1 (a 4-bin histogram)     -> 64 each
//   fsum += t as f32 (integers, exact)             -> 4 * (0 + ... + 63) = 8064
//   global[6] via generic_atomic_rmw (a CAS loop): max(global[6], 3 g + 1)
//                                                  -> 3 * 255 + 1 = 766
// In shared memory each block counts its threads and sums t (thread 0
// initializes, barrier, atomics, barrier, thread 0 publishes):
//   blockCount[b] = 64, blockSum[b] = 2016.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @atomics(%g: memref<7xi32>, %fsum: memref<1xf32>,
                      %blockCount: memref<4xi32>, %blockSum: memref<4xi32>)
        workgroup(%sh: memref<2xi32, #gpu.address_space<workgroup>>) kernel {
      %t = gpu.thread_id x
      %b = gpu.block_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c4 = arith.constant 4 : index
      %c6 = arith.constant 6 : index
      %c64 = arith.constant 64 : index
      %one = arith.constant 1 : i32
      %zero = arith.constant 0 : i32
      %gi = arith.muli %b, %c64 : index
      %gid = arith.addi %gi, %t : index
      %g32 = arith.index_cast %gid : index to i32
      %t32 = arith.index_cast %t : index to i32

      %first = arith.cmpi eq, %t, %c0 : index
      scf.if %first {
        memref.store %zero, %sh[%c0] : memref<2xi32, #gpu.address_space<workgroup>>
        memref.store %zero, %sh[%c1] : memref<2xi32, #gpu.address_space<workgroup>>
      }
      gpu.barrier

      %0 = memref.atomic_rmw addi %one, %g[%c0] : (i32, memref<7xi32>) -> i32
      %1 = memref.atomic_rmw maxs %g32, %g[%c1] : (i32, memref<7xi32>) -> i32
      %bin = arith.remui %t, %c4 : index
      %slot = arith.addi %bin, %c2 : index
      %2 = memref.atomic_rmw addi %one, %g[%slot] : (i32, memref<7xi32>) -> i32
      %tf = arith.sitofp %t32 : i32 to f32
      %3 = memref.atomic_rmw addf %tf, %fsum[%c0] : (f32, memref<1xf32>) -> f32
      %three = arith.constant 3 : i32
      %g3 = arith.muli %g32, %three : i32
      %cand = arith.addi %g3, %one : i32
      %4 = memref.generic_atomic_rmw %g[%c6] : memref<7xi32> {
      ^bb0(%cur: i32):
        %m = arith.maxsi %cur, %cand : i32
        memref.atomic_yield %m : i32
      }

      %5 = memref.atomic_rmw addi %one, %sh[%c0] : (i32, memref<2xi32, #gpu.address_space<workgroup>>) -> i32
      %6 = memref.atomic_rmw addi %t32, %sh[%c1] : (i32, memref<2xi32, #gpu.address_space<workgroup>>) -> i32
      gpu.barrier
      scf.if %first {
        %n = memref.load %sh[%c0] : memref<2xi32, #gpu.address_space<workgroup>>
        %s = memref.load %sh[%c1] : memref<2xi32, #gpu.address_space<workgroup>>
        memref.store %n, %blockCount[%b] : memref<4xi32>
        memref.store %s, %blockSum[%b] : memref<4xi32>
      }
      gpu.return
    }
  }

  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c7 = arith.constant 7 : index
    %c64 = arith.constant 64 : index
    %zero = arith.constant 0 : i32
    %fzero = arith.constant 0.0 : f32
    %g = memref.alloc() : memref<7xi32>
    %fsum = memref.alloc() : memref<1xf32>
    %count = memref.alloc() : memref<4xi32>
    %sum = memref.alloc() : memref<4xi32>
    scf.for %i = %c0 to %c7 step %c1 {
      memref.store %zero, %g[%i] : memref<7xi32>
    }
    memref.store %fzero, %fsum[%c0] : memref<1xf32>
    gpu.launch_func @kernels::@atomics blocks in (%c4, %c1, %c1)
        threads in (%c64, %c1, %c1)
        args(%g : memref<7xi32>, %fsum : memref<1xf32>,
             %count : memref<4xi32>, %sum : memref<4xi32>)
    %ug = memref.cast %g : memref<7xi32> to memref<*xi32>
    call @printMemrefI32(%ug) : (memref<*xi32>) -> ()
    %uf = memref.cast %fsum : memref<1xf32> to memref<*xf32>
    call @printMemrefF32(%uf) : (memref<*xf32>) -> ()
    %uc = memref.cast %count : memref<4xi32> to memref<*xi32>
    call @printMemrefI32(%uc) : (memref<*xi32>) -> ()
    %us = memref.cast %sum : memref<4xi32> to memref<*xi32>
    call @printMemrefI32(%us) : (memref<*xi32>) -> ()
    return
  }
  func.func private @printMemrefI32(memref<*xi32>)
  func.func private @printMemrefF32(memref<*xf32>)
}

// CHECK: [256,  255,  64,  64,  64,  64,  766]
// CHECK: [8064]
// CHECK: [64,  64,  64,  64]
// CHECK: [2016,  2016,  2016,  2016]
