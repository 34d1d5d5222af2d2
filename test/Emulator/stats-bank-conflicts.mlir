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
//
// 16-byte accesses are served in 4 phases of 8 lanes (so are ldmatrix's
// four 8x8 matrices); each phase is judged alone. On f32 s[8][32] (rows of
// 8 chunks of 4 words), lane l, phase p = l / 8, r = l % 8:
// @vectors: store chunk r of row p: each phase writes one whole row -> 0.
//   load chunk p of row r: a phase reads the same chunk of 8 rows, 8
//   distinct words in each of 4 banks -> 8 wavefronts instead of 1, 7
//   conflicts per phase. bank_conflicts = 28. (Pooling the whole warp would
//   find 8 words in each of 16 banks, 4 conflicts: the phase model matters.)
// @vectors_swizzled: the same with chunk p ^ r (an XOR swizzle): a phase's
//   8 rows fall into 8 different bank groups -> 0. bank_conflicts = 0.

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
    gpu.func @vectors(%out: memref<32xf32>)
        workgroup(%s: memref<8x32xf32, #gpu.address_space<workgroup>>) kernel {
      %l = gpu.thread_id x
      %c0v = arith.constant 0 : index
      %c4 = arith.constant 4 : index
      %c8 = arith.constant 8 : index
      %p = arith.divui %l, %c8 : index
      %r = arith.remui %l, %c8 : index
      %f = arith.constant dense<1.0> : vector<4xf32>
      %sc = arith.muli %r, %c4 : index
      vector.store %f, %s[%p, %sc] : memref<8x32xf32, #gpu.address_space<workgroup>>, vector<4xf32>
      gpu.barrier
      %chunk = arith.addi %p, %c0v : index
      %lc = arith.muli %chunk, %c4 : index
      %v = vector.load %s[%r, %lc] : memref<8x32xf32, #gpu.address_space<workgroup>>, vector<4xf32>
      %e = vector.extract %v[0] : f32 from vector<4xf32>
      memref.store %e, %out[%l] : memref<32xf32>
      gpu.return
    }
    gpu.func @vectors_swizzled(%out: memref<32xf32>)
        workgroup(%s: memref<8x32xf32, #gpu.address_space<workgroup>>) kernel {
      %l = gpu.thread_id x
      %c4 = arith.constant 4 : index
      %c8 = arith.constant 8 : index
      %p = arith.divui %l, %c8 : index
      %r = arith.remui %l, %c8 : index
      %f = arith.constant dense<1.0> : vector<4xf32>
      %sc = arith.muli %r, %c4 : index
      vector.store %f, %s[%p, %sc] : memref<8x32xf32, #gpu.address_space<workgroup>>, vector<4xf32>
      gpu.barrier
      %chunk = arith.xori %p, %r : index
      %lc = arith.muli %chunk, %c4 : index
      %v = vector.load %s[%r, %lc] : memref<8x32xf32, #gpu.address_space<workgroup>>, vector<4xf32>
      %e = vector.extract %v[0] : f32 from vector<4xf32>
      memref.store %e, %out[%l] : memref<32xf32>
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
    gpu.launch_func @kernels::@vectors blocks in (%c1, %c1, %c1)
        threads in (%c32, %c1, %c1) args(%out : memref<32xf32>)
    gpu.launch_func @kernels::@vectors_swizzled blocks in (%c1, %c1, %c1)
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
// CHECK: "kernel": "vectors"
// CHECK-SAME: "shared_requests": 2, "bank_conflicts": 28,
// CHECK: "kernel": "vectors_swizzled"
// CHECK-SAME: "shared_requests": 2, "bank_conflicts": 0,
