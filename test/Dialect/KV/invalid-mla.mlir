// RUN: kvir-opt %s -split-input-file -verify-diagnostics

// MlaDecodeOp::verify (KVOps.cpp).

!kvt = !kv.paged<page_size = 16, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f16, layout = nhd, storage = split, table = csr>
func.func @not_mla(%qn: memref<?x16x512xf16>, %qp: memref<?x16x64xf16>, %kv: !kvt) {
  // expected-error @below {{'kv.mla_decode' op needs an MLA cache (storage = mla), got storage = split}}
  %s = kv.mla_decode %qn, %qp, %kv : memref<?x16x512xf16>, memref<?x16x64xf16>, !kvt -> !kv.state<?x16x512xf16, base = e>
  return
}

// -----

!mla = !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f16, layout = nhd, storage = mla, table = csr, pe_dim = 64>
func.func @q_nope_dtype(%qn: memref<?x16x512xbf16>, %qp: memref<?x16x64xf16>, %kv: !mla) {
  // expected-error @below {{'kv.mla_decode' op q_nope must have element type 'f16', got 'memref<?x16x512xbf16>'}}
  %s = kv.mla_decode %qn, %qp, %kv : memref<?x16x512xbf16>, memref<?x16x64xf16>, !mla -> !kv.state<?x16x512xf16, base = e>
  return
}

// -----

!mla = !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f16, layout = nhd, storage = mla, table = csr, pe_dim = 64>
func.func @q_pe_rank(%qn: memref<?x16x512xf16>, %qp: memref<?x1024xf16>, %kv: !mla) {
  // expected-error @below {{'kv.mla_decode' op q_pe must have rank 3, got 'memref<?x1024xf16>'}}
  %s = kv.mla_decode %qn, %qp, %kv : memref<?x16x512xf16>, memref<?x1024xf16>, !mla -> !kv.state<?x16x512xf16, base = e>
  return
}

// -----

// A dynamic width is reported as such, not as a mismatching number.
!mla = !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f16, layout = nhd, storage = mla, table = csr, pe_dim = 64>
func.func @dynamic_width(%qn: memref<?x16x?xf16>, %qp: memref<?x16x64xf16>, %kv: !mla) {
  // expected-error @below {{'kv.mla_decode' op q_nope and q_pe must have static heads and widths, got 'memref<?x16x?xf16>' and 'memref<?x16x64xf16>'}}
  %s = kv.mla_decode %qn, %qp, %kv : memref<?x16x?xf16>, memref<?x16x64xf16>, !mla -> !kv.state<?x16x512xf16, base = e>
  return
}

// -----

!mla = !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f16, layout = nhd, storage = mla, table = csr, pe_dim = 64>
func.func @dynamic_heads(%qn: memref<?x16x512xf16>, %qp: memref<?x?x64xf16>, %kv: !mla) {
  // expected-error @below {{'kv.mla_decode' op q_nope and q_pe must have static heads and widths, got 'memref<?x16x512xf16>' and 'memref<?x?x64xf16>'}}
  %s = kv.mla_decode %qn, %qp, %kv : memref<?x16x512xf16>, memref<?x?x64xf16>, !mla -> !kv.state<?x16x512xf16, base = e>
  return
}

// -----

!mla = !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f16, layout = nhd, storage = mla, table = csr, pe_dim = 64>
func.func @q_nope_width(%qn: memref<?x16x576xf16>, %qp: memref<?x16x64xf16>, %kv: !mla) {
  // expected-error @below {{'kv.mla_decode' op q_nope width 576 does not match the ckv width 512}}
  %s = kv.mla_decode %qn, %qp, %kv : memref<?x16x576xf16>, memref<?x16x64xf16>, !mla -> !kv.state<?x16x512xf16, base = e>
  return
}

// -----

!mla = !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f16, layout = nhd, storage = mla, table = csr, pe_dim = 64>
func.func @q_pe_width(%qn: memref<?x16x512xf16>, %qp: memref<?x16x32xf16>, %kv: !mla) {
  // expected-error @below {{'kv.mla_decode' op q_pe width 32 does not match the kpe width 64}}
  %s = kv.mla_decode %qn, %qp, %kv : memref<?x16x512xf16>, memref<?x16x32xf16>, !mla -> !kv.state<?x16x512xf16, base = e>
  return
}

// -----

!mla = !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f16, layout = nhd, storage = mla, table = csr, pe_dim = 64>
func.func @heads_mismatch(%qn: memref<?x16x512xf16>, %qp: memref<?x8x64xf16>, %kv: !mla) {
  // expected-error @below {{'kv.mla_decode' op q_nope 'memref<?x16x512xf16>' and q_pe 'memref<?x8x64xf16>' must have the same rows and heads}}
  %s = kv.mla_decode %qn, %qp, %kv : memref<?x16x512xf16>, memref<?x8x64xf16>, !mla -> !kv.state<?x16x512xf16, base = e>
  return
}

// -----

!mla = !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f16, layout = nhd, storage = mla, table = csr, pe_dim = 64>
func.func @rows_mismatch(%qn: memref<4x16x512xf16>, %qp: memref<3x16x64xf16>, %kv: !mla) {
  // expected-error @below {{'kv.mla_decode' op q_nope 'memref<4x16x512xf16>' and q_pe 'memref<3x16x64xf16>' must have the same rows and heads}}
  %s = kv.mla_decode %qn, %qp, %kv : memref<4x16x512xf16>, memref<3x16x64xf16>, !mla -> !kv.state<4x16x512xf16, base = e>
  return
}

