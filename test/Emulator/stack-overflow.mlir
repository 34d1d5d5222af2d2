// RUN: not kvir-runner %s -e main --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s --check-prefix=SMALL
// RUN: kvir-runner %s -e main --entry-point-result=void --emu-stack-bytes=262144 \
// RUN:   --shared-libs=%mlir_runner_libs | FileCheck %s --check-prefix=LARGE

// Thread-local memory (memref.alloca in a kernel) lives on the emulated
// thread's fiber stack, 64 KiB by default. A kernel with a 96 KiB local
// array overflows it into the guard region below the stack: the emulator
// reports that instead of letting the thread overwrite its neighbour's
// stack. With 256 KiB stacks the same kernel runs: thread t fills its array
// with t and stores its last element (24575) to out[t].

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @local_array(%out: memref<4xf32>) kernel {
      %t = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %n = arith.constant 24576 : index
      %last = arith.constant 24575 : index
      %local = memref.alloca() : memref<24576xf32>
      %ti = arith.index_cast %t : index to i32
      %tf = arith.sitofp %ti : i32 to f32
      scf.for %i = %c0 to %n step %c1 {
        memref.store %tf, %local[%i] : memref<24576xf32>
      }
      %v = memref.load %local[%last] : memref<24576xf32>
      memref.store %v, %out[%t] : memref<4xf32>
      gpu.return
    }
  }

  func.func @main() {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %out = memref.alloc() : memref<4xf32>
    gpu.launch_func @kernels::@local_array blocks in (%c1, %c1, %c1)
        threads in (%c4, %c1, %c1) args(%out : memref<4xf32>)
    %u = memref.cast %out : memref<4xf32> to memref<*xf32>
    call @printMemrefF32(%u) : (memref<*xf32>) -> ()
    return
  }
  func.func private @printMemrefF32(memref<*xf32>)
}

// SMALL: kvir-emu: GPU thread 0 (linear id in its block) overflowed its 65536-byte fiber stack
// LARGE: [0,  1,  2,  3]
