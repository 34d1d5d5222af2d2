// RUN: not kvir-runner %s -e divergent_shuffle --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s --check-prefix=SHFL
// RUN: not kvir-runner %s -e shuffle_vs_vote --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s --check-prefix=KIND
// RUN: not kvir-runner %s -e mask_without_self --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s --check-prefix=SELF

// Warp collectives whose membermask does not match the threads that execute
// them. On a GPU these are undefined or hang; the emulator reports them.
//
// divergent_shuffle: a gpu.shuffle (membermask 0xFFFFFFFF) inside
//   scf.if (lane < 16): lanes 16..31 never join; lane 16 is the first of
//   them. Lane 0 is the first waiting lane the scheduler looks at.
// shuffle_vs_vote: lanes < 16 shuffle while lanes >= 16 vote, all with the
//   full mask: the collectives do not match.
// mask_without_self: every lane executes a ballot whose membermask 0xFFFF
//   leaves out lanes 16..31, so lane 16 is not in its own membermask.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @half_shuffle(%out: memref<32xi32>) kernel {
      %t = gpu.thread_id x
      %c16 = arith.constant 16 : index
      %lt = arith.cmpi ult, %t, %c16 : index
      scf.if %lt {
        %v = arith.index_cast %t : index to i32
        %one = arith.constant 1 : i32
        %w = arith.constant 32 : i32
        // SHFL: kvir-emu: kernel 'half_shuffle': shfl.sync participation mismatch: lane 16 of membermask 0xFFFFFFFF exited without joining
        // SHFL-NEXT: block (0,0,0) thread (0,0,0)
        // SHFL-NEXT: at {{.*}}warp-collective-mismatch.mlir:[[@LINE+2]]:{{[0-9]+}} (nvvm.shfl.sync)
        // SHFL-NEXT: kvir-emu: the launch failed its checks
        %r, %p = gpu.shuffle xor %v, %one, %w : i32
        memref.store %r, %out[%t] : memref<32xi32>
      }
      gpu.return
    }
    gpu.func @shuffle_or_vote(%out: memref<32xi32>) kernel {
      %t = gpu.thread_id x
      %c16 = arith.constant 16 : index
      %lt = arith.cmpi ult, %t, %c16 : index
      %v = arith.index_cast %t : index to i32
      %full = arith.constant -1 : i32
      %one = arith.constant 1 : i32
      %w = arith.constant 32 : i32
      // KIND: kvir-emu: kernel 'shuffle_or_vote': warp collective mismatch: thread (0,0,0) executes shfl.sync at {{.*}}warp-collective-mismatch.mlir:[[@LINE+5]]:{{[0-9]+}} (nvvm.shfl.sync) but thread (16,0,0) executes vote.sync at {{.*}}warp-collective-mismatch.mlir:[[@LINE+8]]:{{[0-9]+}} (nvvm.vote.sync)
      // KIND-NEXT: block (0,0,0) thread (0,0,0)
      // KIND-NEXT: at {{.*}}warp-collective-mismatch.mlir:[[@LINE+3]]
      // KIND-NEXT: kvir-emu: the launch failed its checks
      %r = scf.if %lt -> i32 {
        %s, %p = gpu.shuffle xor %v, %one, %w : i32
        scf.yield %s : i32
      } else {
        %b = nvvm.vote.sync ballot %full, %lt -> i32
        scf.yield %b : i32
      }
      memref.store %r, %out[%t] : memref<32xi32>
      gpu.return
    }
    gpu.func @ballot_low_half(%out: memref<32xi32>) kernel {
      %t = gpu.thread_id x
      %mask = arith.constant 65535 : i32
      %true = arith.constant true
      // SELF: kvir-emu: kernel 'ballot_low_half': vote.sync with membermask 0xFFFF excludes the executing lane 16
      // SELF-NEXT: block (0,0,0) thread (16,0,0)
      // SELF-NEXT: at {{.*}}warp-collective-mismatch.mlir:[[@LINE+2]]:{{[0-9]+}} (nvvm.vote.sync)
      // SELF-NEXT: kvir-emu: the launch failed its checks
      %b = nvvm.vote.sync ballot %mask, %true -> i32
      memref.store %b, %out[%t] : memref<32xi32>
      gpu.return
    }
  }

  func.func @divergent_shuffle() {
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %out = gpu.alloc () : memref<32xi32>
    gpu.launch_func @kernels::@half_shuffle blocks in (%c1, %c1, %c1)
        threads in (%c32, %c1, %c1) args(%out : memref<32xi32>)
    return
  }

  func.func @shuffle_vs_vote() {
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %out = gpu.alloc () : memref<32xi32>
    gpu.launch_func @kernels::@shuffle_or_vote blocks in (%c1, %c1, %c1)
        threads in (%c32, %c1, %c1) args(%out : memref<32xi32>)
    return
  }

  func.func @mask_without_self() {
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %out = gpu.alloc () : memref<32xi32>
    gpu.launch_func @kernels::@ballot_low_half blocks in (%c1, %c1, %c1)
        threads in (%c32, %c1, %c1) args(%out : memref<32xi32>)
    return
  }
}
