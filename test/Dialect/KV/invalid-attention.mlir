// RUN: kvir-opt %s -split-input-file -verify-diagnostics

// The checks shared by the attention ops (verifyAttention in KVOps.cpp) on
// kv.decode and kv.prefill, and the op-specific rules of each.

!kvt = !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 64, dtype = f16, layout = nhd, storage = split, table = csr>

func.func @q_rank(%q: memref<?x4096xf16>, %kv: !kvt) {
  // expected-error @below {{'kv.decode' op q must have rank 3, got 'memref<?x4096xf16>'}}
  %s = kv.decode %q, %kv : memref<?x4096xf16>, !kvt -> !kv.state<?x32x64xf16, base = 2>
  return
}

// -----

!kvt = !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 64, dtype = f16, layout = nhd, storage = split, table = csr>
func.func @q_dtype(%q: memref<?x32x128xf32>, %kv: !kvt) {
  // expected-error @below {{'kv.decode' op q must have element type 'f16', got 'memref<?x32x128xf32>'}}
  %s = kv.decode %q, %kv : memref<?x32x128xf32>, !kvt -> !kv.state<?x32x64xf16, base = 2>
  return
}

// -----

!kvt = !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 64, dtype = f16, layout = nhd, storage = split, table = csr>
func.func @q_dynamic_heads(%q: memref<?x?x128xf16>, %kv: !kvt) {
  // expected-error @below {{'kv.decode' op q must have static heads and head_dim, got 'memref<?x?x128xf16>'}}
  %s = kv.decode %q, %kv : memref<?x?x128xf16>, !kvt -> !kv.state<?x32x64xf16, base = 2>
  return
}

// -----

!kvt = !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 64, dtype = f16, layout = nhd, storage = split, table = csr>
func.func @q_dynamic_dim(%q: memref<?x32x?xf16>, %kv: !kvt) {
  // expected-error @below {{'kv.decode' op q must have static heads and head_dim, got 'memref<?x32x?xf16>'}}
  %s = kv.decode %q, %kv : memref<?x32x?xf16>, !kvt -> !kv.state<?x32x64xf16, base = 2>
  return
}

// -----

!kvt = !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 64, dtype = f16, layout = nhd, storage = split, table = csr>
func.func @q_head_dim(%q: memref<?x32x64xf16>, %kv: !kvt) {
  // expected-error @below {{'kv.decode' op q head_dim 64 does not match the KV head_dim 128}}
  %s = kv.decode %q, %kv : memref<?x32x64xf16>, !kvt -> !kv.state<?x32x64xf16, base = 2>
  return
}

// -----

!kvt = !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 64, dtype = f16, layout = nhd, storage = split, table = csr>
func.func @gqa(%q: memref<?x12x128xf16>, %kv: !kvt) {
  // expected-error @below {{'kv.decode' op query heads (12) must be a multiple of kv_heads (8)}}
  %s = kv.decode %q, %kv : memref<?x12x128xf16>, !kvt -> !kv.state<?x12x64xf16, base = 2>
  return
}

// -----

!kvt = !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 64, dtype = f16, layout = nhd, storage = split, table = csr>
func.func @partitioned_result(%q: memref<?x32x128xf16>, %kv: !kvt) {
  // expected-error @below {{'kv.decode' op produces a whole state; its result type must not have a partition axis}}
  %s = kv.decode %q, %kv : memref<?x32x128xf16>, !kvt -> !kv.state<?x32x64xf16, base = 2, partitions = 4>
  return
}

// -----

!kvt = !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 64, dtype = f16, layout = nhd, storage = split, table = csr>
func.func @result_heads(%q: memref<?x32x128xf16>, %kv: !kvt) {
  // expected-error @below {{'kv.decode' op result has 8 heads, expected 32 (the query heads)}}
  %s = kv.decode %q, %kv : memref<?x32x128xf16>, !kvt -> !kv.state<?x8x64xf16, base = 2>
  return
}

// -----

!kvt = !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 64, dtype = f16, layout = nhd, storage = split, table = csr>
func.func @result_dv(%q: memref<?x32x128xf16>, %kv: !kvt) {
  // expected-error @below {{'kv.decode' op result head_dim_v 128 does not match the KV head_dim_v 64}}
  %s = kv.decode %q, %kv : memref<?x32x128xf16>, !kvt -> !kv.state<?x32x128xf16, base = 2>
  return
}

// -----

!kvt = !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 64, dtype = f16, layout = nhd, storage = split, table = csr>
func.func @result_rows(%q: memref<4x32x128xf16>, %kv: !kvt) {
  // expected-error @below {{'kv.decode' op result has 3 rows but q has 4}}
  %s = kv.decode %q, %kv : memref<4x32x128xf16>, !kvt -> !kv.state<3x32x64xf16, base = 2>
  return
}

