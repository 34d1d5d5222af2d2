// RUN: kvir-opt %s --convert-linalg-to-loops --kv-lower-to-llvm | mlir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s

// kv.prefill with a bit-packed custom mask (an i8 memref, FlashInfer's
// segment_packbits layout) over several requests: request b's block starts at
// byte sum_{b' < b} ceil(qo_len * kv_len / 8), i.e. bit 8 times that.
//
// A regression test: kv-to-loops once advanced this offset in bytes but
// added it to the bit index, so request 1 saw key 1 ((9, 90)) and request 2
// its key ((4, 40), lse 0) instead of the results below.

// qo_indptr = [0, 2, 3, 4], kv_indptr = [0, 3, 5, 6], q = 0 so o = mean of
// the visible V and lse = ln(#visible). Masks are per-request row-major
// qo_len x kv_len blocks:
//   request 0 (rows 0, 1; keys (1, 10), (5, 50), (3, 30)):
//     row 0: [1, 0, 1] -> keys 0, 2 -> (2, 20), lse = ln 2 = 0.693147.
//     row 1: [0, 1, 0] -> key 1 -> (5, 50), lse = 0.
//   request 1 (row 2; keys (7, 70), (9, 90)): [1, 0] -> (7, 70), lse = 0.
//   request 2 (row 3; key (4, 40)): [0] -> nothing visible -> (0, 0), -inf.

// CHECK: rank = 3 offset = 0 sizes = [4, 1, 2]
// CHECK-NEXT: {{\[\[\[}}2, 20]
// CHECK-NEXT: {{\[\[}}5, 50]
// CHECK-NEXT: {{\[\[}}7, 70]
// CHECK-NEXT: {{\[\[}}0, 0]
// CHECK: rank = 2 offset = 0 sizes = [4, 1]
// CHECK-NEXT: {{\[\[}}0.693147]
// CHECK-NEXT: {{\[}}0]
// CHECK-NEXT: {{\[}}0]
// CHECK-NEXT: {{\[}}-inf]

!rag = !kv.ragged<kv_heads = 1, head_dim = 2, head_dim_v = 2, dtype = f32>

memref.global "private" constant @k : memref<6x1x2xf32> = dense<1.0>
memref.global "private" constant @v : memref<6x1x2xf32> = dense<[[[1.0, 10.0]], [[5.0, 50.0]], [[3.0, 30.0]], [[7.0, 70.0]], [[9.0, 90.0]], [[4.0, 40.0]]]>
memref.global "private" constant @kv_indptr : memref<4xi32> = dense<[0, 3, 5, 6]>
memref.global "private" constant @qo_indptr : memref<4xi32> = dense<[0, 2, 3, 4]>
memref.global "private" constant @q : memref<4x1x2xf32> = dense<0.0>
// Bit-packed, little bit order, each request's block from a byte boundary:
// request 0 bits 1,0,1,0,1,0 -> 1 + 4 + 16 = 21; request 1 bits 1,0 -> 1;
// request 2 bit 0 -> 0.
memref.global "private" constant @mask : memref<3xi8> = dense<[21, 1, 0]>

func.func @main() {
  %k = memref.get_global @k : memref<6x1x2xf32>
  %v = memref.get_global @v : memref<6x1x2xf32>
  %kvi = memref.get_global @kv_indptr : memref<4xi32>
  %qo = memref.get_global @qo_indptr : memref<4xi32>
  %q = memref.get_global @q : memref<4x1x2xf32>
  %m = memref.get_global @mask : memref<3xi8>
  %kv = kv.ragged_view %k, %v, %kvi : memref<6x1x2xf32>, memref<6x1x2xf32>, memref<4xi32> -> !rag
  %s = kv.prefill %q, %qo, %kv mask(%m : memref<3xi8>) : memref<4x1x2xf32>, memref<4xi32>, !rag -> !kv.state<4x1x2xf32, base = e>
  %o = memref.alloc() : memref<4x1x2xf32>
  %lse = memref.alloc() : memref<4x1xf32>
  kv.store_state %s, %o, %lse : !kv.state<4x1x2xf32, base = e>, memref<4x1x2xf32>, memref<4x1xf32>
  %u3 = memref.cast %o : memref<4x1x2xf32> to memref<*xf32>
  call @printMemrefF32(%u3) : (memref<*xf32>) -> ()
  %u4 = memref.cast %lse : memref<4x1xf32> to memref<*xf32>
  call @printMemrefF32(%u4) : (memref<*xf32>) -> ()
  memref.dealloc %o : memref<4x1x2xf32>
  memref.dealloc %lse : memref<4x1xf32>
  return
}

func.func private @printMemrefF32(memref<*xf32>)
