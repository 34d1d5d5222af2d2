// RUN: kvir-opt %s -split-input-file -kv-tile=chip=sm_80 | FileCheck %s --check-prefix=TILE
// RUN: kvir-opt %s -split-input-file -kv-tile=chip=sm_80 --convert-kv-to-gpu=chip=sm_80 | FileCheck %s

// An f32 prefill (mma.sync takes no f32) runs its query rows on the decode
// kernel: kv-tile gives it a #kvgpu.decode (f32 vectors of 16 bytes), and
// the plan launches one block per query row and KV head ("rows", always).
// Thread 0 finds the row's request by a binary search of qo_indptr, takes
// its position (given here), bounds the visible keys by the window and
// causal, and tells the block through `meta`: the token range, the table
// base, the position and the request (6 slots).

!c = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f32, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x128xf32, base = e>

// TILE-LABEL: func.func @causal_window_positions
// TILE: kv.prefill {{.*}}kvgpu.config = #kvgpu.decode<vector = 4, threads_x = 32,

// CHECK: #kvgpu.plan<"kv.prefill", "[[K:prefill_rows_nhd_combined_csr_p16_h8x2_d128_f32_f32_causal_positions_[0-9a-f]+]]"
// CHECK-SAME: <"positions", input, memref<?xi32>, shape = [<nnz>]>
// CHECK-SAME: kernels = [<"rows", @kv_kernels::@[[K]], always, grid = [<nnz>, <2>, <1>], block = [32, 4, 1]
// CHECK-SAME: args = ["q", "qo_indptr", "pool", "kv_indptr", "kv_indices", "kv_last_page_len", "positions", "out", "lse"]>
// CHECK-LABEL: func.func @causal_window_positions
// CHECK: gpu.launch_func @kv_kernels::@[[K]] blocks in (%{{.*}}, %c2{{.*}}, %c1{{.*}})
// CHECK: gpu.func @[[K]](
// CHECK-SAME: %[[POS:arg6]]: memref<?xi32>
// CHECK-SAME: %[[META:arg[0-9]+]] : memref<6xi32, #gpu.address_space<workgroup>>
// CHECK: scf.while
// CHECK: memref.load %[[POS]]
// CHECK: arith.maxsi
// CHECK: arith.minsi
// CHECK: memref.store %{{.*}}, %[[META]][%c5{{.*}}]
// CHECK: nvgpu.device_async_copy {{.*}}, 4, %{{.*}} {bypassL1} : memref<?x2x16x2x128xf32> to memref<3x8x128xf32, #gpu.address_space<workgroup>>
func.func @causal_window_positions(%q: memref<?x8x128xf32>, %qo: memref<?xi32>, %pool: memref<?x2x16x2x128xf32>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>, %p: memref<?xi32>, %o: memref<?x8x128xf32>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x2x128xf32>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !c
  %s = kv.prefill %q, %qo, %kv positions(%p : memref<?xi32>) {causal, window_left = 64 : i64} : memref<?x8x128xf32>, memref<?xi32>, !c -> !s
  kv.store_state %s, %o, %l : !s, memref<?x8x128xf32>, memref<?x8xf32>
  return
}
