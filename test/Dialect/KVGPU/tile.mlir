// RUN: kvir-opt %s --kv-tile=chip=sm_90a -split-input-file | FileCheck %s
// RUN: kvir-opt %s --kv-tile=chip=sm_80 -split-input-file | FileCheck %s --check-prefix=A100
// RUN: kvir-opt %s --kv-tile=chip=sm_86 -split-input-file | FileCheck %s --check-prefix=SM86
// RUN: kvir-opt %s --kv-tile="chip=sm_90a mma=mma_sync" -split-input-file | FileCheck %s --check-prefix=SYNC

// FlashInfer's shape: 16-byte vectors of f16 (8 elements), 128 / 8 = 16 lanes
// along the head dim, 4 query heads per KV head, so 2 tokens in flight make
// 128 threads; 16-token tiles (8 KB of K and V), three of them in the
// stage ring: two in flight cover an H100 or A100 SM's share of bandwidth x
// latency (about 15 and 11 KB) even with one block per SM.
!c = !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr>
// CHECK-LABEL: func @gqa4
// CHECK: kv.decode {{.*}}kvgpu.config = #kvgpu.decode<vector = 8, threads_x = 16, threads_z = 2, tile_tokens = 16, stages = 3, max_partitions = 32>
// A100-LABEL: func @gqa4
// A100: kvgpu.config = #kvgpu.decode<vector = 8, threads_x = 16, threads_z = 2, tile_tokens = 16, stages = 3, max_partitions = 32>
func.func @gqa4(%q: memref<?x32x128xf16>, %pool: memref<?x2x16x8x128xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>) -> !kv.state<?x32x128xf16, base = 2> {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x8x128xf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !c
  %s = kv.decode %q, %kv : memref<?x32x128xf16>, !c -> !kv.state<?x32x128xf16, base = 2>
  return %s : !kv.state<?x32x128xf16, base = 2>
}

// -----

// head_dim 256: 32 lanes, group 8 makes 256 threads with one token in
// flight; a 256-wide bf16 row is 512 bytes, so three stages of K and V
// fit the 32 KB ring with 8-token tiles. (Group 8 stays on the decode
// kernel here for its f32 state: the tensor-core kernel's P . V runs in
// the KV type.)
!c = !kv.paged<page_size = 64, kv_heads = 2, head_dim = 256, head_dim_v = 256, dtype = bf16, layout = hnd, storage = split, table = block_table>
// CHECK-LABEL: func @wide_group8
// CHECK: kvgpu.config = #kvgpu.decode<vector = 8, threads_x = 32, threads_z = 1, tile_tokens = 8, stages = 3
func.func @wide_group8(%q: memref<?x16x256xbf16>, %k: memref<?x2x64x256xbf16>, %v: memref<?x2x64x256xbf16>, %t: memref<?x?xi32>, %l: memref<?xi32>) -> !kv.state<?x16x256xf32, base = e> {
  %kv = kv.paged_view pools(%k, %v : memref<?x2x64x256xbf16>, memref<?x2x64x256xbf16>) tables(%t, %l : memref<?x?xi32>, memref<?xi32>) : !c
  %s = kv.decode %q, %kv : memref<?x16x256xbf16>, !c -> !kv.state<?x16x256xf32, base = e>
  return %s : !kv.state<?x16x256xf32, base = e>
}

// -----

// With a state of the KV type, a GQA group of 8 takes the tensor-core
// kernel (its mma does the group's rows at once, where the decode kernel's
// dot product per head and token falls short of memory bandwidth). On
// sm_90a wgmma pads the group to a 64-row tile (one warpgroup, 32-key
// tiles past head dim 128); on mma.sync a query tile of 16 rows holds the
// group, head dim 256 splits the value columns over 2 warps.
!c = !kv.paged<page_size = 64, kv_heads = 2, head_dim = 256, head_dim_v = 256, dtype = bf16, layout = hnd, storage = split, table = block_table>
// CHECK-LABEL: func @wide_group8_bf16_state
// CHECK: kvgpu.config = #kvgpu.prefill<q_tile = 64, kv_tile = 32, warps = 4, stages = 2, q_in_registers = false, max_partitions = 32, mma = wgmma>
// SYNC-LABEL: func @wide_group8_bf16_state
// SYNC: kvgpu.config = #kvgpu.prefill<q_tile = 16, kv_tile = 32, warps = 2, stages = 2, q_in_registers = false, max_partitions = 32, value_warps = 2>
// A100-LABEL: func @wide_group8_bf16_state
// A100: kvgpu.config = #kvgpu.prefill<q_tile = 16, kv_tile = 32, warps = 2
func.func @wide_group8_bf16_state(%q: memref<?x16x256xbf16>, %k: memref<?x2x64x256xbf16>, %v: memref<?x2x64x256xbf16>, %t: memref<?x?xi32>, %l: memref<?xi32>) -> !kv.state<?x16x256xbf16, base = e> {
  %kv = kv.paged_view pools(%k, %v : memref<?x2x64x256xbf16>, memref<?x2x64x256xbf16>) tables(%t, %l : memref<?x?xi32>, memref<?xi32>) : !c
  %s = kv.decode %q, %kv : memref<?x16x256xbf16>, !c -> !kv.state<?x16x256xbf16, base = e>
  return %s : !kv.state<?x16x256xbf16, base = e>
}

