// RUN: not kvir-runner %s -e write_write --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s --check-prefix=WW
// RUN: not kvir-runner %s -e read_write --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s --check-prefix=RW
// RUN: kvir-runner %s -e with_barrier --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s --check-prefix=OK

// Shared-memory races between two barriers (or a barrier and the kernel's
// end) are reported; the same accesses separated by a barrier are not.
//
// write_write: every thread stores its id to s[0]; the second thread to
//   store, (1,0,0), conflicts with (0,0,0).
// read_write: thread t stores s[t], then reads s[(t + 1) % 32] without a
//   barrier. The read of s[1] by (0,0,0) and the store to s[1] by (1,0,0)
//   are unordered: shared offset 4. Each pair of sites is reported once; the
//   other threads' races are counted.
// with_barrier: the read_write kernel with a gpu.barrier between the store
//   and the load: out[t] = (t + 1) % 32 and no report.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @same_slot(%out: memref<32xi32>)
        workgroup(%s: memref<32xi32, #gpu.address_space<workgroup>>) kernel {
      %t = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %v = arith.index_cast %t : index to i32
      // WW: kvir-emu: kernel 'same_slot': shared-memory write/write race: thread (1,0,0) writes shared offset 0, which thread (0,0,0) wrote since the last barrier
      // WW-NEXT: block (0,0,0) thread (1,0,0)
      // WW-NEXT: at {{.*}}race.mlir:[[@LINE+4]]:{{[0-9]+}} (llvm.store)
      // WW-NEXT: other access at {{.*}}race.mlir:[[@LINE+3]]:{{[0-9]+}} (llvm.store)
      // Threads (2..31,0,0) race the same way: counted, not repeated.
      // WW-NEXT: kvir-emu: kernel 'same_slot': 30 more shared-memory races at the sites reported above
      memref.store %v, %s[%c0] : memref<32xi32, #gpu.address_space<workgroup>>
      gpu.return
    }
    gpu.func @rotate(%out: memref<32xi32>)
        workgroup(%s: memref<32xi32, #gpu.address_space<workgroup>>) kernel {
      %t = gpu.thread_id x
      %c1 = arith.constant 1 : index
      %c32 = arith.constant 32 : index
      %v = arith.index_cast %t : index to i32
      // RW: kvir-emu: kernel 'rotate': shared-memory read/write race: thread (1,0,0) writes shared offset 4, which thread (0,0,0) read since the last barrier
      // RW-NEXT: block (0,0,0) thread (1,0,0)
      // RW-NEXT: at {{.*}}race.mlir:[[@LINE+10]]:{{[0-9]+}} (llvm.store)
      // RW-NEXT: other access at {{.*}}race.mlir:[[@LINE+12]]:{{[0-9]+}} (llvm.load)
      // Thread (31,0,0) reads s[0], which thread (0,0,0) wrote: the same
      // pair of sites the other way round.
      // RW-NEXT: kvir-emu: kernel 'rotate': shared-memory read/write race: thread (31,0,0) reads shared offset 0, which thread (0,0,0) wrote since the last barrier
      // RW-NEXT: block (0,0,0) thread (31,0,0)
      // RW-NEXT: at {{.*}}race.mlir:[[@LINE+7]]:{{[0-9]+}} (llvm.load)
      // RW-NEXT: other access at {{.*}}race.mlir:[[@LINE+3]]:{{[0-9]+}} (llvm.store)
      // Threads (2..31,0,0) each write a word thread t - 1 read: 30 more.
      // RW-NEXT: kvir-emu: kernel 'rotate': 30 more shared-memory races at the sites reported above
      memref.store %v, %s[%t] : memref<32xi32, #gpu.address_space<workgroup>>
      %t1 = arith.addi %t, %c1 : index
      %n = arith.remui %t1, %c32 : index
      %r = memref.load %s[%n] : memref<32xi32, #gpu.address_space<workgroup>>
      memref.store %r, %out[%t] : memref<32xi32>
      gpu.return
    }
    gpu.func @rotate_synced(%out: memref<32xi32>)
        workgroup(%s: memref<32xi32, #gpu.address_space<workgroup>>) kernel {
      %t = gpu.thread_id x
      %c1 = arith.constant 1 : index
      %c32 = arith.constant 32 : index
      %v = arith.index_cast %t : index to i32
      memref.store %v, %s[%t] : memref<32xi32, #gpu.address_space<workgroup>>
      gpu.barrier
      %t1 = arith.addi %t, %c1 : index
      %n = arith.remui %t1, %c32 : index
      %r = memref.load %s[%n] : memref<32xi32, #gpu.address_space<workgroup>>
      memref.store %r, %out[%t] : memref<32xi32>
      gpu.return
    }
  }

  func.func @write_write() {
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %out = gpu.alloc () : memref<32xi32>
    gpu.launch_func @kernels::@same_slot blocks in (%c1, %c1, %c1)
        threads in (%c32, %c1, %c1) args(%out : memref<32xi32>)
    return
  }

  func.func @read_write() {
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %out = gpu.alloc () : memref<32xi32>
    gpu.launch_func @kernels::@rotate blocks in (%c1, %c1, %c1)
        threads in (%c32, %c1, %c1) args(%out : memref<32xi32>)
    return
  }

  func.func @with_barrier() {
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %out = memref.alloc () : memref<32xi32>
    gpu.launch_func @kernels::@rotate_synced blocks in (%c1, %c1, %c1)
        threads in (%c32, %c1, %c1) args(%out : memref<32xi32>)
    %u = memref.cast %out : memref<32xi32> to memref<*xi32>
    call @printMemrefI32(%u) : (memref<*xi32>) -> ()
    return
  }
  // OK-NOT: kvir-emu
  // OK: [1,  2,  3,  4,  5,  6,  7,  8,  9,  10,  11,  12,  13,  14,  15,  16,  17,  18,  19,  20,  21,  22,  23,  24,  25,  26,  27,  28,  29,  30,  31,  0]
  // OK-NOT: kvir-emu
  func.func private @printMemrefI32(memref<*xi32>)
}
