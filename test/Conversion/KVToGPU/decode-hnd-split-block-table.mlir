// RUN: kvir-opt %s --convert-kv-to-gpu=chip=sm_80 | FileCheck %s

// HND layout with separate K and V pools and a vLLM block table, bf16 KV and
// an f32 base-e state, soft cap, window and sm_scale: K and V rows are
// [page, head, slot, dim] of their own pools, the page id comes from
// block_table[request][logical page] once per page, kv_len from seq_lens
// once per block. The host reads seq_lens for the work schedule, whose
// window (100) is the op's: a request sees at most 101 keys. The config
// pins the decode kernel (a GQA group of 8 would take the tensor-core
// kernel: decode-tensor-core.mlir).

!cache = !kv.paged<page_size = 64, kv_heads = 2, head_dim = 64, head_dim_v = 64,
                   dtype = bf16, layout = hnd, storage = split, table = block_table>
!state = !kv.state<?x16x64xf32, base = e>

// CHECK-LABEL: func.func @decode_hnd
// CHECK: arith.ceildivsi %c216
// CHECK: call @kvir_schedule_work(%{{.*}}, %{{.*}}, %c100_i64,
// CHECK: gpu.launch_func @kv_kernels::@[[DIRECT:decode_hnd_split_block_table_p64_h16x2_d64_bf16_f32_[0-9a-f]+]] blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in (%c8, %c8{{.*}}, %c2{{.*}})
// CHECK: gpu.launch_func @kv_kernels::@[[SPLIT:decode_hnd_split_block_table_p64_h16x2_d64_bf16_f32_split_[0-9a-f]+]]
// CHECK: gpu.launch_func @kv_kernels::@[[MERGE:merge_rows_h16_d64_f32_base_e_[0-9a-f]+]]

// CHECK: gpu.func @[[DIRECT]](%[[Q:[^:]*]]: memref<?x16x64xbf16>, %[[K:[^:]*]]: memref<?x2x64x64xbf16>, %[[V:[^:]*]]: memref<?x2x64x64xbf16>, %[[BT:[^:]*]]: memref<?x?xi32>, %[[LENS:[^:]*]]: memref<?xi32>, %[[OUT:[^:]*]]: memref<?x16x64xf32>, %[[LSE:[^:]*]]: memref<?x16xf32>)
// CHECK-SAME: nvvm.reqntid = array<i32: 8, 8, 2>
// kv_len once per block, and the window: start = max(0, kv_len - 1 - 100).
// CHECK: memref.load %[[LENS]][%block_id_x] : memref<?xi32>
// CHECK: %[[W:.*]] = arith.constant 100 : index
// CHECK: arith.subi %{{.*}}, %[[W]]
// CHECK: arith.maxsi
// CHECK: gpu.barrier
// CHECK: memref.load %[[BT]][%block_id_x, %{{.*}}] : memref<?x?xi32>
// K and V rows: 16-byte cp.async copies into the stage ring.
// CHECK: nvgpu.device_async_copy %[[K]][%{{.*}}, %block_id_y, %{{.*}}, %{{.*}}], %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}], 8, %{{.*}} {bypassL1} : memref<?x2x64x64xbf16> to memref<3x32x64xbf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_copy %[[V]][%{{.*}}, %block_id_y, %{{.*}}, %{{.*}}], %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}], 8, %{{.*}} {bypassL1} : memref<?x2x64x64xbf16> to memref<3x32x64xbf16, #gpu.address_space<workgroup>>
// x-threads reduce over 8 lanes: xor 4, 2, 1.
// CHECK: %[[O4:.*]] = arith.constant 4 : i32
// CHECK: gpu.shuffle xor %{{.*}}, %[[O4]]
// CHECK: gpu.shuffle xor
// CHECK: gpu.shuffle xor
// The soft cap c tanh(s / c) as c (1 - 2 / (2^(2 s log2(e) / c) + 1)).
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: arith.divf
// The base-e LSE: (m + log2 l) ln 2.
// CHECK: llvm.call_intrinsic "llvm.nvvm.lg2.approx.ftz.f"
// CHECK: arith.constant 0.693147182 : f32
// CHECK: vector.store %{{.*}}, %[[OUT]][%block_id_x, %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x16x64xf32>, vector<8xf32>
// CHECK: memref.store %{{.*}}, %[[LSE]][%block_id_x, %{{.*}}] : memref<?x16xf32>
// CHECK: gpu.return

// CHECK: gpu.func @[[SPLIT]]
// CHECK: gpu.func @[[MERGE]]({{.*}}) workgroup(%{{.*}} : memref<64xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// Partial LSEs are base 2; the merged one is base e.
// CHECK: arith.constant 0.693147182 : f32
func.func @decode_hnd(%q: memref<?x16x64xbf16>, %k: memref<?x2x64x64xbf16>,
                      %v: memref<?x2x64x64xbf16>, %bt: memref<?x?xi32>,
                      %lens: memref<?xi32>, %out: memref<?x16x64xf32>,
                      %lse: memref<?x16xf32>) {
  %kv = kv.paged_view pools(%k, %v : memref<?x2x64x64xbf16>, memref<?x2x64x64xbf16>)
      tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) : !cache
  %s = kv.decode %q, %kv {logits_soft_cap = 30.0 : f32, window_left = 100 : i64,
                          sm_scale = 0.125 : f32,
                          kvgpu.config = #kvgpu.decode<vector = 8, threads_x = 8, threads_z = 2, tile_tokens = 32, stages = 3, max_partitions = 32>}
      : memref<?x16x64xbf16>, !cache -> !state
  kv.store_state %s, %out, %lse : !state, memref<?x16x64xf32>, memref<?x16xf32>
  return
}
