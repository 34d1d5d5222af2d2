// RUN: not kvir-runner %s -e in_flight --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s --check-prefix=RACE
// RUN: kvir-runner %s -e retired --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s --check-prefix=OK

// A cp.async may write its destination at any moment between its issue and
// the wait that retires it, barriers in between included (PTX ISA,
// cp.async). Reading another thread's destination while its copy is in
// flight is a race even when a barrier separates the read from the issue:
// the emulator lands the data at the wait, but checks the destination as
// written in every epoch the copy spans.
//
// in_flight: lane l copies x[4l..4l+3] into a[4l..], barrier, reads
//   a[4((l + 1) % 32)] (lane l + 1's copy, still in flight), barrier, waits.
// retired: the same with the wait before the first barrier: out[l] =
//   x[4((l + 1) % 32)] and no report.

!buf = memref<128xf32, #gpu.address_space<workgroup>>

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @read_in_flight(%x: memref<128xf32>, %out: memref<32xf32>)
        workgroup(%a: !buf) kernel {
      %l = gpu.thread_id x
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %c32 = arith.constant 32 : index
      %i = arith.muli %l, %c4 : index
      %t = nvgpu.device_async_copy %x[%i], %a[%i], 4 : memref<128xf32> to !buf
      %g = nvgpu.device_async_create_group %t
      gpu.barrier
      %n = arith.addi %l, %c1 : index
      %nm = arith.remui %n, %c32 : index
      %j = arith.muli %nm, %c4 : index
      // RACE: kvir-emu: kernel 'read_in_flight': shared-memory read/write race: thread (0,0,0) reads shared offset 16, which thread (1,0,0) wrote since the last barrier
      // RACE-NEXT: block (0,0,0) thread (0,0,0)
      // RACE-NEXT: at {{.*}}cp-async-race.mlir:[[@LINE+2]]:{{[0-9]+}} (llvm.load)
      // RACE-NEXT: other access at {{.*}}cp-async-race.mlir:[[@LINE-9]]:{{[0-9]+}}
      %v = memref.load %a[%j] : !buf
      gpu.barrier
      nvgpu.device_async_wait %g {numGroups = 0 : i32}
      memref.store %v, %out[%l] : memref<32xf32>
      gpu.return
    }
    gpu.func @read_retired(%x: memref<128xf32>, %out: memref<32xf32>)
        workgroup(%a: !buf) kernel {
      %l = gpu.thread_id x
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %c32 = arith.constant 32 : index
      %i = arith.muli %l, %c4 : index
      %t = nvgpu.device_async_copy %x[%i], %a[%i], 4 : memref<128xf32> to !buf
      %g = nvgpu.device_async_create_group %t
      nvgpu.device_async_wait %g {numGroups = 0 : i32}
      gpu.barrier
      %n = arith.addi %l, %c1 : index
      %nm = arith.remui %n, %c32 : index
      %j = arith.muli %nm, %c4 : index
      %v = memref.load %a[%j] : !buf
      memref.store %v, %out[%l] : memref<32xf32>
      gpu.return
    }
  }

  func.func @fill(%x: memref<128xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    scf.for %i = %c0 to %c128 step %c1 {
      %ii = arith.index_cast %i : index to i32
      %f = arith.sitofp %ii : i32 to f32
      memref.store %f, %x[%i] : memref<128xf32>
    }
    return
  }

  func.func @in_flight() {
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %x = memref.alloc() : memref<128xf32>
    %out = memref.alloc() : memref<32xf32>
    call @fill(%x) : (memref<128xf32>) -> ()
    gpu.launch_func @kernels::@read_in_flight blocks in (%c1, %c1, %c1)
        threads in (%c32, %c1, %c1)
        args(%x : memref<128xf32>, %out : memref<32xf32>)
    return
  }

  func.func @retired() {
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %x = memref.alloc() : memref<128xf32>
    %out = memref.alloc() : memref<32xf32>
    call @fill(%x) : (memref<128xf32>) -> ()
    gpu.launch_func @kernels::@read_retired blocks in (%c1, %c1, %c1)
        threads in (%c32, %c1, %c1)
        args(%x : memref<128xf32>, %out : memref<32xf32>)
    %u = memref.cast %out : memref<32xf32> to memref<*xf32>
    call @printMemrefF32(%u) : (memref<*xf32>) -> ()
    return
  }
  func.func private @printMemrefF32(memref<*xf32>)
}

// OK-NOT: race
// OK: [4,  8,  12,  16,  20,  24,  28,  32,  36,  40,  44,  48,  52,  56,  60,  64,  68,  72,  76,  80,  84,  88,  92,  96,  100,  104,  108,  112,  116,  120,  124,  0]
