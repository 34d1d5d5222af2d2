// RUN: kvir-opt %s -split-input-file -verify-diagnostics

// Parse errors of the generated !kv.paged parser and the operand type
// constraints of the ops. The verifier rules of each area are in
// invalid-*.mlir; malformed input that must make kvir-opt fail is in
// malformed.mlir.

// expected-error @below {{expected ::kvir::kv::LayoutKind to be one of: nhd, hnd, vllm, ppl0, ppl1, ppl2, ppl3, llama, affine}}
// expected-error @below {{failed to parse KV_PagedType parameter 'layout'}}
func.func @unknown_layout(%a: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhq, storage = combined, table = csr>)

// -----

// expected-error @below {{expected ::kvir::kv::Storage to be one of: combined, split, mla}}
// expected-error @below {{failed to parse KV_PagedType parameter 'storage'}}
func.func @unknown_storage(%a: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = paged, table = csr>)

// -----

// expected-error @below {{expected ::kvir::kv::TableForm to be one of: csr, block_table, token_table, token_offset}}
// expected-error @below {{failed to parse KV_PagedType parameter 'table'}}
func.func @unknown_table(%a: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = coo>)

// -----

// expected-error @below {{expected one of [none, int8_group, fp8_e4m3, fp8_e5m2] for KV storage quantization, got: int4}}
// expected-error @below {{failed to parse KV_PagedType parameter 'quant'}}
func.func @unknown_quant(%a: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr, quant = int4>)

// -----

// expected-error @below {{struct is missing required parameter: head_dim_v}}
func.func @missing_param(%a: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, dtype = f16, layout = nhd, storage = combined, table = csr>)

// -----

// expected-error @below {{duplicate or unknown struct parameter name: page_size}}
func.func @duplicate_param(%a: !kv.paged<page_size = 16, page_size = 32, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr>)

// -----

// expected-error @below {{duplicate or unknown struct parameter name: num_pages}}
func.func @unknown_param(%a: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr, num_pages = 4>)

// -----

// expected-error @below {{expected integer value}}
// expected-error @below {{failed to parse KV_PagedType parameter 'page_size'}}
func.func @float_param(%a: !kv.paged<page_size = 16.5, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr>)

// -----

// expected-error @below {{expected ','}}
func.func @ragged_missing(%a: !kv.ragged<kv_heads = 8, head_dim = 128, head_dim_v = 128>)

// -----

// expected-error @below {{unknown  type `cache` in dialect `kv`}}
func.func @unknown_type(%a: !kv.cache<page_size = 16>)

// -----

func.func @unknown_op(%a: memref<?xi32>) {
  // expected-error @below {{custom op 'kv.attend' is unknown}}
  kv.attend %a : memref<?xi32>
  return
}

// -----

func.func @merge_memref(%a: memref<?xi32>) {
  // expected-error @below {{'kv.merge' op operand #0 must be variadic of an attention state: normalized output and log-sum-exp, but got 'memref<?xi32>'}}
  %s = kv.merge %a : memref<?xi32> -> !kv.state<?x4x8xf32, base = e>
  return
}

// -----

func.func @prefill_state_kv(%q: memref<?x4x8xf32>, %b: memref<?xi32>, %kv: !kv.state<?x4x8xf32, base = e>) {
  // expected-error @below {{'kv.prefill' op operand #2 must be paged or ragged KV, but got '!kv.state<?x4x8xf32, base = e>'}}
  %s = kv.prefill %q, %b, %kv : memref<?x4x8xf32>, memref<?xi32>, !kv.state<?x4x8xf32, base = e> -> !kv.state<?x4x8xf32, base = e>
  return
}

// -----

!rag = !kv.ragged<kv_heads = 1, head_dim = 8, head_dim_v = 8, dtype = f32>
func.func @decode_ragged(%q: memref<?x4x8xf32>, %kv: !rag) {
  // expected-error @below {{'kv.decode' op operand #1 must be a paged KV cache: pools addressed through a page table, but got '!kv.ragged<kv_heads = 1, head_dim = 8, head_dim_v = 8, dtype = f32>'}}
  %s = "kv.decode"(%q, %kv) <{operandSegmentSizes = array<i32: 1, 1, 0, 0, 0>}> ({}, {}) : (memref<?x4x8xf32>, !rag) -> !kv.state<?x4x8xf32, base = e>
  return
}

// -----

func.func @decode_result(%q: memref<?x4x8xf32>, %kv: !kv.paged<page_size = 4, kv_heads = 1, head_dim = 8, head_dim_v = 8, dtype = f32, layout = nhd, storage = combined, table = csr>) {
  // expected-error @below {{'kv.decode' op result #0 must be an attention state: normalized output and log-sum-exp, but got 'memref<?x4x8xf32>'}}
  %s = "kv.decode"(%q, %kv) <{operandSegmentSizes = array<i32: 1, 1, 0, 0, 0>}> ({}, {}) : (memref<?x4x8xf32>, !kv.paged<page_size = 4, kv_heads = 1, head_dim = 8, head_dim_v = 8, dtype = f32, layout = nhd, storage = combined, table = csr>) -> memref<?x4x8xf32>
  return
}

// -----

!kvt = !kv.paged<page_size = 4, kv_heads = 1, head_dim = 8, head_dim_v = 8, dtype = f32, layout = nhd, storage = combined, table = csr>
func.func @fp8_scale_type(%p: memref<?x2x4x1x8xf32>, %a: memref<?xi32>, %s: f16) {
  // expected-error @below {{'kv.paged_view' op operand #4 must be 32-bit float, but got 'f16'}}
  %kv = "kv.paged_view"(%p, %a, %a, %a, %s, %s) <{operandSegmentSizes = array<i32: 1, 3, 0, 1, 1>}>
      : (memref<?x2x4x1x8xf32>, memref<?xi32>, memref<?xi32>, memref<?xi32>, f16, f16) -> !kvt
  return
}

// -----

func.func @empty_state_size_type(%n: i64) {
  // expected-error @below {{'kv.empty_state' op operand #0 must be variadic of index, but got 'i64'}}
  %e = "kv.empty_state"(%n) : (i64) -> !kv.state<?x4x8xf32, base = e>
  return
}
