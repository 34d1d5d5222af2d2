// RUN: not kvir-runner %s -e static_past_end --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s --check-prefix=STATIC
// RUN: not kvir-runner %s -e dynamic_past_end --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s --check-prefix=DYNAMIC

// Out-of-bounds shared-memory accesses.
//
// static_past_end: 32 threads read s[t + 1] of a 32-float workgroup buffer
//   (128 bytes, the kernel's only shared memory); thread (31,0,0) reads
//   shared offset 128.
// dynamic_past_end: the kernel views its dynamic shared memory as 16 floats
//   but is launched with only 32 bytes; thread (8,0,0) stores at offset 32.
//   The module's other kernel has 128 bytes of static shared memory, which
//   must not count for this one.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @neighbour(%out: memref<32xf32>)
        workgroup(%s: memref<32xf32, #gpu.address_space<workgroup>>) kernel {
      %t = gpu.thread_id x
      %c1 = arith.constant 1 : index
      %f = arith.constant 1.0 : f32
      memref.store %f, %s[%t] : memref<32xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      %n = arith.addi %t, %c1 : index
      // STATIC: kvir-emu: kernel 'neighbour': out-of-bounds shared load of 4 bytes at shared offset 128; the block has 128 bytes of shared memory
      // STATIC-NEXT: block (0,0,0) thread (31,0,0)
      // STATIC-NEXT: at {{.*}}oob-shared.mlir:[[@LINE+2]]:{{[0-9]+}} (llvm.load)
      // STATIC-NEXT: kvir-emu: the launch failed its checks
      %v = memref.load %s[%n] : memref<32xf32, #gpu.address_space<workgroup>>
      memref.store %v, %out[%t] : memref<32xf32>
      gpu.return
    }
    gpu.func @dynamic(%out: memref<16xf32>) kernel {
      %t = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %raw = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
      %d = memref.view %raw[%c0][] : memref<?xi8, #gpu.address_space<workgroup>>
          to memref<16xf32, #gpu.address_space<workgroup>>
      %f = arith.constant 2.0 : f32
      // DYNAMIC: kvir-emu: kernel 'dynamic': out-of-bounds shared store of 4 bytes at shared offset 32; the block has 32 bytes of shared memory
      // DYNAMIC-NEXT: block (0,0,0) thread (8,0,0)
      // DYNAMIC-NEXT: at {{.*}}oob-shared.mlir:[[@LINE+1]]:{{[0-9]+}} (llvm.store)
      memref.store %f, %d[%t] : memref<16xf32, #gpu.address_space<workgroup>>
      gpu.return
    }
  }

  func.func @static_past_end() {
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %out = gpu.alloc () : memref<32xf32>
    gpu.launch_func @kernels::@neighbour blocks in (%c1, %c1, %c1)
        threads in (%c32, %c1, %c1) args(%out : memref<32xf32>)
    return
  }

  func.func @dynamic_past_end() {
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %bytes = arith.constant 32 : i32
    %out = gpu.alloc () : memref<16xf32>
    gpu.launch_func @kernels::@dynamic blocks in (%c1, %c1, %c1)
        threads in (%c16, %c1, %c1) dynamic_shared_memory_size %bytes
        args(%out : memref<16xf32>)
    return
  }
}
