// RUN: kvir-opt %s --convert-linalg-to-loops --kv-lower-to-llvm | mlir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s

// Sliding window (window_left = w keeps keys j >= p_i - w), with and without
// causal, on prefill and decode over a paged NHD split cache with CSR.
//
// page_size = 2, kv_indptr = [0, 2], kv_indices = [1, 0], last = [2]:
// kv_len = 4, tokens t0 = (page 1, slot 0), t1 = (1, 1), t2 = (0, 0),
// t3 = (0, 1) with V = (100, 1000), (3, 30), (6, 60), (9, 90).
// q = 0: o = mean of the visible V, lse = ln(#visible).
//
// Prefill with 2 query rows: p_0 = 4 - 2 + 0 = 2, p_1 = 3.
//   window 1: row 0 keys j >= 1: t1..t3 -> (6, 60), lse = ln 3 = 1.09861;
//             row 1 keys j >= 2: t2, t3 -> (7.5, 75), lse = ln 2 = 0.693147.
//   window 1 + causal: row 0 keys 1 <= j <= 2 -> (4.5, 45), ln 2;
//                      row 1 keys 2 <= j <= 3 -> (7.5, 75), ln 2.
// Decode (query at p = kv_len - 1 = 3):
//   window 0: key 3 only -> (9, 90), lse = 0.
//   window 2: keys 1..3 -> (6, 60), lse = ln 3.

// prefill, window 1
// CHECK: rank = 3 offset = 0 sizes = [2, 1, 2]
// CHECK-NEXT: {{\[\[\[}}6, 60]
// CHECK-NEXT: {{\[\[}}7.5, 75]
// CHECK: rank = 2 offset = 0 sizes = [2, 1]
// CHECK-NEXT: {{\[\[}}1.09861]
// CHECK-NEXT: {{\[}}0.693147]
// prefill, window 1, causal
// CHECK: rank = 3 offset = 0 sizes = [2, 1, 2]
// CHECK-NEXT: {{\[\[\[}}4.5, 45]
// CHECK-NEXT: {{\[\[}}7.5, 75]
// CHECK: rank = 2 offset = 0 sizes = [2, 1]
// CHECK-NEXT: {{\[\[}}0.693147]
// CHECK-NEXT: {{\[}}0.693147]
// decode, window 0
// CHECK: rank = 3 offset = 0 sizes = [1, 1, 2]
// CHECK-NEXT: {{\[\[\[}}9, 90]
// CHECK: rank = 2 offset = 0 sizes = [1, 1]
// CHECK-NEXT: {{\[\[}}0]
// decode, window 2
// CHECK: rank = 3 offset = 0 sizes = [1, 1, 2]
// CHECK-NEXT: {{\[\[\[}}6, 60]
// CHECK: rank = 2 offset = 0 sizes = [1, 1]
// CHECK-NEXT: {{\[\[}}1.09861]

!kvt = !kv.paged<page_size = 2, kv_heads = 1, head_dim = 2, head_dim_v = 2, dtype = f32, layout = nhd, storage = split, table = csr>

memref.global "private" constant @k : memref<2x2x1x2xf32> = dense<[[[[1.0, 1.0]], [[1.0, 1.0]]], [[[1.0, 1.0]], [[1.0, 1.0]]]]>
memref.global "private" constant @v : memref<2x2x1x2xf32> = dense<[[[[6.0, 60.0]], [[9.0, 90.0]]], [[[100.0, 1000.0]], [[3.0, 30.0]]]]>
memref.global "private" constant @kv_indptr : memref<2xi32> = dense<[0, 2]>
memref.global "private" constant @kv_indices : memref<2xi32> = dense<[1, 0]>
memref.global "private" constant @last : memref<1xi32> = dense<[2]>
memref.global "private" constant @qo_indptr : memref<2xi32> = dense<[0, 2]>
memref.global "private" constant @q : memref<2x1x2xf32> = dense<0.0>
memref.global "private" constant @q1 : memref<1x1x2xf32> = dense<0.0>

