// RUN: not kvir-runner %s -e by_zero --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not kvir-runner %s -e overflow --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s --check-prefix=OVERFLOW
// RUN: kvir-runner %s -e fine --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s --check-prefix=FINE

// An integer division by a value a kernel reads (a page size, a group, a
// work item's length) that turns out 0 -- or the most negative value
// divided by -1 -- leaves an unspecified result in PTX; on the host it
// would kill the process (SIGFPE). The emulator reports the kernel, the
// thread and the division instead, and the launch fails.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @divide(%a: i32, %b: i32, %out: memref<4xi32>) kernel {
      %t = gpu.thread_id x
      // ZERO: kvir-emu: kernel 'divide': integer division by zero (PTX leaves the result unspecified)
      // ZERO-NEXT: block (0,0,0) thread (0,0,0)
      // ZERO-NEXT: at {{.*}}integer-division.mlir:[[@LINE+3]]:{{[0-9]+}} (llvm.sdiv)
      // OVERFLOW: kvir-emu: kernel 'divide': signed integer division overflow: the most negative value divided by -1 (PTX leaves the result unspecified)
      // OVERFLOW-NEXT: block (0,0,0) thread (0,0,0)
      %q = arith.divsi %a, %b : i32
      %r = arith.remui %a, %b : i32
      %s = arith.addi %q, %r : i32
      memref.store %s, %out[%t] : memref<4xi32>
      gpu.return
    }
  }

  func.func private @printMemrefI32(memref<*xi32>)

  func.func @launch(%a: i32, %b: i32) {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %out = memref.alloc() : memref<4xi32>
    gpu.launch_func @kernels::@divide blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1)
        args(%a : i32, %b : i32, %out : memref<4xi32>)
    %u = memref.cast %out : memref<4xi32> to memref<*xi32>
    call @printMemrefI32(%u) : (memref<*xi32>) -> ()
    memref.dealloc %out : memref<4xi32>
    return
  }

  func.func @by_zero() {
    %a = arith.constant 7 : i32
    %b = arith.constant 0 : i32
    call @launch(%a, %b) : (i32, i32) -> ()
    return
  }

  func.func @overflow() {
    %a = arith.constant -2147483648 : i32
    %b = arith.constant -1 : i32
    call @launch(%a, %b) : (i32, i32) -> ()
    return
  }

  // 23 / 5 + 23 % 5 = 4 + 3 in every thread.
  // FINE: [7,  7,  7,  7]
  func.func @fine() {
    %a = arith.constant 23 : i32
    %b = arith.constant 5 : i32
    call @launch(%a, %b) : (i32, i32) -> ()
    return
  }
}
