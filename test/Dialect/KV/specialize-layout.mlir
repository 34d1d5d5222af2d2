// RUN: kvir-opt %s --kv-specialize-layout -split-input-file | FileCheck %s

// NHD combined: the identity map over (page, kv, slot, head, dim); the head
// dim is contiguous, so 8 f16 (16 bytes) per load.
!c = !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr>
// CHECK-LABEL: func @nhd
// CHECK: kv.paged_view {{.*}} {kv.vector_width = 8 : i64} : <{{.*}}layout = affine, storage = combined, table = csr, k_map = (d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
func.func @nhd(%pool: memref<?x2x16x8x128xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x8x128xf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !c
  return
}

// -----

// HND split: (page, head, slot, dim) for both pools.
!c = !kv.paged<page_size = 16, kv_heads = 8, head_dim = 64, head_dim_v = 64, dtype = bf16, layout = hnd, storage = split, table = block_table>
// CHECK-LABEL: func @hnd
// CHECK: {kv.vector_width = 8 : i64} : <{{.*}}layout = affine, storage = split, table = block_table, k_map = (d0, d1, d2, d3, d4) -> (d0, d3, d2, d4)>
func.func @hnd(%k: memref<?x8x16x64xbf16>, %v: memref<?x8x16x64xbf16>, %t: memref<?x?xi32>, %l: memref<?xi32>) {
  %kv = kv.paged_view pools(%k, %v : memref<?x8x16x64xbf16>, memref<?x8x16x64xbf16>) tables(%t, %l : memref<?x?xi32>, memref<?xi32>) : !c
  return
}

// -----

// vLLM: K [p, h, d / 8, slot, 8] keeps runs of 8 dims together, V
// [p, h, d, slot] puts consecutive dims a page apart: scalar loads.
!c = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = vllm, storage = split, table = block_table>
// CHECK-LABEL: func @vllm
// CHECK: {kv.vector_width = 1 : i64}
// CHECK-SAME: k_map = (d0, d1, d2, d3, d4) -> (d0, d3, d4 floordiv 8, d2, d4 mod 8), v_map = (d0, d1, d2, d3, d4) -> (d0, d3, d4, d2)>
func.func @vllm(%k: memref<?x2x8x16x8xf16>, %v: memref<?x2x64x16xf16>, %t: memref<?x?xi32>, %l: memref<?xi32>) {
  %kv = kv.paged_view pools(%k, %v : memref<?x2x8x16x8xf16>, memref<?x2x64x16xf16>) tables(%t, %l : memref<?x?xi32>, memref<?xi32>) : !c
  return
}

// -----

// OpenPPL cache_layout 2, layer 3: (L, 2, T, H, D) with T = page * 4 + slot.
// The token axis is dynamic, but every axis outside the head dim is a
// multiple of 2 x 16 elements: 8-wide loads stay aligned.
!c = !kv.paged<page_size = 4, kv_heads = 2, head_dim = 16, head_dim_v = 16, dtype = f16, layout = ppl2, layer = 3, storage = combined, table = token_offset>
// CHECK-LABEL: func @ppl2
// CHECK: {kv.vector_width = 8 : i64}
// CHECK-SAME: k_map = (d0, d1, d2, d3, d4) -> (3, d1, d0 * 4 + d2, d3, d4)>
func.func @ppl2(%pool: memref<4x2x?x2x16xf16>, %s: memref<?xi32>, %l: memref<?xi32>) {
  %kv = kv.paged_view pools(%pool : memref<4x2x?x2x16xf16>) tables(%s, %l : memref<?xi32>, memref<?xi32>) : !c
  return
}

// -----

// A strided pool whose head dim is not unit-stride gets scalar loads.
!c = !kv.paged<page_size = 2, kv_heads = 1, head_dim = 8, head_dim_v = 8, dtype = f16, layout = nhd, storage = split, table = csr>
// CHECK-LABEL: func @strided
// CHECK: {kv.vector_width = 1 : i64}
func.func @strided(%k: memref<?x2x1x8xf16, strided<[32, 16, 16, 2]>>, %v: memref<?x2x1x8xf16, strided<[32, 16, 16, 2]>>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>) {
  %kv = kv.paged_view pools(%k, %v : memref<?x2x1x8xf16, strided<[32, 16, 16, 2]>>, memref<?x2x1x8xf16, strided<[32, 16, 16, 2]>>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !c
  return
}

// -----

// A view that leaves the kv ops keeps its preset type (retyping it would
// break the function's signature); it still gets its proven width.
!c = !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr>
// CHECK-LABEL: func @escapes
// CHECK: kv.paged_view {{.*}} {kv.vector_width = 8 : i64} : <{{.*}}layout = nhd, storage = combined, table = csr>
// CHECK: return %{{.*}} : !kv.paged<{{.*}}layout = nhd
func.func @escapes(%pool: memref<?x2x16x8x128xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>) -> !c {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x8x128xf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !c
  return %kv : !c
}
