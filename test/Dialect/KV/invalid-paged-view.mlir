// RUN: kvir-opt %s -split-input-file -verify-diagnostics

// PagedViewOp::verify (KVOps.cpp): operand counts, tables, pools and scales.

!csr = !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = nhd, storage = combined, table = csr>

func.func @pool_count(%k: memref<?x2x4x2x8xf16>, %a: memref<?xi32>) {
  // expected-error @below {{'kv.paged_view' op storage = combined takes 1 pool memref(s), got 2}}
  %kv = kv.paged_view pools(%k, %k : memref<?x2x4x2x8xf16>, memref<?x2x4x2x8xf16>) tables(%a, %a, %a : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !csr
  return
}

// -----

func.func @mla_pool_count(%ckv: memref<?x64x512xf16>, %a: memref<?xi32>) {
  // expected-error @below {{'kv.paged_view' op storage = mla takes 2 pool memref(s), got 1}}
  %kv = kv.paged_view pools(%ckv : memref<?x64x512xf16>) tables(%a, %a, %a : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      : !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f16, layout = nhd, storage = mla, table = csr, pe_dim = 64>
  return
}

// -----

!csr = !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = nhd, storage = combined, table = csr>
func.func @csr_table_count(%p: memref<?x2x4x2x8xf16>, %a: memref<?xi32>) {
  // expected-error @below {{'kv.paged_view' op table = csr takes 3 tables (kv_indptr, kv_indices, kv_last_page_len), got 2}}
  %kv = kv.paged_view pools(%p : memref<?x2x4x2x8xf16>) tables(%a, %a : memref<?xi32>, memref<?xi32>) : !csr
  return
}

// -----

func.func @block_table_count(%p: memref<?x2x4x2x8xf16>, %a: memref<?xi32>) {
  // expected-error @below {{'kv.paged_view' op table = block_table takes 2 tables (block_table, seq_lens), got 3}}
  %kv = kv.paged_view pools(%p : memref<?x2x4x2x8xf16>) tables(%a, %a, %a : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      : !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = nhd, storage = combined, table = block_table>
  return
}

// -----

func.func @token_table_count(%p: memref<?x2x2x2x8xf16>, %a: memref<?x?xi32>) {
  // expected-error @below {{'kv.paged_view' op table = token_table takes 2 tables (cachestarts, kv_lens), got 1}}
  %kv = kv.paged_view pools(%p : memref<?x2x2x2x8xf16>) tables(%a : memref<?x?xi32>)
      : !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = ppl0, storage = combined, table = token_table>
  return
}

// -----

// The custom form cannot spell an empty table list; the generic form can.
func.func @token_offset_count(%p: memref<?x2x2x2x8xf16>) {
  // expected-error @below {{'kv.paged_view' op table = token_offset takes 2 tables (cachestarts, kv_lens), got 0}}
  %kv = "kv.paged_view"(%p) <{operandSegmentSizes = array<i32: 1, 0, 0, 0, 0>}> : (memref<?x2x2x2x8xf16>)
      -> !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = ppl0, storage = combined, table = token_offset>
  return
}

// -----

!csr = !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = nhd, storage = combined, table = csr>
// Unranked memrefs are rejected by the operand constraint already.
func.func @table_unranked(%p: memref<?x2x4x2x8xf16>, %a: memref<?xi32>, %u: memref<*xi32>) {
  // expected-error @below {{'kv.paged_view' op operand #2 must be variadic of memref of any type values, but got 'memref<*xi32>'}}
  %kv = kv.paged_view pools(%p : memref<?x2x4x2x8xf16>) tables(%a, %u, %a : memref<?xi32>, memref<*xi32>, memref<?xi32>) : !csr
  return
}

// -----

!csr = !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = nhd, storage = combined, table = csr>
func.func @table_i16(%p: memref<?x2x4x2x8xf16>, %a: memref<?xi32>, %l: memref<?xi16>) {
  // expected-error @below {{'kv.paged_view' op table 'kv_last_page_len' must have element type i32 or i64, got 'memref<?xi16>'}}
  %kv = kv.paged_view pools(%p : memref<?x2x4x2x8xf16>) tables(%a, %a, %l : memref<?xi32>, memref<?xi32>, memref<?xi16>) : !csr
  return
}

// -----

!csr = !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = nhd, storage = combined, table = csr>
func.func @csr_table_rank(%p: memref<?x2x4x2x8xf16>, %a: memref<?xi32>, %i: memref<?x?xi32>) {
  // expected-error @below {{'kv.paged_view' op table 'kv_indptr' must have rank 1, got 'memref<?x?xi32>'}}
  %kv = kv.paged_view pools(%p : memref<?x2x4x2x8xf16>) tables(%i, %a, %a : memref<?x?xi32>, memref<?xi32>, memref<?xi32>) : !csr
  return
}

// -----

// The block table is [B, max_blocks].
func.func @block_table_rank(%p: memref<?x2x4x2x8xf16>, %a: memref<?xi32>) {
  // expected-error @below {{'kv.paged_view' op table 'block_table' must have rank 2, got 'memref<?xi32>'}}
  %kv = kv.paged_view pools(%p : memref<?x2x4x2x8xf16>) tables(%a, %a : memref<?xi32>, memref<?xi32>)
      : !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = nhd, storage = combined, table = block_table>
  return
}

// -----

// seq_lens is [B].
func.func @seq_lens_rank(%p: memref<?x2x4x2x8xf16>, %a: memref<?x?xi32>) {
  // expected-error @below {{'kv.paged_view' op table 'seq_lens' must have rank 1, got 'memref<?x?xi32>'}}
  %kv = kv.paged_view pools(%p : memref<?x2x4x2x8xf16>) tables(%a, %a : memref<?x?xi32>, memref<?x?xi32>)
      : !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = nhd, storage = combined, table = block_table>
  return
}

// -----

// token_offset's cachestarts is [B] (token_table's is [B, max_pages]).
func.func @token_offset_rank(%p: memref<?x2x2x2x8xf16>, %a: memref<?x?xi32>, %l: memref<?xi32>) {
  // expected-error @below {{'kv.paged_view' op table 'cachestarts' must have rank 1, got 'memref<?x?xi32>'}}
  %kv = kv.paged_view pools(%p : memref<?x2x2x2x8xf16>) tables(%a, %l : memref<?x?xi32>, memref<?xi32>)
      : !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = ppl0, storage = combined, table = token_offset>
  return
}

// -----

!int8 = !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = nhd, storage = combined, table = csr, quant = int8_group, quant_group = 4>
func.func @missing_scales(%p: memref<?x2x4x2x8xi8>, %a: memref<?xi32>) {
  // expected-error @below {{'kv.paged_view' op quant = int8_group takes 1 scale pool(s), got 0}}
  %kv = kv.paged_view pools(%p : memref<?x2x4x2x8xi8>) tables(%a, %a, %a : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !int8
  return
}

// -----

!csr = !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = nhd, storage = combined, table = csr>
func.func @scales_unquantized(%p: memref<?x2x4x2x8xf16>, %s: memref<?x2x4x2x2xf16>, %a: memref<?xi32>) {
  // expected-error @below {{'kv.paged_view' op quant = none takes 0 scale pool(s), got 1}}
  %kv = kv.paged_view pools(%p : memref<?x2x4x2x8xf16>) tables(%a, %a, %a : memref<?xi32>, memref<?xi32>, memref<?xi32>) scales(%s : memref<?x2x4x2x2xf16>) : !csr
  return
}

// -----

func.func @split_int8_one_scale(%k: memref<?x4x2x8xi8>, %s: memref<?x4x2x2xf16>, %a: memref<?xi32>) {
  // expected-error @below {{'kv.paged_view' op quant = int8_group takes 2 scale pool(s), got 1}}
  %kv = kv.paged_view pools(%k, %k : memref<?x4x2x8xi8>, memref<?x4x2x8xi8>) tables(%a, %a, %a : memref<?xi32>, memref<?xi32>, memref<?xi32>) scales(%s : memref<?x4x2x2xf16>)
      : !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = nhd, storage = split, table = csr, quant = int8_group, quant_group = 4>
  return
}

// -----

!fp8 = !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = nhd, storage = combined, table = csr, quant = fp8_e4m3>
func.func @fp8_without_scales(%p: memref<?x2x4x2x8xf8E4M3FN>, %a: memref<?xi32>) {
  // expected-error @below {{'kv.paged_view' op fp8 caches need fp8_scales(k, v)}}
  %kv = kv.paged_view pools(%p : memref<?x2x4x2x8xf8E4M3FN>) tables(%a, %a, %a : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !fp8
  return
}

// -----

!csr = !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = nhd, storage = combined, table = csr>
func.func @scales_not_fp8(%p: memref<?x2x4x2x8xf16>, %a: memref<?xi32>, %s: f32) {
  // expected-error @below {{'kv.paged_view' op fp8_scales need an fp8 cache}}
  %kv = kv.paged_view pools(%p : memref<?x2x4x2x8xf16>) tables(%a, %a, %a : memref<?xi32>, memref<?xi32>, memref<?xi32>) fp8_scales(%s, %s) : !csr
  return
}

// -----

// The custom form always has both scales; the generic form can drop one.
!fp8 = !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = nhd, storage = combined, table = csr, quant = fp8_e4m3>
func.func @fp8_only_k_scale(%p: memref<?x2x4x2x8xf8E4M3FN>, %a: memref<?xi32>, %s: f32) {
  // expected-error @below {{'kv.paged_view' op fp8_scales takes both k_scale and v_scale, got only k_scale}}
  %kv = "kv.paged_view"(%p, %a, %a, %a, %s) <{operandSegmentSizes = array<i32: 1, 3, 0, 1, 0>}>
      : (memref<?x2x4x2x8xf8E4M3FN>, memref<?xi32>, memref<?xi32>, memref<?xi32>, f32) -> !fp8
  return
}

// -----

!fp8 = !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = nhd, storage = combined, table = csr, quant = fp8_e4m3>
func.func @fp8_only_v_scale(%p: memref<?x2x4x2x8xf8E4M3FN>, %a: memref<?xi32>, %s: f32) {
  // expected-error @below {{'kv.paged_view' op fp8_scales takes both k_scale and v_scale, got only v_scale}}
  %kv = "kv.paged_view"(%p, %a, %a, %a, %s) <{operandSegmentSizes = array<i32: 1, 3, 0, 0, 1>}>
      : (memref<?x2x4x2x8xf8E4M3FN>, memref<?xi32>, memref<?xi32>, memref<?xi32>, f32) -> !fp8
  return
}

// -----

!csr = !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = nhd, storage = combined, table = csr>
func.func @pool_unranked(%p: memref<*xf16>, %a: memref<?xi32>) {
  // expected-error @below {{'kv.paged_view' op operand #0 must be variadic of memref of any type values, but got 'memref<*xf16>'}}
  %kv = kv.paged_view pools(%p : memref<*xf16>) tables(%a, %a, %a : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !csr
  return
}

// -----

!csr = !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = nhd, storage = combined, table = csr>
func.func @pool_dtype(%p: memref<?x2x4x2x8xbf16>, %a: memref<?xi32>) {
  // expected-error @below {{'kv.paged_view' op pool has element type 'bf16', expected 'f16' for dtype = 'f16', quant = none}}
  %kv = kv.paged_view pools(%p : memref<?x2x4x2x8xbf16>) tables(%a, %a, %a : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !csr
  return
}

// -----

// An int8 cache stores i8, not its activation dtype.
func.func @int8_pool_dtype(%k: memref<?x4x2x8xf16>, %v: memref<?x4x2x8xi8>, %s: memref<?x4x2x2xf16>, %a: memref<?xi32>) {
  // expected-error @below {{'kv.paged_view' op K has element type 'f16', expected 'i8' for dtype = 'f16', quant = int8_group}}
  %kv = kv.paged_view pools(%k, %v : memref<?x4x2x8xf16>, memref<?x4x2x8xi8>) tables(%a, %a, %a : memref<?xi32>, memref<?xi32>, memref<?xi32>) scales(%s, %s : memref<?x4x2x2xf16>, memref<?x4x2x2xf16>)
      : !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = nhd, storage = split, table = csr, quant = int8_group, quant_group = 4>
  return
}

// -----

// e5m2 caches store f8E5M2.
func.func @fp8_pool_dtype(%k: memref<?x4x2x8xf8E5M2>, %v: memref<?x4x2x8xf8E4M3FN>, %a: memref<?xi32>, %s: f32) {
  // expected-error @below {{'kv.paged_view' op V has element type 'f8E4M3FN', expected 'f8E5M2' for dtype = 'f32', quant = fp8_e5m2}}
  %kv = kv.paged_view pools(%k, %v : memref<?x4x2x8xf8E5M2>, memref<?x4x2x8xf8E4M3FN>) tables(%a, %a, %a : memref<?xi32>, memref<?xi32>, memref<?xi32>) fp8_scales(%s, %s)
      : !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f32, layout = nhd, storage = split, table = csr, quant = fp8_e5m2>
  return
}

// -----

!csr = !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = nhd, storage = combined, table = csr>
func.func @pool_not_strided(%p: memref<4x2x4x2x8xf16, affine_map<(a, b, c, d, e) -> (a mod 3, b, c, d, e)>>, %a: memref<?xi32>) {
  // expected-error @below {{'kv.paged_view' op pool must have a strided layout}}
  %kv = kv.paged_view pools(%p : memref<4x2x4x2x8xf16, affine_map<(a, b, c, d, e) -> (a mod 3, b, c, d, e)>>) tables(%a, %a, %a : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !csr
  return
}

// -----

func.func @affine_pool_rank(%p: memref<?x2x4x2xf16>, %a: memref<?xi32>) {
  // expected-error @below {{'kv.paged_view' op pool has rank 4 but its layout map has 5 results}}
  %kv = kv.paged_view pools(%p : memref<?x2x4x2xf16>) tables(%a, %a, %a : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      : !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = affine, storage = combined, table = csr, k_map = (p, kv, s, h, d) -> (p, kv, h, s, d)>
  return
}

// -----

// Without v_map, split storage reads V through k_map too.
func.func @affine_v_pool_rank(%k: memref<?x4x2x8xf16>, %v: memref<?x4x16xf16>, %a: memref<?xi32>) {
  // expected-error @below {{'kv.paged_view' op V has rank 3 but its layout map has 4 results}}
  %kv = kv.paged_view pools(%k, %v : memref<?x4x2x8xf16>, memref<?x4x16xf16>) tables(%a, %a, %a : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      : !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = affine, storage = split, table = csr, k_map = (p, kv, s, h, d) -> (p, s, h, d)>
  return
}

// -----

!csr = !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = nhd, storage = combined, table = csr>
func.func @nhd_shape(%p: memref<?x2x2x4x8xf16>, %a: memref<?xi32>) {
  // expected-error @below {{'kv.paged_view' op pool has shape ?x2x2x4x8, expected ?x2x4x2x8 for layout = nhd, storage = combined, page_size = 4, kv_heads = 2}}
  %kv = kv.paged_view pools(%p : memref<?x2x2x4x8xf16>) tables(%a, %a, %a : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !csr
  return
}

// -----

func.func @hnd_shape(%p: memref<?x2x4x2x8xf16>, %a: memref<?xi32>) {
  // expected-error @below {{'kv.paged_view' op pool has shape ?x2x4x2x8, expected ?x2x2x4x8 for layout = hnd, storage = combined, page_size = 4, kv_heads = 2}}
  %kv = kv.paged_view pools(%p : memref<?x2x4x2x8xf16>) tables(%a, %a, %a : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      : !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = hnd, storage = combined, table = csr>
  return
}

// -----

// Split NHD pools have no kv axis; V has head_dim_v.
func.func @split_v_shape(%k: memref<?x4x2x8xf16>, %v: memref<?x4x2x8xf16>, %a: memref<?xi32>) {
  // expected-error @below {{'kv.paged_view' op V has shape ?x4x2x8, expected ?x4x2x16 for layout = nhd, storage = split, page_size = 4, kv_heads = 2}}
  %kv = kv.paged_view pools(%k, %v : memref<?x4x2x8xf16>, memref<?x4x2x8xf16>) tables(%a, %a, %a : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      : !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 16, dtype = f16, layout = nhd, storage = split, table = csr>
  return
}

// -----

// vLLM K is [p, h, d / x, slot, x]: here x = 8 (f16).
func.func @vllm_k_shape(%k: memref<?x2x16x16xf16>, %v: memref<?x2x16x16xf16>, %bt: memref<?x?xi32>, %l: memref<?xi32>) {
  // expected-error @below {{'kv.paged_view' op K has shape ?x2x16x16, expected ?x2x2x16x8 for layout = vllm, storage = split, page_size = 16, kv_heads = 2}}
  %kv = kv.paged_view pools(%k, %v : memref<?x2x16x16xf16>, memref<?x2x16x16xf16>) tables(%bt, %l : memref<?x?xi32>, memref<?xi32>)
      : !kv.paged<page_size = 16, kv_heads = 2, head_dim = 16, head_dim_v = 16, dtype = f16, layout = vllm, storage = split, table = block_table>
  return
}

// -----

// vLLM V is [p, h, d, slot].
func.func @vllm_v_shape(%k: memref<?x2x2x16x8xf16>, %v: memref<?x2x16x16x1xf16>, %bt: memref<?x?xi32>, %l: memref<?xi32>) {
  // expected-error @below {{'kv.paged_view' op V has shape ?x2x16x16x1, expected ?x2x16x16 for layout = vllm, storage = split, page_size = 16, kv_heads = 2}}
  %kv = kv.paged_view pools(%k, %v : memref<?x2x2x16x8xf16>, memref<?x2x16x16x1xf16>) tables(%bt, %l : memref<?x?xi32>, memref<?xi32>)
      : !kv.paged<page_size = 16, kv_heads = 2, head_dim = 16, head_dim_v = 16, dtype = f16, layout = vllm, storage = split, table = block_table>
  return
}

// -----

// ppl2 is (L, 2, T, H, D): a size-3 kv axis is wrong.
func.func @ppl2_shape(%p: memref<4x3x?x2x8xf16>, %s: memref<?x?xi32>, %l: memref<?xi32>) {
  // expected-error @below {{'kv.paged_view' op pool has shape 4x3x?x2x8, expected ?x2x?x2x8 for layout = ppl2, storage = combined, page_size = 4, kv_heads = 2}}
  %kv = kv.paged_view pools(%p : memref<4x3x?x2x8xf16>) tables(%s, %l : memref<?x?xi32>, memref<?xi32>)
      : !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = ppl2, storage = combined, table = token_table>
  return
}

// -----

func.func @mla_kpe_shape(%ckv: memref<?x64x512xf16>, %kpe: memref<?x64x32xf16>, %a: memref<?xi32>) {
  // expected-error @below {{'kv.paged_view' op kpe has shape ?x64x32, expected ?x64x64 for layout = nhd, storage = mla, page_size = 64, kv_heads = 1}}
  %kv = kv.paged_view pools(%ckv, %kpe : memref<?x64x512xf16>, memref<?x64x32xf16>) tables(%a, %a, %a : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      : !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f16, layout = nhd, storage = mla, table = csr, pe_dim = 64>
  return
}

// -----

// ppl0 (T, L, 2, H, D): the layer axis is 1.
func.func @ppl0_layer_range(%p: memref<?x4x2x2x8xf16>, %s: memref<?x?xi32>, %l: memref<?xi32>) {
  // expected-error @below {{'kv.paged_view' op layer 4 is out of range for a pool of 4 layers}}
  %kv = kv.paged_view pools(%p : memref<?x4x2x2x8xf16>) tables(%s, %l : memref<?x?xi32>, memref<?xi32>)
      : !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = ppl0, storage = combined, table = token_table, layer = 4>
  return
}

// -----

// ppl3 (L, 2, H, T, D): the layer axis is 0.
func.func @ppl3_layer_range(%p: memref<2x2x2x?x8xf16>, %s: memref<?x?xi32>, %l: memref<?xi32>) {
  // expected-error @below {{'kv.paged_view' op layer 7 is out of range for a pool of 2 layers}}
  %kv = kv.paged_view pools(%p : memref<2x2x2x?x8xf16>) tables(%s, %l : memref<?x?xi32>, memref<?xi32>)
      : !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = ppl3, storage = combined, table = token_table, layer = 7>
  return
}

// -----

!int8 = !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = nhd, storage = combined, table = csr, quant = int8_group, quant_group = 4>
func.func @scale_dtype(%p: memref<?x2x4x2x8xi8>, %s: memref<?x2x4x2x2xf32>, %a: memref<?xi32>) {
  // expected-error @below {{'kv.paged_view' op scale pool #0 must be a memref of the dtype 'f16', got 'memref<?x2x4x2x2xf32>'}}
  %kv = kv.paged_view pools(%p : memref<?x2x4x2x8xi8>) tables(%a, %a, %a : memref<?xi32>, memref<?xi32>, memref<?xi32>) scales(%s : memref<?x2x4x2x2xf32>) : !int8
  return
}

// -----

!int8 = !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = nhd, storage = combined, table = csr, quant = int8_group, quant_group = 4>
func.func @scale_shape(%p: memref<?x2x4x2x8xi8>, %s: memref<?x2x4x2x8xf16>, %a: memref<?xi32>) {
  // expected-error @below {{'kv.paged_view' op scale pool #0 has shape ?x2x4x2x8, expected ?x2x4x2x2 (the pool shape with head_dim / quant_group)}}
  %kv = kv.paged_view pools(%p : memref<?x2x4x2x8xi8>) tables(%a, %a, %a : memref<?xi32>, memref<?xi32>, memref<?xi32>) scales(%s : memref<?x2x4x2x8xf16>) : !int8
  return
}

// -----

// The V scale pool of a split cache uses head_dim_v / quant_group.
func.func @v_scale_shape(%k: memref<?x4x2x8xi8>, %v: memref<?x4x2x16xi8>, %ks: memref<?x4x2x2xf16>, %vs: memref<?x4x2x2xf16>, %a: memref<?xi32>) {
  // expected-error @below {{'kv.paged_view' op scale pool #1 has shape ?x4x2x2, expected ?x4x2x4 (the pool shape with head_dim / quant_group)}}
  %kv = kv.paged_view pools(%k, %v : memref<?x4x2x8xi8>, memref<?x4x2x16xi8>) tables(%a, %a, %a : memref<?xi32>, memref<?xi32>, memref<?xi32>) scales(%ks, %vs : memref<?x4x2x2xf16>, memref<?x4x2x2xf16>)
      : !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 16, dtype = f16, layout = nhd, storage = split, table = csr, quant = int8_group, quant_group = 4>
  return
}

// -----

func.func @affine_scale_rank(%p: memref<?x2x4x2x8xi8>, %s: memref<?x2x4x2xf16>, %a: memref<?xi32>) {
  // expected-error @below {{'kv.paged_view' op scale pool #0 rank does not match the layout map}}
  %kv = kv.paged_view pools(%p : memref<?x2x4x2x8xi8>) tables(%a, %a, %a : memref<?xi32>, memref<?xi32>, memref<?xi32>) scales(%s : memref<?x2x4x2xf16>)
      : !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = affine, storage = combined, table = csr, quant = int8_group, quant_group = 4, k_map = (p, kv, s, h, d) -> (p, kv, s, h, d)>
  return
}

// -----

!c = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
func.func @vector_width_zero(%p: memref<?x2x16x2x64xf16>, %a: memref<?xi32>) {
  // expected-error @below {{'kv.paged_view' op 'kv.vector_width' must be a power of two of at most 8 elements (16 bytes) dividing the head dims, got 0}}
  %kv = kv.paged_view pools(%p : memref<?x2x16x2x64xf16>) tables(%a, %a, %a : memref<?xi32>, memref<?xi32>, memref<?xi32>) {kv.vector_width = 0 : i64} : !c
  return
}

// -----

!c = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
func.func @vector_width_wide(%p: memref<?x2x16x2x64xf16>, %a: memref<?xi32>) {
  // expected-error @below {{'kv.vector_width' must be a power of two of at most 8 elements (16 bytes) dividing the head dims, got 16}}
  %kv = kv.paged_view pools(%p : memref<?x2x16x2x64xf16>) tables(%a, %a, %a : memref<?xi32>, memref<?xi32>, memref<?xi32>) {kv.vector_width = 16 : i64} : !c
  return
}

// -----

!c = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
func.func @vector_width_odd(%p: memref<?x2x16x2x64xf16>, %a: memref<?xi32>) {
  // expected-error @below {{'kv.vector_width' must be a power of two of at most 8 elements (16 bytes) dividing the head dims, got 3}}
  %kv = kv.paged_view pools(%p : memref<?x2x16x2x64xf16>) tables(%a, %a, %a : memref<?xi32>, memref<?xi32>, memref<?xi32>) {kv.vector_width = 3 : i64} : !c
  return
}

// -----

// expected-error @below {{'kv.vector_width' must be an integer on a kv.paged_view}}
func.func private @vector_width_elsewhere() attributes {kv.vector_width = 8 : i64}

// -----

// expected-error @below {{has unknown kv attribute 'kv.tiling'}}
func.func private @unknown_kv_attribute() attributes {kv.tiling = 8 : i64}
