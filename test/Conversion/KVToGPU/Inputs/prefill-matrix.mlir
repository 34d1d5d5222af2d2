// Prefills spanning the configuration space (head dims 64 / 128 / 256,
// f16 / bf16, paged NHD / HND, split / combined, CSR / block table / token
// offset, ragged; causal, window, soft cap, bool and bit-packed masks, f32
// output; a hand-given two-tiles-per-warp config; a cascade's shared level
// with its 256-row tile; head dim 512 with value warps; fp8 e4m3 and int8
// groups; vLLM f16 / fp8; RoPE rotate-half with Llama 3.1 scaling and
// interleaved with rotary_dim; f32 on the decode kernel by query rows): every
// kernel kv-to-ptx generates for them goes to
// ptxas.
func.func @nhd_csr_p16_d128_g4_f16_causal(%q: memref<?x32x128xf16>, %qo: memref<?xi32>, %p0: memref<?x2x16x8x128xf16>, %t0: memref<?xi32>, %t1: memref<?xi32>, %t2: memref<?xi32>, %o: memref<?x32x128xf16>, %l: memref<?x32xf32>) {
  %kv = kv.paged_view pools(%p0 : memref<?x2x16x8x128xf16>) tables(%t0, %t1, %t2 : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr>
  %s = kv.prefill %q, %qo, %kv {causal} : memref<?x32x128xf16>, memref<?xi32>, !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr> -> !kv.state<?x32x128xf16, base = 2>
  kv.store_state %s, %o, %l : !kv.state<?x32x128xf16, base = 2>, memref<?x32x128xf16>, memref<?x32xf32>
  return
}
func.func @hnd_bt_p64_d128_g8_bf16_window(%q: memref<?x64x128xbf16>, %qo: memref<?xi32>, %p0: memref<?x8x64x128xbf16>, %p1: memref<?x8x64x128xbf16>, %t0: memref<?x?xi32>, %t1: memref<?xi32>, %o: memref<?x64x128xbf16>, %l: memref<?x64xf32>) {
  %kv = kv.paged_view pools(%p0, %p1 : memref<?x8x64x128xbf16>, memref<?x8x64x128xbf16>) tables(%t0, %t1 : memref<?x?xi32>, memref<?xi32>) : !kv.paged<page_size = 64, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = bf16, layout = hnd, storage = split, table = block_table>
  %s = kv.prefill %q, %qo, %kv {causal, window_left = 511 : i64} : memref<?x64x128xbf16>, memref<?xi32>, !kv.paged<page_size = 64, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = bf16, layout = hnd, storage = split, table = block_table> -> !kv.state<?x64x128xbf16, base = 2>
  kv.store_state %s, %o, %l : !kv.state<?x64x128xbf16, base = 2>, memref<?x64x128xbf16>, memref<?x64xf32>
  return
}
func.func @nhd_csr_p1_d64_g1_f16_mask(%q: memref<?x8x64xf16>, %qo: memref<?xi32>, %p0: memref<?x2x1x8x64xf16>, %t0: memref<?xi32>, %t1: memref<?xi32>, %t2: memref<?xi32>, %m: memref<?xi1>, %o: memref<?x8x64xf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%p0 : memref<?x2x1x8x64xf16>) tables(%t0, %t1, %t2 : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !kv.paged<page_size = 1, kv_heads = 8, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
  %s = kv.prefill %q, %qo, %kv mask(%m : memref<?xi1>) {logits_soft_cap = 30.0 : f32} : memref<?x8x64xf16>, memref<?xi32>, !kv.paged<page_size = 1, kv_heads = 8, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr> -> !kv.state<?x8x64xf16, base = 2>
  kv.store_state %s, %o, %l : !kv.state<?x8x64xf16, base = 2>, memref<?x8x64xf16>, memref<?x8xf32>
  return
}
func.func @hnd_off_p16_d64_g4_bf16_packed(%q: memref<?x16x64xbf16>, %qo: memref<?xi32>, %p0: memref<?x4x16x64xbf16>, %p1: memref<?x4x16x64xbf16>, %t0: memref<?xi32>, %t1: memref<?xi32>, %m: memref<?xi8>, %o: memref<?x16x64xbf16>, %l: memref<?x16xf32>) {
  %kv = kv.paged_view pools(%p0, %p1 : memref<?x4x16x64xbf16>, memref<?x4x16x64xbf16>) tables(%t0, %t1 : memref<?xi32>, memref<?xi32>) : !kv.paged<page_size = 16, kv_heads = 4, head_dim = 64, head_dim_v = 64, dtype = bf16, layout = hnd, storage = split, table = token_offset>
  %s = kv.prefill %q, %qo, %kv mask(%m : memref<?xi8>) {causal} : memref<?x16x64xbf16>, memref<?xi32>, !kv.paged<page_size = 16, kv_heads = 4, head_dim = 64, head_dim_v = 64, dtype = bf16, layout = hnd, storage = split, table = token_offset> -> !kv.state<?x16x64xbf16, base = 2>
  kv.store_state %s, %o, %l : !kv.state<?x16x64xbf16, base = 2>, memref<?x16x64xbf16>, memref<?x16xf32>
  return
}
func.func @nhd_bt_p16_d256_g2_f16_causal(%q: memref<?x8x256xf16>, %qo: memref<?xi32>, %p0: memref<?x2x16x4x256xf16>, %t0: memref<?x?xi32>, %t1: memref<?xi32>, %o: memref<?x8x256xf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%p0 : memref<?x2x16x4x256xf16>) tables(%t0, %t1 : memref<?x?xi32>, memref<?xi32>) : !kv.paged<page_size = 16, kv_heads = 4, head_dim = 256, head_dim_v = 256, dtype = f16, layout = nhd, storage = combined, table = block_table>
  %s = kv.prefill %q, %qo, %kv {causal} : memref<?x8x256xf16>, memref<?xi32>, !kv.paged<page_size = 16, kv_heads = 4, head_dim = 256, head_dim_v = 256, dtype = f16, layout = nhd, storage = combined, table = block_table> -> !kv.state<?x8x256xf16, base = 2>
  kv.store_state %s, %o, %l : !kv.state<?x8x256xf16, base = 2>, memref<?x8x256xf16>, memref<?x8xf32>
  return
}
func.func @nhd_csr_p16_d128_g1_f16_to_f32(%q: memref<?x8x128xf16>, %qo: memref<?xi32>, %p0: memref<?x2x16x8x128xf16>, %t0: memref<?xi32>, %t1: memref<?xi32>, %t2: memref<?xi32>, %o: memref<?x8x128xf32>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%p0 : memref<?x2x16x8x128xf16>) tables(%t0, %t1, %t2 : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr>
  %s = kv.prefill %q, %qo, %kv {sm_scale = 0.1 : f32} : memref<?x8x128xf16>, memref<?xi32>, !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr> -> !kv.state<?x8x128xf32, base = 2>
  kv.store_state %s, %o, %l : !kv.state<?x8x128xf32, base = 2>, memref<?x8x128xf32>, memref<?x8xf32>
  return
}
func.func @ragged_d256_g1_bf16(%q: memref<?x4x256xbf16>, %qo: memref<?xi32>, %k: memref<?x4x256xbf16>, %v: memref<?x4x256xbf16>, %ki: memref<?xi32>, %o: memref<?x4x256xbf16>, %l: memref<?x4xf32>) {
  %kv = kv.ragged_view %k, %v, %ki : memref<?x4x256xbf16>, memref<?x4x256xbf16>, memref<?xi32> -> !kv.ragged<kv_heads = 4, head_dim = 256, head_dim_v = 256, dtype = bf16>
  %s = kv.prefill %q, %qo, %kv {causal} : memref<?x4x256xbf16>, memref<?xi32>, !kv.ragged<kv_heads = 4, head_dim = 256, head_dim_v = 256, dtype = bf16> -> !kv.state<?x4x256xbf16, base = e>
  kv.store_state %s, %o, %l : !kv.state<?x4x256xbf16, base = e>, memref<?x4x256xbf16>, memref<?x4xf32>
  return
}
func.func @ragged_d128_g4_f16_causal_tma(%q: memref<?x8x128xf16>, %qo: memref<?xi32>, %k: memref<?x2x128xf16>, %v: memref<?x2x128xf16>, %ki: memref<?xi32>, %o: memref<?x8x128xf16>, %l: memref<?x8xf32>) {
  %kv = kv.ragged_view %k, %v, %ki : memref<?x2x128xf16>, memref<?x2x128xf16>, memref<?xi32> -> !kv.ragged<kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f16>
  %s = kv.prefill %q, %qo, %kv {causal} : memref<?x8x128xf16>, memref<?xi32>, !kv.ragged<kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f16> -> !kv.state<?x8x128xf16, base = e>
  kv.store_state %s, %o, %l : !kv.state<?x8x128xf16, base = e>, memref<?x8x128xf16>, memref<?x8xf32>
  return
}
func.func @ragged_d64_g8_f16_two_tiles(%q: memref<?x16x64xf16>, %qo: memref<?xi32>, %k: memref<?x2x64xf16>, %v: memref<?x2x64xf16>, %ki: memref<?xi32>, %o: memref<?x16x64xf16>, %l: memref<?x16xf32>) {
  %kv = kv.ragged_view %k, %v, %ki : memref<?x2x64xf16>, memref<?x2x64xf16>, memref<?xi32> -> !kv.ragged<kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16>
  %s = kv.prefill %q, %qo, %kv {causal, kvgpu.config = #kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 4, stages = 2, q_in_registers = false, max_partitions = 16>} : memref<?x16x64xf16>, memref<?xi32>, !kv.ragged<kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16> -> !kv.state<?x16x64xf16, base = e>
  kv.store_state %s, %o, %l : !kv.state<?x16x64xf16, base = e>, memref<?x16x64xf16>, memref<?x16xf32>
  return
}
func.func @shared_level_nhd_csr_p16_d128_g4_bf16(%q: memref<?x4x128xbf16>, %qo: memref<?xi32>, %p0: memref<?x2x16x1x128xbf16>, %t0: memref<?xi32>, %t1: memref<?xi32>, %t2: memref<?xi32>, %o: memref<?x4x128xbf16>, %l: memref<?x4xf32>) {
  %kv = kv.paged_view pools(%p0 : memref<?x2x16x1x128xbf16>) tables(%t0, %t1, %t2 : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !kv.paged<page_size = 16, kv_heads = 1, head_dim = 128, head_dim_v = 128, dtype = bf16, layout = nhd, storage = combined, table = csr>
  %s = kv.prefill %q, %qo, %kv {kv.shared_level} : memref<?x4x128xbf16>, memref<?xi32>, !kv.paged<page_size = 16, kv_heads = 1, head_dim = 128, head_dim_v = 128, dtype = bf16, layout = nhd, storage = combined, table = csr> -> !kv.state<?x4x128xbf16, base = 2>
  kv.store_state %s, %o, %l : !kv.state<?x4x128xbf16, base = 2>, memref<?x4x128xbf16>, memref<?x4xf32>
  return
}
func.func @nhd_csr_p16_d512_g2_f16_causal(%q: memref<?x2x512xf16>, %qo: memref<?xi32>, %p0: memref<?x2x16x1x512xf16>, %t0: memref<?xi32>, %t1: memref<?xi32>, %t2: memref<?xi32>, %o: memref<?x2x512xf16>, %l: memref<?x2xf32>) {
  %kv = kv.paged_view pools(%p0 : memref<?x2x16x1x512xf16>) tables(%t0, %t1, %t2 : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !kv.paged<page_size = 16, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f16, layout = nhd, storage = combined, table = csr>
  %s = kv.prefill %q, %qo, %kv {causal} : memref<?x2x512xf16>, memref<?xi32>, !kv.paged<page_size = 16, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f16, layout = nhd, storage = combined, table = csr> -> !kv.state<?x2x512xf16, base = 2>
  kv.store_state %s, %o, %l : !kv.state<?x2x512xf16, base = 2>, memref<?x2x512xf16>, memref<?x2xf32>
  return
}
func.func @nhd_csr_p16_d128_g4_fp8_e4m3_causal(%q: memref<?x8x128xf16>, %qo: memref<?xi32>, %p0: memref<?x2x16x2x128xf8E4M3FN>, %t0: memref<?xi32>, %t1: memref<?xi32>, %t2: memref<?xi32>, %ks: f32, %vs: f32, %o: memref<?x8x128xf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%p0 : memref<?x2x16x2x128xf8E4M3FN>) tables(%t0, %t1, %t2 : memref<?xi32>, memref<?xi32>, memref<?xi32>) fp8_scales(%ks, %vs) : !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr, quant = fp8_e4m3>
  %s = kv.prefill %q, %qo, %kv {causal} : memref<?x8x128xf16>, memref<?xi32>, !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr, quant = fp8_e4m3> -> !kv.state<?x8x128xf16, base = 2>
  kv.store_state %s, %o, %l : !kv.state<?x8x128xf16, base = 2>, memref<?x8x128xf16>, memref<?x8xf32>
  return
}
func.func @hnd_bt_p16_d128_g2_int8_g8_bf16_window(%q: memref<?x4x128xbf16>, %qo: memref<?xi32>, %p0: memref<?x2x16x128xi8>, %p1: memref<?x2x16x128xi8>, %t0: memref<?x?xi32>, %t1: memref<?xi32>, %s0: memref<?x2x16x16xbf16>, %s1: memref<?x2x16x16xbf16>, %o: memref<?x4x128xbf16>, %l: memref<?x4xf32>) {
  %kv = kv.paged_view pools(%p0, %p1 : memref<?x2x16x128xi8>, memref<?x2x16x128xi8>) tables(%t0, %t1 : memref<?x?xi32>, memref<?xi32>) scales(%s0, %s1 : memref<?x2x16x16xbf16>, memref<?x2x16x16xbf16>) : !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = bf16, layout = hnd, storage = split, table = block_table, quant = int8_group, quant_group = 8>
  %s = kv.prefill %q, %qo, %kv {window_left = 256 : i64} : memref<?x4x128xbf16>, memref<?xi32>, !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = bf16, layout = hnd, storage = split, table = block_table, quant = int8_group, quant_group = 8> -> !kv.state<?x4x128xbf16, base = e>
  kv.store_state %s, %o, %l : !kv.state<?x4x128xbf16, base = e>, memref<?x4x128xbf16>, memref<?x4xf32>
  return
}
func.func @vllm_bt_p16_d128_g4_f16_causal(%q: memref<?x8x128xf16>, %qo: memref<?xi32>, %k: memref<?x2x16x16x8xf16>, %v: memref<?x2x128x16xf16>, %bt: memref<?x?xi32>, %lens: memref<?xi32>, %o: memref<?x8x128xf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%k, %v : memref<?x2x16x16x8xf16>, memref<?x2x128x16xf16>) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) : !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f16, layout = vllm, storage = split, table = block_table>
  %s = kv.prefill %q, %qo, %kv {causal} : memref<?x8x128xf16>, memref<?xi32>, !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f16, layout = vllm, storage = split, table = block_table> -> !kv.state<?x8x128xf16, base = 2>
  kv.store_state %s, %o, %l : !kv.state<?x8x128xf16, base = 2>, memref<?x8x128xf16>, memref<?x8xf32>
  return
}
func.func @vllm_bt_p16_d128_g2_fp8_e5m2_bf16(%q: memref<?x4x128xbf16>, %qo: memref<?xi32>, %k: memref<?x2x8x16x16xf8E5M2>, %v: memref<?x2x128x16xf8E5M2>, %bt: memref<?x?xi32>, %lens: memref<?xi32>, %ks: f32, %vs: f32, %o: memref<?x4x128xbf16>, %l: memref<?x4xf32>) {
  %kv = kv.paged_view pools(%k, %v : memref<?x2x8x16x16xf8E5M2>, memref<?x2x128x16xf8E5M2>) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) fp8_scales(%ks, %vs) : !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = bf16, layout = vllm, storage = split, table = block_table, quant = fp8_e5m2>
  %s = kv.prefill %q, %qo, %kv {window_left = 300 : i64} : memref<?x4x128xbf16>, memref<?xi32>, !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = bf16, layout = vllm, storage = split, table = block_table, quant = fp8_e5m2> -> !kv.state<?x4x128xbf16, base = e>
  kv.store_state %s, %o, %l : !kv.state<?x4x128xbf16, base = e>, memref<?x4x128xbf16>, memref<?x4xf32>
  return
}
func.func @ppl2_token_table_i64_d128_g4_f16(%q: memref<?x8x128xf16>, %seqstarts: memref<?xi64>, %pool: memref<4x2x?x2x128xf16>, %cachestarts: memref<?x?xi64>, %lens: memref<?xi64>, %o: memref<?x8x128xf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%pool : memref<4x2x?x2x128xf16>) tables(%cachestarts, %lens : memref<?x?xi64>, memref<?xi64>) : !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f16, layout = ppl2, storage = combined, table = token_table, layer = 1>
  %s = kv.prefill %q, %seqstarts, %kv {causal} : memref<?x8x128xf16>, memref<?xi64>, !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f16, layout = ppl2, storage = combined, table = token_table, layer = 1> -> !kv.state<?x8x128xf16, base = e>
  kv.store_state %s, %o, %l : !kv.state<?x8x128xf16, base = e>, memref<?x8x128xf16>, memref<?x8xf32>
  return
}
func.func @nhd_csr_p16_d128_g4_f16_causal_rope_llama31(%q: memref<?x32x128xf16>, %qo: memref<?xi32>, %p0: memref<?x2x16x8x128xf16>, %t0: memref<?xi32>, %t1: memref<?xi32>, %t2: memref<?xi32>, %o: memref<?x32x128xf16>, %l: memref<?x32xf32>) {
  %kv = kv.paged_view pools(%p0 : memref<?x2x16x8x128xf16>) tables(%t0, %t1, %t2 : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr>
  %s = kv.prefill %q, %qo, %kv {causal, rope = #kv.rope<rotate_half, theta = 5.0e5, factor = 8.0, low_freq_factor = 1.0, high_freq_factor = 4.0, original_max_position = 8192.0>} : memref<?x32x128xf16>, memref<?xi32>, !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr> -> !kv.state<?x32x128xf16, base = 2>
  kv.store_state %s, %o, %l : !kv.state<?x32x128xf16, base = 2>, memref<?x32x128xf16>, memref<?x32xf32>
  return
}
func.func @ragged_d64_g2_bf16_rope_interleave_rotary32(%q: memref<?x8x64xbf16>, %qo: memref<?xi32>, %k: memref<?x4x64xbf16>, %v: memref<?x4x64xbf16>, %ki: memref<?xi32>, %o: memref<?x8x64xbf16>, %l: memref<?x8xf32>) {
  %kv = kv.ragged_view %k, %v, %ki : memref<?x4x64xbf16>, memref<?x4x64xbf16>, memref<?xi32> -> !kv.ragged<kv_heads = 4, head_dim = 64, head_dim_v = 64, dtype = bf16>
  %s = kv.prefill %q, %qo, %kv {causal, rope = #kv.rope<interleave, rotary_dim = 32>} : memref<?x8x64xbf16>, memref<?xi32>, !kv.ragged<kv_heads = 4, head_dim = 64, head_dim_v = 64, dtype = bf16> -> !kv.state<?x8x64xbf16, base = e>
  kv.store_state %s, %o, %l : !kv.state<?x8x64xbf16, base = e>, memref<?x8x64xbf16>, memref<?x8xf32>
  return
}
func.func @nhd_csr_p16_d128_g4_f32_causal_rows(%q: memref<?x8x128xf32>, %qo: memref<?xi32>, %p0: memref<?x2x16x2x128xf32>, %t0: memref<?xi32>, %t1: memref<?xi32>, %t2: memref<?xi32>, %o: memref<?x8x128xf32>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%p0 : memref<?x2x16x2x128xf32>) tables(%t0, %t1, %t2 : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f32, layout = nhd, storage = combined, table = csr>
  %s = kv.prefill %q, %qo, %kv {causal, rope = #kv.rope<rotate_half>} : memref<?x8x128xf32>, memref<?xi32>, !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f32, layout = nhd, storage = combined, table = csr> -> !kv.state<?x8x128xf32, base = e>
  kv.store_state %s, %o, %l : !kv.state<?x8x128xf32, base = e>, memref<?x8x128xf32>, memref<?x8xf32>
  return
}
