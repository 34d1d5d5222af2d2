// RUN: kvir-opt %s -split-input-file --convert-kv-to-gpu=chip=sm_90a | FileCheck %s

// MLA decode with 16 heads over ckv / kpe slices of one 576-wide pool
// (FlashMLA's layout, page size 64) becomes the tensor-core MLA kernel,
// its split-KV twin and the ragged merge kernel:
//   - one query tile of 16 packed heads per request, 4 warps each
//     accumulating 128 of the 512 value columns;
//   - split-KV by the lengths: the host runs the work schedule
//     (kvir_schedule_work over kv_lengths, chunks of 32-key tiles, at least
//     256 keys, for 264 items: 132 SMs x 2 resident blocks); the direct
//     kernel runs when no request is cut (grid: the requests), else the
//     split kernel one block per item and the merge per request;
//   - q_nope and q_pe tiles, then per K/V tile one commit group with the
//     ckv and the kpe rows (cp.async, 16 bytes), waited for at depth 0:
//     the ckv tile is also the value tile;
//   - scores from both parts, then P V from the ckv tile (ldmatrix.trans).

!m = !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = bf16, layout = nhd, storage = mla, table = block_table, pe_dim = 64>
!ckv = memref<?x64x512xbf16, strided<[36864, 576, 1]>>
!kpe = memref<?x64x64xbf16, strided<[36864, 576, 1], offset: 512>>
!s = !kv.state<?x16x512xbf16, base = e>

// CHECK: kvgpu.launch_plans = [#kvgpu.plan<"kv.mla_decode", "[[DIRECT:mla_block_table_p64_h16_d512_pe64_bf16_bf16_[0-9a-f]+]]"
// CHECK-SAME: args = [<"q_nope", input, memref<?x16x512xbf16>, shape = [<batch>, <16>, <512>]>, <"q_pe", input, memref<?x16x64xbf16>, shape = [<batch>, <16>, <64>]>, <"ckv_pool", input, {{.*}}>, <"kpe_pool", input
// CHECK-SAME: <"kv_lengths", host, memref<?xi32>, shape = [<batch>]>, <"work_items", schedule, memref<?x4xi32>, shape = [<max_work>, <4>]>, <"merge_indptr", schedule, memref<?xi32>, shape = [<batch + 1>]>, <"partial_out", workspace, memref<?x16x512xf32>, shape = [<max_work>, <16>, <512>]>
// CHECK-SAME: <"num_partitions" = <min(64, max(1, ceildiv(264, max(1, batch))))>>, <"max_work" = <max(batch * num_partitions, max(batch, 264))>>, <"num_tile_slots" = <batch>>]
// CHECK-SAME: schedule = <lengths = "kv_lengths", items = "work_items", merge_indptr = "merge_indptr", count = "num_work", batch = "batch", uniform_chunks = "num_partitions", target_items = 264, granule = 32, min_chunk = 256, window_left = -1>
// CHECK-SAME: config = #kvgpu.prefill<q_tile = 16, kv_tile = 32, warps = 4, stages = 2, q_in_registers = false, max_partitions = 64, value_warps = 4>
// CHECK-SAME: kernels = [<"direct", @kv_kernels::@[[DIRECT]], unsplit, grid = [<num_tile_slots>, <1>, <1>], block = [128, 1, 1]
// CHECK-SAME: <"split", @kv_kernels::@mla_block_table_p64_h16_d512_pe64_bf16_f32_split_{{[0-9a-f]+}}, split, grid = [<num_work>, <1>, <1>]
// CHECK-SAME: args = ["q_nope", "q_pe", "ckv_pool", "kpe_pool", "block_table", "seq_lens", "work_items", "partial_out", "partial_lse", "out", "lse"]
// CHECK-SAME: <"merge", @kv_kernels::@merge_rows_h16_d512_bf16_base_e_{{[0-9a-f]+}}, split, grid = [<batch>, <16>, <1>]

// CHECK-LABEL: func.func @one_row_shared_pool
// CHECK-NOT: kv.mla_decode
// CHECK: gpu.launch_func @kv_kernels::@[[DIRECT]]
// CHECK: gpu.launch_func @kv_kernels::@mla_block_table_p64_h16_d512_pe64_bf16_f32_split_
// CHECK: gpu.launch_func @kv_kernels::@merge_rows_h16_d512_bf16_base_e_

// CHECK-LABEL: gpu.func @mla_block_table_p64_h16_d512_pe64_bf16_bf16_
// CHECK-SAME: nvvm.reqntid = array<i32: 128, 1, 1>
// CHECK: nvgpu.device_async_copy %{{.*}} : memref<?x16x512xbf16> to memref<16x512xbf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_copy %{{.*}} : memref<?x16x64xbf16> to memref<16x64xbf16, #gpu.address_space<workgroup>>
// CHECK: scf.for
// CHECK: nvvm.cp.async.wait.group 0
// CHECK-NEXT: gpu.barrier
// CHECK: nvgpu.device_async_copy %{{.*}} : memref<?x64x512xbf16, strided<[36864, 576, 1]>> to memref<2x32x512xbf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_copy %{{.*}} : memref<?x64x64xbf16, strided<[36864, 576, 1], offset: 512>> to memref<2x32x64xbf16, #gpu.address_space<workgroup>>
// CHECK: nvvm.cp.async.commit.group
// CHECK: nvvm.mma.sync
// CHECK: nvgpu.ldmatrix %{{.*}} {numTiles = 4 : i32, transpose = true}
// CHECK: scf.yield
func.func @one_row_shared_pool(%ckv: !ckv, %kpe: !kpe, %bt: memref<?x?xi32>, %lens: memref<?xi32>,
                               %qn: memref<?x16x512xbf16>, %qp: memref<?x16x64xbf16>, %o: memref<?x16x512xbf16>, %l: memref<?x16xf32>) {
  %kv = kv.paged_view pools(%ckv, %kpe : !ckv, !kpe) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) : !m
  %s = kv.mla_decode %qn, %qp, %kv : memref<?x16x512xbf16>, memref<?x16x64xbf16>, !m -> !s
  kv.store_state %s, %o, %l : !s, memref<?x16x512xbf16>, memref<?x16xf32>
  return
}

