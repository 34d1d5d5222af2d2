// RUN: kvir-opt %s --convert-linalg-to-loops --kv-lower-to-llvm | mlir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s

// Causal kv.prefill over ragged KV (bottom-right aligned: row i of a
// request sits at position p_i = kv_len - qo_len + i and sees keys j <= p_i).
// sm_scale = 1. qo_indptr = [0, 2, 3, 6], kv_indptr = [0, 3, 4, 7].
//
// Request 0 (rows 0, 1; keys 0..2), q = 0: o = mean of the visible V,
// lse = ln(#visible).
//   row 0: p = 3 - 2 + 0 = 1, keys 0, 1: (1, 10), (3, 30) -> (2, 20),
//     lse = ln 2 = 0.693147.
//   row 1: p = 2, keys 0..2: + (8, 80) -> (4, 40), lse = ln 3 = 1.09861.
// Request 1 (row 2; key 3): p = 0, one key -> (5, 50), lse = 0.
// Request 2 (rows 3..5; keys 4..6), q = (1, 0), logits K[0] = 0.5, 100, -100:
//   row 3: p = 0, key 4 only -> (7, 70), lse = 0.5.
//   row 4: p = 1, keys 4, 5: logit 100 dominates (e^-99.5 relative) ->
//     (9, 90), lse = 100 + ln(1 + e^-99.5) = 100.
//   row 5: p = 2, keys 4..6 -> (9, 90), lse = 100.
// Without the causal bound rows 0 and 3 would see more keys.

// CHECK: rank = 3 offset = 0 sizes = [6, 1, 2]
// CHECK-NEXT: {{\[\[\[}}2, 20]
// CHECK-NEXT: {{\[\[}}4, 40]
// CHECK-NEXT: {{\[\[}}5, 50]
// CHECK-NEXT: {{\[\[}}7, 70]
// CHECK-NEXT: {{\[\[}}9, 90]
// CHECK-NEXT: {{\[\[}}9, 90]
// CHECK: rank = 2 offset = 0 sizes = [6, 1]
// CHECK-NEXT: {{\[\[}}0.693147]
// CHECK-NEXT: {{\[}}1.09861]
// CHECK-NEXT: {{\[}}0]
// CHECK-NEXT: {{\[}}0.5]
// CHECK-NEXT: {{\[}}100]
// CHECK-NEXT: {{\[}}100]

!rag = !kv.ragged<kv_heads = 1, head_dim = 2, head_dim_v = 2, dtype = f32>

memref.global "private" constant @k : memref<7x1x2xf32> = dense<[[[9.0, 9.0]], [[9.0, 9.0]], [[9.0, 9.0]], [[9.0, 9.0]], [[0.5, 0.0]], [[100.0, 0.0]], [[-100.0, 0.0]]]>
memref.global "private" constant @v : memref<7x1x2xf32> = dense<[[[1.0, 10.0]], [[3.0, 30.0]], [[8.0, 80.0]], [[5.0, 50.0]], [[7.0, 70.0]], [[9.0, 90.0]], [[11.0, 110.0]]]>
memref.global "private" constant @kv_indptr : memref<4xi32> = dense<[0, 3, 4, 7]>
memref.global "private" constant @qo_indptr : memref<4xi32> = dense<[0, 2, 3, 6]>
memref.global "private" constant @q : memref<6x1x2xf32> = dense<[[[0.0, 0.0]], [[0.0, 0.0]], [[0.0, 0.0]], [[1.0, 0.0]], [[1.0, 0.0]], [[1.0, 0.0]]]>

func.func @main() {
  %k = memref.get_global @k : memref<7x1x2xf32>
  %v = memref.get_global @v : memref<7x1x2xf32>
  %kvi = memref.get_global @kv_indptr : memref<4xi32>
  %qo = memref.get_global @qo_indptr : memref<4xi32>
  %q = memref.get_global @q : memref<6x1x2xf32>
  %kv = kv.ragged_view %k, %v, %kvi : memref<7x1x2xf32>, memref<7x1x2xf32>, memref<4xi32> -> !rag
  %s = kv.prefill %q, %qo, %kv {causal, sm_scale = 1.0 : f32} : memref<6x1x2xf32>, memref<4xi32>, !rag -> !kv.state<6x1x2xf32, base = e>
  %o = memref.alloc() : memref<6x1x2xf32>
  %lse = memref.alloc() : memref<6x1xf32>
  kv.store_state %s, %o, %lse : !kv.state<6x1x2xf32, base = e>, memref<6x1x2xf32>, memref<6x1xf32>
  %u1 = memref.cast %o : memref<6x1x2xf32> to memref<*xf32>
  call @printMemrefF32(%u1) : (memref<*xf32>) -> ()
  %u2 = memref.cast %lse : memref<6x1xf32> to memref<*xf32>
  call @printMemrefF32(%u2) : (memref<*xf32>) -> ()
  memref.dealloc %o : memref<6x1x2xf32>
  memref.dealloc %lse : memref<6x1xf32>
  return
}

func.func private @printMemrefF32(memref<*xf32>)
