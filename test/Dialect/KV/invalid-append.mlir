// RUN: kvir-opt %s -split-input-file -verify-diagnostics

// AppendOp::verify (KVOps.cpp).

// An MLA append takes kpe (pe_dim wide) as v.
!mla = !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f16, layout = nhd, storage = mla, table = csr, pe_dim = 64>
func.func @mla_v_width(%k: memref<?x1x512xf16>, %b: memref<?xi32>, %kv: !mla) {
  // expected-error @below {{'kv.append' op v has shape ?x1x512, expected ?x1x64 [nnz, 1, pe_dim] (kpe)}}
  kv.append %k, %k, %b, %b into %kv : memref<?x1x512xf16>, memref<?x1x512xf16>, memref<?xi32>, memref<?xi32>, !mla
  return
}

// -----

!mla = !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f16, layout = nhd, storage = mla, table = csr, pe_dim = 64>
func.func @mla_rope(%k: memref<?x1x512xf16>, %v: memref<?x1x64xf16>, %b: memref<?xi32>, %kv: !mla) {
  // expected-error @below {{'kv.append' op rope on an MLA append is not supported (kpe arrives rotated, as FlashInfer's append_paged_mla_kv_cache takes it)}}
  kv.append %k, %v, %b, %b into %kv {rope = #kv.rope<interleave, theta = 1.000000e+04, scale = 1.000000e+00>} : memref<?x1x512xf16>, memref<?x1x64xf16>, memref<?xi32>, memref<?xi32>, !mla
  return
}

// -----

!kvt = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 32, dtype = f16, layout = nhd, storage = split, table = csr>
func.func @k_dtype(%k: memref<?x2x64xf32>, %v: memref<?x2x32xf16>, %b: memref<?xi32>, %kv: !kvt) {
  // expected-error @below {{'kv.append' op k must have element type 'f16', got 'memref<?x2x64xf32>'}}
  kv.append %k, %v, %b, %b into %kv : memref<?x2x64xf32>, memref<?x2x32xf16>, memref<?xi32>, memref<?xi32>, !kvt
  return
}

// -----

// New rows arrive in the activation dtype even for a quantized cache.
!i8 = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr, quant = int8_group, quant_group = 8>
func.func @k_quantized(%k: memref<?x2x64xi8>, %v: memref<?x2x64xf16>, %b: memref<?xi32>, %kv: !i8) {
  // expected-error @below {{'kv.append' op k must have element type 'f16', got 'memref<?x2x64xi8>'}}
  kv.append %k, %v, %b, %b into %kv : memref<?x2x64xi8>, memref<?x2x64xf16>, memref<?xi32>, memref<?xi32>, !i8
  return
}

// -----

!kvt = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 32, dtype = f16, layout = nhd, storage = split, table = csr>
func.func @v_rank(%k: memref<?x2x64xf16>, %v: memref<?x64xf16>, %b: memref<?xi32>, %kv: !kvt) {
  // expected-error @below {{'kv.append' op v must have rank 3, got 'memref<?x64xf16>'}}
  kv.append %k, %v, %b, %b into %kv : memref<?x2x64xf16>, memref<?x64xf16>, memref<?xi32>, memref<?xi32>, !kvt
  return
}

// -----

!kvt = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 32, dtype = f16, layout = nhd, storage = split, table = csr>
func.func @batch_indices(%k: memref<?x2x64xf16>, %v: memref<?x2x32xf16>, %b: memref<?xindex>, %p: memref<?xi32>, %kv: !kvt) {
  // expected-error @below {{'kv.append' op batch_indices must have element type 'i32', got 'memref<?xindex>'}}
  kv.append %k, %v, %b, %p into %kv : memref<?x2x64xf16>, memref<?x2x32xf16>, memref<?xindex>, memref<?xi32>, !kvt
  return
}

// -----

!kvt = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 32, dtype = f16, layout = nhd, storage = split, table = csr>
func.func @positions(%k: memref<?x2x64xf16>, %v: memref<?x2x32xf16>, %b: memref<?xi32>, %p: memref<?x1xi32>, %kv: !kvt) {
  // expected-error @below {{'kv.append' op positions must have rank 1, got 'memref<?x1xi32>'}}
  kv.append %k, %v, %b, %p into %kv : memref<?x2x64xf16>, memref<?x2x32xf16>, memref<?xi32>, memref<?x1xi32>, !kvt
  return
}

// -----

!kvt = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 32, dtype = f16, layout = nhd, storage = split, table = csr>
func.func @k_shape(%k: memref<?x4x64xf16>, %v: memref<?x2x32xf16>, %b: memref<?xi32>, %kv: !kvt) {
  // expected-error @below {{'kv.append' op k has shape ?x4x64, expected ?x2x64 [nnz, kv_heads, head_dim]}}
  kv.append %k, %v, %b, %b into %kv : memref<?x4x64xf16>, memref<?x2x32xf16>, memref<?xi32>, memref<?xi32>, !kvt
  return
}

// -----

!kvt = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 32, dtype = f16, layout = nhd, storage = split, table = csr>
func.func @v_shape(%k: memref<?x2x64xf16>, %v: memref<?x2x64xf16>, %b: memref<?xi32>, %kv: !kvt) {
  // expected-error @below {{'kv.append' op v has shape ?x2x64, expected ?x2x32 [nnz, kv_heads, head_dim_v]}}
  kv.append %k, %v, %b, %b into %kv : memref<?x2x64xf16>, memref<?x2x64xf16>, memref<?xi32>, memref<?xi32>, !kvt
  return
}

// -----

!kvt = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 32, dtype = f16, layout = nhd, storage = split, table = csr>
func.func @nnz_k_v(%k: memref<3x2x64xf16>, %v: memref<4x2x32xf16>, %b: memref<?xi32>, %kv: !kvt) {
  // expected-error @below {{'kv.append' op v has 4 rows but k has 3; every operand has one entry per new row}}
  kv.append %k, %v, %b, %b into %kv : memref<3x2x64xf16>, memref<4x2x32xf16>, memref<?xi32>, memref<?xi32>, !kvt
  return
}

// -----

// Dynamic sizes are skipped: positions is checked against k.
!kvt = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 32, dtype = f16, layout = nhd, storage = split, table = csr>
func.func @nnz_positions(%k: memref<3x2x64xf16>, %v: memref<?x2x32xf16>, %b: memref<?xi32>, %p: memref<5xi32>, %kv: !kvt) {
  // expected-error @below {{'kv.append' op positions has 5 rows but k has 3; every operand has one entry per new row}}
  kv.append %k, %v, %b, %p into %kv : memref<3x2x64xf16>, memref<?x2x32xf16>, memref<?xi32>, memref<5xi32>, !kvt
  return
}

// -----

!kvt = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 32, dtype = f16, layout = nhd, storage = split, table = csr>
func.func @nnz_batch_indices(%k: memref<?x2x64xf16>, %v: memref<2x2x32xf16>, %b: memref<1xi32>, %p: memref<?xi32>, %kv: !kvt) {
  // expected-error @below {{'kv.append' op batch_indices has 1 rows but v has 2; every operand has one entry per new row}}
  kv.append %k, %v, %b, %p into %kv : memref<?x2x64xf16>, memref<2x2x32xf16>, memref<1xi32>, memref<?xi32>, !kvt
  return
}

// -----

!odd = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 5, head_dim_v = 5, dtype = f32, layout = nhd, storage = combined, table = csr>
func.func @rope_odd(%k: memref<?x2x5xf32>, %b: memref<?xi32>, %kv: !odd) {
  // expected-error @below {{'kv.append' op rope needs an even head_dim, got 5}}
  kv.append %k, %k, %b, %b into %kv {rope = #kv.rope<rotate_half>} : memref<?x2x5xf32>, memref<?x2x5xf32>, memref<?xi32>, memref<?xi32>, !odd
  return
}