// -----

// Several causal query rows per request (speculative decoding): the query
// tiles pack rows and heads (64 packed rows: row r is query row r / 16,
// head r % 16), found by binary search over qo_indptr; on sm_90a two
// warpgroups of the same 64 rows on wgmma, each accumulating 256 value
// columns, the first scoring the tiles and sharing P and its rows'
// softmax (shared_p, row_stats).

!m = !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f16, layout = nhd, storage = mla, table = csr, pe_dim = 64>
!s = !kv.state<?x16x512xf16, base = e>

// CHECK: #kvgpu.plan<"kv.mla_decode", "[[ROWS:mla_csr_p64_h16_d512_pe64_f16_f16_rows_causal_[0-9a-f]+]]"
// CHECK-SAME: sizes = [<"nnz" from "q_nope"[0]>, <"qo_indptr_len" from "qo_indptr"[0]>, <"batch" = <qo_indptr_len - 1>>, {{.*}}<"num_tile_slots" = <floordiv(nnz * 16, 64) + batch>>
// CHECK-SAME: config = #kvgpu.prefill<q_tile = 64, kv_tile = 32, warps = 8, stages = 2, q_in_registers = false, max_partitions = 64, value_warps = 2, mma = wgmma>
// CHECK-SAME: args = ["q_nope", "q_pe", "qo_indptr", "ckv_pool", "kpe_pool", "kv_indptr", "kv_indices", "kv_last_page_len", "out", "lse"]

// CHECK-LABEL: func.func @rows_causal
// CHECK-NOT: kv.mla_decode
// CHECK: gpu.launch_func @kv_kernels::@[[ROWS]]

// CHECK-LABEL: gpu.func @mla_csr_p64_h16_d512_pe64_f16_f16_rows_causal_
// CHECK-SAME: nvvm.reqntid = array<i32: 256, 1, 1>
// CHECK: scf.while
// CHECK: scf.for
// CHECK: nvvm.wgmma.mma_async {{.*}}<m = 64, n = 32, k = 16>
// CHECK: vector.store
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK: gpu.barrier
// CHECK: nvvm.wgmma.mma_async {{.*}}<m = 64, n = 256, k = 16>, D[<f32>, <one>], A[<f16>, <one>, <row>], B[<f16>, <one>, <row>]
func.func @rows_causal(%ckv: memref<?x64x512xf16>, %kpe: memref<?x64x64xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>, %qo: memref<?xi32>,
                       %qn: memref<?x16x512xf16>, %qp: memref<?x16x64xf16>, %o: memref<?x16x512xf16>, %l: memref<?x16xf32>) {
  %kv = kv.paged_view pools(%ckv, %kpe : memref<?x64x512xf16>, memref<?x64x64xf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !m
  %s = kv.mla_decode %qn, %qp, %kv rows(%qo : memref<?xi32>) {causal} : memref<?x16x512xf16>, memref<?x16x64xf16>, !m -> !s
  kv.store_state %s, %o, %l : !s, memref<?x16x512xf16>, memref<?x16xf32>
  return
}

// -----

// Appending to an MLA cache (FlashInfer's append_paged_mla_kv_cache): the
// append kernel with ckv as K and kpe as V, a thread per 16-byte chunk of
// a row: 64 of ckv and 8 of kpe, through FlashMLA's 576-wide pool slices.

!m = !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = bf16, layout = nhd, storage = mla, table = csr, pe_dim = 64>
!ckv = memref<?x64x512xbf16, strided<[36864, 576, 1]>>
!kpe = memref<?x64x64xbf16, strided<[36864, 576, 1], offset: 512>>

// CHECK: kvgpu.plan<"kv.append", "[[APPEND:append_nhd_mla_csr_p64_h1_d512_bf16_[0-9a-f]+]]"
// CHECK-SAME: grid = [<ceildiv(nnz * 72, 128)>, <1>, <1>]
// CHECK-SAME: args = ["k", "v", "batch_indices", "positions", "ckv_pool", "kpe_pool", "kv_indptr", "kv_indices", "kv_last_page_len"]

// CHECK-LABEL: func.func @mla_append
// CHECK-NOT: kv.append
// CHECK: gpu.launch_func @kv_kernels::@[[APPEND]]

// CHECK: gpu.func @[[APPEND]]
// CHECK: vector.store {{.*}} {alignment = 16 : i64} : memref<?x64x512xbf16, strided<[36864, 576, 1]>>, vector<8xbf16>
// CHECK: vector.store {{.*}} {alignment = 16 : i64} : memref<?x64x64xbf16, strided<[36864, 576, 1], offset: 512>>, vector<8xbf16>
func.func @mla_append(%k: memref<?x1x512xbf16>, %v: memref<?x1x64xbf16>, %bi: memref<?xi32>, %pos: memref<?xi32>, %ckv: !ckv, %kpe: !kpe, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>) {
  %kv = kv.paged_view pools(%ckv, %kpe : !ckv, !kpe) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !m
  kv.append %k, %v, %bi, %pos into %kv : memref<?x1x512xbf16>, memref<?x1x64xbf16>, memref<?xi32>, memref<?xi32>, !m
  return
}
