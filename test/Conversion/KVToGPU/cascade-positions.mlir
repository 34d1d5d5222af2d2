// RUN: kvir-opt %s -kv-expand-cascade -kv-tile=chip=sm_80 --convert-kv-to-gpu=chip=sm_80 | FileCheck %s

// A windowed 2-level cascade: the shared level's rows sit after its keys at
// positions their last-level requests give them. kv.cascade_positions
// becomes a kernel of one thread per row (a binary search of each level's
// qo_indptr, then the request's kv_len from its table; no pool is read),
// launched before the shared level's prefill, which takes the positions as
// an argument; the last level's prefill needs none.

!kvt = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x64xf16, base = 2>

// CHECK: #kvgpu.plan<"kv.cascade_positions", "[[POS:cascade_positions_2_csr_csr_[0-9a-f]+]]"
// CHECK-SAME: args = [<"qo_indptr_l0", input, memref<?xi32>, shape = [<qo_indptr_l0_dim0>]>, <"kv_indptr_l0", input, memref<?xi32>, shape = [<kv_indptr_l0_dim0>]>, <"kv_indices_l0", input, memref<?xi32>, shape = [<kv_indices_l0_dim0>]>, <"kv_last_page_len_l0", input, memref<?xi32>, shape = [<kv_last_page_len_l0_dim0>]>, <"qo_indptr_l1", input
// CHECK-SAME: <"positions", output, memref<?xi32>, shape = [<nnz>]>]
// CHECK-SAME: kernels = [<"positions", @kv_kernels::@[[POS]], always, grid = [<ceildiv(nnz, 128)>, <1>, <1>], block = [128, 1, 1]
// CHECK: #kvgpu.plan<"kv.prefill", "[[SHARED:prefill_nhd_combined_csr_p16_h8x2_d64_f16_f16_positions_[0-9a-f]+]]"
// CHECK-SAME: <"positions", input, memref<?xi32>, shape = [<nnz>]>

// CHECK-LABEL: func.func @windowed
// CHECK: %[[BUF:.*]] = memref.alloc(%{{.*}}) : memref<?xi32>
// CHECK: gpu.launch_func @kv_kernels::@[[POS]] blocks in {{.*}} args(%{{.*}} : memref<?xi32>, {{.*}}, %[[BUF]] : memref<?xi32>)
// CHECK: gpu.launch_func @kv_kernels::@[[SHARED]] blocks in {{.*}} args({{.*}}, %[[BUF]] : memref<?xi32>,
// CHECK: gpu.launch_func @kv_kernels::@prefill_nhd_combined_csr_p16_h8x2_d64_f16_f16_causal_{{[0-9a-f]+}} {{.*}}
// CHECK: memref.dealloc %[[BUF]] : memref<?xi32>
// CHECK: gpu.launch_func @kv_kernels::@merge2_

// CHECK-LABEL: gpu.func @cascade_positions_2_csr_csr_
// CHECK-SAME: kernel attributes {nvvm.reqntid = array<i32: 128, 1, 1>}
// CHECK: scf.while
// CHECK: scf.while
// CHECK: memref.store %{{.*}}, %{{.*}}[%{{.*}}] : memref<?xi32>
func.func @windowed(%q: memref<?x8x64xf16>, %qi0: memref<?xi32>, %qi1: memref<?xi32>,
                    %pool: memref<?x2x16x2x64xf16>, %ip0: memref<?xi32>, %ix0: memref<?xi32>, %last0: memref<?xi32>,
                    %ip1: memref<?xi32>, %ix1: memref<?xi32>, %last1: memref<?xi32>,
                    %o: memref<?x8x64xf16>, %lse: memref<?x8xf32>) {
  %kv0 = kv.paged_view pools(%pool : memref<?x2x16x2x64xf16>) tables(%ip0, %ix0, %last0 : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !kvt
  %kv1 = kv.paged_view pools(%pool : memref<?x2x16x2x64xf16>) tables(%ip1, %ix1, %last1 : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !kvt
  %s = kv.cascade %q levels(%qi0, %qi1 : memref<?xi32>, memref<?xi32>) kvs(%kv0, %kv1 : !kvt, !kvt)
      {causal, window_left = 128 : i64} : memref<?x8x64xf16> -> !s
  kv.store_state %s, %o, %lse : !s, memref<?x8x64xf16>, memref<?x8xf32>
  return
}
