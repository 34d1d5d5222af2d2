// RUN: not kvir-runner %s -e load_past_gpu_alloc --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s --check-prefix=LOAD
// RUN: not kvir-runner %s -e store_past_host_alloc --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s --check-prefix=STORE
// RUN: not kvir-runner %s -e load_after_dealloc --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s --check-prefix=FREED
// RUN: not kvir-runner %s -e masked_store_past_end --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s --check-prefix=MASKED
// RUN: not kvir-runner %s -e misaligned_load --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s --check-prefix=ALIGN

// Out-of-bounds global accesses are reported with the kernel, block, thread
// and source location, and the runner exits with status 1.
//
// load_past_gpu_alloc: 2 blocks of 16 threads read x[16 b + t] from a
//   gpu.alloc of 24 floats (96 bytes). Blocks run in order, threads of a
//   block in order, so thread (8,0,0) of block (1,0,0) is the first to read
//   past the end: element 24, 0 bytes past the end.
// store_past_host_alloc: 8 threads store y[t + 1] into a host memref.alloc
//   of 8 i32 (32 bytes); thread (7,0,0) writes element 8.
// load_after_dealloc: the kernel reads a gpu.alloc buffer of 16 floats that
//   the host already released with gpu.dealloc; thread (0,0,0) reads first.
// masked_store_past_end: thread t stores a vector<4xf32> with
//   vector.maskedstore at y[4t] into a host buffer of 10 floats (40 bytes);
//   the mask, create_mask of a kernel argument n = 4, enables all 4
//   elements, so thread (2,0,0) writes elements 8..11, 16 bytes of which
//   the last 8 are past the end.
// misaligned_load: thread t loads f32 element t of a view that starts 2
//   bytes into a gpu.alloc buffer: thread (0,0,0) loads from an address that
//   is 2 modulo 4, which faults on a GPU.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @read(%x: memref<?xf32>, %out: memref<?xf32>) kernel {
      %t = gpu.thread_id x
      %b = gpu.block_id x
      %n = gpu.block_dim x
      %base = arith.muli %b, %n : index
      %i = arith.addi %base, %t : index
      // LOAD: kvir-emu: kernel 'read': out-of-bounds global load of 4 bytes at 0x{{[0-9A-F]+}} through kernel argument #0, 0 bytes past the end of gpu.alloc [0x{{[0-9A-F]+}}, 0x{{[0-9A-F]+}}) of 96 bytes
      // LOAD-NEXT: block (1,0,0) thread (8,0,0)
      // LOAD-NEXT: at {{.*}}oob-global.mlir:[[@LINE+5]]:{{[0-9]+}} (llvm.load)
      // LOAD-NEXT: kvir-emu: the launch failed its checks
      // FREED: kvir-emu: kernel 'read': out-of-bounds global load of 4 bytes at 0x{{[0-9A-F]+}}: inside gpu.alloc [0x{{[0-9A-F]+}}, 0x{{[0-9A-F]+}}) of 64 bytes, which was freed (use after free)
      // FREED-NEXT: block (0,0,0) thread (0,0,0)
      // FREED-NEXT: at {{.*}}oob-global.mlir:[[@LINE+1]]:{{[0-9]+}} (llvm.load)
      %v = memref.load %x[%i] : memref<?xf32>
      memref.store %v, %out[%i] : memref<?xf32>
      gpu.return
    }
    gpu.func @shifted_store(%y: memref<8xi32>) kernel {
      %t = gpu.thread_id x
      %c1 = arith.constant 1 : index
      %i = arith.addi %t, %c1 : index
      %v = arith.index_cast %t : index to i32
      // STORE: kvir-emu: kernel 'shifted_store': out-of-bounds global store of 4 bytes at 0x{{[0-9A-F]+}} through kernel argument #0, 0 bytes past the end of host allocation [0x{{[0-9A-F]+}}, 0x{{[0-9A-F]+}}) of 32 bytes
      // STORE-NEXT: block (0,0,0) thread (7,0,0)
      // STORE-NEXT: at {{.*}}oob-global.mlir:[[@LINE+1]]:{{[0-9]+}} (llvm.store)
      memref.store %v, %y[%i] : memref<8xi32>
      gpu.return
    }
    gpu.func @masked_store(%y: memref<10xf32>, %n: index) kernel {
      %t = gpu.thread_id x
      %c4 = arith.constant 4 : index
      %i = arith.muli %t, %c4 : index
      %v = arith.constant dense<1.0> : vector<4xf32>
      %all = vector.create_mask %n : vector<4xi1>
      // MASKED: kvir-emu: kernel 'masked_store': out-of-bounds global store of 16 bytes at 0x{{[0-9A-F]+}} through kernel argument #0, the last 8 bytes are past the end of host allocation [0x{{[0-9A-F]+}}, 0x{{[0-9A-F]+}}) of 40 bytes
      // MASKED-NEXT: block (0,0,0) thread (2,0,0)
      // MASKED-NEXT: at {{.*}}oob-global.mlir:[[@LINE+1]]:{{[0-9]+}} (llvm.intr.masked.store)
      vector.maskedstore %y[%i], %all, %v : memref<10xf32>, vector<4xi1>, vector<4xf32>
      gpu.return
    }
    gpu.func @shifted_view(%raw: memref<?xi8>, %out: memref<4xf32>) kernel {
      %t = gpu.thread_id x
      %c2 = arith.constant 2 : index
      %view = memref.view %raw[%c2][] : memref<?xi8> to memref<4xf32>
      // ALIGN: kvir-emu: kernel 'shifted_view': misaligned global load of 4 bytes at 0x{{[0-9A-F]*[02468ACE]}}: the access assumes 4-byte alignment
      // ALIGN-NEXT: block (0,0,0) thread (0,0,0)
      // ALIGN-NEXT: at {{.*}}oob-global.mlir:[[@LINE+1]]:{{[0-9]+}} (llvm.load)
      %v = memref.load %view[%t] : memref<4xf32>
      memref.store %v, %out[%t] : memref<4xf32>
      gpu.return
    }
  }

  func.func @masked_store_past_end() {
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %y = memref.alloc() : memref<10xf32>
    %c4 = arith.constant 4 : index
    gpu.launch_func @kernels::@masked_store blocks in (%c1, %c1, %c1)
        threads in (%c3, %c1, %c1) args(%y : memref<10xf32>, %c4 : index)
    return
  }

  func.func @misaligned_load() {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    %raw = gpu.alloc (%c64) : memref<?xi8>
    %out = gpu.alloc () : memref<4xf32>
    gpu.launch_func @kernels::@shifted_view blocks in (%c1, %c1, %c1)
        threads in (%c4, %c1, %c1) args(%raw : memref<?xi8>, %out : memref<4xf32>)
    return
  }

  func.func @load_past_gpu_alloc() {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c16 = arith.constant 16 : index
    %c24 = arith.constant 24 : index
    %c32 = arith.constant 32 : index
    %x = gpu.alloc (%c24) : memref<?xf32>
    %out = gpu.alloc (%c32) : memref<?xf32>
    gpu.launch_func @kernels::@read blocks in (%c2, %c1, %c1)
        threads in (%c16, %c1, %c1) args(%x : memref<?xf32>, %out : memref<?xf32>)
    return
  }

  func.func @store_past_host_alloc() {
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %y = memref.alloc() : memref<8xi32>
    gpu.launch_func @kernels::@shifted_store blocks in (%c1, %c1, %c1)
        threads in (%c8, %c1, %c1) args(%y : memref<8xi32>)
    return
  }

  func.func @load_after_dealloc() {
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %x = gpu.alloc (%c16) : memref<?xf32>
    %out = gpu.alloc (%c16) : memref<?xf32>
    gpu.dealloc %x : memref<?xf32>
    gpu.launch_func @kernels::@read blocks in (%c1, %c1, %c1)
        threads in (%c16, %c1, %c1) args(%x : memref<?xf32>, %out : memref<?xf32>)
    return
  }
}
