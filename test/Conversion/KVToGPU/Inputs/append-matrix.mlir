// Appends over table forms and layouts, with and without RoPE, and an fp8
// (e4m3) cache in vLLM's layout and int8-group caches (groups 8 / 16) that
// quantize on write.
func.func @nhd_csr_rope_interleave(%k: memref<?x8x128xf16>, %v: memref<?x8x128xf16>, %bi: memref<?xi32>, %pos: memref<?xi32>, %pool: memref<?x2x16x8x128xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x8x128xf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr>
  kv.append %k, %v, %bi, %pos into %kv {rope = #kv.rope<interleave, theta = 1.0e+04, scale = 1.0>} : memref<?x8x128xf16>, memref<?x8x128xf16>, memref<?xi32>, memref<?xi32>, !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr>
  return
}
func.func @vllm_rope_rotate_half(%k: memref<?x2x64xbf16>, %v: memref<?x2x64xbf16>, %bi: memref<?xi32>, %pos: memref<?xi32>, %kp: memref<?x2x8x16x8xbf16>, %vp: memref<?x2x64x16xbf16>, %bt: memref<?x?xi32>, %lens: memref<?xi32>) {
  %kv = kv.paged_view pools(%kp, %vp : memref<?x2x8x16x8xbf16>, memref<?x2x64x16xbf16>) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) : !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = bf16, layout = vllm, storage = split, table = block_table>
  kv.append %k, %v, %bi, %pos into %kv {rope = #kv.rope<rotate_half, theta = 5.0e+05, scale = 1.0>} : memref<?x2x64xbf16>, memref<?x2x64xbf16>, memref<?xi32>, memref<?xi32>, !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = bf16, layout = vllm, storage = split, table = block_table>
  return
}
func.func @hnd_token_offset(%k: memref<?x4x64xf16>, %v: memref<?x4x64xf16>, %bi: memref<?xi32>, %pos: memref<?xi32>, %kp: memref<?x4x16x64xf16>, %vp: memref<?x4x16x64xf16>, %cs: memref<?xi32>, %lens: memref<?xi32>) {
  %kv = kv.paged_view pools(%kp, %vp : memref<?x4x16x64xf16>, memref<?x4x16x64xf16>) tables(%cs, %lens : memref<?xi32>, memref<?xi32>) : !kv.paged<page_size = 16, kv_heads = 4, head_dim = 64, head_dim_v = 64, dtype = f16, layout = hnd, storage = split, table = token_offset>
  kv.append %k, %v, %bi, %pos into %kv : memref<?x4x64xf16>, memref<?x4x64xf16>, memref<?xi32>, memref<?xi32>, !kv.paged<page_size = 16, kv_heads = 4, head_dim = 64, head_dim_v = 64, dtype = f16, layout = hnd, storage = split, table = token_offset>
  return
}
func.func @fp8_vllm_rope_rotate_half(%k: memref<?x2x128xf16>, %v: memref<?x2x128xf16>, %bi: memref<?xi32>, %pos: memref<?xi32>, %kp: memref<?x2x8x16x16xf8E4M3FN>, %vp: memref<?x2x128x16xf8E4M3FN>, %bt: memref<?x?xi32>, %lens: memref<?xi32>, %ks: f32, %vs: f32) {
  %kv = kv.paged_view pools(%kp, %vp : memref<?x2x8x16x16xf8E4M3FN>, memref<?x2x128x16xf8E4M3FN>) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) fp8_scales(%ks, %vs) : !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f16, layout = vllm, storage = split, table = block_table, quant = fp8_e4m3>
  kv.append %k, %v, %bi, %pos into %kv {rope = #kv.rope<rotate_half, theta = 1.0e+04, scale = 1.0>} : memref<?x2x128xf16>, memref<?x2x128xf16>, memref<?xi32>, memref<?xi32>, !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f16, layout = vllm, storage = split, table = block_table, quant = fp8_e4m3>
  return
}
func.func @int8_g8_nhd_rope_interleave(%k: memref<?x2x128xf16>, %v: memref<?x2x128xf16>, %bi: memref<?xi32>, %pos: memref<?xi32>, %pool: memref<?x2x16x2x128xi8>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>, %s: memref<?x2x16x2x16xf16>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x2x128xi8>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) scales(%s : memref<?x2x16x2x16xf16>) : !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr, quant = int8_group, quant_group = 8>
  kv.append %k, %v, %bi, %pos into %kv {rope = #kv.rope<interleave, theta = 1.0e+04, scale = 1.0>} : memref<?x2x128xf16>, memref<?x2x128xf16>, memref<?xi32>, memref<?xi32>, !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr, quant = int8_group, quant_group = 8>
  return
}
func.func @int8_g16_hnd_rope_rotate_half(%k: memref<?x4x64xbf16>, %v: memref<?x4x64xbf16>, %bi: memref<?xi32>, %pos: memref<?xi32>, %kp: memref<?x4x16x64xi8>, %vp: memref<?x4x16x64xi8>, %bt: memref<?x?xi32>, %lens: memref<?xi32>, %ks: memref<?x4x16x4xbf16>, %vs: memref<?x4x16x4xbf16>) {
  %kv = kv.paged_view pools(%kp, %vp : memref<?x4x16x64xi8>, memref<?x4x16x64xi8>) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) scales(%ks, %vs : memref<?x4x16x4xbf16>, memref<?x4x16x4xbf16>) : !kv.paged<page_size = 16, kv_heads = 4, head_dim = 64, head_dim_v = 64, dtype = bf16, layout = hnd, storage = split, table = block_table, quant = int8_group, quant_group = 16>
  kv.append %k, %v, %bi, %pos into %kv {rope = #kv.rope<rotate_half, theta = 1.0e+04, scale = 1.0>} : memref<?x4x64xbf16>, memref<?x4x64xbf16>, memref<?xi32>, memref<?xi32>, !kv.paged<page_size = 16, kv_heads = 4, head_dim = 64, head_dim_v = 64, dtype = bf16, layout = hnd, storage = split, table = block_table, quant = int8_group, quant_group = 16>
  return
}
func.func @llama31_rope_rotary64(%k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>, %bi: memref<?xi32>, %pos: memref<?xi32>, %pool: memref<?x2x16x8x128xbf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x8x128xbf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = bf16, layout = nhd, storage = combined, table = csr>
  kv.append %k, %v, %bi, %pos into %kv {rope = #kv.rope<rotate_half, theta = 5.0e+05, scale = 1.0, rotary_dim = 64, factor = 8.0, low_freq_factor = 1.0, high_freq_factor = 4.0, original_max_position = 8192.0>} : memref<?x8x128xbf16>, memref<?x8x128xbf16>, memref<?xi32>, memref<?xi32>, !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = bf16, layout = nhd, storage = combined, table = csr>
  return
}
