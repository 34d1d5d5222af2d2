// RUN: kvir-runner %s -e main --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs | FileCheck %s

// A host function with a gpu.launch that is not outlined (no gpu.module in
// the input), on a host memref made visible with gpu.host_register, as the
// upstream CUDA integration tests write it. The body uses values defined
// outside the launch (%scale), which outlining turns into kernel arguments.
// 2 blocks of 8 threads: data[8 b + t] = 3 * (8 b + t) + b.

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %scale = arith.constant 3 : i32
  %data = memref.alloc() : memref<16xi32>
  %cast = memref.cast %data : memref<16xi32> to memref<*xi32>
  gpu.host_register %cast : memref<*xi32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
    %base = arith.muli %bx, %sx : index
    %i = arith.addi %base, %tx : index
    %ii = arith.index_cast %i : index to i32
    %bi = arith.index_cast %bx : index to i32
    %v = arith.muli %ii, %scale : i32
    %w = arith.addi %v, %bi : i32
    memref.store %w, %data[%i] : memref<16xi32>
    gpu.terminator
  }
  call @printMemrefI32(%cast) : (memref<*xi32>) -> ()
  return
}
func.func private @printMemrefI32(memref<*xi32>)

// CHECK: [0,  3,  6,  9,  12,  15,  18,  21,  25,  28,  31,  34,  37,  40,  43,  46]
