// RUN: kvir-runner %s -e main --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs --emu-stats 2>%t.stats | FileCheck %s
// RUN: FileCheck %s --check-prefix=STATS < %t.stats
// RUN: not kvir-runner %s -e no_fence --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s --check-prefix=FENCE

// --emu-stats for sm_90 instructions. One warpgroup (128 threads) zeroes
// 4 KiB of shared memory, fences the async proxy and syncs; then an mbarrier
// of 128 arrivals completes one phase (each thread waits once), named
// barrier 1 of 128 threads completes once, and one m64n8k16 bf16 wgmma
// (A, B all zero; no swizzle) computes D = 0 + 1 (scale-d with C = 1):
//   wgmma_ops = 1 (m64n8k16: 64 * 8 * 16 = 8192 tensor-core MACs),
//   mbarrier_phases = 1, mbarrier_waits = 128,
//   named_barriers = 1, D = 1 everywhere.
// Without the wgmma.fence the launch is refused (no_fence).

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @sm90(%out: memref<128xf32>, %fence: i1)
        workgroup(%s: memref<1024xi32, #gpu.address_space<workgroup>>,
                  %bar: memref<1xi64, #gpu.address_space<workgroup>>) kernel {
      %t = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c128 = arith.constant 128 : index
      %c1024 = arith.constant 1024 : index
      %i0 = arith.constant 0 : i32
      %i1 = arith.constant 1 : i32
      %i128 = arith.constant 128 : i32
      scf.for %w = %t to %c1024 step %c128 {
        memref.store %i0, %s[%w] : memref<1024xi32, #gpu.address_space<workgroup>>
      }
      nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
      %bi = memref.extract_aligned_pointer_as_index %bar : memref<1xi64, #gpu.address_space<workgroup>> -> index
      %bi64 = arith.index_cast %bi : index to i64
      %bp = llvm.inttoptr %bi64 : i64 to !llvm.ptr<3>
      %first = arith.cmpi eq, %t, %c0 : index
      scf.if %first {
        nvvm.mbarrier.init %bp, %i128 : !llvm.ptr<3>, i32
      }
      gpu.barrier
      %tok = nvvm.mbarrier.arrive %bp : !llvm.ptr<3> -> i64
      nvvm.mbarrier.try_wait.parity %bp, %i0, %i0 : !llvm.ptr<3>, i32, i32
      nvvm.barrier id = %i1 number_of_threads = %i128
      // A at 0 (core matrices: K step 128 B, row groups 256 B), B at 2048.
      %si = memref.extract_aligned_pointer_as_index %s : memref<1024xi32, #gpu.address_space<workgroup>> -> index
      %si64 = arith.index_cast %si : index to i64
      %mask = arith.constant 262143 : i64
      %c4 = arith.constant 4 : i64
      %low = arith.andi %si64, %mask : i64
      %start = arith.shrui %low, %c4 : i64
      %offsets = arith.constant 68719476736 : i64  // SBO 256 >> 4 << 32
      %lbo = arith.constant 524288 : i64           // LBO 128 >> 4 << 16
      %layout = arith.ori %offsets, %lbo : i64
      %descA = arith.ori %start, %layout : i64
      %bStart = arith.constant 128 : i64           // 2048 >> 4
      %descB0 = arith.addi %descA, %bStart : i64
      %one = arith.constant 1.0 : f32
      %u = llvm.mlir.undef : !llvm.struct<(f32, f32, f32, f32)>
      %a0 = llvm.insertvalue %one, %u[0] : !llvm.struct<(f32, f32, f32, f32)>
      %a1 = llvm.insertvalue %one, %a0[1] : !llvm.struct<(f32, f32, f32, f32)>
      %a2 = llvm.insertvalue %one, %a1[2] : !llvm.struct<(f32, f32, f32, f32)>
      %acc = llvm.insertvalue %one, %a2[3] : !llvm.struct<(f32, f32, f32, f32)>
      scf.if %fence {
        nvvm.wgmma.fence.aligned
      }
      %d = nvvm.wgmma.mma_async %descA, %descB0, %acc, #nvvm.shape<m = 64, n = 8, k = 16>, D [<f32>, #nvvm.wgmma_scale_out<one>], A [<bf16>, #nvvm.wgmma_scale_in<one>, #nvvm.mma_layout<row>], B [<bf16>, #nvvm.wgmma_scale_in<one>, #nvvm.mma_layout<col>] : !llvm.struct<(f32, f32, f32, f32)> -> !llvm.struct<(f32, f32, f32, f32)>
      nvvm.wgmma.commit.group.sync.aligned
      nvvm.wgmma.wait.group.sync.aligned 0
      %d0 = llvm.extractvalue %d[0] : !llvm.struct<(f32, f32, f32, f32)>
      memref.store %d0, %out[%t] : memref<128xf32>
      gpu.return
    }
  }

  func.func @run(%fence: i1) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c127 = arith.constant 127 : index
    %c128 = arith.constant 128 : index
    %out = memref.alloc() : memref<128xf32>
    gpu.launch_func @kernels::@sm90 blocks in (%c1, %c1, %c1)
        threads in (%c128, %c1, %c1) args(%out : memref<128xf32>, %fence : i1)
    %first = memref.load %out[%c0] : memref<128xf32>
    vector.print %first : f32
    %last = memref.load %out[%c127] : memref<128xf32>
    vector.print %last : f32
    return
  }

  // CHECK: 1
  // CHECK-NEXT: 1
  func.func @main() {
    %true = arith.constant true
    call @run(%true) : (i1) -> ()
    return
  }

  func.func @no_fence() {
    %false = arith.constant false
    call @run(%false) : (i1) -> ()
    return
  }
}

// STATS: "kernel": "sm90"
// STATS-SAME: "mma_ops": 0, "tensor_core_macs": 8192,
// STATS-SAME: "wgmma_ops": 1, "max_block_wgmma_ops": 1, "wgmma_shapes": {"m64n8k16.f32.bf16": 1}
// STATS-SAME: "named_barriers": 1, "mbarrier_phases": 1, "mbarrier_waits": 128
// STATS-SAME: "tma_copies": 0

// FENCE: kvir-emu: kernel 'sm90': wgmma.mma_async without a wgmma.fence between the last write of its accumulator registers and the wgmma
// FENCE-NEXT: block (0,0,0) thread ({{[0-9]+}},0,0)
// FENCE-NEXT: at {{.*}}sm90-stats.mlir:{{[0-9]+}}:{{[0-9]+}} (nvvm.wgmma.mma_async)
