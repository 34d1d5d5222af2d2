// RUN: kvir-opt %s --convert-linalg-to-loops --kv-lower-to-llvm | mlir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s

// kv.prefill with a bit-packed custom mask (i8, little bit order: bit k is
// bit k % 8 of byte k / 8) for one request of 3 query rows over 4 keys.
// Not causal. q = 0 so o = mean of the visible V, lse = ln(#visible).
//
// Row-major bits: row 0 [1, 1, 0, 0], row 1 [0, 1, 1, 0], row 2 [0, 0, 0, 1]
//   bits 0..7  = 1 1 0 0 0 1 1 0 -> byte 0 = 1 + 2 + 32 + 64 = 99
//   bits 8..11 = 0 0 0 1         -> byte 1 = 8
// V = (2, 20), (4, 40), (6, 60), (8, 80):
//   row 0: keys 0, 1 -> (3, 30), lse = ln 2 = 0.693147.
//   row 1: keys 1, 2 -> (5, 50), lse = ln 2.
//   row 2: key 3 (bit 11 = bit 3 of byte 1) -> (8, 80), lse = 0.

// CHECK: rank = 3 offset = 0 sizes = [3, 1, 2]
// CHECK-NEXT: {{\[\[\[}}3, 30]
// CHECK-NEXT: {{\[\[}}5, 50]
// CHECK-NEXT: {{\[\[}}8, 80]
// CHECK: rank = 2 offset = 0 sizes = [3, 1]
// CHECK-NEXT: {{\[\[}}0.693147]
// CHECK-NEXT: {{\[}}0.693147]
// CHECK-NEXT: {{\[}}0]

!rag = !kv.ragged<kv_heads = 1, head_dim = 2, head_dim_v = 2, dtype = f32>

memref.global "private" constant @k : memref<4x1x2xf32> = dense<1.0>
memref.global "private" constant @v : memref<4x1x2xf32> = dense<[[[2.0, 20.0]], [[4.0, 40.0]], [[6.0, 60.0]], [[8.0, 80.0]]]>
memref.global "private" constant @kv_indptr : memref<2xi32> = dense<[0, 4]>
memref.global "private" constant @qo_indptr : memref<2xi32> = dense<[0, 3]>
memref.global "private" constant @q : memref<3x1x2xf32> = dense<0.0>
memref.global "private" constant @mask : memref<2xi8> = dense<[99, 8]>

func.func @main() {
  %k = memref.get_global @k : memref<4x1x2xf32>
  %v = memref.get_global @v : memref<4x1x2xf32>
  %kvi = memref.get_global @kv_indptr : memref<2xi32>
  %qo = memref.get_global @qo_indptr : memref<2xi32>
  %q = memref.get_global @q : memref<3x1x2xf32>
  %m = memref.get_global @mask : memref<2xi8>
  %kv = kv.ragged_view %k, %v, %kvi : memref<4x1x2xf32>, memref<4x1x2xf32>, memref<2xi32> -> !rag
  %s = kv.prefill %q, %qo, %kv mask(%m : memref<2xi8>) : memref<3x1x2xf32>, memref<2xi32>, !rag -> !kv.state<3x1x2xf32, base = e>
  %o = memref.alloc() : memref<3x1x2xf32>
  %lse = memref.alloc() : memref<3x1xf32>
  kv.store_state %s, %o, %lse : !kv.state<3x1x2xf32, base = e>, memref<3x1x2xf32>, memref<3x1xf32>
  %u1 = memref.cast %o : memref<3x1x2xf32> to memref<*xf32>
  call @printMemrefF32(%u1) : (memref<*xf32>) -> ()
  %u2 = memref.cast %lse : memref<3x1xf32> to memref<*xf32>
  call @printMemrefF32(%u2) : (memref<*xf32>) -> ()
  memref.dealloc %o : memref<3x1x2xf32>
  memref.dealloc %lse : memref<3x1xf32>
  return
}

func.func private @printMemrefF32(memref<*xf32>)
