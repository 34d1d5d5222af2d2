// RUN: kvir-opt %s --convert-linalg-to-loops --kv-lower-to-llvm | mlir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s

// kv.decode over an affine layout with separate maps for K and V:
//   k_map (page, kv, slot, head, dim) -> (page * 2 + slot, head, dim),
//     a token-major K[T, H, D];
//   v_map (page, kv, slot, head, dim) -> (head, dim, page * 2 + slot),
//     a dim-major V[H, D, T].
// page_size = 2, block_table = [[2, 0]], seq_lens = [3]: tokens t0, t1, t2
// are (page 2, slot 0), (2, 1), (0, 0), i.e. pool tokens 4, 5, 0. Pool
// tokens 1..3 hold V = 1e4 (token 1 also has a selecting K).
//
// sm_scale = 1, two query heads over one KV head.
// Head 0: q = (0, 0) -> o = mean of V(4), V(5), V(0) = (1, 10), (2, 20),
//   (6, 30) = (3, 20), lse = ln 3 = 1.09861.
// Head 1: q = (1, 0), logit = K[0] = -100 except K(5)[0] = 0 -> o = V(5) =
//   (2, 20), lse = 0.

// CHECK: rank = 3 offset = 0 sizes = [1, 2, 2]
// CHECK-NEXT: {{\[\[\[}}3, 20]
// CHECK-NEXT: {{\[}}2, 20]
// CHECK: rank = 2 offset = 0 sizes = [1, 2]
// CHECK-NEXT: {{\[\[}}1.09861, 0]

!kvt = !kv.paged<page_size = 2, kv_heads = 1, head_dim = 2, head_dim_v = 2, dtype = f32, layout = affine, storage = split, table = block_table, k_map = (p, kv, s, h, d) -> (p * 2 + s, h, d), v_map = (p, kv, s, h, d) -> (h, d, p * 2 + s)>

// K[token][head][dim]
memref.global "private" constant @k : memref<6x1x2xf32> = dense<[
  [[-100.0, 9.0]],
  [[0.0, 9.0]],
  [[-100.0, 9.0]],
  [[-100.0, 9.0]],
  [[-100.0, 9.0]],
  [[0.0, 9.0]]
]>
// V[head][dim][token]
memref.global "private" constant @v : memref<1x2x6xf32> = dense<[[[6.0, 10000.0, 10000.0, 10000.0, 1.0, 2.0], [30.0, 10000.0, 10000.0, 10000.0, 10.0, 20.0]]]>
memref.global "private" constant @block_table : memref<1x2xi32> = dense<[[2, 0]]>
memref.global "private" constant @seq_lens : memref<1xi32> = dense<[3]>
memref.global "private" constant @q : memref<1x2x2xf32> = dense<[[[0.0, 0.0], [1.0, 0.0]]]>

func.func @main() {
  %k = memref.get_global @k : memref<6x1x2xf32>
  %v = memref.get_global @v : memref<1x2x6xf32>
  %bt = memref.get_global @block_table : memref<1x2xi32>
  %lens = memref.get_global @seq_lens : memref<1xi32>
  %q = memref.get_global @q : memref<1x2x2xf32>
  %kv = kv.paged_view pools(%k, %v : memref<6x1x2xf32>, memref<1x2x6xf32>)
      tables(%bt, %lens : memref<1x2xi32>, memref<1xi32>) : !kvt
  %s = kv.decode %q, %kv {sm_scale = 1.0 : f32} : memref<1x2x2xf32>, !kvt -> !kv.state<1x2x2xf32, base = e>
  %o = memref.alloc() : memref<1x2x2xf32>
  %lse = memref.alloc() : memref<1x2xf32>
  kv.store_state %s, %o, %lse : !kv.state<1x2x2xf32, base = e>, memref<1x2x2xf32>, memref<1x2xf32>
  %u1 = memref.cast %o : memref<1x2x2xf32> to memref<*xf32>
  call @printMemrefF32(%u1) : (memref<*xf32>) -> ()
  %u2 = memref.cast %lse : memref<1x2xf32> to memref<*xf32>
  call @printMemrefF32(%u2) : (memref<*xf32>) -> ()
  memref.dealloc %o : memref<1x2x2xf32>
  memref.dealloc %lse : memref<1x2xf32>
  return
}

func.func private @printMemrefF32(memref<*xf32>)
