// RUN: kvir-opt %s --convert-linalg-to-loops --kv-lower-to-llvm | mlir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s

// kv.decode over an HND combined pool (pages, 2, H, page_size, D) with a CSR
// table whose pages are out of order, GQA (4 query heads over 2 KV heads)
// and an empty request.
//
// page_size = 2. kv_indptr = [0, 2, 2, 3], kv_indices = [2, 0, 1],
// kv_last_page_len = [1, 1, 2]:
//   request 0: pages 2, 0 -> kv_len = 2 * (2 - 1) + 1 = 3;
//              tokens t0 = (page 2, slot 0), t1 = (2, 1), t2 = (0, 0).
//   request 1: no page -> empty.
//   request 2: page 1 -> kv_len = 2 * 0 + 2 = 2; t0 = (1, 0), t1 = (1, 1).
// Page 0 slot 1 belongs to no request and holds 1e4 everywhere (a trap).
//
// sm_scale = 1. Query heads 0, 1 read KV head 0 with q = (0, 0): every
// logit is 0, so o = mean of V and lse = ln(kv_len).
//   request 0, KV head 0: V = (1, 10), (2, 20), (6, 60) -> o = (3, 30),
//     lse = ln 3 = 1.09861.
//   request 2, KV head 0: V = (100, 1000), (300, 3000) -> o = (200, 2000),
//     lse = ln 2 = 0.693147.
// Query heads 2, 3 read KV head 1 with q = (1, 0): the logit is K[0], which
// is 0 for one token and -100 for the others (weight e^-100 < 4e-44), so
// o = V of that token and lse = 0 + ln(1 + 2e^-100) = 0.
//   request 0: K head 1 of t1 is (0, 0) -> o = V = (5, 50), lse = 0.
//   request 2: K head 1 of t0 is (0, 0) -> o = V = (8, 80), lse = 0.
// The empty request gives o = 0 and lse = -inf on every head.

// CHECK: rank = 3 offset = 0 sizes = [3, 4, 2]
// CHECK-NEXT: {{\[\[\[}}3, 30]
// CHECK-NEXT: {{\[}}3, 30]
// CHECK-NEXT: {{\[}}5, 50]
// CHECK-NEXT: {{\[}}5, 50]
// CHECK-NEXT: {{\[\[}}0, 0]
// CHECK-NEXT: {{\[}}0, 0]
// CHECK-NEXT: {{\[}}0, 0]
// CHECK-NEXT: {{\[}}0, 0]
// CHECK-NEXT: {{\[\[}}200, 2000]
// CHECK-NEXT: {{\[}}200, 2000]
// CHECK-NEXT: {{\[}}8, 80]
// CHECK-NEXT: {{\[}}8, 80]
// CHECK: rank = 2 offset = 0 sizes = [3, 4]
// CHECK-NEXT: {{\[\[}}1.09861, 1.09861, 0, 0]
// CHECK-NEXT: {{\[}}-inf, -inf, -inf, -inf]
// CHECK-NEXT: {{\[}}0.693147, 0.693147, 0, 0]

!kvt = !kv.paged<page_size = 2, kv_heads = 2, head_dim = 2, head_dim_v = 2, dtype = f32, layout = hnd, storage = combined, table = csr>

// pool[page][kv][head][slot][dim]
memref.global "private" constant @pool : memref<3x2x2x2x2xf32> = dense<[
  // page 0: K, V
  [[[[50.0, 50.0], [50.0, 50.0]], [[-100.0, 0.0], [0.0, 0.0]]], [[[6.0, 60.0], [10000.0, 10000.0]], [[7.0, 70.0], [10000.0, 10000.0]]]],
  // page 1
  [[[[50.0, 50.0], [50.0, 50.0]], [[0.0, 0.0], [-100.0, 0.0]]], [[[100.0, 1000.0], [300.0, 3000.0]], [[8.0, 80.0], [9.0, 90.0]]]],
  // page 2
  [[[[50.0, 50.0], [50.0, 50.0]], [[-100.0, 0.0], [0.0, 0.0]]], [[[1.0, 10.0], [2.0, 20.0]], [[4.0, 40.0], [5.0, 50.0]]]]
]>
memref.global "private" constant @indptr : memref<4xi32> = dense<[0, 2, 2, 3]>
memref.global "private" constant @indices : memref<3xi32> = dense<[2, 0, 1]>
memref.global "private" constant @last : memref<3xi32> = dense<[1, 1, 2]>
// q[request][head][dim]
memref.global "private" constant @q : memref<3x4x2xf32> = dense<[
  [[0.0, 0.0], [0.0, 0.0], [1.0, 0.0], [1.0, 0.0]],
  [[0.0, 0.0], [0.0, 0.0], [1.0, 0.0], [1.0, 0.0]],
  [[0.0, 0.0], [0.0, 0.0], [1.0, 0.0], [1.0, 0.0]]
]>

func.func @main() {
  %pool = memref.get_global @pool : memref<3x2x2x2x2xf32>
  %indptr = memref.get_global @indptr : memref<4xi32>
  %indices = memref.get_global @indices : memref<3xi32>
  %last = memref.get_global @last : memref<3xi32>
  %q = memref.get_global @q : memref<3x4x2xf32>
  %kv = kv.paged_view pools(%pool : memref<3x2x2x2x2xf32>)
      tables(%indptr, %indices, %last : memref<4xi32>, memref<3xi32>, memref<3xi32>) : !kvt
  %s = kv.decode %q, %kv {sm_scale = 1.0 : f32} : memref<3x4x2xf32>, !kvt -> !kv.state<3x4x2xf32, base = e>
  %o = memref.alloc() : memref<3x4x2xf32>
  %lse = memref.alloc() : memref<3x4xf32>
  kv.store_state %s, %o, %lse : !kv.state<3x4x2xf32, base = e>, memref<3x4x2xf32>, memref<3x4xf32>
  %u1 = memref.cast %o : memref<3x4x2xf32> to memref<*xf32>
  call @printMemrefF32(%u1) : (memref<*xf32>) -> ()
  %u2 = memref.cast %lse : memref<3x4xf32> to memref<*xf32>
  call @printMemrefF32(%u2) : (memref<*xf32>) -> ()
  memref.dealloc %o : memref<3x4x2xf32>
  memref.dealloc %lse : memref<3x4xf32>
  return
}

func.func private @printMemrefF32(memref<*xf32>)
