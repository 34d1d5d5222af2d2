// RUN: kvir-runner %s -e main --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs | FileCheck %s

// gpu.printf in a kernel (CUDA's device vprintf: arguments packed at their
// natural alignment, f32 promoted to double). 2 blocks of 3 threads; blocks
// run in order and the threads of a block in order, so the lines come out
// sorted. Thread t of block b prints t * 1.5 as %5.2f, 2^40 as %ld and
// 255 t as %x.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @hello() kernel {
      %t = gpu.thread_id x
      %b = gpu.block_id x
      %ti = arith.index_cast %t : index to i32
      %bi = arith.index_cast %b : index to i32
      %tf = arith.sitofp %ti : i32 to f32
      %k = arith.constant 1.5 : f32
      %v = arith.mulf %tf, %k : f32
      %big = arith.constant 1099511627776 : i64
      %c255 = arith.constant 255 : i32
      %h = arith.muli %ti, %c255 : i32
      gpu.printf "block %d thread %d: %5.2f %ld %x 100%%\n", %bi, %ti, %v, %big, %h : i32, i32, f32, i64, i32
      gpu.return
    }
  }

  func.func @main() {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    gpu.launch_func @kernels::@hello blocks in (%c2, %c1, %c1)
        threads in (%c3, %c1, %c1)
    return
  }
}

// CHECK:      block 0 thread 0:  0.00 1099511627776 0 100%
// CHECK-NEXT: block 0 thread 1:  1.50 1099511627776 ff 100%
// CHECK-NEXT: block 0 thread 2:  3.00 1099511627776 1fe 100%
// CHECK-NEXT: block 1 thread 0:  0.00 1099511627776 0 100%
// CHECK-NEXT: block 1 thread 1:  1.50 1099511627776 ff 100%
// CHECK-NEXT: block 1 thread 2:  3.00 1099511627776 1fe 100%
