// RUN: kvir-opt %s --convert-kv-to-gpu=chip=sm_80 | FileCheck %s

// convert-kv-to-gpu records how to launch what it built as typed launch
// plans in the module's kvgpu.launch_plans (the host launches, kvir-translate's
// manifests and C header all derive from them): per decode, its arguments
// with shape expressions (the host lengths and the work list included), its
// sizes (argument dims, the plan-free chunk count and the work list's bound
// for the chip: sm_80 has 108 SMs, 2 decode blocks each per KV head of 4),
// its work schedule, the workspace, and the three kernels with their launch
// conditions, grids, blocks and shared memory. Two decodes give two plans
// sharing nothing.

!a = !kv.paged<page_size = 32, kv_heads = 4, head_dim = 64, head_dim_v = 64,
               dtype = bf16, layout = hnd, storage = split, table = block_table>
!sa = !kv.state<?x16x64xbf16, base = e>
!b = !kv.paged<page_size = 8, kv_heads = 1, head_dim = 256, head_dim_v = 256,
               dtype = f16, layout = nhd, storage = combined, table = csr>
!sb = !kv.state<?x2x256xf32, base = 2>

// CHECK: module attributes {gpu.container_module, kvgpu.launch_plans = [
// First plan: group 4, head_dim 64 -> block (8, 4, 4).
// CHECK-SAME: #kvgpu.plan<"kv.decode", "[[A:decode_hnd_split_block_table_p32_h16x4_d64_bf16_bf16_[0-9a-f]+]]",
// CHECK-SAME: args = [<"q", input, memref<?x16x64xbf16>, shape = [<batch>, <16>, <64>]>, <"k_pool", input, memref<?x4x32x64xbf16>, shape = [<num_pages>, <4>, <32>, <64>]>, <"v_pool", input, memref<?x4x32x64xbf16>, shape = [<num_pages>, <4>, <32>, <64>]>, <"block_table", input, memref<?x?xi32>, shape = [<batch>, <max_pages>]>, <"seq_lens", input, memref<?xi32>, shape = [<batch>]>, <"out", output, memref<?x16x64xbf16>, shape = [<batch>, <16>, <64>]>, <"lse", output, memref<?x16xf32>, shape = [<batch>, <16>]>, <"kv_lengths", host, memref<?xi32>, shape = [<batch>]>, <"work_items", schedule, memref<?x4xi32>, shape = [<max_work>, <4>]>, <"merge_indptr", schedule, memref<?xi32>, shape = [<batch + 1>]>, <"partial_out", workspace, memref<?x16x64xf32>, shape = [<max_work>, <16>, <64>]>, <"partial_lse", workspace, memref<?x16xf32>, shape = [<max_work>, <16>]>]
// CHECK-SAME: sizes = [<"batch" from "q"[0]>, <"num_pages" from "k_pool"[0]>, <"max_pages" from "block_table"[1]>, <"num_partitions" = <min(32, max(1, ceildiv(216, max(1, batch * 4))))>>, <"max_work" = <max(batch * num_partitions, max(batch, {{[0-9]+}}))>>]
// CHECK-SAME: schedule = <lengths = "kv_lengths", items = "work_items", merge_indptr = "merge_indptr", count = "num_work", batch = "batch", uniform_chunks = "num_partitions", target_items = {{[0-9]+}}, granule = 16, min_chunk = 256, window_left = -1>
// CHECK-SAME: kernels = [<"direct", @kv_kernels::@[[A]], unsplit, grid = [<batch>, <4>, <1>], block = [8, 4, 4], shared = {{[0-9]+}}, dynamic_shared = 0, args = ["q", "k_pool", "v_pool", "block_table", "seq_lens", "out", "lse"]>,
// CHECK-SAME: <"split", @kv_kernels::@[[AS:decode_hnd_split_block_table_p32_h16x4_d64_bf16_f32_split_[0-9a-f]+]], split, grid = [<num_work>, <4>, <1>], block = [8, 4, 4], shared = {{[0-9]+}}, dynamic_shared = 0, args = ["q", "k_pool", "v_pool", "block_table", "seq_lens", "work_items", "partial_out", "partial_lse", "out", "lse"]>,
// CHECK-SAME: <"merge", @kv_kernels::@merge_rows_h16_d64_bf16_base_e_{{[0-9a-f]+}}, split, grid = [<batch>, <16>, <1>], block = [64, 1, 1], shared = 256, dynamic_shared = 0, args = ["partial_out", "partial_lse", "merge_indptr", "out", "lse"]>]>,
// Second plan: MQA-like group 2 over one KV head, head_dim 256 -> (32, 2, 2).
// CHECK-SAME: #kvgpu.plan<"kv.decode", "[[B:decode_nhd_combined_csr_p8_h2x1_d256_f16_f32_[0-9a-f]+]]",
// CHECK-SAME: <"kv_indptr", input, memref<?xi32>, shape = [<batch + 1>]>, <"kv_indices", input, memref<?xi32>, shape = [<num_page_ids>]>
// CHECK-SAME: <"num_partitions" = <min(32, max(1, ceildiv(216, max(1, batch))))>>
// CHECK-SAME: <"direct", @kv_kernels::@[[B]], unsplit, grid = [<batch>, <1>, <1>], block = [32, 2, 2]

// CHECK: func.func @two_decodes
// CHECK: gpu.launch_func @kv_kernels::@[[A]]
// CHECK: gpu.launch_func @kv_kernels::@[[AS]]
// CHECK: gpu.launch_func @kv_kernels::@[[B]]
// CHECK: gpu.module @kv_kernels
// CHECK-DAG: gpu.func @[[A]](
// CHECK-DAG: gpu.func @[[AS]](
// CHECK-DAG: gpu.func @[[B]](
func.func @two_decodes(%q: memref<?x16x64xbf16>, %k: memref<?x4x32x64xbf16>,
                       %v: memref<?x4x32x64xbf16>, %bt: memref<?x?xi32>,
                       %lens: memref<?xi32>, %o: memref<?x16x64xbf16>,
                       %l: memref<?x16xf32>,
                       %q2: memref<?x2x256xf16>, %pool: memref<?x2x8x1x256xf16>,
                       %ip: memref<?xi32>, %ix: memref<?xi32>, %last: memref<?xi32>,
                       %o2: memref<?x2x256xf32>, %l2: memref<?x2xf32>) {
  %kva = kv.paged_view pools(%k, %v : memref<?x4x32x64xbf16>, memref<?x4x32x64xbf16>)
      tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) : !a
  %sa = kv.decode %q, %kva : memref<?x16x64xbf16>, !a -> !sa
  kv.store_state %sa, %o, %l : !sa, memref<?x16x64xbf16>, memref<?x16xf32>
  %kvb = kv.paged_view pools(%pool : memref<?x2x8x1x256xf16>)
      tables(%ip, %ix, %last : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !b
  %sb = kv.decode %q2, %kvb : memref<?x2x256xf16>, !b -> !sb
  kv.store_state %sb, %o2, %l2 : !sb, memref<?x2x256xf32>, memref<?x2xf32>
  return
}
