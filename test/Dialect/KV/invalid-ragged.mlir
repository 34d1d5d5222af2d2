// RUN: kvir-opt %s -split-input-file -verify-diagnostics

// RaggedType::verify (KVDialect.cpp) and RaggedViewOp::verify (KVOps.cpp).

// expected-error @below {{kv_heads, head_dim and head_dim_v must be positive}}
func.func @heads(%a: !kv.ragged<kv_heads = 0, head_dim = 64, head_dim_v = 64, dtype = f16>)

// -----

// expected-error @below {{kv_heads, head_dim and head_dim_v must be positive}}
func.func @head_dim_v(%a: !kv.ragged<kv_heads = 2, head_dim = 64, head_dim_v = -64, dtype = f16>)

// -----

// expected-error @below {{dtype must be f16, bf16 or f32, got 'f64'}}
func.func @dtype(%a: !kv.ragged<kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f64>)

// -----

!rag = !kv.ragged<kv_heads = 2, head_dim = 64, head_dim_v = 32, dtype = f16>
func.func @k_rank(%k: memref<?x128xf16>, %v: memref<?x2x32xf16>, %ip: memref<?xi32>) {
  // expected-error @below {{'kv.ragged_view' op k must have rank 3, got 'memref<?x128xf16>'}}
  %kv = kv.ragged_view %k, %v, %ip : memref<?x128xf16>, memref<?x2x32xf16>, memref<?xi32> -> !rag
  return
}

// -----

!rag = !kv.ragged<kv_heads = 2, head_dim = 64, head_dim_v = 32, dtype = f16>
func.func @v_dtype(%k: memref<?x2x64xf16>, %v: memref<?x2x32xbf16>, %ip: memref<?xi32>) {
  // expected-error @below {{'kv.ragged_view' op v must have element type 'f16', got 'memref<?x2x32xbf16>'}}
  %kv = kv.ragged_view %k, %v, %ip : memref<?x2x64xf16>, memref<?x2x32xbf16>, memref<?xi32> -> !rag
  return
}

// -----

!rag = !kv.ragged<kv_heads = 2, head_dim = 64, head_dim_v = 32, dtype = f16>
func.func @indptr_type(%k: memref<?x2x64xf16>, %v: memref<?x2x32xf16>, %ip: memref<?xindex>) {
  // expected-error @below {{'kv.ragged_view' op kv_indptr must have element type i32 or i64, got 'memref<?xindex>'}}
  %kv = kv.ragged_view %k, %v, %ip : memref<?x2x64xf16>, memref<?x2x32xf16>, memref<?xindex> -> !rag
  return
}

// -----

!rag = !kv.ragged<kv_heads = 2, head_dim = 64, head_dim_v = 32, dtype = f16>
func.func @indptr_rank(%k: memref<?x2x64xf16>, %v: memref<?x2x32xf16>, %ip: memref<2x?xi32>) {
  // expected-error @below {{'kv.ragged_view' op kv_indptr must have rank 1, got 'memref<2x?xi32>'}}
  %kv = kv.ragged_view %k, %v, %ip : memref<?x2x64xf16>, memref<?x2x32xf16>, memref<2x?xi32> -> !rag
  return
}

// -----

!rag = !kv.ragged<kv_heads = 2, head_dim = 64, head_dim_v = 32, dtype = f16>
func.func @k_shape(%k: memref<?x4x64xf16>, %v: memref<?x2x32xf16>, %ip: memref<?xi32>) {
  // expected-error @below {{'kv.ragged_view' op k has shape ?x4x64, expected ?x2x64 [nnz, kv_heads, head_dim]}}
  %kv = kv.ragged_view %k, %v, %ip : memref<?x4x64xf16>, memref<?x2x32xf16>, memref<?xi32> -> !rag
  return
}

// -----

!rag = !kv.ragged<kv_heads = 2, head_dim = 64, head_dim_v = 32, dtype = f16>
func.func @v_shape(%k: memref<?x2x64xf16>, %v: memref<?x2x64xf16>, %ip: memref<?xi32>) {
  // expected-error @below {{'kv.ragged_view' op v has shape ?x2x64, expected ?x2x32 [nnz, kv_heads, head_dim_v]}}
  %kv = kv.ragged_view %k, %v, %ip : memref<?x2x64xf16>, memref<?x2x64xf16>, memref<?xi32> -> !rag
  return
}

// -----

!rag = !kv.ragged<kv_heads = 2, head_dim = 64, head_dim_v = 32, dtype = f16>
func.func @nnz_mismatch(%k: memref<10x2x64xf16>, %v: memref<12x2x32xf16>, %ip: memref<?xi32>) {
  // expected-error @below {{'kv.ragged_view' op k has 10 rows but v has 12; ragged K and V must have the same nnz}}
  %kv = kv.ragged_view %k, %v, %ip : memref<10x2x64xf16>, memref<12x2x32xf16>, memref<?xi32> -> !rag
  return
}

// -----

// expected-error @below {{head dims are at most 1024 and kv_heads at most 1024, got 4096, 4096 and 8}}
func.func @huge_ragged(%a: !kv.ragged<kv_heads = 8, head_dim = 4096, head_dim_v = 4096, dtype = f16>)
