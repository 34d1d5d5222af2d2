// RUN: kvir-opt %s -split-input-file -verify-diagnostics

// CascadeOp::verify (KVOps.cpp).

// An empty level list only exists in the generic form.
func.func @no_levels(%q: memref<?x4x64xf16>) {
  // expected-error @below {{'kv.cascade' op needs at least one level}}
  %s = "kv.cascade"(%q) <{operandSegmentSizes = array<i32: 1, 0, 0, 0, 0>}> ({}, {}) : (memref<?x4x64xf16>) -> !kv.state<?x4x64xf16, base = 2>
  return
}

// -----

!kvt = !kv.paged<page_size = 16, kv_heads = 4, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
func.func @level_count(%q: memref<?x4x64xf16>, %qi: memref<?xi32>, %kv: !kvt) {
  // expected-error @below {{'kv.cascade' op has 2 qo_indptr levels but 1 KV levels}}
  %s = kv.cascade %q levels(%qi, %qi : memref<?xi32>, memref<?xi32>) kvs(%kv : !kvt) : memref<?x4x64xf16> -> !kv.state<?x4x64xf16, base = 2>
  return
}

// -----

!kvt = !kv.paged<page_size = 16, kv_heads = 4, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
func.func @qo_indptr_type(%q: memref<?x4x64xf16>, %qi: memref<?xi32>, %bad: memref<?xi64>, %kv: !kvt) {
  // expected-error @below {{'kv.cascade' op qo_indptr of level 1 must have element type 'i32', got 'memref<?xi64>'}}
  %s = kv.cascade %q levels(%qi, %bad : memref<?xi32>, memref<?xi64>) kvs(%kv, %kv : !kvt, !kvt) : memref<?x4x64xf16> -> !kv.state<?x4x64xf16, base = 2>
  return
}

// -----

!mla = !kv.paged<page_size = 16, kv_heads = 1, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = mla, table = csr, pe_dim = 16>
func.func @mla_level0(%q: memref<?x4x64xf16>, %qi: memref<?xi32>, %kv: !mla) {
  // expected-error @below {{'kv.cascade' op levels must be K/V caches, but level 0 is an MLA cache}}
  %s = kv.cascade %q levels(%qi : memref<?xi32>) kvs(%kv : !mla) : memref<?x4x64xf16> -> !kv.state<?x4x64xf16, base = 2>
  return
}

// -----

// An MLA cache that agrees with level 0 in heads, head dims and dtype must
// still be rejected at a later level.
!kvt = !kv.paged<page_size = 16, kv_heads = 1, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!mla = !kv.paged<page_size = 16, kv_heads = 1, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = mla, table = csr, pe_dim = 16>
func.func @mla_level1(%q: memref<?x4x64xf16>, %qi: memref<?xi32>, %kv0: !kvt, %kv1: !mla) {
  // expected-error @below {{'kv.cascade' op levels must be K/V caches, but level 1 is an MLA cache}}
  %s = kv.cascade %q levels(%qi, %qi : memref<?xi32>, memref<?xi32>) kvs(%kv0, %kv1 : !kvt, !mla) : memref<?x4x64xf16> -> !kv.state<?x4x64xf16, base = 2>
  return
}

// -----

!kv0 = !kv.paged<page_size = 16, kv_heads = 4, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!kv1 = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
func.func @level_heads(%q: memref<?x4x64xf16>, %qi: memref<?xi32>, %a: !kv0, %b: !kv1) {
  // expected-error @below {{'kv.cascade' op level 1 KV '!kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>' differs from level 0 in heads, head dims or dtype}}
  %s = kv.cascade %q levels(%qi, %qi : memref<?xi32>, memref<?xi32>) kvs(%a, %b : !kv0, !kv1) : memref<?x4x64xf16> -> !kv.state<?x4x64xf16, base = 2>
  return
}

// -----

!kv0 = !kv.paged<page_size = 16, kv_heads = 4, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!kv1 = !kv.paged<page_size = 1, kv_heads = 4, head_dim = 64, head_dim_v = 64, dtype = bf16, layout = hnd, storage = combined, table = csr>
func.func @level_dtype(%q: memref<?x4x64xf16>, %qi: memref<?xi32>, %a: !kv0, %b: !kv1) {
  // expected-error @below {{'kv.cascade' op level 1 KV '!kv.paged<page_size = 1, kv_heads = 4, head_dim = 64, head_dim_v = 64, dtype = bf16, layout = hnd, storage = combined, table = csr>' differs from level 0 in heads, head dims or dtype}}
  %s = kv.cascade %q levels(%qi, %qi : memref<?xi32>, memref<?xi32>) kvs(%a, %b : !kv0, !kv1) : memref<?x4x64xf16> -> !kv.state<?x4x64xf16, base = 2>
  return
}

// -----

!kv0 = !kv.paged<page_size = 16, kv_heads = 4, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = split, table = csr>
!kv1 = !kv.paged<page_size = 16, kv_heads = 4, head_dim = 64, head_dim_v = 32, dtype = f16, layout = nhd, storage = split, table = csr>
func.func @level_dv(%q: memref<?x4x64xf16>, %qi: memref<?xi32>, %a: !kv0, %b: !kv1) {
  // expected-error @below {{'kv.cascade' op level 1 KV}}
  %s = kv.cascade %q levels(%qi, %qi : memref<?xi32>, memref<?xi32>) kvs(%a, %b : !kv0, !kv1) : memref<?x4x64xf16> -> !kv.state<?x4x64xf16, base = 2>
  return
}

