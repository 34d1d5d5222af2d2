// RUN: kvir-opt %s -split-input-file --convert-kv-to-gpu=chip=sm_90a -verify-diagnostics

// Every attention kernel runs the variants; a sink merge still needs
// buffers to write.

// A sink merge whose state is not stored has no buffers to write.
!s = !kv.state<?x8x64xf16, base = e>
func.func @merge_sinks_unstored(%o0: memref<?x8x64xf16>, %l0: memref<?x8xf32>, %sinks: memref<8xf32>) -> !s {
  %a = kv.load_state %o0, %l0 : memref<?x8x64xf16>, memref<?x8xf32> -> !s
  // expected-error @below {{'kv.merge_sinks' op has no GPU kernel: its state is not stored by a kv.store_state (its only user)}}
  %m = kv.merge_sinks %a, %sinks : !s, memref<8xf32>
  return %m : !s
}

// -----

// Top-k gathers single tokens; vLLM's V pool is read in chunks of slots.
!c = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f16, layout = vllm, storage = split, table = block_table>
!s = !kv.state<?x8x128xf16, base = e>
func.func @topk_vllm(%q: memref<?x8x128xf16>, %k: memref<?x2x16x16x8xf16>, %v: memref<?x2x128x16xf16>, %bt: memref<?x?xi32>, %lens: memref<?xi32>, %idx: memref<?x64xi32>, %o: memref<?x8x128xf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%k, %v : memref<?x2x16x16x8xf16>, memref<?x2x128x16xf16>) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) : !c
  // expected-error @below {{'kv.decode' op has no GPU kernel: top-k gathers single tokens, and vLLM's transposed V pool is read in chunks of consecutive slots}}
  %s = kv.decode %q, %kv topk(%idx : memref<?x64xi32>) : memref<?x8x128xf16>, !c -> !s
  kv.store_state %s, %o, %l : !s, memref<?x8x128xf16>, memref<?x8xf32>
  return
}


// -----

// schedule = overlap reads V_{i-1} while tile i is prepared: fp8 V is
// converted into one tile per K/V tile.
!q8 = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr, quant = fp8_e4m3>
func.func @overlap_converted_v(%q: memref<?x8x128xf16>, %qo: memref<?xi32>, %p0: memref<?x2x16x2x128xf8E4M3FN>, %t0: memref<?xi32>, %t1: memref<?xi32>, %t2: memref<?xi32>, %ks: f32, %vs: f32, %o: memref<?x8x128xf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%p0 : memref<?x2x16x2x128xf8E4M3FN>) tables(%t0, %t1, %t2 : memref<?xi32>, memref<?xi32>, memref<?xi32>) fp8_scales(%ks, %vs) : !q8
  // expected-error @below {{'kv.prefill' op has no GPU kernel: schedule = overlap reads V where it landed: this V is converted into one tile per K/V tile}}
  %s = kv.prefill %q, %qo, %kv {causal, kvgpu.config = #kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, stages = 2, q_in_registers = false, max_partitions = 16, mma = wgmma, schedule = overlap>} : memref<?x8x128xf16>, memref<?xi32>, !q8 -> !kv.state<?x8x128xf16, base = 2>
  kv.store_state %s, %o, %l : !kv.state<?x8x128xf16, base = 2>, memref<?x8x128xf16>, memref<?x8xf32>
  return
}

// -----