func.func @main() {
  %k = memref.get_global @k : memref<2x2x1x2xf32>
  %v = memref.get_global @v : memref<2x2x1x2xf32>
  %ip = memref.get_global @kv_indptr : memref<2xi32>
  %ix = memref.get_global @kv_indices : memref<2xi32>
  %last = memref.get_global @last : memref<1xi32>
  %qo = memref.get_global @qo_indptr : memref<2xi32>
  %q = memref.get_global @q : memref<2x1x2xf32>
  %q1 = memref.get_global @q1 : memref<1x1x2xf32>
  %kv = kv.paged_view pools(%k, %v : memref<2x2x1x2xf32>, memref<2x2x1x2xf32>)
      tables(%ip, %ix, %last : memref<2xi32>, memref<2xi32>, memref<1xi32>) : !kvt
  %o = memref.alloc() : memref<2x1x2xf32>
  %lse = memref.alloc() : memref<2x1xf32>
  %o1 = memref.alloc() : memref<1x1x2xf32>
  %lse1 = memref.alloc() : memref<1x1xf32>

  %a = kv.prefill %q, %qo, %kv {window_left = 1 : i64} : memref<2x1x2xf32>, memref<2xi32>, !kvt -> !kv.state<2x1x2xf32, base = e>
  kv.store_state %a, %o, %lse : !kv.state<2x1x2xf32, base = e>, memref<2x1x2xf32>, memref<2x1xf32>
  %u1 = memref.cast %o : memref<2x1x2xf32> to memref<*xf32>
  call @printMemrefF32(%u1) : (memref<*xf32>) -> ()
  %u2 = memref.cast %lse : memref<2x1xf32> to memref<*xf32>
  call @printMemrefF32(%u2) : (memref<*xf32>) -> ()

  %b = kv.prefill %q, %qo, %kv {causal, window_left = 1 : i64} : memref<2x1x2xf32>, memref<2xi32>, !kvt -> !kv.state<2x1x2xf32, base = e>
  kv.store_state %b, %o, %lse : !kv.state<2x1x2xf32, base = e>, memref<2x1x2xf32>, memref<2x1xf32>
  %u3 = memref.cast %o : memref<2x1x2xf32> to memref<*xf32>
  call @printMemrefF32(%u3) : (memref<*xf32>) -> ()
  %u4 = memref.cast %lse : memref<2x1xf32> to memref<*xf32>
  call @printMemrefF32(%u4) : (memref<*xf32>) -> ()

  %c = kv.decode %q1, %kv {window_left = 0 : i64} : memref<1x1x2xf32>, !kvt -> !kv.state<1x1x2xf32, base = e>
  kv.store_state %c, %o1, %lse1 : !kv.state<1x1x2xf32, base = e>, memref<1x1x2xf32>, memref<1x1xf32>
  %u5 = memref.cast %o1 : memref<1x1x2xf32> to memref<*xf32>
  call @printMemrefF32(%u5) : (memref<*xf32>) -> ()
  %u6 = memref.cast %lse1 : memref<1x1xf32> to memref<*xf32>
  call @printMemrefF32(%u6) : (memref<*xf32>) -> ()

  %d = kv.decode %q1, %kv {window_left = 2 : i64} : memref<1x1x2xf32>, !kvt -> !kv.state<1x1x2xf32, base = e>
  kv.store_state %d, %o1, %lse1 : !kv.state<1x1x2xf32, base = e>, memref<1x1x2xf32>, memref<1x1xf32>
  %u7 = memref.cast %o1 : memref<1x1x2xf32> to memref<*xf32>
  call @printMemrefF32(%u7) : (memref<*xf32>) -> ()
  %u8 = memref.cast %lse1 : memref<1x1xf32> to memref<*xf32>
  call @printMemrefF32(%u8) : (memref<*xf32>) -> ()

  memref.dealloc %o : memref<2x1x2xf32>
  memref.dealloc %lse : memref<2x1xf32>
  memref.dealloc %o1 : memref<1x1x2xf32>
  memref.dealloc %lse1 : memref<1x1xf32>
  return
}

func.func private @printMemrefF32(memref<*xf32>)
