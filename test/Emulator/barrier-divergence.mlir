// RUN: not kvir-runner %s -e exited --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s --check-prefix=EXITED
// RUN: not kvir-runner %s -e two_barriers --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s --check-prefix=TWO

// A CTA barrier in divergent control flow is undefined behaviour in CUDA and
// hangs on a GPU; the emulator reports it and exits with status 1.
//
// exited: 64 threads; only threads t < 40 reach the barrier inside
//   scf.if (t < 40), the others exit. 40 of 64 threads wait while thread
//   (40,0,0), the first one that exited, never will.
// two_barriers: threads t < 16 take the then-branch and its barrier, the
//   others the else-branch and a different barrier: all 32 threads wait, but
//   at two different barriers.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @partial(%out: memref<64xi32>) kernel {
      %t = gpu.thread_id x
      %c40 = arith.constant 40 : index
      %lt = arith.cmpi ult, %t, %c40 : index
      scf.if %lt {
        // EXITED: kvir-emu: kernel 'partial': barrier divergence: 40 of 64 threads wait at the barrier but thread (40,0,0) has exited
        // EXITED-NEXT: block (0,0,0) thread (0,0,0)
        // EXITED-NEXT: at {{.*}}barrier-divergence.mlir:[[@LINE+2]]:{{[0-9]+}} (nvvm.barrier0)
        // EXITED-NEXT: kvir-emu: the launch failed its checks
        gpu.barrier
        %v = arith.index_cast %t : index to i32
        memref.store %v, %out[%t] : memref<64xi32>
      }
      gpu.return
    }
    gpu.func @branches(%out: memref<64xi32>) kernel {
      %t = gpu.thread_id x
      %c16 = arith.constant 16 : index
      %lt = arith.cmpi ult, %t, %c16 : index
      %one = arith.constant 1 : i32
      %two = arith.constant 2 : i32
      // (The branches differ, so that block merging cannot fold the two
      // barriers into one.)
      // TWO: kvir-emu: kernel 'branches': barrier divergence: thread (0,0,0) waits at {{.*}}barrier-divergence.mlir:[[@LINE+4]]:{{[0-9]+}} (nvvm.barrier0) while thread (16,0,0) waits at {{.*}}barrier-divergence.mlir:[[@LINE+8]]:{{[0-9]+}} (nvvm.barrier0)
      // TWO-NEXT: block (0,0,0) thread (0,0,0)
      // TWO-NEXT: at {{.*}}barrier-divergence.mlir:[[@LINE+2]]
      scf.if %lt {
        gpu.barrier
        memref.store %one, %out[%t] : memref<64xi32>
      } else {
        memref.store %two, %out[%t] : memref<64xi32>
        gpu.barrier
      }
      gpu.return
    }
  }

  func.func @exited() {
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %out = gpu.alloc () : memref<64xi32>
    gpu.launch_func @kernels::@partial blocks in (%c1, %c1, %c1)
        threads in (%c64, %c1, %c1) args(%out : memref<64xi32>)
    return
  }

  func.func @two_barriers() {
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %out = gpu.alloc () : memref<64xi32>
    gpu.launch_func @kernels::@branches blocks in (%c1, %c1, %c1)
        threads in (%c32, %c1, %c1) args(%out : memref<64xi32>)
    return
  }
}