// ... and issues every tile's products: mask_mod skips tiles.
!p = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr>
func.func @overlap_mask_mod(%q: memref<?x8x128xf16>, %qo: memref<?xi32>, %p0: memref<?x2x16x2x128xf16>, %t0: memref<?xi32>, %t1: memref<?xi32>, %t2: memref<?xi32>, %o: memref<?x8x128xf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%p0 : memref<?x2x16x2x128xf16>) tables(%t0, %t1, %t2 : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !p
  // expected-error @below {{'kv.prefill' op has no GPU kernel: schedule = overlap issues every tile's products: mask_mod skips tiles}}
  %s = kv.prefill %q, %qo, %kv mask_mod {
  ^bb0(%r: index, %h: index, %p: index, %j: index):
    %c3 = arith.constant 3 : index
    %m = arith.remui %j, %c3 : index
    %c0 = arith.constant 0 : index
    %keep = arith.cmpi ne, %m, %c0 : index
    kv.yield %keep : i1
  } {kvgpu.config = #kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, stages = 2, q_in_registers = false, max_partitions = 16, mma = wgmma, schedule = overlap>} : memref<?x8x128xf16>, memref<?xi32>, !p -> !kv.state<?x8x128xf16, base = 2>
  kv.store_state %s, %o, %l : !kv.state<?x8x128xf16, base = 2>, memref<?x8x128xf16>, memref<?x8xf32>
  return
}

// -----

// ... and is not MLA's (a 256-wide ckv takes a wgmma config by hand).
!m = !kv.paged<page_size = 64, kv_heads = 1, head_dim = 256, head_dim_v = 256, dtype = bf16, layout = nhd, storage = mla, table = csr, pe_dim = 64>
!s = !kv.state<?x64x256xbf16, base = e>
func.func @overlap_mla(%qn: memref<?x64x256xbf16>, %qp: memref<?x64x64xbf16>, %ckv: memref<?x64x256xbf16>, %kpe: memref<?x64x64xbf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>, %o: memref<?x64x256xbf16>, %l: memref<?x64xf32>) {
  %kv = kv.paged_view pools(%ckv, %kpe : memref<?x64x256xbf16>, memref<?x64x64xbf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !m
  // expected-error @below {{'kv.mla_decode' op has no GPU kernel: MLA's kernel has no overlapped schedule}}
  %s = kv.mla_decode %qn, %qp, %kv {kvgpu.config = #kvgpu.prefill<q_tile = 64, kv_tile = 32, warps = 4, stages = 2, q_in_registers = false, max_partitions = 1, mma = wgmma, schedule = overlap>} : memref<?x64x256xbf16>, memref<?x64x64xbf16>, !m -> !s
  kv.store_state %s, %o, %l : !s, memref<?x64x256xbf16>, memref<?x64xf32>
  return
}

// -----

// copy = tma copies pages that are whole boxes: not a token_offset table's.
!p = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = token_offset>
func.func @tma_token_offset(%q: memref<?x8x128xf16>, %qo: memref<?xi32>, %p0: memref<?x2x16x2x128xf16>, %t0: memref<?xi32>, %t1: memref<?xi32>, %o: memref<?x8x128xf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%p0 : memref<?x2x16x2x128xf16>) tables(%t0, %t1 : memref<?xi32>, memref<?xi32>) : !p
  // expected-error @below {{'kv.prefill' op has no GPU kernel: copy = tma: a token_offset table has no pages to copy as boxes}}
  %s = kv.prefill %q, %qo, %kv {causal, kvgpu.config = #kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, stages = 3, q_in_registers = false, max_partitions = 16, mma = wgmma, schedule = overlap, roles = producer, copy = tma>} : memref<?x8x128xf16>, memref<?xi32>, !p -> !kv.state<?x8x128xf16, base = 2>
  kv.store_state %s, %o, %l : !kv.state<?x8x128xf16, base = 2>, memref<?x8x128xf16>, memref<?x8xf32>
  return
}

// -----

// ... and over a row-major buffer: a strided K has no tensor map.
!r = !kv.ragged<kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f16>
func.func @tma_strided(%q: memref<?x8x128xf16>, %qo: memref<?xi32>, %k: memref<?x2x128xf16, strided<[512, 128, 1]>>, %v: memref<?x2x128xf16>, %ki: memref<?xi32>, %o: memref<?x8x128xf16>, %l: memref<?x8xf32>) {
  %kv = kv.ragged_view %k, %v, %ki : memref<?x2x128xf16, strided<[512, 128, 1]>>, memref<?x2x128xf16>, memref<?xi32> -> !r
  // expected-error @below {{'kv.prefill' op has no GPU kernel: copy = tma: a tensor map spans a row-major buffer with static inner dims, not memref<?x2x128xf16, strided<[512, 128, 1]>>}}
  %s = kv.prefill %q, %qo, %kv {kvgpu.config = #kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, stages = 3, q_in_registers = false, max_partitions = 16, mma = wgmma, schedule = overlap, roles = producer, copy = tma>} : memref<?x8x128xf16>, memref<?xi32>, !r -> !kv.state<?x8x128xf16, base = 2>
  kv.store_state %s, %o, %l : !kv.state<?x8x128xf16, base = 2>, memref<?x8x128xf16>, memref<?x8xf32>
  return
}

// -----

// copy = tma hands tiles over as they land: RoPE rotates K tiles first.
!p = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr>
func.func @tma_rope(%q: memref<?x8x128xf16>, %qo: memref<?xi32>, %p0: memref<?x2x16x2x128xf16>, %t0: memref<?xi32>, %t1: memref<?xi32>, %t2: memref<?xi32>, %o: memref<?x8x128xf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%p0 : memref<?x2x16x2x128xf16>) tables(%t0, %t1, %t2 : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !p
  // expected-error @below {{'kv.prefill' op has no GPU kernel: copy = tma: RoPE rotates each K tile after it lands: the producer copies it by cp.async, rotates it, then hands it over}}
  %s = kv.prefill %q, %qo, %kv {causal, rope = #kv.rope<rotate_half>, kvgpu.config = #kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, stages = 3, q_in_registers = false, max_partitions = 16, mma = wgmma, schedule = overlap, roles = producer, copy = tma>} : memref<?x8x128xf16>, memref<?xi32>, !p -> !kv.state<?x8x128xf16, base = 2>
  kv.store_state %s, %o, %l : !kv.state<?x8x128xf16, base = 2>, memref<?x8x128xf16>, memref<?x8xf32>
  return
}

// -----

// ... and stages page entries for its own threads only: top-k lists are
// read by the consumers' masks too.
!c = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = block_table>
!s = !kv.state<?x8x128xf16, base = e>
func.func @producer_topk(%q: memref<?x8x128xf16>, %pool: memref<?x2x16x2x128xf16>, %bt: memref<?x?xi32>, %lens: memref<?xi32>, %idx: memref<?x64xi32>, %o: memref<?x8x128xf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x2x128xf16>) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) : !c
  // expected-error @below {{'kv.decode' op has no GPU kernel: on tensor cores (head dim 128): roles = producer stages page entries for its own threads: top-k keys are read by the consumers' masks too}}
  %s = kv.decode %q, %kv topk(%idx : memref<?x64xi32>) {kvgpu.config = #kvgpu.prefill<q_tile = 64, kv_tile = 64, warps = 4, stages = 2, q_in_registers = false, max_partitions = 16, mma = wgmma, schedule = overlap, roles = producer>} : memref<?x8x128xf16>, !c -> !s
  kv.store_state %s, %o, %l : !s, memref<?x8x128xf16>, memref<?x8xf32>
  return
}

// -----

// One K and one V buffer (stages = 1) read K and V where they landed: fp8
// codes are converted per tile.
!q8 = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr, quant = fp8_e4m3>
func.func @single_buffer_converted(%q: memref<?x8x128xf16>, %qo: memref<?xi32>, %p0: memref<?x2x16x2x128xf8E4M3FN>, %t0: memref<?xi32>, %t1: memref<?xi32>, %t2: memref<?xi32>, %ks: f32, %vs: f32, %o: memref<?x8x128xf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%p0 : memref<?x2x16x2x128xf8E4M3FN>) tables(%t0, %t1, %t2 : memref<?xi32>, memref<?xi32>, memref<?xi32>) fp8_scales(%ks, %vs) : !q8
  // expected-error @below {{'kv.prefill' op has no GPU kernel: stages = 1 (one K and one V buffer) reads K and V where they landed: quantized or transposed KV is converted per tile (use a ring, stages >= 2)}}
  %s = kv.prefill %q, %qo, %kv {causal, kvgpu.config = #kvgpu.prefill<q_tile = 128, kv_tile = 32, warps = 4, stages = 1, q_in_registers = false, max_partitions = 16>} : memref<?x8x128xf16>, memref<?xi32>, !q8 -> !kv.state<?x8x128xf16, base = 2>
  kv.store_state %s, %o, %l : !kv.state<?x8x128xf16, base = 2>, memref<?x8x128xf16>, memref<?x8xf32>
  return
}

// -----

// ... and runs plain tiles: no keys turned by RoPE in place.
!p = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr>
func.func @single_buffer_rope(%q: memref<?x8x128xf16>, %qo: memref<?xi32>, %pool: memref<?x2x16x2x128xf16>, %t0: memref<?xi32>, %t1: memref<?xi32>, %t2: memref<?xi32>, %o: memref<?x8x128xf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x2x128xf16>) tables(%t0, %t1, %t2 : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !p
  // expected-error @below {{'kv.prefill' op has no GPU kernel: stages = 1 (one K and one V buffer) runs plain tiles: RoPE on keys, mask_mod tile skipping and top-k gathers need a ring (stages >= 2)}}
  %s = kv.prefill %q, %qo, %kv {causal, rope = #kv.rope<rotate_half>, kvgpu.config = #kvgpu.prefill<q_tile = 128, kv_tile = 32, warps = 4, stages = 1, q_in_registers = false, max_partitions = 16>} : memref<?x8x128xf16>, memref<?xi32>, !p -> !kv.state<?x8x128xf16, base = 2>
  kv.store_state %s, %o, %l : !kv.state<?x8x128xf16, base = 2>, memref<?x8x128xf16>, memref<?x8xf32>
  return
}

// -----

// ... and is a prefill schedule: the tensor-core decode keeps its ring.
!p = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr>
func.func @single_buffer_decode(%q: memref<?x16x128xf16>, %pool: memref<?x2x16x2x128xf16>, %t0: memref<?xi32>, %t1: memref<?xi32>, %t2: memref<?xi32>, %o: memref<?x16x128xf16>, %l: memref<?x16xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x2x128xf16>) tables(%t0, %t1, %t2 : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !p
  // expected-error @below {{'kv.decode' op has no GPU kernel: on tensor cores (head dim 128): stages = 1 (one K and one V buffer) is a prefill schedule; decode and MLA kernels use a ring}}
  %s = kv.decode %q, %kv {kvgpu.config = #kvgpu.prefill<q_tile = 16, kv_tile = 32, warps = 1, stages = 1, q_in_registers = false, max_partitions = 16>} : memref<?x16x128xf16>, !p -> !kv.state<?x16x128xf16, base = 2>
  kv.store_state %s, %o, %l : !kv.state<?x16x128xf16, base = 2>, memref<?x16x128xf16>, memref<?x16xf32>
  return
}
