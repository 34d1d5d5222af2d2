// RUN: kvir-opt %s --convert-kv-to-gpu=chip=sm_80 | FileCheck %s

// convert-kv-to-gpu records how to launch what it built in the module's
// kv.kernel_plans attribute (kvir-translate turns it into manifests): per
// decode, the three kernels with their grid/block formulas, shared memory
// and argument shapes, the split heuristic for the chip (sm_80: 108 SMs)
// and the workspace size. Two decodes give two plans sharing nothing.

!a = !kv.paged<page_size = 32, kv_heads = 4, head_dim = 64, head_dim_v = 64,
               dtype = bf16, layout = hnd, storage = split, table = block_table>
!sa = !kv.state<?x16x64xbf16, base = e>
!b = !kv.paged<page_size = 8, kv_heads = 1, head_dim = 256, head_dim_v = 256,
               dtype = f16, layout = nhd, storage = combined, table = csr>
!sb = !kv.state<?x2x256xf32, base = 2>

// CHECK: module attributes {gpu.container_module, kv.kernel_plans = [
// First plan: group 4, head_dim 64 -> block (8, 4, 4).
// CHECK-SAME: {direct = {args = [{dtype = "bf16", name = "q", shape = ["batch", 16, 64]}, {dtype = "bf16", name = "k_pool", shape = ["num_pages", 4, 32, 64]}, {dtype = "bf16", name = "v_pool", shape = ["num_pages", 4, 32, 64]}, {dtype = "i32", name = "block_table", shape = ["batch", "max_blocks"]}, {dtype = "i32", name = "seq_lens", shape = ["batch"]}, {dtype = "bf16", name = "out", shape = ["batch", 16, 64]}, {dtype = "f32", name = "lse", shape = ["batch", 16]}], block = [8, 4, 4], dynamic_shared_bytes = 0 : i64, grid = ["batch", 4, 1], name = "[[A:decode_hnd_split_block_table_p32_h16x4_d64_bf16_bf16_[0-9a-f]+]]", static_shared_bytes = {{[0-9]+}} : i64}
// CHECK-SAME: kv_type = !kv.paged<page_size = 32, kv_heads = 4, head_dim = 64, head_dim_v = 64, dtype = bf16, layout = hnd, storage = split, table = block_table>
// CHECK-SAME: merge = {args = [{dtype = "f32", name = "partial_out", shape = ["num_partitions", "batch", 16, 64]}, {dtype = "f32", name = "partial_lse", shape = ["num_partitions", "batch", 16]}, {dtype = "bf16", name = "out", shape = ["batch", 16, 64]}, {dtype = "f32", name = "lse", shape = ["batch", 16]}], block = [64, 1, 1], dynamic_shared_bytes = 0 : i64, grid = ["batch", 16, 1], name = "merge_partitions_h16_d64_bf16_base_e_{{[0-9a-f]+}}", static_shared_bytes = 256 : i64}
// CHECK-SAME: num_partitions = "min(32, max(1, ceil(216 / (batch * 4))))", op = "kv.decode"
// CHECK-SAME: split = {args = [{{.*}}{dtype = "index", name = "num_partitions", shape = []}], block = [8, 4, 4], dynamic_shared_bytes = 0 : i64, grid = ["batch", 4, "num_partitions"], name = "[[AS:decode_hnd_split_block_table_p32_h16x4_d64_bf16_f32_split_[0-9a-f]+]]"
// CHECK-SAME: split_heuristic = {head_dim_v = 64 : i64, kv_heads = 4 : i64, max_partitions = 32 : i64, q_heads = 16 : i64, sm_count = 108 : i64}, state_type = !kv.state<?x16x64xbf16, base = e>, workspace_bytes = "num_partitions == 1 ? 0 : num_partitions * batch * 16 * 65 * 4"}
// Second plan: MQA-like group 2 over one KV head, head_dim 256 -> (32, 2, 2).
// CHECK-SAME: {direct = {{{.*}}block = [32, 2, 2]{{.*}}grid = ["batch", 1, 1], name = "[[B:decode_nhd_combined_csr_p8_h2x1_d256_f16_f32_[0-9a-f]+]]"
// CHECK-SAME: num_partitions = "min(32, max(1, ceil(216 / (batch * 1))))"
// CHECK-SAME: workspace_bytes = "num_partitions == 1 ? 0 : num_partitions * batch * 2 * 257 * 4"}]}

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
