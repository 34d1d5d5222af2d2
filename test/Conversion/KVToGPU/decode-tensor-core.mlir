// RUN: kvir-opt %S/Inputs/decode-tensor-core.mlir --convert-kv-to-gpu=chip=sm_90a | FileCheck %s
// RUN: kvir-opt %S/Inputs/decode-tensor-core.mlir --kv-tile="chip=sm_90a mma=mma_sync" --convert-kv-to-gpu=chip=sm_90a | FileCheck %s --check-prefix=SYNC

// Decodes the decode kernel cannot run (or runs slower: GQA groups of 8)
// get the tensor-core kernel with one query row per request: a query tile
// of the GQA group's heads of one request (grid: requests x KV heads) and
// the work schedule's split over the lengths. On sm_90a the tile is one
// wgmma warpgroup of 64 rows, the group's heads padded (two warpgroups
// sharing one softmax past 256 value columns); on mma.sync 16-row tiles up
// to the group, value columns split over warps past 128.

// CHECK: #kvgpu.plan<"kv.decode", "[[DV:decode_tc_nhd_split_csr_p16_h8x2_d192x128_bf16_bf16_[0-9a-f]+]]"
// CHECK-SAME: schedule = <lengths = "kv_lengths"
// CHECK-SAME: config = #kvgpu.prefill<q_tile = 64, kv_tile = 32, warps = 4, stages = 2, q_in_registers = false, max_partitions = 32, mma = wgmma>
// CHECK-SAME: kernels = [<"direct", @kv_kernels::@[[DV]], unsplit, grid = [<num_tile_slots>, <2>, <1>], block = [128, 1, 1]
// CHECK-SAME: <"split", @kv_kernels::@decode_tc_nhd_split_csr_p16_h8x2_d192x128_bf16_f32_split_{{[0-9a-f]+}}, split, grid = [<num_work>, <2>, <1>]
// CHECK-SAME: <"merge", @kv_kernels::@merge_rows_h8_d128_bf16_base_e_
// CHECK: #kvgpu.plan<"kv.decode", "[[W:decode_tc_nhd_combined_csr_p16_h4x1_d512x512_f16_f16_[0-9a-f]+]]"
// CHECK-SAME: config = #kvgpu.prefill<q_tile = 64, kv_tile = 32, warps = 8, stages = 2, q_in_registers = false, max_partitions = 32, value_warps = 2, mma = wgmma>
// CHECK: #kvgpu.plan<"kv.decode", "[[G:decode_tc_hnd_combined_block_table_p16_h64x1_d256x256_bf16_f32_[0-9a-f]+]]"
// CHECK-SAME: config = #kvgpu.prefill<q_tile = 64, kv_tile = 32, warps = 4, stages = 2, q_in_registers = false, max_partitions = 32, mma = wgmma>
// A group of 8 at head dim 128 (Llama-3-70B) is faster here than on the
// decode kernel. A block's query tile holds one KV head's group, so the
// work list targets as many items per KV head as the chip holds blocks
// over the KV heads: 132 SMs x 2 blocks / 8 = 33 on wgmma (82 KB of shared
// memory a block), 132 x 6 / 8 = 99 on mma.sync (not over 4 tiles a
// request, as if each held all 64 heads).
// CHECK: #kvgpu.plan<"kv.decode", "[[G8:decode_tc_nhd_combined_csr_p16_h64x8_d128x128_f16_f16_[0-9a-f]+]]"
// CHECK-SAME: <"max_work" = <max(batch * num_partitions, max(batch, 33))>>
// CHECK-SAME: target_items = 33, granule = 64, min_chunk = 256
// CHECK-SAME: config = #kvgpu.prefill<q_tile = 64, kv_tile = 64, warps = 4, stages = 2, q_in_registers = false, max_partitions = 32, mma = wgmma>

// SYNC: #kvgpu.plan<"kv.decode", "decode_tc_nhd_split_csr_p16_h8x2_d192x128_bf16_bf16_{{[0-9a-f]+}}"
// SYNC-SAME: config = #kvgpu.prefill<q_tile = 16, kv_tile = 32, warps = 1, stages = 2, q_in_registers = false, max_partitions = 32>
// SYNC-SAME: block = [32, 1, 1]
// SYNC: #kvgpu.plan<"kv.decode", "decode_tc_nhd_combined_csr_p16_h4x1_d512x512_f16_f16_{{[0-9a-f]+}}"
// SYNC-SAME: config = #kvgpu.prefill<q_tile = 16, kv_tile = 16, warps = 4, stages = 2, q_in_registers = false, max_partitions = 32, value_warps = 4>
// SYNC: #kvgpu.plan<"kv.decode", "decode_tc_hnd_combined_block_table_p16_h64x1_d256x256_bf16_f32_{{[0-9a-f]+}}"
// SYNC-SAME: config = #kvgpu.prefill<q_tile = 64, kv_tile = 32, warps = 8, stages = 2, q_in_registers = false, max_partitions = 32, value_warps = 2>
// SYNC: #kvgpu.plan<"kv.decode", "decode_tc_nhd_combined_csr_p16_h64x8_d128x128_f16_f16_{{[0-9a-f]+}}"
// SYNC-SAME: target_items = 99, granule = 32, min_chunk = 256
// SYNC-SAME: config = #kvgpu.prefill<q_tile = 16, kv_tile = 32, warps = 1, stages = 2, q_in_registers = false, max_partitions = 32>

// CHECK-LABEL: func.func @value_dim_differs
// CHECK-NOT: kv.decode
// CHECK: gpu.launch_func @kv_kernels::@[[DV]]
// CHECK-LABEL: func.func @head_dim_512
// CHECK: gpu.launch_func @kv_kernels::@[[W]]
// CHECK-LABEL: func.func @group_64
// CHECK: gpu.launch_func @kv_kernels::@[[G]]
// CHECK-LABEL: func.func @group_8
// CHECK-NOT: kv.decode
// CHECK: gpu.launch_func @kv_kernels::@[[G8]]