// -----

// fp8 KV stays on the decode kernel at any group. Head dim 256: 16 lanes
// of 16 one-byte codes times the group of 8 make 128 threads.
!c = !kv.paged<page_size = 64, kv_heads = 2, head_dim = 256, head_dim_v = 256, dtype = bf16, layout = hnd, storage = split, table = block_table, quant = fp8_e4m3>
// CHECK-LABEL: func @wide_group8_fp8
// CHECK: kvgpu.config = #kvgpu.decode<vector = 16, threads_x = 16, threads_z = 1, tile_tokens = 4, stages = 8
func.func @wide_group8_fp8(%q: memref<?x16x256xbf16>, %k: memref<?x2x64x256xf8E4M3FN>, %v: memref<?x2x64x256xf8E4M3FN>, %t: memref<?x?xi32>, %l: memref<?xi32>, %ks: f32, %vs: f32) -> !kv.state<?x16x256xf32, base = e> {
  %kv = kv.paged_view pools(%k, %v : memref<?x2x64x256xf8E4M3FN>, memref<?x2x64x256xf8E4M3FN>) tables(%t, %l : memref<?x?xi32>, memref<?xi32>) fp8_scales(%ks, %vs) : !c
  %s = kv.decode %q, %kv : memref<?x16x256xbf16>, !c -> !kv.state<?x16x256xf32, base = e>
  return %s : !kv.state<?x16x256xf32, base = e>
}

// -----

