// RUN: kvir-runner %s -e main --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs | FileCheck %s

// gpu.all_reduce inside a host gpu.launch, as upstream's CUDA integration
// tests use it: convert-gpu-to-nvvm expands it into shuffles of a partial
// warp (6 threads), shared memory and barriers. Block b sums row b of data:
//   row 0: 0 + 1 + 2 + 4 + 8 + 16 = 31
//   row 1: 2 + 4 + 8 + 16 + 2 + 2 = 34
// and the maximum of either row is 16.

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c6 = arith.constant 6 : index
  %data = memref.alloc() : memref<2x6xi32>
  %sum = memref.alloc() : memref<2xi32>
  %max = memref.alloc() : memref<2xi32>
  %values = arith.constant dense<[[0, 1, 2, 4, 8, 16], [2, 4, 8, 16, 2, 2]]> : vector<2x6xi32>
  vector.transfer_write %values, %data[%c0, %c0] : vector<2x6xi32>, memref<2x6xi32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c6, %sy = %c1, %sz = %c1) {
    %v = memref.load %data[%bx, %tx] : memref<2x6xi32>
    %s = gpu.all_reduce add %v uniform {} : (i32) -> (i32)
    %m = gpu.all_reduce maxsi %v uniform {} : (i32) -> (i32)
    %first = arith.cmpi eq, %tx, %c0 : index
    scf.if %first {
      memref.store %s, %sum[%bx] : memref<2xi32>
      memref.store %m, %max[%bx] : memref<2xi32>
    }
    gpu.terminator
  }
  %us = memref.cast %sum : memref<2xi32> to memref<*xi32>
  call @printMemrefI32(%us) : (memref<*xi32>) -> ()
  %um = memref.cast %max : memref<2xi32> to memref<*xi32>
  call @printMemrefI32(%um) : (memref<*xi32>) -> ()
  return
}
func.func private @printMemrefI32(memref<*xi32>)

// CHECK: [31,  34]
// CHECK: [16,  16]
