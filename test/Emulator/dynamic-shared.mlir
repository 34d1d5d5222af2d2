// RUN: kvir-runner %s -e main --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs --emu-stats 2>%t.stats | FileCheck %s
// RUN: FileCheck %s --check-prefix=STATS < %t.stats

// Dynamic shared memory (gpu.dynamic_shared_memory, sized at launch) next to
// a static workgroup buffer: the two must not overlap. 64 threads; thread t
// writes s[t] = t (static, i32) and d[t] = 2 t (dynamic, f32), then after a
// barrier out[t] = s[63 - t] + d[(t + 1) % 64] = (63 - t) + 2 ((t + 1) % 64):
// t = 0 -> 65, t = 1 -> 66, ..., t = 62 -> 1 + 126 = 127, t = 63 -> 0 + 0 = 0.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @dyn(%out: memref<64xf32>)
        workgroup(%s: memref<64xi32, #gpu.address_space<workgroup>>) kernel {
      %t = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c63 = arith.constant 63 : index
      %c64 = arith.constant 64 : index
      %raw = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
      %d = memref.view %raw[%c0][] : memref<?xi8, #gpu.address_space<workgroup>>
          to memref<64xf32, #gpu.address_space<workgroup>>
      %ti = arith.index_cast %t : index to i32
      memref.store %ti, %s[%t] : memref<64xi32, #gpu.address_space<workgroup>>
      %tf = arith.sitofp %ti : i32 to f32
      %t2 = arith.addf %tf, %tf : f32
      memref.store %t2, %d[%t] : memref<64xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      %rev = arith.subi %c63, %t : index
      %t1 = arith.addi %t, %c1 : index
      %nx = arith.remui %t1, %c64 : index
      %a = memref.load %s[%rev] : memref<64xi32, #gpu.address_space<workgroup>>
      %b = memref.load %d[%nx] : memref<64xf32, #gpu.address_space<workgroup>>
      %af = arith.sitofp %a : i32 to f32
      %r = arith.addf %af, %b : f32
      memref.store %r, %out[%t] : memref<64xf32>
      gpu.return
    }
  }

  func.func @main() {
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %bytes = arith.constant 256 : i32
    %out = memref.alloc() : memref<64xf32>
    gpu.launch_func @kernels::@dyn blocks in (%c1, %c1, %c1)
        threads in (%c64, %c1, %c1) dynamic_shared_memory_size %bytes
        args(%out : memref<64xf32>)
    %u = memref.cast %out : memref<64xf32> to memref<*xf32>
    call @printMemrefF32(%u) : (memref<*xf32>) -> ()
    return
  }
  func.func private @printMemrefF32(memref<*xf32>)
}

// CHECK: [65,  66,  67,  68,  69,  70,  71,  72,  73,  74,  75,  76,  77,  78,  79,  80,  81,  82,  83,  84,  85,  86,  87,  88,  89,  90,  91,  92,  93,  94,  95,  96,  97,  98,  99,  100,  101,  102,  103,  104,  105,  106,  107,  108,  109,  110,  111,  112,  113,  114,  115,  116,  117,  118,  119,  120,  121,  122,  123,  124,  125,  126,  127,  0]
// STATS: "static_shared_bytes": 256, "dynamic_shared_bytes": 256,
