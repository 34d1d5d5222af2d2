// RUN: kvir-runner %s -e main --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs --emu-stats 2>&1 | FileCheck %s

// --emu-stats: shared-memory bank conflicts. Shared memory has 32 banks of
// 4-byte words, word w in bank w % 32; a warp request takes as many
// wavefronts as its busiest bank has distinct words, and every wavefront
// beyond the minimum is a conflict. One warp per kernel; each kernel makes 3
// shared requests (a store, a barrier, two loads).
//
// @rows on f32 s[32][32]: store s[0][l]: words 0..31, one per bank -> 0.
//   load s[0][(l + 1) % 32]: the same words -> 0. load s[0][0] by every
//   lane: one word, a broadcast -> 0. bank_conflicts = 0.
// @columns on f32 s[32][32]: store s[l][0]: words 32 l, all in bank 0 ->
//   32 wavefronts, 31 conflicts. load s[(l + 1) % 32][0]: again 31.
//   load s[0][0]: 0. bank_conflicts = 62.
// @padded on f32 s[32][33]: store s[l][0]: words 33 l, bank l % 32 -> 0.
//   load s[(l + 1) % 32][0]: 0. load s[0][0]: 0. bank_conflicts = 0.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @rows(%out: memref<32xf32>)
        workgroup(%s: memref<32x32xf32, #gpu.address_space<workgroup>>) kernel {
      %l = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c32 = arith.constant 32 : index
      %f = arith.constant 1.0 : f32
      memref.store %f, %s[%c0, %l] : memref<32x32xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      %l1 = arith.addi %l, %c1 : index
      %n = arith.remui %l1, %c32 : index
      %a = memref.load %s[%c0, %n] : memref<32x32xf32, #gpu.address_space<workgroup>>
      %b = memref.load %s[%c0, %c0] : memref<32x32xf32, #gpu.address_space<workgroup>>
      %r = arith.addf %a, %b : f32
      memref.store %r, %out[%l] : memref<32xf32>
      gpu.return
    }
    gpu.func @columns(%out: memref<32xf32>)
        workgroup(%s: memref<32x32xf32, #gpu.address_space<workgroup>>) kernel {
      %l = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c32 = arith.constant 32 : index
      %f = arith.constant 1.0 : f32
      memref.store %f, %s[%l, %c0] : memref<32x32xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      %l1 = arith.addi %l, %c1 : index
      %n = arith.remui %l1, %c32 : index
      %a = memref.load %s[%n, %c0] : memref<32x32xf32, #gpu.address_space<workgroup>>
      %b = memref.load %s[%c0, %c0] : memref<32x32xf32, #gpu.address_space<workgroup>>
      %r = arith.addf %a, %b : f32
      memref.store %r, %out[%l] : memref<32xf32>
      gpu.return
    }
    gpu.func @padded(%out: memref<32xf32>)
        workgroup(%s: memref<32x33xf32, #gpu.address_space<workgroup>>) kernel {
      %l = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c32 = arith.constant 32 : index
      %f = arith.constant 1.0 : f32
      memref.store %f, %s[%l, %c0] : memref<32x33xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      %l1 = arith.addi %l, %c1 : index
      %n = arith.remui %l1, %c32 : index
      %a = memref.load %s[%n, %c0] : memref<32x33xf32, #gpu.address_space<workgroup>>
      %b = memref.load %s[%c0, %c0] : memref<32x33xf32, #gpu.address_space<workgroup>>
      %r = arith.addf %a, %b : f32
      memref.store %r, %out[%l] : memref<32xf32>
      gpu.return
    }
  }

  func.func @main() {
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %out = gpu.alloc () : memref<32xf32>
    gpu.launch_func @kernels::@rows blocks in (%c1, %c1, %c1)
        threads in (%c32, %c1, %c1) args(%out : memref<32xf32>)
    gpu.launch_func @kernels::@columns blocks in (%c1, %c1, %c1)
        threads in (%c32, %c1, %c1) args(%out : memref<32xf32>)
    gpu.launch_func @kernels::@padded blocks in (%c1, %c1, %c1)
        threads in (%c32, %c1, %c1) args(%out : memref<32xf32>)
    gpu.dealloc %out : memref<32xf32>
    return
  }
}

// CHECK: "kernel": "rows"
// CHECK-SAME: "shared_requests": 3, "bank_conflicts": 0,
// CHECK: "kernel": "columns"
// CHECK-SAME: "shared_requests": 3, "bank_conflicts": 62,
// CHECK: "kernel": "padded"
// CHECK-SAME: "shared_requests": 3, "bank_conflicts": 0,
