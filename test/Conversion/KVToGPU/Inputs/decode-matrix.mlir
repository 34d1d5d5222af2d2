// Decodes spanning the tiling space (page sizes 1..128, head_dim 64..256,
// groups 1..8, f16/bf16, NHD/HND, combined/split, CSR/block table, soft
// cap, window, fp8 e4m3 / e5m2, int8 groups 8 / 16, vLLM f16 / fp8, f32): every kernel kv-to-ptx generates for
// them goes to ptxas.
func.func @p1_d64_g1_f16(%q: memref<?x8x64xf16>, %p0: memref<?x2x1x8x64xf16>, %t0: memref<?xi32>, %t1: memref<?xi32>, %t2: memref<?xi32>, %o: memref<?x8x64xf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%p0 : memref<?x2x1x8x64xf16>) tables(%t0, %t1, %t2 : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !kv.paged<page_size = 1, kv_heads = 8, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
  %s = kv.decode %q, %kv : memref<?x8x64xf16>, !kv.paged<page_size = 1, kv_heads = 8, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr> -> !kv.state<?x8x64xf16, base = 2>
  kv.store_state %s, %o, %l : !kv.state<?x8x64xf16, base = 2>, memref<?x8x64xf16>, memref<?x8xf32>
  return
}
func.func @p5_d80_g2_bf16(%q: memref<?x8x80xbf16>, %p0: memref<?x4x5x80xbf16>, %p1: memref<?x4x5x80xbf16>, %t0: memref<?x?xi32>, %t1: memref<?xi32>, %o: memref<?x8x80xbf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%p0, %p1 : memref<?x4x5x80xbf16>, memref<?x4x5x80xbf16>) tables(%t0, %t1 : memref<?x?xi32>, memref<?xi32>) : !kv.paged<page_size = 5, kv_heads = 4, head_dim = 80, head_dim_v = 80, dtype = bf16, layout = hnd, storage = split, table = block_table>
  %s = kv.decode %q, %kv : memref<?x8x80xbf16>, !kv.paged<page_size = 5, kv_heads = 4, head_dim = 80, head_dim_v = 80, dtype = bf16, layout = hnd, storage = split, table = block_table> -> !kv.state<?x8x80xbf16, base = e>
  kv.store_state %s, %o, %l : !kv.state<?x8x80xbf16, base = e>, memref<?x8x80xbf16>, memref<?x8xf32>
  return
}
func.func @p32_d96_g4_f16(%q: memref<?x8x96xf16>, %p0: memref<?x32x2x96xf16>, %p1: memref<?x32x2x96xf16>, %t0: memref<?xi32>, %t1: memref<?xi32>, %t2: memref<?xi32>, %o: memref<?x8x96xf32>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%p0, %p1 : memref<?x32x2x96xf16>, memref<?x32x2x96xf16>) tables(%t0, %t1, %t2 : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !kv.paged<page_size = 32, kv_heads = 2, head_dim = 96, head_dim_v = 96, dtype = f16, layout = nhd, storage = split, table = csr>
  %s = kv.decode %q, %kv : memref<?x8x96xf16>, !kv.paged<page_size = 32, kv_heads = 2, head_dim = 96, head_dim_v = 96, dtype = f16, layout = nhd, storage = split, table = csr> -> !kv.state<?x8x96xf32, base = 2>
  kv.store_state %s, %o, %l : !kv.state<?x8x96xf32, base = 2>, memref<?x8x96xf32>, memref<?x8xf32>
  return
}
func.func @p128_d256_g8_bf16(%q: memref<?x32x256xbf16>, %p0: memref<?x2x4x128x256xbf16>, %t0: memref<?x?xi32>, %t1: memref<?xi32>, %o: memref<?x32x256xf32>, %l: memref<?x32xf32>) {
  %kv = kv.paged_view pools(%p0 : memref<?x2x4x128x256xbf16>) tables(%t0, %t1 : memref<?x?xi32>, memref<?xi32>) : !kv.paged<page_size = 128, kv_heads = 4, head_dim = 256, head_dim_v = 256, dtype = bf16, layout = hnd, storage = combined, table = block_table>
  %s = kv.decode %q, %kv : memref<?x32x256xbf16>, !kv.paged<page_size = 128, kv_heads = 4, head_dim = 256, head_dim_v = 256, dtype = bf16, layout = hnd, storage = combined, table = block_table> -> !kv.state<?x32x256xf32, base = e>
  kv.store_state %s, %o, %l : !kv.state<?x32x256xf32, base = e>, memref<?x32x256xf32>, memref<?x32xf32>
  return
}
func.func @p16_d128_g1_f16_cap(%q: memref<?x32x128xf16>, %p0: memref<?x2x32x16x128xf16>, %t0: memref<?xi32>, %t1: memref<?xi32>, %t2: memref<?xi32>, %o: memref<?x32x128xf16>, %l: memref<?x32xf32>) {
  %kv = kv.paged_view pools(%p0 : memref<?x2x32x16x128xf16>) tables(%t0, %t1, %t2 : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !kv.paged<page_size = 16, kv_heads = 32, head_dim = 128, head_dim_v = 128, dtype = f16, layout = hnd, storage = combined, table = csr>
  %s = kv.decode %q, %kv {logits_soft_cap = 30.0 : f32, window_left = 1024 : i64} : memref<?x32x128xf16>, !kv.paged<page_size = 16, kv_heads = 32, head_dim = 128, head_dim_v = 128, dtype = f16, layout = hnd, storage = combined, table = csr> -> !kv.state<?x32x128xf16, base = 2>
  kv.store_state %s, %o, %l : !kv.state<?x32x128xf16, base = 2>, memref<?x32x128xf16>, memref<?x32xf32>
  return
}
func.func @p64_d128_g4_bf16(%q: memref<?x32x128xbf16>, %p0: memref<?x64x8x128xbf16>, %p1: memref<?x64x8x128xbf16>, %t0: memref<?x?xi32>, %t1: memref<?xi32>, %o: memref<?x32x128xbf16>, %l: memref<?x32xf32>) {
  %kv = kv.paged_view pools(%p0, %p1 : memref<?x64x8x128xbf16>, memref<?x64x8x128xbf16>) tables(%t0, %t1 : memref<?x?xi32>, memref<?xi32>) : !kv.paged<page_size = 64, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = bf16, layout = nhd, storage = split, table = block_table>
  %s = kv.decode %q, %kv {sm_scale = 0.1 : f32} : memref<?x32x128xbf16>, !kv.paged<page_size = 64, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = bf16, layout = nhd, storage = split, table = block_table> -> !kv.state<?x32x128xbf16, base = e>
  kv.store_state %s, %o, %l : !kv.state<?x32x128xbf16, base = e>, memref<?x32x128xbf16>, memref<?x32xf32>
  return
}
func.func @p7_d64_g8_f16(%q: memref<?x8x64xf16>, %p0: memref<?x2x7x1x64xf16>, %t0: memref<?xi32>, %t1: memref<?xi32>, %t2: memref<?xi32>, %o: memref<?x8x64xf32>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%p0 : memref<?x2x7x1x64xf16>) tables(%t0, %t1, %t2 : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !kv.paged<page_size = 7, kv_heads = 1, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
  %s = kv.decode %q, %kv : memref<?x8x64xf16>, !kv.paged<page_size = 7, kv_heads = 1, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr> -> !kv.state<?x8x64xf32, base = 2>
  kv.store_state %s, %o, %l : !kv.state<?x8x64xf32, base = 2>, memref<?x8x64xf32>, memref<?x8xf32>
  return
}
func.func @p16_d128_g4_fp8_e4m3(%q: memref<?x8x128xf16>, %p0: memref<?x2x16x2x128xf8E4M3FN>, %t0: memref<?xi32>, %t1: memref<?xi32>, %t2: memref<?xi32>, %ks: f32, %vs: f32, %o: memref<?x8x128xf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%p0 : memref<?x2x16x2x128xf8E4M3FN>) tables(%t0, %t1, %t2 : memref<?xi32>, memref<?xi32>, memref<?xi32>) fp8_scales(%ks, %vs) : !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr, quant = fp8_e4m3>
  %s = kv.decode %q, %kv : memref<?x8x128xf16>, !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr, quant = fp8_e4m3> -> !kv.state<?x8x128xf16, base = 2>
  kv.store_state %s, %o, %l : !kv.state<?x8x128xf16, base = 2>, memref<?x8x128xf16>, memref<?x8xf32>
  return
}
func.func @p32_d64_g8_fp8_e5m2(%q: memref<?x16x64xbf16>, %p0: memref<?x2x32x64xf8E5M2>, %p1: memref<?x2x32x64xf8E5M2>, %t0: memref<?x?xi32>, %t1: memref<?xi32>, %ks: f32, %vs: f32, %o: memref<?x16x64xbf16>, %l: memref<?x16xf32>) {
  %kv = kv.paged_view pools(%p0, %p1 : memref<?x2x32x64xf8E5M2>, memref<?x2x32x64xf8E5M2>) tables(%t0, %t1 : memref<?x?xi32>, memref<?xi32>) fp8_scales(%ks, %vs) : !kv.paged<page_size = 32, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = bf16, layout = hnd, storage = split, table = block_table, quant = fp8_e5m2>
  %s = kv.decode %q, %kv {logits_soft_cap = 30.0 : f32} : memref<?x16x64xbf16>, !kv.paged<page_size = 32, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = bf16, layout = hnd, storage = split, table = block_table, quant = fp8_e5m2> -> !kv.state<?x16x64xbf16, base = e>
  kv.store_state %s, %o, %l : !kv.state<?x16x64xbf16, base = e>, memref<?x16x64xbf16>, memref<?x16xf32>
  return
}
func.func @p16_d128_g4_int8_g8(%q: memref<?x8x128xf16>, %p0: memref<?x2x16x2x128xi8>, %t0: memref<?xi32>, %t1: memref<?xi32>, %t2: memref<?xi32>, %s0: memref<?x2x16x2x16xf16>, %o: memref<?x8x128xf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%p0 : memref<?x2x16x2x128xi8>) tables(%t0, %t1, %t2 : memref<?xi32>, memref<?xi32>, memref<?xi32>) scales(%s0 : memref<?x2x16x2x16xf16>) : !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr, quant = int8_group, quant_group = 8>
  %s = kv.decode %q, %kv : memref<?x8x128xf16>, !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr, quant = int8_group, quant_group = 8> -> !kv.state<?x8x128xf16, base = 2>
  kv.store_state %s, %o, %l : !kv.state<?x8x128xf16, base = 2>, memref<?x8x128xf16>, memref<?x8xf32>
  return
}
func.func @p8_d64_g1_int8_g16_window(%q: memref<?x4x64xbf16>, %p0: memref<?x4x8x64xi8>, %p1: memref<?x4x8x64xi8>, %t0: memref<?x?xi32>, %t1: memref<?xi32>, %s0: memref<?x4x8x4xbf16>, %s1: memref<?x4x8x4xbf16>, %o: memref<?x4x64xbf16>, %l: memref<?x4xf32>) {
  %kv = kv.paged_view pools(%p0, %p1 : memref<?x4x8x64xi8>, memref<?x4x8x64xi8>) tables(%t0, %t1 : memref<?x?xi32>, memref<?xi32>) scales(%s0, %s1 : memref<?x4x8x4xbf16>, memref<?x4x8x4xbf16>) : !kv.paged<page_size = 8, kv_heads = 4, head_dim = 64, head_dim_v = 64, dtype = bf16, layout = hnd, storage = split, table = block_table, quant = int8_group, quant_group = 16>
  %s = kv.decode %q, %kv {window_left = 100 : i64} : memref<?x4x64xbf16>, !kv.paged<page_size = 8, kv_heads = 4, head_dim = 64, head_dim_v = 64, dtype = bf16, layout = hnd, storage = split, table = block_table, quant = int8_group, quant_group = 16> -> !kv.state<?x4x64xbf16, base = e>
  kv.store_state %s, %o, %l : !kv.state<?x4x64xbf16, base = e>, memref<?x4x64xbf16>, memref<?x4xf32>
  return
}
func.func @p16_d128_g4_vllm(%q: memref<?x8x128xf16>, %k: memref<?x2x16x16x8xf16>, %v: memref<?x2x128x16xf16>, %bt: memref<?x?xi32>, %lens: memref<?xi32>, %o: memref<?x8x128xf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%k, %v : memref<?x2x16x16x8xf16>, memref<?x2x128x16xf16>) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) : !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f16, layout = vllm, storage = split, table = block_table>
  %s = kv.decode %q, %kv {window_left = 500 : i64} : memref<?x8x128xf16>, !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f16, layout = vllm, storage = split, table = block_table> -> !kv.state<?x8x128xf16, base = e>
  kv.store_state %s, %o, %l : !kv.state<?x8x128xf16, base = e>, memref<?x8x128xf16>, memref<?x8xf32>
  return
}
func.func @p16_d128_g1_vllm_fp8_e4m3(%q: memref<?x2x128xbf16>, %k: memref<?x2x8x16x16xf8E4M3FN>, %v: memref<?x2x128x16xf8E4M3FN>, %bt: memref<?x?xi32>, %lens: memref<?xi32>, %ks: f32, %vs: f32, %o: memref<?x2x128xbf16>, %l: memref<?x2xf32>) {
  %kv = kv.paged_view pools(%k, %v : memref<?x2x8x16x16xf8E4M3FN>, memref<?x2x128x16xf8E4M3FN>) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) fp8_scales(%ks, %vs) : !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = bf16, layout = vllm, storage = split, table = block_table, quant = fp8_e4m3>
  %s = kv.decode %q, %kv : memref<?x2x128xbf16>, !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = bf16, layout = vllm, storage = split, table = block_table, quant = fp8_e4m3> -> !kv.state<?x2x128xbf16, base = 2>
  kv.store_state %s, %o, %l : !kv.state<?x2x128xbf16, base = 2>, memref<?x2x128xbf16>, memref<?x2xf32>
  return
}
func.func @p16_d128_g4_f32(%q: memref<?x8x128xf32>, %p0: memref<?x2x16x2x128xf32>, %t0: memref<?xi32>, %t1: memref<?xi32>, %t2: memref<?xi32>, %o: memref<?x8x128xf32>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%p0 : memref<?x2x16x2x128xf32>) tables(%t0, %t1, %t2 : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f32, layout = nhd, storage = combined, table = csr>
  %s = kv.decode %q, %kv {window_left = 64 : i64} : memref<?x8x128xf32>, !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f32, layout = nhd, storage = combined, table = csr> -> !kv.state<?x8x128xf32, base = e>
  kv.store_state %s, %o, %l : !kv.state<?x8x128xf32, base = e>, memref<?x8x128xf32>, memref<?x8xf32>
  return
}
func.func @p16_d128_g4_rope_llama31_rotate_half(%q: memref<?x8x128xf16>, %p0: memref<?x2x16x2x128xf16>, %t0: memref<?xi32>, %t1: memref<?xi32>, %t2: memref<?xi32>, %o: memref<?x8x128xf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%p0 : memref<?x2x16x2x128xf16>) tables(%t0, %t1, %t2 : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr>
  %s = kv.decode %q, %kv {rope = #kv.rope<rotate_half, theta = 5.0e5, factor = 8.0, low_freq_factor = 1.0, high_freq_factor = 4.0, original_max_position = 8192.0>} : memref<?x8x128xf16>, !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr> -> !kv.state<?x8x128xf16, base = e>
  kv.store_state %s, %o, %l : !kv.state<?x8x128xf16, base = e>, memref<?x8x128xf16>, memref<?x8xf32>
  return
}
func.func @p16_d128_g4_int8_rope_interleave_rotary64(%q: memref<?x8x128xf16>, %p0: memref<?x2x16x2x128xi8>, %t0: memref<?xi32>, %t1: memref<?xi32>, %t2: memref<?xi32>, %s0: memref<?x2x16x2x16xf16>, %o: memref<?x8x128xf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%p0 : memref<?x2x16x2x128xi8>) tables(%t0, %t1, %t2 : memref<?xi32>, memref<?xi32>, memref<?xi32>) scales(%s0 : memref<?x2x16x2x16xf16>) : !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr, quant = int8_group, quant_group = 8>
  %s = kv.decode %q, %kv {rope = #kv.rope<interleave, rotary_dim = 64>} : memref<?x8x128xf16>, !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr, quant = int8_group, quant_group = 8> -> !kv.state<?x8x128xf16, base = 2>
  kv.store_state %s, %o, %l : !kv.state<?x8x128xf16, base = 2>, memref<?x8x128xf16>, memref<?x8xf32>
  return
}
func.func @p16_d64_g2_bf16_rope_interleave(%q: memref<?x4x64xbf16>, %p0: memref<?x2x16x2x64xbf16>, %t0: memref<?xi32>, %t1: memref<?xi32>, %t2: memref<?xi32>, %o: memref<?x4x64xbf16>, %l: memref<?x4xf32>) {
  %kv = kv.paged_view pools(%p0 : memref<?x2x16x2x64xbf16>) tables(%t0, %t1, %t2 : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = bf16, layout = nhd, storage = combined, table = csr>
  %s = kv.decode %q, %kv {rope = #kv.rope<interleave, theta = 1.0e4, scale = 1.0>, window_left = 100 : i64} : memref<?x4x64xbf16>, !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = bf16, layout = nhd, storage = combined, table = csr> -> !kv.state<?x4x64xbf16, base = e>
  kv.store_state %s, %o, %l : !kv.state<?x4x64xbf16, base = e>, memref<?x4x64xbf16>, memref<?x4xf32>
  return
}
func.func @p16_d256_g2_f32(%q: memref<?x4x256xf32>, %p0: memref<?x2x16x2x256xf32>, %t0: memref<?xi32>, %t1: memref<?xi32>, %t2: memref<?xi32>, %o: memref<?x4x256xf32>, %l: memref<?x4xf32>) {
  %kv = kv.paged_view pools(%p0 : memref<?x2x16x2x256xf32>) tables(%t0, %t1, %t2 : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !kv.paged<page_size = 16, kv_heads = 2, head_dim = 256, head_dim_v = 256, dtype = f32, layout = nhd, storage = combined, table = csr>
  %s = kv.decode %q, %kv : memref<?x4x256xf32>, !kv.paged<page_size = 16, kv_heads = 2, head_dim = 256, head_dim_v = 256, dtype = f32, layout = nhd, storage = combined, table = csr> -> !kv.state<?x4x256xf32, base = e>
  kv.store_state %s, %o, %l : !kv.state<?x4x256xf32, base = e>, memref<?x4x256xf32>, memref<?x4xf32>
  return
}
func.func @p16_d512_g4_f32_rope(%q: memref<?x4x512xf32>, %p0: memref<?x2x16x1x512xf32>, %t0: memref<?xi32>, %t1: memref<?xi32>, %t2: memref<?xi32>, %o: memref<?x4x512xf32>, %l: memref<?x4xf32>) {
  %kv = kv.paged_view pools(%p0 : memref<?x2x16x1x512xf32>) tables(%t0, %t1, %t2 : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !kv.paged<page_size = 16, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f32, layout = nhd, storage = combined, table = csr>
  %s = kv.decode %q, %kv {rope = #kv.rope<rotate_half>} : memref<?x4x512xf32>, !kv.paged<page_size = 16, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f32, layout = nhd, storage = combined, table = csr> -> !kv.state<?x4x512xf32, base = e>
  kv.store_state %s, %o, %l : !kv.state<?x4x512xf32, base = e>, memref<?x4x512xf32>, memref<?x4xf32>
  return
}
