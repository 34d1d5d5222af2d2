// RUN: kvir-opt %s -split-input-file --convert-kv-to-gpu=chip=sm_80 | FileCheck %s

// A ragged causal prefill (Hq 4 over Hkv 2, head dim 64, f16) becomes the
// tensor-core prefill kernel, its split-KV twin and the merge kernel, a
// launch plan whose direct grid is the query-tile slots floor(nnz * 2 /
// 128) + batch times the KV heads; split-KV follows the host's work
// schedule (kvir_schedule_prefill_work: query tiles of 64 whole rows, 54
// slots: sm_80's 108 SMs over 2 KV heads), a block per item and KV head,
// then the merge of the cut tiles' rows (merge_indptr per query row);
// and the kernel's structure:
//   - 256 threads (8 warps of 16 query rows), 48 KB + of dynamic shared
//     memory (the query tile and two stages of K and V tiles);
//   - the query tile by cp.async, waited for (depth 0), then its A
//     fragments by ldmatrix once, before the key loop;
//   - K_0 and V_0 in two commit groups; per tile, wait for K_i (depth 1),
//     issue K_{i+1}, S = Q K^T on mma.sync, the mask only on tiles that
//     need it (scf.if), wait for V_i (depth 1), issue V_{i+1},
//     O += P V with V by ldmatrix.trans;
//   - the output staged through shared memory within the warp
//     (bar.warp.sync) for 16-byte stores.

!r = !kv.ragged<kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16>
!s = !kv.state<?x4x64xf16, base = 2>

// CHECK: kvgpu.launch_plans = [#kvgpu.plan<"kv.prefill", "[[DIRECT:prefill_ragged_h4x2_d64_f16_f16_causal_[0-9a-f]+]]"
// CHECK-SAME: <"kv_lengths", host, memref<?xi32>, shape = [<batch>]>, <"qo_indptr_host", host, memref<?xi32>, shape = [<batch + 1>]>, <"work_items", schedule, memref<?x5xi32>, shape = [<max_work>, <5>]>, <"merge_indptr", schedule, memref<?xi32>, shape = [<nnz + 1>]>, <"partial_out", workspace, memref<?x4x64xf32>, shape = [<partial_rows>, <4>, <64>]>
// CHECK-SAME: sizes = [<"nnz" from "q"[0]>, <"qo_indptr_len" from "qo_indptr"[0]>, <"batch" = <qo_indptr_len - 1>>, <"nnz_kv" from "k"[0]>, <"num_tile_slots" = <floordiv(nnz * 2, 128) + batch>>, <"max_work" = <floordiv(nnz, 64) + batch + 216>>]
// CHECK-SAME: schedule = <lengths = "kv_lengths", items = "work_items", merge_indptr = "merge_indptr", count = "num_work", batch = "batch", target_items = 54, granule = 64, min_chunk = 256, window_left = -1, qo_indptr = "qo_indptr_host", tiles = "num_query_tiles", workspace_rows = "partial_rows", tile_rows = 64, causal = true>
// CHECK-SAME: config = #kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, stages = 2, q_in_registers = true, max_partitions = 16>
// CHECK-SAME: kernels = [<"direct", @kv_kernels::@[[DIRECT]], unsplit, grid = [<num_tile_slots>, <2>, <1>], block = [256, 1, 1], shared = 0, dynamic_shared = {{[0-9]+}}
// CHECK-SAME: <"split", @kv_kernels::@[[SPLIT:prefill_ragged_h4x2_d64_f16_f32_causal_split_[0-9a-f]+]], split, grid = [<num_work>, <2>, <1>]
// CHECK-SAME: args = ["q", "qo_indptr", "k", "v", "kv_indptr", "work_items", "partial_out", "partial_lse", "out", "lse"]
// CHECK-SAME: <"merge", @kv_kernels::@merge_rows_h4_d64_f16_base_2_{{[0-9a-f]+}}, split, grid = [<nnz>, <4>, <1>], block = [64, 1, 1], shared = 256, dynamic_shared = 0, args = ["partial_out", "partial_lse", "merge_indptr", "out", "lse"]>

// CHECK-LABEL: func.func @ragged_causal
// CHECK-NOT: kv.prefill
// CHECK: call @kvir_schedule_prefill_work
// CHECK: gpu.launch_func @kv_kernels::@[[DIRECT]] blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in (%c256, %{{.*}}, %{{.*}}) dynamic_shared_memory_size
// CHECK: gpu.launch_func @kv_kernels::@[[SPLIT]]
// CHECK: gpu.launch_func @kv_kernels::@merge_rows_h4_d64_f16_base_2_