// -----

// Dynamic rows print as '?'.
!mla = !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f16, layout = nhd, storage = mla, table = csr, pe_dim = 64>
func.func @result_heads(%qn: memref<?x16x512xf16>, %qp: memref<?x16x64xf16>, %kv: !mla) {
  // expected-error @below {{'kv.mla_decode' op result type '!kv.state<?x8x512xf16, base = e>' must be a state without partitions of ? rows, 16 heads and head_dim_v 512}}
  %s = kv.mla_decode %qn, %qp, %kv : memref<?x16x512xf16>, memref<?x16x64xf16>, !mla -> !kv.state<?x8x512xf16, base = e>
  return
}

// -----

!mla = !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f16, layout = nhd, storage = mla, table = csr, pe_dim = 64>
func.func @result_dv(%qn: memref<2x16x512xf16>, %qp: memref<2x16x64xf16>, %kv: !mla) {
  // expected-error @below {{'kv.mla_decode' op result type '!kv.state<2x16x576xf16, base = e>' must be a state without partitions of 2 rows, 16 heads and head_dim_v 512}}
  %s = kv.mla_decode %qn, %qp, %kv : memref<2x16x512xf16>, memref<2x16x64xf16>, !mla -> !kv.state<2x16x576xf16, base = e>
  return
}

// -----

!mla = !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f16, layout = nhd, storage = mla, table = csr, pe_dim = 64>
func.func @result_rows(%qn: memref<2x16x512xf16>, %qp: memref<2x16x64xf16>, %kv: !mla) {
  // expected-error @below {{'kv.mla_decode' op result type '!kv.state<3x16x512xf16, base = e>' must be a state without partitions of 2 rows, 16 heads and head_dim_v 512}}
  %s = kv.mla_decode %qn, %qp, %kv : memref<2x16x512xf16>, memref<2x16x64xf16>, !mla -> !kv.state<3x16x512xf16, base = e>
  return
}

// -----

!mla = !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f16, layout = nhd, storage = mla, table = csr, pe_dim = 64>
func.func @result_partitions(%qn: memref<?x16x512xf16>, %qp: memref<?x16x64xf16>, %kv: !mla) {
  // expected-error @below {{'kv.mla_decode' op result type '!kv.state<?x16x512xf32, base = e, partitions = 4>' must be a state without partitions of ? rows, 16 heads and head_dim_v 512}}
  %s = kv.mla_decode %qn, %qp, %kv : memref<?x16x512xf16>, memref<?x16x64xf16>, !mla -> !kv.state<?x16x512xf32, base = e, partitions = 4>
  return
}

// -----

!mla = !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f16, layout = nhd, storage = mla, table = csr, pe_dim = 64>
func.func @sm_scale(%qn: memref<?x16x512xf16>, %qp: memref<?x16x64xf16>, %kv: !mla) {
  // expected-error @below {{'kv.mla_decode' op sm_scale must be positive, got -4.000000e-02}}
  %s = kv.mla_decode %qn, %qp, %kv {sm_scale = -0.04 : f32} : memref<?x16x512xf16>, memref<?x16x64xf16>, !mla -> !kv.state<?x16x512xf16, base = e>
  return
}

// -----

!mla = !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f16, layout = nhd, storage = mla, table = csr, pe_dim = 64>
func.func @causal_one_row(%qn: memref<?x16x512xf16>, %qp: memref<?x16x64xf16>, %kv: !mla) {
  // expected-error @below {{'kv.mla_decode' op causal needs rows(qo_indptr): with one query row per request every key is visible}}
  %s = kv.mla_decode %qn, %qp, %kv {causal} : memref<?x16x512xf16>, memref<?x16x64xf16>, !mla -> !kv.state<?x16x512xf16, base = e>
  return
}

// -----

!mla = !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f16, layout = nhd, storage = mla, table = csr, pe_dim = 64>
func.func @qo_indptr_type(%qn: memref<?x16x512xf16>, %qp: memref<?x16x64xf16>, %kv: !mla, %qo: memref<?xi64>) {
  // expected-error @below {{'kv.mla_decode' op qo_indptr}}
  %s = kv.mla_decode %qn, %qp, %kv rows(%qo : memref<?xi64>) {causal} : memref<?x16x512xf16>, memref<?x16x64xf16>, !mla -> !kv.state<?x16x512xf16, base = e>
  return
}

// -----

!mla = !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f16, layout = nhd, storage = mla, table = csr, pe_dim = 64>
func.func @qo_indptr_rank(%qn: memref<?x16x512xf16>, %qp: memref<?x16x64xf16>, %kv: !mla, %qo: memref<?x2xi32>) {
  // expected-error @below {{'kv.mla_decode' op qo_indptr}}
  %s = kv.mla_decode %qn, %qp, %kv rows(%qo : memref<?x2xi32>) : memref<?x16x512xf16>, memref<?x16x64xf16>, !mla -> !kv.state<?x16x512xf16, base = e>
  return
}
