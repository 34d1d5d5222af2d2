// RUN: kvir-opt %s -split-input-file -kv-tile=chip=sm_80 --convert-kv-to-gpu=chip=sm_80 | FileCheck %s

// On-the-fly RoPE in the decode kernel: the query stays as it is and each
// key turns by its position relative to the query's (kv_len - 1, the
// meta's fifth entry). A lane's pair frequencies (ex2.approx, Llama 3.1's
// blend) are computed once, before the tile loop; per token a lane in the
// rotated dims reads its K row and, for rotate-half, the partner row R / 2
// dims away from the same stage, then rotates in f32 with cos / sin.approx
// (no libdevice). Lanes past rotary_dim take the row as it is. With a GQA
// group the block rotates each tile once (threads (y, z) take rows
// y + G z, stepping G tz) into f32 rows in shared memory, a barrier, and
// every head's scores read those.

!c = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x128xf16, base = e>

// CHECK-LABEL: func.func @rotate_half
// CHECK: gpu.func @[[K:decode_nhd_combined_csr_p16_h8x2_d128_f16_f16_rope_[0-9a-f]+]](
// CHECK-SAME: workgroup(%[[KT:arg[0-9]+]] : memref<3x16x128xf16, #gpu.address_space<workgroup>> {{.*}}, %[[META:arg[0-9]+]] : memref<5xi32, #gpu.address_space<workgroup>>
// CHECK-SAME: %[[KR:arg[0-9]+]] : memref<16x128xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// CHECK: memref.store %{{.*}}, %[[META]][%c4{{.*}}]
// CHECK: %[[ROTATES:.*]] = arith.cmpi slt, %[[DIM0:.*]], %c64{{.*}} : index
// CHECK: %[[LOW:.*]] = arith.cmpi slt, %[[DIM0]], %c32{{.*}} : index
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: %[[PARTNER:.*]] = arith.select %[[LOW]]
// CHECK: scf.for
// CHECK: vector.load %[[KT]][%{{.*}}, %{{.*}}, %[[DIM0]]] : memref<3x16x128xf16, #gpu.address_space<workgroup>>, vector<8xf16>
// CHECK: scf.if %[[ROTATES]] -> (vector<8xf32>) {
// CHECK-NEXT: vector.load %[[KT]][%{{.*}}, %{{.*}}, %[[PARTNER]]] : memref<3x16x128xf16, #gpu.address_space<workgroup>>, vector<8xf16>
// CHECK: llvm.call_intrinsic "llvm.nvvm.cos.approx.ftz.f"
// CHECK: llvm.call_intrinsic "llvm.nvvm.sin.approx.ftz.f"
// CHECK: } else {
// CHECK: vector.store %{{.*}}, %[[KR]][%{{.*}}, %[[DIM0]]] : memref<16x128xf32, #gpu.address_space<workgroup>>, vector<8xf32>
// CHECK-NEXT: }
// CHECK-NEXT: gpu.barrier
// CHECK: vector.load %[[KR]][%{{.*}}, %[[DIM0]]] : memref<16x128xf32, #gpu.address_space<workgroup>>, vector<8xf32>
// CHECK: gpu.return
// CHECK-NOT: math.
func.func @rotate_half(%q: memref<?x8x128xf16>, %pool: memref<?x2x16x2x128xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>, %o: memref<?x8x128xf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x2x128xf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !c
  %s = kv.decode %q, %kv {rope = #kv.rope<rotate_half, theta = 5.0e5, rotary_dim = 64, factor = 8.0, low_freq_factor = 1.0, high_freq_factor = 4.0, original_max_position = 8192.0>} : memref<?x8x128xf16>, !c -> !s
  kv.store_state %s, %o, %l : !s, memref<?x8x128xf16>, memref<?x8xf32>
  return
}

// -----

// Interleaved pairs lie within a lane's vector: no partner row.

!c = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = bf16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x4x64xbf16, base = e>

// CHECK-LABEL: func.func @interleave
// CHECK: gpu.func @{{decode_nhd_combined_csr_p16_h4x2_d64_bf16_bf16_rope_[0-9a-f]+}}(
// CHECK-SAME: workgroup(%[[KT:arg[0-9]+]] : memref<3x32x64xbf16, #gpu.address_space<workgroup>>
// CHECK: scf.for
// CHECK: vector.load %[[KT]]
// CHECK: scf.if %{{.*}} -> (vector<8xf32>) {
// CHECK-NOT: vector.load
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 2, 4, 6]
// CHECK: llvm.call_intrinsic "llvm.nvvm.cos.approx.ftz.f"
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 4, 1, 5, 2, 6, 3, 7]
// CHECK: } else {
func.func @interleave(%q: memref<?x4x64xbf16>, %pool: memref<?x2x16x2x64xbf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>, %o: memref<?x4x64xbf16>, %l: memref<?x4xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x2x64xbf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !c
  %s = kv.decode %q, %kv {rope = #kv.rope<interleave>} : memref<?x4x64xbf16>, !c -> !s
  kv.store_state %s, %o, %l : !s, memref<?x4x64xbf16>, memref<?x4xf32>
  return
}