// -----

// Levels may differ in page size, layout, table form and quantization.
// The shared attention checks then apply against level 0.
!kv0 = !kv.paged<page_size = 16, kv_heads = 4, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!kv1 = !kv.paged<page_size = 8, kv_heads = 4, head_dim = 64, head_dim_v = 64, dtype = f16, layout = vllm, storage = split, table = block_table, quant = fp8_e4m3>
func.func @attention_checks(%q: memref<?x6x64xf16>, %qi: memref<?xi32>, %a: !kv0, %b: !kv1) {
  // expected-error @below {{'kv.cascade' op query heads (6) must be a multiple of kv_heads (4)}}
  %s = kv.cascade %q levels(%qi, %qi : memref<?xi32>, memref<?xi32>) kvs(%a, %b : !kv0, !kv1) : memref<?x6x64xf16> -> !kv.state<?x6x64xf16, base = 2>
  return
}

// -----

!kvt = !kv.paged<page_size = 16, kv_heads = 4, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
func.func @cascade_soft_cap(%q: memref<?x4x64xf16>, %qi: memref<?xi32>, %kv: !kvt) {
  // expected-error @below {{'kv.cascade' op logits_soft_cap must be positive, got 0.000000e+00}}
  %s = kv.cascade %q levels(%qi : memref<?xi32>) kvs(%kv : !kvt) {logits_soft_cap = 0.0 : f32} : memref<?x4x64xf16> -> !kv.state<?x4x64xf16, base = 2>
  return
}

// -----

// kv.shared_level marks a cascade's shared level: a non-causal kv.prefill.
// expected-error @below {{'kv.shared_level' must be a unit attribute on a kv.prefill that is not causal (a cascade's shared level)}}
func.func private @shared_level_elsewhere() attributes {kv.shared_level}

// -----

!p = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x64xf16, base = 2>
func.func @shared_level_causal(%q: memref<?x8x64xf16>, %qo: memref<?xi32>, %kv: !p) -> !s {
  // expected-error @below {{'kv.shared_level' must be a unit attribute on a kv.prefill that is not causal (a cascade's shared level)}}
  %s = kv.prefill %q, %qo, %kv {causal, kv.shared_level} : memref<?x8x64xf16>, memref<?xi32>, !p -> !s
  return %s : !s
}

// -----

!p = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x64xf16, base = 2>
func.func @shared_level_value(%q: memref<?x8x64xf16>, %qo: memref<?xi32>, %kv: !p) -> !s {
  // expected-error @below {{'kv.shared_level' must be a unit attribute on a kv.prefill that is not causal (a cascade's shared level)}}
  %s = kv.prefill %q, %qo, %kv {kv.shared_level = 1 : i64} : memref<?x8x64xf16>, memref<?xi32>, !p -> !s
  return %s : !s
}

// -----

// CascadePositionsOp::verify (KVOps.cpp).

func.func @positions_no_levels(%p: memref<?xi32>) {
  // expected-error @below {{'kv.cascade_positions' op needs at least one level}}
  "kv.cascade_positions"(%p) <{operandSegmentSizes = array<i32: 0, 0, 1>}> : (memref<?xi32>) -> ()
  return
}

// -----

!kvt = !kv.paged<page_size = 16, kv_heads = 1, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
func.func @positions_level_count(%qi: memref<?xi32>, %kv: !kvt, %p: memref<?xi32>) {
  // expected-error @below {{'kv.cascade_positions' op has 2 qo_indptr levels but 1 KV levels}}
  kv.cascade_positions levels(%qi, %qi : memref<?xi32>, memref<?xi32>) kvs(%kv : !kvt) into %p : memref<?xi32>
  return
}

// -----

!kvt = !kv.paged<page_size = 16, kv_heads = 1, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
func.func @positions_indptr_type(%qi: memref<?xi32>, %bad: memref<?xi64>, %kv: !kvt, %p: memref<?xi32>) {
  // expected-error @below {{'kv.cascade_positions' op qo_indptr of level 1 must have element type 'i32', got 'memref<?xi64>'}}
  kv.cascade_positions levels(%qi, %bad : memref<?xi32>, memref<?xi64>) kvs(%kv, %kv : !kvt, !kvt) into %p : memref<?xi32>
  return
}

// -----

!mla = !kv.paged<page_size = 16, kv_heads = 1, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = mla, table = csr, pe_dim = 16>
func.func @positions_mla(%qi: memref<?xi32>, %kv: !mla, %p: memref<?xi32>) {
  // expected-error @below {{'kv.cascade_positions' op levels must be K/V caches, but level 0 is an MLA cache}}
  kv.cascade_positions levels(%qi : memref<?xi32>) kvs(%kv : !mla) into %p : memref<?xi32>
  return
}

// -----

!kvt = !kv.paged<page_size = 16, kv_heads = 1, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
func.func @positions_buffer_type(%qi: memref<?xi32>, %kv: !kvt, %p: memref<?xf32>) {
  // expected-error @below {{'kv.cascade_positions' op positions must have element type 'i32', got 'memref<?xf32>'}}
  kv.cascade_positions levels(%qi : memref<?xi32>) kvs(%kv : !kvt) into %p : memref<?xf32>
  return
}
