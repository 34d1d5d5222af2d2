// RUN: kvir-opt %S/Inputs/append-matrix.mlir --convert-kv-to-gpu=chip=sm_80 | FileCheck %s

// kv.append becomes one scatter kernel of 128-thread blocks, a thread per
// chunk of a (row, KV head): 8 heads x (16 K + 16 V chunks of 16 bytes) =
// 256 chunks per row at head dim 128 with interleaved RoPE (pairs within a
// chunk). Its plan takes `batch` from the page table (kv_indptr's length
// - 1), which the grid does not need: ceildiv(nnz * 256, 128) blocks.
// vLLM's V pool, strided along the head dim, takes one element per chunk:
// 2 heads x (4 K chunks per half with rotate_half + 64 V elements).

// CHECK: kvgpu.plan<"kv.append", "[[NHD:append_nhd_combined_csr_p16_h8_d128_f16_rope_[0-9a-f]+]]"
// CHECK-SAME: sizes = [<"nnz" from "k"[0]>, <"num_pages" from "pool"[0]>, <"kv_indptr_len" from "kv_indptr"[0]>, <"batch" = <kv_indptr_len - 1>>, <"num_page_ids" from "kv_indices"[0]>]
// CHECK-SAME: kernels = [<"append", @kv_kernels::@[[NHD]], always, grid = [<ceildiv(nnz * 256, 128)>, <1>, <1>], block = [128, 1, 1], shared = 0, dynamic_shared = 0, args = ["k", "v", "batch_indices", "positions", "pool", "kv_indptr", "kv_indices", "kv_last_page_len"]>]>
// CHECK-SAME: kvgpu.plan<"kv.append", "[[VLLM:append_vllm_split_block_table_p16_h2_d64_bf16_rope_[0-9a-f]+]]"
// CHECK-SAME: sizes = [<"nnz" from "k"[0]>, <"num_pages" from "k_pool"[0]>, <"batch" from "block_table"[0]>, <"max_pages" from "block_table"[1]>]
// CHECK-SAME: grid = [<ceildiv(nnz * 136, 128)>, <1>, <1>]

// CHECK-LABEL: func.func @nhd_csr_rope_interleave
// CHECK-NOT: kv.append
// CHECK: gpu.launch_func @kv_kernels::@[[NHD]] blocks in
// CHECK-SAME: threads in (%c128

// CHECK: gpu.func @[[NHD]]
// CHECK-SAME: nvvm.reqntid = array<i32: 128, 1, 1>
// CHECK: vector.load {{.*}} : memref<?x8x128xf16>, vector<8xf16>
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: llvm.call_intrinsic "llvm.nvvm.cos.approx.ftz.f"
// CHECK: llvm.call_intrinsic "llvm.nvvm.sin.approx.ftz.f"
// CHECK: vector.store {{.*}} {alignment = 16 : i64} : memref<?x2x16x8x128xf16>, vector<8xf16>
// CHECK: gpu.func @[[VLLM]]
// CHECK: vector.store {{.*}} {alignment = 2 : i64} : memref<?x2x64x16xbf16>, vector<1xbf16>
