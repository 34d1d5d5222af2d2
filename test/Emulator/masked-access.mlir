// RUN: kvir-runner %s -e main --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs | FileCheck %s

// vector.transfer_read / transfer_write past the end of a buffer lower to
// masked loads and stores (llvm.intr.masked.load / store): only the enabled
// elements are accessed, so reading and writing the tail of a buffer is in
// bounds. Buffers of 10 floats, x[i] = i; thread t (of 3) reads x[4t ..]
// padded with -1 and writes y[4t ..] = that + 100, masked at the end.
//   thread 0: x[0..3]  -> [0, 1, 2, 3]
//   thread 1: x[4..7]  -> [4, 5, 6, 7]
//   thread 2: x[8..9]  -> [8, 9, -1, -1] (y[8], y[9] written only)
// y = [100, ..., 109]. Each thread also stores its whole vector to row t
// of r (3 x 4): the padding shows in row 2.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @tail(%x: memref<10xf32>, %y: memref<10xf32>, %r: memref<3x4xf32>) kernel {
      %t = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c4 = arith.constant 4 : index
      %pad = arith.constant -1.0 : f32
      %hundred = arith.constant dense<100.0> : vector<4xf32>
      %i = arith.muli %t, %c4 : index
      %v = vector.transfer_read %x[%i], %pad : memref<10xf32>, vector<4xf32>
      %w = arith.addf %v, %hundred : vector<4xf32>
      vector.transfer_write %w, %y[%i] : vector<4xf32>, memref<10xf32>
      vector.store %v, %r[%t, %c0] : memref<3x4xf32>, vector<4xf32>
      gpu.return
    }
  }

  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c10 = arith.constant 10 : index
    %x = memref.alloc() : memref<10xf32>
    %y = memref.alloc() : memref<10xf32>
    %r = memref.alloc() : memref<3x4xf32>
    scf.for %i = %c0 to %c10 step %c1 {
      %ii = arith.index_cast %i : index to i32
      %f = arith.sitofp %ii : i32 to f32
      memref.store %f, %x[%i] : memref<10xf32>
    }
    gpu.launch_func @kernels::@tail blocks in (%c1, %c1, %c1)
        threads in (%c3, %c1, %c1)
        args(%x : memref<10xf32>, %y : memref<10xf32>, %r : memref<3x4xf32>)
    %uy = memref.cast %y : memref<10xf32> to memref<*xf32>
    call @printMemrefF32(%uy) : (memref<*xf32>) -> ()
    %ur = memref.cast %r : memref<3x4xf32> to memref<*xf32>
    call @printMemrefF32(%ur) : (memref<*xf32>) -> ()
    return
  }
  func.func private @printMemrefF32(memref<*xf32>)
}

// CHECK: [100,  101,  102,  103,  104,  105,  106,  107,  108,  109]
// CHECK: [0,   1,   2,   3],
// CHECK-NEXT: [4,   5,   6,   7],
// CHECK-NEXT: [8,   9,   -1,   -1]]