// head_dim 80 = 10 vectors of 8: lanes round up to 16 (6 idle); whole warps
// force threads_z to a multiple of 2 for 16 x 1 lanes: 16 * 1 * 8 = 128.
!c = !kv.paged<page_size = 5, kv_heads = 4, head_dim = 80, head_dim_v = 80, dtype = f16, layout = nhd, storage = split, table = csr>
// CHECK-LABEL: func @odd_head_dim
// CHECK: kvgpu.config = #kvgpu.decode<vector = 8, threads_x = 16, threads_z = 8, tile_tokens = 16, stages = 3
func.func @odd_head_dim(%q: memref<?x4x80xf16>, %k: memref<?x5x4x80xf16>, %v: memref<?x5x4x80xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>) -> !kv.state<?x4x80xf16, base = 2> {
  %kv = kv.paged_view pools(%k, %v : memref<?x5x4x80xf16>, memref<?x5x4x80xf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !c
  %s = kv.decode %q, %kv : memref<?x4x80xf16>, !c -> !kv.state<?x4x80xf16, base = 2>
  return %s : !kv.state<?x4x80xf16, base = 2>
}

// -----

// The vLLM V layout [p, h, d, slot] has no two consecutive dims adjacent:
// it is staged transposed, so the lanes take K's vectors (x = 8).
!c = !kv.paged<page_size = 16, kv_heads = 1, head_dim = 32, head_dim_v = 32, dtype = f16, layout = vllm, storage = split, table = block_table>
// CHECK-LABEL: func @vllm_scalar
// CHECK: kvgpu.config = #kvgpu.decode<vector = 8, threads_x = 4, threads_z = 8, tile_tokens = 32, stages = 5
func.func @vllm_scalar(%q: memref<?x1x32xf16>, %k: memref<?x1x4x16x8xf16>, %v: memref<?x1x32x16xf16>, %t: memref<?x?xi32>, %l: memref<?xi32>) -> !kv.state<?x1x32xf16, base = e> {
  %kv = kv.paged_view pools(%k, %v : memref<?x1x4x16x8xf16>, memref<?x1x32x16xf16>) tables(%t, %l : memref<?x?xi32>, memref<?xi32>) : !c
  %s = kv.decode %q, %kv : memref<?x1x32xf16>, !c -> !kv.state<?x1x32xf16, base = e>
  return %s : !kv.state<?x1x32xf16, base = e>
}

// -----

// No decode configuration fits head_dim 512 in 16-byte vectors (64 lanes,
// more than a warp): the op runs on the tensor-core kernel. On sm_90a a
// 64-row wgmma tile of its heads, two warpgroups of 256 value columns
// sharing one softmax; on mma.sync a 16-row tile whose 4 warps split the
// value columns. The vLLM layout at head_dim 128 takes the decode kernel
// with K's 8-element vectors and 16-token tiles (a 32-byte sector of a V
// row's slots).
!w = !kv.paged<page_size = 16, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f16, layout = nhd, storage = combined, table = csr>
!v = !kv.paged<page_size = 16, kv_heads = 1, head_dim = 128, head_dim_v = 128, dtype = f16, layout = vllm, storage = split, table = block_table>
// CHECK-LABEL: func @no_config
// CHECK: kv.decode {{.*}}kvgpu.config = #kvgpu.prefill<q_tile = 64, kv_tile = 32, warps = 8, stages = 2, q_in_registers = false, max_partitions = 32, value_warps = 2, mma = wgmma>
// SYNC-LABEL: func @no_config
// SYNC: kv.decode {{.*}}kvgpu.config = #kvgpu.prefill<q_tile = 16, kv_tile = 16, warps = 4, stages = 2, q_in_registers = false, max_partitions = 32, value_warps = 4>
// CHECK: kv.decode {{.*}}kvgpu.config = #kvgpu.decode<vector = 8, threads_x = 16, threads_z = 8, tile_tokens = 16, stages = 3,
// CHECK: return
func.func @no_config(%q: memref<?x1x512xf16>, %pool: memref<?x2x16x1x512xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>,
                     %q2: memref<?x1x128xf16>, %k: memref<?x1x16x16x8xf16>, %v: memref<?x1x128x16xf16>, %t: memref<?x?xi32>, %l: memref<?xi32>)
    -> (!kv.state<?x1x512xf16, base = e>, !kv.state<?x1x128xf16, base = e>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x1x512xf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !w
  %s = kv.decode %q, %kv : memref<?x1x512xf16>, !w -> !kv.state<?x1x512xf16, base = e>
  %kv2 = kv.paged_view pools(%k, %v : memref<?x1x16x16x8xf16>, memref<?x1x128x16xf16>) tables(%t, %l : memref<?x?xi32>, memref<?xi32>) : !v
  %s2 = kv.decode %q2, %kv2 : memref<?x1x128xf16>, !v -> !kv.state<?x1x128xf16, base = e>
  return %s, %s2 : !kv.state<?x1x512xf16, base = e>, !kv.state<?x1x128xf16, base = e>
}

// -----

// An existing configuration is kept.
!c = !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr>
// CHECK-LABEL: func @kept
// CHECK: kvgpu.config = #kvgpu.decode<vector = 4, threads_x = 32, threads_z = 1, tile_tokens = 16, stages = 3, max_partitions = 8>
func.func @kept(%q: memref<?x32x128xf16>, %pool: memref<?x2x16x8x128xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>) -> !kv.state<?x32x128xf16, base = 2> {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x8x128xf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !c
  %s = kv.decode %q, %kv {kvgpu.config = #kvgpu.decode<vector = 4, threads_x = 32, threads_z = 1, tile_tokens = 16, stages = 3, max_partitions = 8>} : memref<?x32x128xf16>, !c -> !kv.state<?x32x128xf16, base = 2>
  return %s : !kv.state<?x32x128xf16, base = 2>
}

// -----

// Prefill up to head dim 128 on mma.sync where the chip has wgmma (its
// fallback): 128 packed query rows against 64-key tiles, one 16-row mma
// tile per warp (8 warps), queries kept in registers. On sm_80-89 above
// head dim 64, FlashAttention-2's shape: 4 warps of 32 rows against 32-key
// tiles in one K and one V buffer (stages = 1, 48 KB: two blocks per SM). On sm_90a,
// wgmma: two consumer warpgroups of 64 rows against 64-key tiles that a
// producer warpgroup copies into a ring of three stages (by TMA: the pages
// are whole boxes), Q read from shared memory (128 KB), the softmax
// overlapping the products.
!c = !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr>
// CHECK-LABEL: func @prefill_d128
// CHECK: kv.prefill {{.*}}kvgpu.config = #kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, stages = 3, q_in_registers = false, max_partitions = 16, mma = wgmma, schedule = overlap, roles = producer, copy = tma>
// SYNC-LABEL: func @prefill_d128
// SYNC: kv.prefill {{.*}}kvgpu.config = #kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, stages = 2, q_in_registers = true, max_partitions = 16>
// A100-LABEL: func @prefill_d128
// A100: kvgpu.config = #kvgpu.prefill<q_tile = 128, kv_tile = 32, warps = 4, stages = 1, q_in_registers = false, max_partitions = 16>
// SM86-LABEL: func @prefill_d128
// SM86: kvgpu.config = #kvgpu.prefill<q_tile = 128, kv_tile = 32, warps = 4, stages = 1, q_in_registers = false, max_partitions = 16>
func.func @prefill_d128(%q: memref<?x32x128xf16>, %qo: memref<?xi32>, %pool: memref<?x2x16x8x128xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>) -> !kv.state<?x32x128xf16, base = 2> {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x8x128xf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !c
  %s = kv.prefill %q, %qo, %kv {causal} : memref<?x32x128xf16>, memref<?xi32>, !c -> !kv.state<?x32x128xf16, base = 2>
  return %s : !kv.state<?x32x128xf16, base = 2>
}

// -----

// Head dim 256 halves both mma.sync tiles and reloads the queries from
// shared memory per K tile (the output accumulators alone take 128
// registers); wgmma keeps 128 rows against 48-key tiles.
!r = !kv.ragged<kv_heads = 2, head_dim = 256, head_dim_v = 256, dtype = bf16>
// CHECK-LABEL: func @prefill_ragged_d256
// CHECK: kvgpu.config = #kvgpu.prefill<q_tile = 128, kv_tile = 48, warps = 8, stages = 2, q_in_registers = false, max_partitions = 16, mma = wgmma, schedule = overlap>
// SYNC-LABEL: func @prefill_ragged_d256
// SYNC: kvgpu.config = #kvgpu.prefill<q_tile = 64, kv_tile = 32, warps = 4, stages = 2, q_in_registers = false, max_partitions = 16>
func.func @prefill_ragged_d256(%q: memref<?x4x256xbf16>, %qo: memref<?xi32>, %k: memref<?x2x256xbf16>, %v: memref<?x2x256xbf16>, %ki: memref<?xi32>) -> !kv.state<?x4x256xbf16, base = e> {
  %kv = kv.ragged_view %k, %v, %ki : memref<?x2x256xbf16>, memref<?x2x256xbf16>, memref<?xi32> -> !r
  %s = kv.prefill %q, %qo, %kv : memref<?x4x256xbf16>, memref<?xi32>, !r -> !kv.state<?x4x256xbf16, base = e>
  return %s : !kv.state<?x4x256xbf16, base = e>
}

// -----

// A head dim no mma tile covers gets no configuration (convert-kv-to-gpu
// then says why).
!r = !kv.ragged<kv_heads = 2, head_dim = 72, head_dim_v = 72, dtype = f16>
// CHECK-LABEL: func @prefill_d72
// CHECK-NOT: kvgpu.config
func.func @prefill_d72(%q: memref<?x4x72xf16>, %qo: memref<?xi32>, %k: memref<?x2x72xf16>, %v: memref<?x2x72xf16>, %ki: memref<?xi32>) -> !kv.state<?x4x72xf16, base = e> {
  %kv = kv.ragged_view %k, %v, %ki : memref<?x2x72xf16>, memref<?x2x72xf16>, memref<?xi32> -> !r
  %s = kv.prefill %q, %qo, %kv : memref<?x4x72xf16>, memref<?xi32>, !r -> !kv.state<?x4x72xf16, base = e>
  return %s : !kv.state<?x4x72xf16, base = e>
}

// -----

// MLA: a query tile of the 128 heads' first 64 packed rows (FlashMLA's 64),
// 8 warps of which two per 16 rows split the 512 value columns, 32-key
// ckv + kpe tiles (147 KB with the query tile: within an H100's or A100's
// shared memory per block); sm_86's 99 KB take 16-key tiles and 32 rows.
// sm_90a runs the 64 rows on wgmma, two warpgroups each accumulating 256
// value columns with one softmax between them.
!m = !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = bf16, layout = nhd, storage = mla, table = csr, pe_dim = 64>
// CHECK-LABEL: func @mla_h128
// CHECK: kv.mla_decode {{.*}}kvgpu.config = #kvgpu.prefill<q_tile = 64, kv_tile = 32, warps = 8, stages = 2, q_in_registers = false, max_partitions = 64, value_warps = 2, mma = wgmma>
// SYNC-LABEL: func @mla_h128
// SYNC: kv.mla_decode {{.*}}kvgpu.config = #kvgpu.prefill<q_tile = 64, kv_tile = 32, warps = 8, stages = 2, q_in_registers = false, max_partitions = 64, value_warps = 2>
// A100-LABEL: func @mla_h128
// A100: kvgpu.config = #kvgpu.prefill<q_tile = 64, kv_tile = 32, warps = 8, stages = 2, q_in_registers = false, max_partitions = 64, value_warps = 2>
// SM86-LABEL: func @mla_h128
// SM86: kvgpu.config = #kvgpu.prefill<q_tile = 32, kv_tile = 16, warps = 8, stages = 2, q_in_registers = false, max_partitions = 64, value_warps = 4>
func.func @mla_h128(%qn: memref<?x128x512xbf16>, %qp: memref<?x128x64xbf16>, %ckv: memref<?x64x512xbf16>, %kpe: memref<?x64x64xbf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>) -> !kv.state<?x128x512xbf16, base = e> {
  %kv = kv.paged_view pools(%ckv, %kpe : memref<?x64x512xbf16>, memref<?x64x64xbf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !m
  %s = kv.mla_decode %qn, %qp, %kv : memref<?x128x512xbf16>, memref<?x128x64xbf16>, !m -> !kv.state<?x128x512xbf16, base = e>
  return %s : !kv.state<?x128x512xbf16, base = e>
}

// -----

// 16 heads: one 16-row tile per request, four warps of 128 value columns.
!m = !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f16, layout = nhd, storage = mla, table = csr, pe_dim = 64>
// CHECK-LABEL: func @mla_h16
// CHECK: kv.mla_decode {{.*}}kvgpu.config = #kvgpu.prefill<q_tile = 16, kv_tile = 32, warps = 4, stages = 2, q_in_registers = false, max_partitions = 64, value_warps = 4>
// A100-LABEL: func @mla_h16
func.func @mla_h16(%qn: memref<?x16x512xf16>, %qp: memref<?x16x64xf16>, %ckv: memref<?x64x512xf16>, %kpe: memref<?x64x64xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>) -> !kv.state<?x16x512xf16, base = e> {
  %kv = kv.paged_view pools(%ckv, %kpe : memref<?x64x512xf16>, memref<?x64x64xf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !m
  %s = kv.mla_decode %qn, %qp, %kv : memref<?x16x512xf16>, memref<?x16x64xf16>, !m -> !kv.state<?x16x512xf16, base = e>
  return %s : !kv.state<?x16x512xf16, base = e>
}

// -----

// Top-k lists of several query rows per request: a tile lies within one
// query row, the fewest tiles per row, as even as whole m-tiles make them.
// 8 heads (DeepSeek-V3.2's 128 over 16 GPUs): one 16-row tile, half of it
// padding; 24: one of 32; 80: two of 48 (16 padding rows, not 48).
!m = !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = bf16, layout = nhd, storage = mla, table = block_table, pe_dim = 64>
// CHECK-LABEL: func @mla_topk_rows_h8
// CHECK: kv.mla_decode {{.*}}kvgpu.config = #kvgpu.prefill<q_tile = 16, kv_tile = 32, warps = 4, stages = 2, q_in_registers = false, max_partitions = 64, value_warps = 4>
func.func @mla_topk_rows_h8(%qn: memref<?x8x512xbf16>, %qp: memref<?x8x64xbf16>, %ckv: memref<?x64x512xbf16>, %kpe: memref<?x64x64xbf16>, %bt: memref<?x?xi32>, %lens: memref<?xi32>, %qo: memref<?xi32>, %idx: memref<?x128xi32>) -> !kv.state<?x8x512xbf16, base = e> {
  %kv = kv.paged_view pools(%ckv, %kpe : memref<?x64x512xbf16>, memref<?x64x64xbf16>) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) : !m
  %s = kv.mla_decode %qn, %qp, %kv rows(%qo : memref<?xi32>) topk(%idx : memref<?x128xi32>) : memref<?x8x512xbf16>, memref<?x8x64xbf16>, !m -> !kv.state<?x8x512xbf16, base = e>
  return %s : !kv.state<?x8x512xbf16, base = e>
}

// -----

!m = !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = bf16, layout = nhd, storage = mla, table = block_table, pe_dim = 64>
// CHECK-LABEL: func @mla_topk_rows_h24
// CHECK: kv.mla_decode {{.*}}kvgpu.config = #kvgpu.prefill<q_tile = 32, kv_tile = 32, warps = 8, stages = 2, q_in_registers = false, max_partitions = 64, value_warps = 4>
func.func @mla_topk_rows_h24(%qn: memref<?x24x512xbf16>, %qp: memref<?x24x64xbf16>, %ckv: memref<?x64x512xbf16>, %kpe: memref<?x64x64xbf16>, %bt: memref<?x?xi32>, %lens: memref<?xi32>, %qo: memref<?xi32>, %idx: memref<?x128xi32>) -> !kv.state<?x24x512xbf16, base = e> {
  %kv = kv.paged_view pools(%ckv, %kpe : memref<?x64x512xbf16>, memref<?x64x64xbf16>) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) : !m
  %s = kv.mla_decode %qn, %qp, %kv rows(%qo : memref<?xi32>) topk(%idx : memref<?x128xi32>) : memref<?x24x512xbf16>, memref<?x24x64xbf16>, !m -> !kv.state<?x24x512xbf16, base = e>
  return %s : !kv.state<?x24x512xbf16, base = e>
}

// -----

!m = !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = bf16, layout = nhd, storage = mla, table = block_table, pe_dim = 64>
// CHECK-LABEL: func @mla_topk_rows_h80
// CHECK: kv.mla_decode {{.*}}kvgpu.config = #kvgpu.prefill<q_tile = 48, kv_tile = 32, warps = 12, stages = 2, q_in_registers = false, max_partitions = 64, value_warps = 4>
func.func @mla_topk_rows_h80(%qn: memref<?x80x512xbf16>, %qp: memref<?x80x64xbf16>, %ckv: memref<?x64x512xbf16>, %kpe: memref<?x64x64xbf16>, %bt: memref<?x?xi32>, %lens: memref<?xi32>, %qo: memref<?xi32>, %idx: memref<?x128xi32>) -> !kv.state<?x80x512xbf16, base = e> {
  %kv = kv.paged_view pools(%ckv, %kpe : memref<?x64x512xbf16>, memref<?x64x64xbf16>) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) : !m
  %s = kv.mla_decode %qn, %qp, %kv rows(%qo : memref<?xi32>) topk(%idx : memref<?x128xi32>) : memref<?x80x512xbf16>, memref<?x80x64xbf16>, !m -> !kv.state<?x80x512xbf16, base = e>
  return %s : !kv.state<?x80x512xbf16, base = e>
}

// -----

// A cascade's shared level (kv.shared_level, from kv-expand-cascade): one
// 256-row query tile of 16 warps, 32-key tiles, queries reloaded per K tile
// (128 registers at 512 threads), so the shared keys are read once for
// 256 packed rows; 96 KB of tiles fit sm_86 too. sm_90a runs the tile as
// four warpgroups on wgmma.
!c = !kv.paged<page_size = 16, kv_heads = 1, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr>
// CHECK-LABEL: func @shared_level
// CHECK: kv.prefill {{.*}}kvgpu.config = #kvgpu.prefill<q_tile = 256, kv_tile = 32, warps = 16, stages = 2, q_in_registers = false, max_partitions = 16, mma = wgmma>
// SYNC-LABEL: func @shared_level
// SYNC: kv.prefill {{.*}}kvgpu.config = #kvgpu.prefill<q_tile = 256, kv_tile = 32, warps = 16, stages = 2, q_in_registers = false, max_partitions = 16>
// SM86-LABEL: func @shared_level
// SM86: kvgpu.config = #kvgpu.prefill<q_tile = 256, kv_tile = 32, warps = 16, stages = 2, q_in_registers = false, max_partitions = 16>
func.func @shared_level(%q: memref<?x4x128xf16>, %qo: memref<?xi32>, %pool: memref<?x2x16x1x128xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>) -> !kv.state<?x4x128xf16, base = 2> {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x1x128xf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !c
  %s = kv.prefill %q, %qo, %kv {kv.shared_level} : memref<?x4x128xf16>, memref<?xi32>, !c -> !kv.state<?x4x128xf16, base = 2>
  return %s : !kv.state<?x4x128xf16, base = 2>
}

// -----

// Head dim 512: 32-row tiles of 16 keys, 8 warps of which 4 per 16 rows
// split the value columns in slices of 128 (96 KB of tiles: every chip).
!c = !kv.paged<page_size = 16, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f16, layout = nhd, storage = combined, table = csr>
// CHECK-LABEL: func @prefill_d512
// CHECK: kv.prefill {{.*}}kvgpu.config = #kvgpu.prefill<q_tile = 32, kv_tile = 16, warps = 8, stages = 2, q_in_registers = false, max_partitions = 16, value_warps = 4>
// SM86-LABEL: func @prefill_d512
// SM86: kvgpu.config = #kvgpu.prefill<q_tile = 32, kv_tile = 16, warps = 8, stages = 2, q_in_registers = false, max_partitions = 16, value_warps = 4>
func.func @prefill_d512(%q: memref<?x2x512xf16>, %qo: memref<?xi32>, %pool: memref<?x2x16x1x512xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>) -> !kv.state<?x2x512xf16, base = 2> {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x1x512xf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !c
  %s = kv.prefill %q, %qo, %kv {causal} : memref<?x2x512xf16>, memref<?xi32>, !c -> !kv.state<?x2x512xf16, base = 2>
  return %s : !kv.state<?x2x512xf16, base = 2>
}

// -----

// On sm_80-89 the tiles keep their ring where they are not plain tiles
// scored where they landed: RoPE rotates K in a ring stage, mask_mod skips
// tiles; up to head dim 64 the ring's kernel keeps two blocks already.
!c = !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr>
!d = !kv.paged<page_size = 16, kv_heads = 8, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
// A100-LABEL: func @prefill_keeps_ring
// A100: kv.prefill {{.*}}kvgpu.config = #kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, stages = 2, q_in_registers = true, max_partitions = 16>
// A100: kv.prefill {{.*}} mask_mod
// A100: } {kvgpu.config = #kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, stages = 2, q_in_registers = true, max_partitions = 16>}
// A100: kv.prefill {{.*}}kvgpu.config = #kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, stages = {{[2-4]}}, q_in_registers = true, max_partitions = 16>
func.func @prefill_keeps_ring(%q: memref<?x32x128xf16>, %q64: memref<?x32x64xf16>, %qo: memref<?xi32>, %pos: memref<?xi32>, %pool: memref<?x2x16x8x128xf16>, %pool64: memref<?x2x16x8x64xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>) -> (!kv.state<?x32x128xf16, base = 2>, !kv.state<?x32x128xf16, base = 2>, !kv.state<?x32x64xf16, base = 2>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x8x128xf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !c
  %kv64 = kv.paged_view pools(%pool64 : memref<?x2x16x8x64xf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !d
  %r = kv.prefill %q, %qo, %kv positions(%pos : memref<?xi32>) {causal, rope = #kv.rope<rotate_half, theta = 1.000000e+04, scale = 1.000000e+00>} : memref<?x32x128xf16>, memref<?xi32>, !c -> !kv.state<?x32x128xf16, base = 2>
  %m = kv.prefill %q, %qo, %kv mask_mod {
  ^bb0(%row: index, %h: index, %p: index, %j: index):
    %in = arith.cmpi sle, %j, %p : index
    kv.yield %in : i1
  } : memref<?x32x128xf16>, memref<?xi32>, !c -> !kv.state<?x32x128xf16, base = 2>
  %n = kv.prefill %q64, %qo, %kv64 {causal} : memref<?x32x64xf16>, memref<?xi32>, !d -> !kv.state<?x32x64xf16, base = 2>
  return %r, %m, %n : !kv.state<?x32x128xf16, base = 2>, !kv.state<?x32x128xf16, base = 2>, !kv.state<?x32x64xf16, base = 2>
}
