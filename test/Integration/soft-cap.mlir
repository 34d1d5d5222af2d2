// RUN: kvir-opt %s --convert-linalg-to-loops --kv-lower-to-llvm | mlir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s

// logits_soft_cap c = 10: s = c * tanh(s / c) before the softmax.
// q = (1, 0), sm_scale = 1, so the raw logit of a key is its K[0].
// Block table [[0], [1], [2]], seq_lens = [1, 2, 2], page_size = 2.
//
// request 0: one key, raw logit 30 -> 10 * tanh(3); tanh(3) =
//   (e^6 - 1) / (e^6 + 1) = 402.428793 / 404.428793 = 0.99505475, so
//   lse = 9.9505475 (9.95055) and o = V = (3, 4).
// request 1: raw logits 1000, -1000 -> capped 10, -10: the second weighs
//   e^-20 = 2e-9 of the first, o = (1, 2) (to 1e-7), lse = 10 + ln(1 +
//   e^-20) = 10.
// request 2: raw logits 100, 200 -> 10 * tanh(10) and 10 * tanh(20), both
//   10 in f32 (tanh(10) = 1 - 4e-9): equal weights, o = mean of (2, 6) and
//   (4, 8) = (3, 7), lse = 10 + ln 2 = 10.6931. (Uncapped, 200 would win:
//   o = (4, 8), lse = 200.)

// CHECK: rank = 3 offset = 0 sizes = [3, 1, 2]
// CHECK-NEXT: {{\[\[\[}}3, 4]
// CHECK-NEXT: {{\[\[}}1, 2]
// CHECK-NEXT: {{\[\[}}3, 7]
// CHECK: rank = 2 offset = 0 sizes = [3, 1]
// CHECK-NEXT: {{\[\[}}9.95055]
// CHECK-NEXT: {{\[}}10]
// CHECK-NEXT: {{\[}}10.6931]

!kvt = !kv.paged<page_size = 2, kv_heads = 1, head_dim = 2, head_dim_v = 2, dtype = f32, layout = nhd, storage = split, table = block_table>

memref.global "private" constant @k : memref<3x2x1x2xf32> = dense<[[[[30.0, 0.0]], [[0.0, 0.0]]], [[[1000.0, 0.0]], [[-1000.0, 0.0]]], [[[100.0, 0.0]], [[200.0, 0.0]]]]>
memref.global "private" constant @v : memref<3x2x1x2xf32> = dense<[[[[3.0, 4.0]], [[10000.0, 10000.0]]], [[[1.0, 2.0]], [[100.0, 200.0]]], [[[2.0, 6.0]], [[4.0, 8.0]]]]>
memref.global "private" constant @block_table : memref<3x1xi32> = dense<[[0], [1], [2]]>
memref.global "private" constant @seq_lens : memref<3xi32> = dense<[1, 2, 2]>
memref.global "private" constant @q : memref<3x1x2xf32> = dense<[[[1.0, 0.0]], [[1.0, 0.0]], [[1.0, 0.0]]]>

func.func @main() {
  %k = memref.get_global @k : memref<3x2x1x2xf32>
  %v = memref.get_global @v : memref<3x2x1x2xf32>
  %bt = memref.get_global @block_table : memref<3x1xi32>
  %lens = memref.get_global @seq_lens : memref<3xi32>
  %q = memref.get_global @q : memref<3x1x2xf32>
  %kv = kv.paged_view pools(%k, %v : memref<3x2x1x2xf32>, memref<3x2x1x2xf32>)
      tables(%bt, %lens : memref<3x1xi32>, memref<3xi32>) : !kvt
  %s = kv.decode %q, %kv {sm_scale = 1.0 : f32, logits_soft_cap = 10.0 : f32} : memref<3x1x2xf32>, !kvt -> !kv.state<3x1x2xf32, base = e>
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
