// RUN: kvir-runner %s -e main --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs --emu-stats 2>%t.stats | FileCheck %s
// RUN: FileCheck %s --check-prefix=STATS < %t.stats

// A double-buffered cp.async pipeline (nvgpu.device_async_copy,
// device_async_create_group, device_async_wait): one warp consumes 4 chunks
// of 32 floats, x[i] = i. Chunk c + 1 is in flight while chunk c is consumed;
// wait {numGroups = 1} retires all but the newest group. Lane l reads the
// element its neighbour (l + 1) % 32 copied, so a barrier follows each wait
// (cp.async.wait_group only covers the thread's own copies).
// acc[l] = sum over c of x[32 c + (l + 1) % 32] = 32 (0 + 1 + 2 + 3) + 4 ((l + 1) % 32)
//        = 192 + 4 ((l + 1) % 32): lane 0 -> 196, lane 30 -> 316, lane 31 -> 192.
// Barriers: 2 per loop iteration (3 iterations) + 1 in the epilogue = 7.

!buf = memref<2x32xf32, #gpu.address_space<workgroup>>

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @pipeline(%x: memref<128xf32>, %out: memref<32xf32>)
        workgroup(%sh: !buf) kernel {
      %l = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %c32 = arith.constant 32 : index
      %l1 = arith.addi %l, %c1 : index
      %next = arith.remui %l1, %c32 : index

      %t0 = nvgpu.device_async_copy %x[%l], %sh[%c0, %l], 1
          : memref<128xf32> to !buf
      %g0 = nvgpu.device_async_create_group %t0

      %zero = arith.constant 0.0 : f32
      %acc = scf.for %c = %c0 to %c3 step %c1 iter_args(%a = %zero) -> f32 {
        %cn = arith.addi %c, %c1 : index
        %slot = arith.remui %cn, %c2 : index
        %base = arith.muli %cn, %c32 : index
        %src = arith.addi %base, %l : index
        %t = nvgpu.device_async_copy %x[%src], %sh[%slot, %l], 1
            : memref<128xf32> to !buf
        %g = nvgpu.device_async_create_group %t
        nvgpu.device_async_wait %g {numGroups = 1 : i32}
        gpu.barrier
        %cur = arith.remui %c, %c2 : index
        %v = memref.load %sh[%cur, %next] : !buf
        %a2 = arith.addf %a, %v : f32
        gpu.barrier
        scf.yield %a2 : f32
      }
      nvgpu.device_async_wait %g0 {numGroups = 0 : i32}
      gpu.barrier
      %last = memref.load %sh[%c1, %next] : !buf
      %total = arith.addf %acc, %last : f32
      memref.store %total, %out[%l] : memref<32xf32>
      gpu.return
    }
  }

  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %c128 = arith.constant 128 : index
    %x = memref.alloc() : memref<128xf32>
    %out = memref.alloc() : memref<32xf32>
    scf.for %i = %c0 to %c128 step %c1 {
      %ii = arith.index_cast %i : index to i32
      %f = arith.sitofp %ii : i32 to f32
      memref.store %f, %x[%i] : memref<128xf32>
    }
    gpu.launch_func @kernels::@pipeline blocks in (%c1, %c1, %c1)
        threads in (%c32, %c1, %c1)
        args(%x : memref<128xf32>, %out : memref<32xf32>)
    %u = memref.cast %out : memref<32xf32> to memref<*xf32>
    call @printMemrefF32(%u) : (memref<*xf32>) -> ()
    return
  }
  func.func private @printMemrefF32(memref<*xf32>)
}

// CHECK: [196,  200,  204,  208,  212,  216,  220,  224,  228,  232,  236,  240,  244,  248,  252,  256,  260,  264,  268,  272,  276,  280,  284,  288,  292,  296,  300,  304,  308,  312,  316,  192]
// STATS: "barriers": 7,