// -----

!kvt = !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 64, dtype = f16, layout = nhd, storage = split, table = csr>
func.func @sm_scale(%q: memref<?x32x128xf16>, %kv: !kvt) {
  // expected-error @below {{'kv.decode' op sm_scale must be positive, got 0.000000e+00}}
  %s = kv.decode %q, %kv {sm_scale = 0.0 : f32} : memref<?x32x128xf16>, !kvt -> !kv.state<?x32x64xf16, base = 2>
  return
}

// -----

!kvt = !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 64, dtype = f16, layout = nhd, storage = split, table = csr>
func.func @soft_cap(%q: memref<?x32x128xf16>, %kv: !kvt) {
  // expected-error @below {{'kv.decode' op logits_soft_cap must be positive, got -3.000000e+01}}
  %s = kv.decode %q, %kv {logits_soft_cap = -30.0 : f32} : memref<?x32x128xf16>, !kvt -> !kv.state<?x32x64xf16, base = 2>
  return
}

// -----

!kvt = !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 64, dtype = f16, layout = nhd, storage = split, table = csr>
func.func @window(%q: memref<?x32x128xf16>, %kv: !kvt) {
  // expected-error @below {{'kv.decode' op window_left must be non-negative, got -1 (omit it for no window)}}
  %s = kv.decode %q, %kv {window_left = -1 : i64} : memref<?x32x128xf16>, !kvt -> !kv.state<?x32x64xf16, base = 2>
  return
}

// -----

