// RUN: not kvir-runner %s -e too_much_shared --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s --check-prefix=SHARED
// RUN: not kvir-runner %s -e deep_block --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s --check-prefix=BLOCK
// RUN: not kvir-runner %s -e big_static --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s --check-prefix=STATIC
// RUN: kvir-runner %s -e at_the_limits --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s --check-prefix=OK

// Launches a GPU would refuse are refused here too (CUDA's limits for
// compute capability 9.0):
//   too_much_shared: 240000 bytes of dynamic shared memory > 227 KiB (232448)
//   deep_block: a block of (1, 1, 128) threads; z is limited to 64
//   big_static: a kernel with 64 KiB of static shared memory > 48 KiB
//   at_the_limits: 48 KiB static + 179 KiB dynamic = 227 KiB, a (1024,1,1)
//     block and a (1,1,64) block run.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @nothing() kernel {
      gpu.return
    }
    gpu.func @big(%out: memref<1xf32>)
        workgroup(%s: memref<16384xf32, #gpu.address_space<workgroup>>) kernel {
      %c0 = arith.constant 0 : index
      %f = arith.constant 1.0 : f32
      memref.store %f, %s[%c0] : memref<16384xf32, #gpu.address_space<workgroup>>
      gpu.return
    }
    gpu.func @full(%out: memref<1xf32>)
        workgroup(%s: memref<12288xf32, #gpu.address_space<workgroup>>) kernel {
      %t = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %f = arith.constant 1.0 : f32
      %first = arith.cmpi eq, %t, %c0 : index
      scf.if %first {
        memref.store %f, %s[%c0] : memref<12288xf32, #gpu.address_space<workgroup>>
      }
      gpu.return
    }
  }

  func.func @too_much_shared() {
    %c1 = arith.constant 1 : index
    %bytes = arith.constant 240000 : i32
    gpu.launch_func @kernels::@nothing blocks in (%c1, %c1, %c1)
        threads in (%c1, %c1, %c1) dynamic_shared_memory_size %bytes
    return
  }
  // SHARED: kvir-emu: kernel 'nothing': invalid launch configuration: 240000 bytes of shared memory per block; at most 232448 (sm_90)

  func.func @deep_block() {
    %c1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    gpu.launch_func @kernels::@nothing blocks in (%c1, %c1, %c1)
        threads in (%c1, %c1, %c128)
    return
  }
  // BLOCK: kvir-emu: kernel 'nothing': invalid launch configuration: block (1,1,128): at most 1024 threads, (1024, 1024, 64) per dimension

  func.func @big_static() {
    %c1 = arith.constant 1 : index
    %out = memref.alloc() : memref<1xf32>
    gpu.launch_func @kernels::@big blocks in (%c1, %c1, %c1)
        threads in (%c1, %c1, %c1) args(%out : memref<1xf32>)
    return
  }
  // STATIC: kvir-emu: kernel 'big': invalid launch configuration: 65536 bytes of static shared memory; at most 49152 (more must be dynamic shared memory)

  func.func @at_the_limits() {
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %c1024 = arith.constant 1024 : index
    %bytes = arith.constant 183296 : i32
    %out = memref.alloc() : memref<1xf32>
    gpu.launch_func @kernels::@full blocks in (%c1, %c1, %c1)
        threads in (%c1024, %c1, %c1) dynamic_shared_memory_size %bytes
        args(%out : memref<1xf32>)
    gpu.launch_func @kernels::@nothing blocks in (%c1, %c1, %c1)
        threads in (%c1, %c1, %c64)
    vector.print str "ran\n"
    return
  }
  // OK-NOT: kvir-emu
  // OK: ran
}