// CHECK-LABEL: gpu.func @prefill_ragged_h4x2_d64_f16_f16_causal_
// CHECK-SAME: kernel attributes {kvgpu.dynamic_shared_bytes = {{[0-9]+}} : i64, nvvm.reqntid = array<i32: 256, 1, 1>}
// CHECK: gpu.dynamic_shared_memory
// CHECK: scf.while
// CHECK: gpu.barrier
// CHECK: nvgpu.device_async_copy %{{.*}} : memref<?x4x64xf16> to memref<128x64xf16, #gpu.address_space<workgroup>>
// CHECK: nvvm.cp.async.commit.group
// CHECK-NEXT: nvvm.cp.async.wait.group 0
// CHECK-NEXT: gpu.barrier
// CHECK: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = false}
// CHECK: nvgpu.device_async_copy %{{.*}} : memref<?x2x64xf16> to memref<2x64x64xf16, #gpu.address_space<workgroup>>
// CHECK: nvvm.cp.async.commit.group
// CHECK: nvgpu.device_async_copy %{{.*}} : memref<?x2x64xf16> to memref<2x64x64xf16, #gpu.address_space<workgroup>>
// CHECK: nvvm.cp.async.commit.group
// CHECK: scf.for {{.*}} iter_args(
// CHECK: nvvm.cp.async.wait.group 1
// CHECK-NEXT: gpu.barrier
// CHECK: nvgpu.device_async_copy
// CHECK: nvvm.cp.async.commit.group
// CHECK: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = false}
// CHECK: nvgpu.mma.sync({{.*}}) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
// CHECK: scf.if %{{.*}} -> (vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>)
// CHECK: gpu.shuffle xor
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: nvvm.cp.async.wait.group 1
// CHECK-NEXT: gpu.barrier
// CHECK: nvvm.cp.async.commit.group
// CHECK: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = true}
// CHECK: nvgpu.mma.sync
// CHECK: scf.yield
// CHECK: nvvm.cp.async.wait.group 0
// CHECK: nvvm.bar.warp.sync
// CHECK: vector.store {{.*}} : memref<128x64xf16, #gpu.address_space<workgroup>>, vector<2xf16>
// CHECK: nvvm.bar.warp.sync
// CHECK: vector.load {{.*}} : memref<128x64xf16, #gpu.address_space<workgroup>>, vector<8xf16>
// CHECK: vector.store {{.*}} {alignment = 16 : i64} : memref<?x4x64xf16>, vector<8xf16>
func.func @ragged_causal(%q: memref<?x4x64xf16>, %qo: memref<?xi32>, %k: memref<?x2x64xf16>, %v: memref<?x2x64xf16>, %ki: memref<?xi32>, %o: memref<?x4x64xf16>, %lse: memref<?x4xf32>) {
  %kv = kv.ragged_view %k, %v, %ki : memref<?x2x64xf16>, memref<?x2x64xf16>, memref<?xi32> -> !r
  %s = kv.prefill %q, %qo, %kv {causal} : memref<?x4x64xf16>, memref<?xi32>, !r -> !s
  kv.store_state %s, %o, %lse : !s, memref<?x4x64xf16>, memref<?x4xf32>
  return
}

// -----

// Paged bf16 with a bit-packed mask: the page-table entries of each K/V
// tile are staged by 4-byte cp.async (into one of the slots), bf16
// fragments go through nvvm.mma.sync, and every tile takes the mask.
!c = !kv.paged<page_size = 16, kv_heads = 1, head_dim = 128, head_dim_v = 128, dtype = bf16, layout = hnd, storage = combined, table = block_table>
!s = !kv.state<?x8x128xbf16, base = e>

// CHECK-LABEL: gpu.func @prefill_hnd_combined_block_table_p16_h8x1_d128_bf16_bf16_
// CHECK: nvgpu.device_async_copy %{{.*}} : memref<?x?xi32> to memref<2x3xi32, #gpu.address_space<workgroup>>
// CHECK: scf.for
// CHECK: nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[{{.*}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>}
// CHECK: scf.if %true
// CHECK: memref.load %{{.*}} : memref<?xi8>
func.func @paged_bf16_packed_mask(%q: memref<?x8x128xbf16>, %qo: memref<?xi32>, %pool: memref<?x2x1x16x128xbf16>, %bt: memref<?x?xi32>, %lens: memref<?xi32>, %m: memref<?xi8>, %o: memref<?x8x128xbf16>, %lse: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x1x16x128xbf16>) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) : !c
  %s = kv.prefill %q, %qo, %kv mask(%m : memref<?xi8>) : memref<?x8x128xbf16>, memref<?xi32>, !c -> !s
  kv.store_state %s, %o, %lse : !s, memref<?x8x128xbf16>, memref<?x8xf32>
  return
}