!odd = !kv.paged<page_size = 16, kv_heads = 1, head_dim = 3, head_dim_v = 3, dtype = f32, layout = nhd, storage = combined, table = csr>
func.func @rope_odd(%q: memref<?x1x3xf32>, %kv: !odd) {
  // expected-error @below {{'kv.decode' op rope needs an even head_dim, got 3}}
  %s = kv.decode %q, %kv {rope = #kv.rope<interleave>} : memref<?x1x3xf32>, !odd -> !kv.state<?x1x3xf32, base = e>
  return
}

// -----

!mla = !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f16, layout = nhd, storage = mla, table = csr, pe_dim = 64>
func.func @decode_mla(%q: memref<?x16x512xf16>, %kv: !mla) {
  // expected-error @below {{'kv.decode' op reads a K/V cache; use kv.mla_decode for MLA}}
  %s = kv.decode %q, %kv : memref<?x16x512xf16>, !mla -> !kv.state<?x16x512xf16, base = e>
  return
}

// -----

// The sm_scale attribute must be an f32 attribute.
!kvt = !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 64, dtype = f16, layout = nhd, storage = split, table = csr>
func.func @sm_scale_type(%q: memref<?x32x128xf16>, %kv: !kvt) {
  // expected-error @below {{'kv.decode' op attribute 'sm_scale' failed to satisfy constraint: 32-bit float attribute}}
  %s = kv.decode %q, %kv {sm_scale = 1.0 : f64} : memref<?x32x128xf16>, !kvt -> !kv.state<?x32x64xf16, base = 2>
  return
}

// -----

!mla = !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f16, layout = nhd, storage = mla, table = csr, pe_dim = 64>
func.func @prefill_mla(%q: memref<?x16x512xf16>, %qo: memref<?xi32>, %kv: !mla) {
  // expected-error @below {{'kv.prefill' op reads a K/V cache; use kv.mla_decode for MLA}}
  %s = kv.prefill %q, %qo, %kv : memref<?x16x512xf16>, memref<?xi32>, !mla -> !kv.state<?x16x512xf16, base = e>
  return
}

// -----

!rag = !kv.ragged<kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = bf16>
func.func @qo_indptr_type(%q: memref<?x8x64xbf16>, %qo: memref<?xi16>, %kv: !rag) {
  // expected-error @below {{'kv.prefill' op qo_indptr must have element type i32 or i64, got 'memref<?xi16>'}}
  %s = kv.prefill %q, %qo, %kv : memref<?x8x64xbf16>, memref<?xi16>, !rag -> !kv.state<?x8x64xf32, base = e>
  return
}

// -----

!rag = !kv.ragged<kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = bf16>
func.func @qo_indptr_rank(%q: memref<?x8x64xbf16>, %qo: memref<1x?xi32>, %kv: !rag) {
  // expected-error @below {{'kv.prefill' op qo_indptr must have rank 1, got 'memref<1x?xi32>'}}
  %s = kv.prefill %q, %qo, %kv : memref<?x8x64xbf16>, memref<1x?xi32>, !rag -> !kv.state<?x8x64xf32, base = e>
  return
}

// -----

!rag = !kv.ragged<kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = bf16>
func.func @mask_rank(%q: memref<?x8x64xbf16>, %qo: memref<?xi32>, %kv: !rag, %m: memref<?x?xi1>) {
  // expected-error @below {{'kv.prefill' op mask must have rank 1, got 'memref<?x?xi1>'}}
  %s = kv.prefill %q, %qo, %kv mask(%m : memref<?x?xi1>) : memref<?x8x64xbf16>, memref<?xi32>, !rag -> !kv.state<?x8x64xf32, base = e>
  return
}

// -----

!rag = !kv.ragged<kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = bf16>
func.func @mask_type(%q: memref<?x8x64xbf16>, %qo: memref<?xi32>, %kv: !rag, %m: memref<?xi32>) {
  // expected-error @below {{'kv.prefill' op mask must be i1 (one byte per bool) or i8 (bit-packed), got 'memref<?xi32>'}}
  %s = kv.prefill %q, %qo, %kv mask(%m : memref<?xi32>) : memref<?x8x64xbf16>, memref<?xi32>, !rag -> !kv.state<?x8x64xf32, base = e>
  return
}

// -----

// The shared checks apply to prefill over ragged KV too: here the ragged
// dtype is the one q must have.
!rag = !kv.ragged<kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = bf16>
func.func @prefill_q_dtype(%q: memref<?x8x64xf16>, %qo: memref<?xi32>, %kv: !rag) {
  // expected-error @below {{'kv.prefill' op q must have element type 'bf16', got 'memref<?x8x64xf16>'}}
  %s = kv.prefill %q, %qo, %kv : memref<?x8x64xf16>, memref<?xi32>, !rag -> !kv.state<?x8x64xf32, base = e>
  return
}

// -----

!rag = !kv.ragged<kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = bf16>
func.func @prefill_window(%q: memref<?x8x64xbf16>, %qo: memref<?xi32>, %kv: !rag) {
  // expected-error @below {{'kv.prefill' op window_left must be non-negative, got -3 (omit it for no window)}}
  %s = kv.prefill %q, %qo, %kv {causal, window_left = -3 : i64} : memref<?x8x64xbf16>, memref<?xi32>, !rag -> !kv.state<?x8x64xf32, base = e>
  return
}

// -----

// A prefill result does not take a partition axis either.
!rag = !kv.ragged<kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = bf16>
func.func @prefill_partitions(%q: memref<?x8x64xbf16>, %qo: memref<?xi32>, %kv: !rag) {
  // expected-error @below {{'kv.prefill' op produces a whole state; its result type must not have a partition axis}}
  %s = kv.prefill %q, %qo, %kv : memref<?x8x64xbf16>, memref<?xi32>, !rag -> !kv.state<?x8x64xf32, base = e, partitions = ?>
  return
}

// -----

!rag = !kv.ragged<kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = bf16>
func.func @positions_type(%q: memref<?x8x64xbf16>, %qo: memref<?xi32>, %kv: !rag, %p: memref<?xi64>) {
  // expected-error @below {{'kv.prefill' op positions must have element type 'i32', got 'memref<?xi64>'}}
  %s = kv.prefill %q, %qo, %kv positions(%p : memref<?xi64>) : memref<?x8x64xbf16>, memref<?xi32>, !rag -> !kv.state<?x8x64xf32, base = e>
  return
}

// -----

!rag = !kv.ragged<kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = bf16>
func.func @positions_rank(%q: memref<?x8x64xbf16>, %qo: memref<?xi32>, %kv: !rag, %p: memref<?x2xi32>) {
  // expected-error @below {{'kv.prefill' op positions must have rank 1}}
  %s = kv.prefill %q, %qo, %kv positions(%p : memref<?x2xi32>) : memref<?x8x64xbf16>, memref<?xi32>, !rag -> !kv.state<?x8x64xf32, base = e>
  return
}

// -----

!rag = !kv.ragged<kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = bf16>
func.func @positions_rows(%q: memref<6x8x64xbf16>, %qo: memref<?xi32>, %kv: !rag, %p: memref<5xi32>) {
  // expected-error @below {{'kv.prefill' op positions has 5 entries, expected one per query row (6)}}
  %s = kv.prefill %q, %qo, %kv positions(%p : memref<5xi32>) : memref<6x8x64xbf16>, memref<?xi32>, !rag -> !kv.state<6x8x64xf32, base = e>
  return
}
