// RUN: kvir-opt %s --convert-kv-to-gpu=chip=sm_90a -split-input-file | FileCheck %s

// copy = tma: the plan gains a tensor map over each of the ragged K and V
// buffers (a box of 64 keys x 64 columns: one 128-byte swizzle block),
// which the host encodes with cuTensorMapEncodeTiled (data type 9: bf16,
// rank 3, swizzle 3: 128 bytes, L2 promotion 2: 128 bytes) and the kernels
// take as memref<16xi64>.
//
// The query tile comes by TMA too (a box of 32 query rows x the group's 4
// heads x 64 columns per column block), on a barrier of its own that the
// consumers wait for before their first product.
//
// The producer's thread 0 acquires both maps for the tensormap proxy, then
// per whole tile announces its 32 KB (K and V, 64 x 128 bf16 each) on the
// stage's full barrier and issues two boxes of K and two of V, while the
// other producer threads only arrive; the tile the keys end in goes by
// cp.async, waited for, fenced and arrived on.

// CHECK: #kvgpu.plan<"kv.prefill"
// CHECK-SAME: <"k_map", tensor_map, memref<16xi64>, shape = [<16>], map = <"k", box = [64, 1, 64], swizzle = 128>>
// CHECK-SAME: <"v_map", tensor_map, memref<16xi64>, shape = [<16>], map = <"v", box = [64, 1, 64], swizzle = 128>>
// CHECK-SAME: <"q_map", tensor_map, memref<16xi64>, shape = [<16>], map = <"q", box = [32, 4, 64], swizzle = 128>>
// CHECK-SAME: copy = tma
// CHECK-SAME: args = ["q", "qo_indptr", "k", "v", "kv_indptr", "k_map", "v_map", "q_map", "out", "lse"]

// CHECK-LABEL: func.func @ragged(
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<16xi64>
// CHECK: call @cuTensorMapEncodeTiled(%{{.*}}, %c9_i32, %c3_i32, {{.*}}, %c3_i32{{.*}}, %c2_i32, %c0_i32{{.*}})
// CHECK: cf.assert %{{.*}}, "cuTensorMapEncodeTiled failed for 'k_map'"
// CHECK: cf.assert %{{.*}}, "cuTensorMapEncodeTiled failed for 'v_map'"

// CHECK-LABEL: gpu.func @prefill_ragged_{{.*}}_causal_{{[0-9a-f]+}}(
// CHECK-SAME: %{{.*}}: memref<16xi64>, %{{.*}}: memref<16xi64>, %{{.*}}: memref<16xi64>,
// CHECK: nvvm.mbarrier.init %{{.*}}, %c1_i32
// CHECK: nvvm.fence.mbarrier.init
// CHECK: nvvm.fence.proxy.acquire <sys>
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c32768_i32
// CHECK-COUNT-2: nvvm.cp.async.bulk.tensor.shared.cluster.global
// CHECK: gpu.barrier
// CHECK: nvvm.setmaxregister  decrease 80
// CHECK: nvvm.fence.proxy.acquire <sys> %{{.*}}, %c128_i32
// CHECK: nvvm.fence.proxy.acquire <sys> %{{.*}}, %c128_i32
// CHECK: scf.for
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c32768_i32
// CHECK-COUNT-4: nvvm.cp.async.bulk.tensor.shared.cluster.global
// CHECK: } else {
// CHECK: nvvm.mbarrier.arrive
// CHECK: } else {
// CHECK: nvgpu.device_async_copy
// CHECK: nvvm.cp.async.wait.group 0
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>
// CHECK: nvvm.mbarrier.arrive
// CHECK: nvvm.setmaxregister  increase 216
// CHECK: nvvm.mbarrier.try_wait.parity %{{.*}}, %c0_i32{{.*}}, %c0_i32
// CHECK: scf.for

func.func @ragged(%q: memref<?x8x128xbf16>, %qo: memref<?xi32>, %k: memref<?x2x128xbf16>, %v: memref<?x2x128xbf16>, %ki: memref<?xi32>, %o: memref<?x8x128xbf16>, %l: memref<?x8xf32>) {
  %kv = kv.ragged_view %k, %v, %ki : memref<?x2x128xbf16>, memref<?x2x128xbf16>, memref<?xi32> -> !kv.ragged<kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = bf16>
  %s = kv.prefill %q, %qo, %kv {causal} : memref<?x8x128xbf16>, memref<?xi32>, !kv.ragged<kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = bf16> -> !kv.state<?x8x128xbf16, base = e>
  kv.store_state %s, %o, %l : !kv.state<?x8x128xbf16, base = e>, memref<?x8x128xbf16>, memref<?x8xf32>
  return
}

// -----

// Pages that are whole boxes: both maps read the combined NHD pool (box:
// one page's 16 slots of one head, one 64-column block); per tile of 64
// keys that starts a page, thread 0 issues 4 pages x 2 column blocks of K
// and of V, each page read from the entries the producer staged.

// CHECK: #kvgpu.plan<"kv.prefill"
// CHECK-SAME: <"k_map", tensor_map, memref<16xi64>, shape = [<16>], map = <"pool", box = [1, 1, 16, 1, 64], swizzle = 128>>
// CHECK-SAME: <"v_map", tensor_map, memref<16xi64>, shape = [<16>], map = <"pool", box = [1, 1, 16, 1, 64], swizzle = 128>>
// CHECK-LABEL: gpu.func @prefill_nhd_combined_csr_p16_{{.*}}_causal_{{[0-9a-f]+}}(
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c32768_i32
// CHECK-COUNT-16: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %{{.*}}, %{{.*}}, box[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}]
// CHECK-NOT: nvvm.cp.async.bulk.tensor
// CHECK: } else {
// CHECK: nvvm.mbarrier.arrive
// CHECK: } else {
// CHECK: nvgpu.device_async_copy

!p = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = bf16, layout = nhd, storage = combined, table = csr>
func.func @paged(%q: memref<?x8x128xbf16>, %qo: memref<?xi32>, %p0: memref<?x2x16x2x128xbf16>, %t0: memref<?xi32>, %t1: memref<?xi32>, %t2: memref<?xi32>, %o: memref<?x8x128xbf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%p0 : memref<?x2x16x2x128xbf16>) tables(%t0, %t1, %t2 : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !p
  %s = kv.prefill %q, %qo, %kv {causal} : memref<?x8x128xbf16>, memref<?xi32>, !p -> !kv.state<?x8x128xbf16, base = 2>
  kv.store_state %s, %o, %l : !kv.state<?x8x128xbf16, base = 2>, memref<?x8x128xbf16>, memref<?x8xf32>
  return
}
