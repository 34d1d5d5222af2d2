// RUN: kvir-opt %s -split-input-file -kv-tile=chip=sm_80 --convert-kv-to-gpu=chip=sm_80 | FileCheck %s

// On-the-fly RoPE in the tensor-core prefill: once the query tile has
// arrived, the block rotates it in place (each thread one 16-byte unit
// column of the rows: a rotate-half chunk and its partner 64 dims up, its
// 8 pair frequencies computed once, before the tile loop), then a barrier;
// per K/V tile, after K's wait and barrier, the K stage is rotated in place
// to the keys' positions, then a barrier, then the mma reads it.

!c = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x128xf16, base = 2>

// CHECK-LABEL: func.func @rotate_half
// CHECK: gpu.func @{{prefill_nhd_combined_csr_p16_h8x2_d128_f16_f16_causal_rope_[0-9a-f]+}}(
// CHECK: nvvm.cp.async.wait.group 0
// CHECK-NEXT: gpu.barrier
// CHECK-COUNT-8: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: scf.for
// CHECK-COUNT-8: llvm.call_intrinsic "llvm.nvvm.cos.approx.ftz.f"
// CHECK: vector.store %{{.*}}, %[[Q:.*]][%{{.*}}, %{{.*}}] : memref<128x128xf16, #gpu.address_space<workgroup>>, vector<8xf16>
// CHECK: vector.store %{{.*}}, %[[Q]][%{{.*}}, %{{.*}}] : memref<128x128xf16, #gpu.address_space<workgroup>>, vector<8xf16>
// CHECK: gpu.barrier
// CHECK: scf.for {{.*}} iter_args
// CHECK: gpu.barrier
// CHECK-NOT: llvm.nvvm.ex2.approx
// CHECK: scf.for
// CHECK-COUNT-8: llvm.call_intrinsic "llvm.nvvm.cos.approx.ftz.f"
// CHECK: vector.store %{{.*}}, %[[K:.*]][%{{.*}}, %{{.*}}, %{{.*}}] : memref<2x64x128xf16, #gpu.address_space<workgroup>>, vector<8xf16>
// CHECK: vector.store %{{.*}}, %[[K]][%{{.*}}, %{{.*}}, %{{.*}}] : memref<2x64x128xf16, #gpu.address_space<workgroup>>, vector<8xf16>
// CHECK: gpu.barrier
// CHECK: nvgpu.ldmatrix
// CHECK: nvgpu.mma.sync
func.func @rotate_half(%q: memref<?x8x128xf16>, %qo: memref<?xi32>, %pool: memref<?x2x16x2x128xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>, %o: memref<?x8x128xf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x2x128xf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !c
  %s = kv.prefill %q, %qo, %kv {causal, rope = #kv.rope<rotate_half>} : memref<?x8x128xf16>, memref<?xi32>, !c -> !s
  kv.store_state %s, %o, %l : !s, memref<?x8x128xf16>, memref<?x8xf32>
  return
}

// -----

// Interleaved with rotary_dim 32 over a ragged bf16 cache: 4 unit columns
// (chunks of 8 dims, 4 pairs each); dims 32 .. 64 are not touched.

!r = !kv.ragged<kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = bf16>
!s = !kv.state<?x4x64xbf16, base = e>

// CHECK-LABEL: func.func @interleave
// CHECK: gpu.func @{{prefill_ragged_h4x2_d64_bf16_bf16_rope_[0-9a-f]+}}(
// CHECK: arith.remui %{{.*}}, %c4{{.*}} : index
// CHECK-COUNT-4: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: scf.for
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 2, 4, 6] : vector<8xbf16>, vector<8xbf16>
// CHECK-COUNT-4: llvm.call_intrinsic "llvm.nvvm.cos.approx.ftz.f"
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 4, 1, 5, 2, 6, 3, 7] : vector<4xbf16>, vector<4xbf16>
func.func @interleave(%q: memref<?x4x64xbf16>, %qo: memref<?xi32>, %k: memref<?x2x64xbf16>, %v: memref<?x2x64xbf16>, %ki: memref<?xi32>, %o: memref<?x4x64xbf16>, %l: memref<?x4xf32>) {
  %kv = kv.ragged_view %k, %v, %ki : memref<?x2x64xbf16>, memref<?x2x64xbf16>, memref<?xi32> -> !r
  %s = kv.prefill %q, %qo, %kv {rope = #kv.rope<interleave, rotary_dim = 32>} : memref<?x4x64xbf16>, memref<?xi32>, !r -> !s
  kv.store_state %s, %o, %l : !s, memref<?x4x64xbf16>, memref<?x4xf32>
  return
}
