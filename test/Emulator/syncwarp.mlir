// RUN: kvir-runner %s -e synced --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s --check-prefix=SYNCED
// RUN: not kvir-runner %s -e unsynced --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s --check-prefix=RACE

// A warp-synchronous reduction in shared memory: bar.warp.sync (__syncwarp,
// nvvm.bar.warp.sync) orders the shared accesses of the lanes it names, so
// no block barrier is needed. One warp, s[t] = t, then for d = 16, 8, 4, 2,
// 1: lanes t < d add s[t + d] to s[t], with a __syncwarp before each step.
// s[0] = 0 + 1 + ... + 31 = 496.
//
// Without the __syncwarp the steps race. The emulator runs lane 0 through
// all its steps before lane 1 starts, so the first conflict it sees is lane
// 1 storing s[1] (shared offset 4), which lane 0 read in its last step.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @reduce(%out: memref<1xi32>, %sync: i1)
        workgroup(%s: memref<32xi32, #gpu.address_space<workgroup>>) kernel {
      %t = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c16 = arith.constant 16 : index
      %full = arith.constant -1 : i32
      %v = arith.index_cast %t : index to i32
      // RACE: kvir-emu: kernel 'reduce': shared-memory read/write race: thread (1,0,0) writes shared offset 4, which thread (0,0,0) read since the last barrier
      // RACE-NEXT: block (0,0,0) thread (1,0,0)
      // RACE-NEXT: at {{.*}}syncwarp.mlir:[[@LINE+2]]:{{[0-9]+}} (llvm.store)
      // RACE-NEXT: other access at {{.*}}syncwarp.mlir:[[@LINE+12]]:{{[0-9]+}} (llvm.load)
      memref.store %v, %s[%t] : memref<32xi32, #gpu.address_space<workgroup>>
      scf.for %k = %c0 to %c16 step %c1 iter_args(%d = %c16) -> index {
        // d = 16, 8, 4, 2, 1, then 0 ends the loop body's work.
        %live = arith.cmpi ugt, %d, %c0 : index
        scf.if %live {
          scf.if %sync {
            nvvm.bar.warp.sync %full : i32
          }
          %low = arith.cmpi ult, %t, %d : index
          scf.if %low {
            %j = arith.addi %t, %d : index
            %a = memref.load %s[%j] : memref<32xi32, #gpu.address_space<workgroup>>
            %b = memref.load %s[%t] : memref<32xi32, #gpu.address_space<workgroup>>
            %sum = arith.addi %a, %b : i32
            memref.store %sum, %s[%t] : memref<32xi32, #gpu.address_space<workgroup>>
          }
        }
        %next = arith.divui %d, %c2 : index
        scf.yield %next : index
      }
      %first = arith.cmpi eq, %t, %c0 : index
      scf.if %first {
        %r = memref.load %s[%c0] : memref<32xi32, #gpu.address_space<workgroup>>
        memref.store %r, %out[%c0] : memref<1xi32>
      }
      gpu.return
    }
  }

  func.func @run(%sync: i1) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %out = memref.alloc() : memref<1xi32>
    gpu.launch_func @kernels::@reduce blocks in (%c1, %c1, %c1)
        threads in (%c32, %c1, %c1) args(%out : memref<1xi32>, %sync : i1)
    %r = memref.load %out[%c0] : memref<1xi32>
    vector.print %r : i32
    return
  }
  func.func @synced() {
    %true = arith.constant true
    call @run(%true) : (i1) -> ()
    return
  }
  func.func @unsynced() {
    %false = arith.constant false
    call @run(%false) : (i1) -> ()
    return
  }
}

// RACE: kvir-emu: the launch failed its checks
// SYNCED-NOT: kvir-emu
// SYNCED: 496
// SYNCED-NOT: kvir-emu
