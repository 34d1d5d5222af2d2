// RUN: kvir-opt %s -split-input-file | kvir-opt -split-input-file | FileCheck %s

// Quantized caches: int8 groups take a scale pool per K/V pool (the pool
// shape with head_dim / quant_group, in the activation dtype); fp8 caches take
// the per-tensor f32 k_scale and v_scale.

// CHECK-LABEL: func.func @int8_combined
// CHECK: kv.paged_view pools(%{{.*}} : memref<?x2x4x2x16xi8>) tables(%{{.*}}, %{{.*}}, %{{.*}} : memref<?xi32>, memref<?xi32>, memref<?xi32>) scales(%{{.*}} : memref<?x2x4x2x2xf16>) : <page_size = 4, kv_heads = 2, head_dim = 16, head_dim_v = 16, dtype = f16, layout = nhd, storage = combined, table = csr, quant = int8_group, quant_group = 8>
func.func @int8_combined(%pool: memref<?x2x4x2x16xi8>, %scales: memref<?x2x4x2x2xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x4x2x16xi8>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      scales(%scales : memref<?x2x4x2x2xf16>)
      : !kv.paged<page_size = 4, kv_heads = 2, head_dim = 16, head_dim_v = 16, dtype = f16, layout = nhd, storage = combined, table = csr, quant = int8_group, quant_group = 8>
  return
}

// -----

// Split int8 with different K and V widths: one scale pool each.
// CHECK-LABEL: func.func @int8_split
// CHECK: scales(%{{.*}}, %{{.*}} : memref<?x2x4x4xf32>, memref<?x2x4x2xf32>) : <page_size = 4, kv_heads = 2, head_dim = 32, head_dim_v = 16, dtype = f32, layout = hnd, storage = split, table = block_table, quant = int8_group, quant_group = 8>
func.func @int8_split(%k: memref<?x2x4x32xi8>, %v: memref<?x2x4x16xi8>, %ks: memref<?x2x4x4xf32>, %vs: memref<?x2x4x2xf32>, %bt: memref<?x?xi32>, %lens: memref<?xi32>) {
  %kv = kv.paged_view pools(%k, %v : memref<?x2x4x32xi8>, memref<?x2x4x16xi8>) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>)
      scales(%ks, %vs : memref<?x2x4x4xf32>, memref<?x2x4x2xf32>)
      : !kv.paged<page_size = 4, kv_heads = 2, head_dim = 32, head_dim_v = 16, dtype = f32, layout = hnd, storage = split, table = block_table, quant = int8_group, quant_group = 8>
  return
}

// -----

// OpenPPL int8 (quant_group 8) in cache_layout 3, layer 1.
// CHECK-LABEL: func.func @int8_ppl3
// CHECK: kv.paged_view pools(%{{.*}} : memref<2x2x4x?x16xi8>) tables(%{{.*}}, %{{.*}} : memref<?x?xi32>, memref<?xi32>) scales(%{{.*}} : memref<2x2x4x?x2xf16>) : <{{.*}}layout = ppl3, storage = combined, table = token_table, quant = int8_group, quant_group = 8, layer = 1>
func.func @int8_ppl3(%pool: memref<2x2x4x?x16xi8>, %scales: memref<2x2x4x?x2xf16>, %starts: memref<?x?xi32>, %lens: memref<?xi32>) {
  %kv = kv.paged_view pools(%pool : memref<2x2x4x?x16xi8>) tables(%starts, %lens : memref<?x?xi32>, memref<?xi32>)
      scales(%scales : memref<2x2x4x?x2xf16>)
      : !kv.paged<page_size = 16, kv_heads = 4, head_dim = 16, head_dim_v = 16, dtype = f16, layout = ppl3, storage = combined, table = token_table, quant = int8_group, quant_group = 8, layer = 1>
  return
}

// -----

// fp8 e4m3 with the vLLM layout: x = 16 bytes / 1 byte = 16.
// CHECK-LABEL: func.func @fp8_e4m3_vllm
// CHECK-SAME: %[[KS:[^:]*]]: f32, %[[VS:[^:]*]]: f32
// CHECK: kv.paged_view pools(%{{.*}}, %{{.*}} : memref<?x1x2x8x16xf8E4M3FN>, memref<?x1x32x8xf8E4M3FN>) tables(%{{.*}}, %{{.*}} : memref<?x?xi32>, memref<?xi32>) fp8_scales(%[[KS]], %[[VS]]) : <page_size = 8, kv_heads = 1, head_dim = 32, head_dim_v = 32, dtype = f16, layout = vllm, storage = split, table = block_table, quant = fp8_e4m3>
func.func @fp8_e4m3_vllm(%k: memref<?x1x2x8x16xf8E4M3FN>, %v: memref<?x1x32x8xf8E4M3FN>, %bt: memref<?x?xi32>, %lens: memref<?xi32>, %ks: f32, %vs: f32) {
  %kv = kv.paged_view pools(%k, %v : memref<?x1x2x8x16xf8E4M3FN>, memref<?x1x32x8xf8E4M3FN>) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>)
      fp8_scales(%ks, %vs)
      : !kv.paged<page_size = 8, kv_heads = 1, head_dim = 32, head_dim_v = 32, dtype = f16, layout = vllm, storage = split, table = block_table, quant = fp8_e4m3>
  return
}

// -----

// fp8 e5m2, combined NHD.
// CHECK-LABEL: func.func @fp8_e5m2
// CHECK: kv.paged_view pools(%{{.*}} : memref<?x2x4x1x8xf8E5M2>) tables({{.*}}) fp8_scales(%{{.*}}, %{{.*}}) : <{{.*}}dtype = bf16, layout = nhd, storage = combined, table = csr, quant = fp8_e5m2>
func.func @fp8_e5m2(%pool: memref<?x2x4x1x8xf8E5M2>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>, %ks: f32, %vs: f32) {
  %kv = kv.paged_view pools(%pool : memref<?x2x4x1x8xf8E5M2>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      fp8_scales(%ks, %vs)
      : !kv.paged<page_size = 4, kv_heads = 1, head_dim = 8, head_dim_v = 8, dtype = bf16, layout = nhd, storage = combined, table = csr, quant = fp8_e5m2>
  return
}

// -----

// fp8 MLA (FlashMLA-style fp8 latent cache).
// CHECK-LABEL: func.func @fp8_mla
// CHECK: kv.paged_view pools(%{{.*}}, %{{.*}} : memref<?x64x512xf8E4M3FN>, memref<?x64x64xf8E4M3FN>) {{.*}} fp8_scales(%{{.*}}, %{{.*}}) : <{{.*}}storage = mla, table = block_table, quant = fp8_e4m3, pe_dim = 64>
func.func @fp8_mla(%ckv: memref<?x64x512xf8E4M3FN>, %kpe: memref<?x64x64xf8E4M3FN>, %bt: memref<?x?xi32>, %lens: memref<?xi32>, %s: f32) {
  %kv = kv.paged_view pools(%ckv, %kpe : memref<?x64x512xf8E4M3FN>, memref<?x64x64xf8E4M3FN>) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>)
      fp8_scales(%s, %s)
      : !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f16, layout = nhd, storage = mla, table = block_table, quant = fp8_e4m3, pe_dim = 64>
  return
}
