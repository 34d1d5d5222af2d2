// RUN: kvir-opt %s --convert-linalg-to-loops --kv-lower-to-llvm | mlir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s

// kv.decode over the Llama contiguous cache (max_batch, max_seq, H, D) in
// f16, addressed by token offsets (OpenPPL cache_mode 0): token t of request
// b is row cachestarts[b] + t of the flattened (batch, seq) axis. The default
// sm_scale 1/sqrt(D) = 1/sqrt(2) applies.
//
// max_seq = page_size = 4, cachestarts = [0, 4, 8], kv_lens = [2, 4, 1]: the
// requests read batch rows 0, 1, 2 from position 0. Positions past kv_len
// hold V = 1000.
// Head 0: q = (0, 0) -> o = mean of V, lse = ln(kv_len).
//   request 0: (1, 2), (3, 6) -> (2, 4), lse = ln 2 = 0.693147.
//   request 1: (1, 1), (2, 2), (3, 3), (6, 6) -> (3, 3), lse = ln 4 = 1.38629.
//   request 2: (7, 9) -> (7, 9), lse = 0.
// Head 1: q = (1, 0), logit = K[0] / sqrt(2); K[0] = -100 (logit -70.7)
// except at (batch 0, position 0) and (1, 2), where it is 0, and (2, 0),
// where it is 2:
//   request 0: o = V(0, 0) = (1, 2), lse = 0.
//   request 1: o = V(1, 2) = (3, 3), lse = 0.
//   request 2: one key, o = (7, 9), lse = 2 / sqrt(2) = sqrt(2) = 1.41421.

// CHECK: rank = 3 offset = 0 sizes = [3, 2, 2]
// CHECK-NEXT: {{\[\[\[}}2, 4]
// CHECK-NEXT: {{\[}}1, 2]
// CHECK-NEXT: {{\[\[}}3, 3]
// CHECK-NEXT: {{\[}}3, 3]
// CHECK-NEXT: {{\[\[}}7, 9]
// CHECK-NEXT: {{\[}}7, 9]
// CHECK: rank = 2 offset = 0 sizes = [3, 2]
// CHECK-NEXT: {{\[\[}}0.693147, 0]
// CHECK-NEXT: {{\[}}1.38629, 0]
// CHECK-NEXT: {{\[}}0, 1.41421]

!kvt = !kv.paged<page_size = 4, kv_heads = 1, head_dim = 2, head_dim_v = 2, dtype = f16, layout = llama, storage = split, table = token_offset>

// K[batch][position][head][dim], V likewise.
memref.global "private" constant @k : memref<3x4x1x2xf16> = dense<[
  [[[0.0, 5.0]], [[-100.0, 5.0]], [[-100.0, 5.0]], [[-100.0, 5.0]]],
  [[[-100.0, 5.0]], [[-100.0, 5.0]], [[0.0, 5.0]], [[-100.0, 5.0]]],
  [[[2.0, 5.0]], [[-100.0, 5.0]], [[-100.0, 5.0]], [[-100.0, 5.0]]]
]>
memref.global "private" constant @v : memref<3x4x1x2xf16> = dense<[
  [[[1.0, 2.0]], [[3.0, 6.0]], [[1000.0, 1000.0]], [[1000.0, 1000.0]]],
  [[[1.0, 1.0]], [[2.0, 2.0]], [[3.0, 3.0]], [[6.0, 6.0]]],
  [[[7.0, 9.0]], [[1000.0, 1000.0]], [[1000.0, 1000.0]], [[1000.0, 1000.0]]]
]>
memref.global "private" constant @cachestarts : memref<3xi32> = dense<[0, 4, 8]>
memref.global "private" constant @kv_lens : memref<3xi32> = dense<[2, 4, 1]>
memref.global "private" constant @q : memref<3x2x2xf16> = dense<[[[0.0, 0.0], [1.0, 0.0]], [[0.0, 0.0], [1.0, 0.0]], [[0.0, 0.0], [1.0, 0.0]]]>

func.func @main() {
  %k = memref.get_global @k : memref<3x4x1x2xf16>
  %v = memref.get_global @v : memref<3x4x1x2xf16>
  %starts = memref.get_global @cachestarts : memref<3xi32>
  %lens = memref.get_global @kv_lens : memref<3xi32>
  %q = memref.get_global @q : memref<3x2x2xf16>
  %kv = kv.paged_view pools(%k, %v : memref<3x4x1x2xf16>, memref<3x4x1x2xf16>)
      tables(%starts, %lens : memref<3xi32>, memref<3xi32>) : !kvt
  %s = kv.decode %q, %kv : memref<3x2x2xf16>, !kvt -> !kv.state<3x2x2xf32, base = e>
  %o = memref.alloc() : memref<3x2x2xf32>
  %lse = memref.alloc() : memref<3x2xf32>
  kv.store_state %s, %o, %lse : !kv.state<3x2x2xf32, base = e>, memref<3x2x2xf32>, memref<3x2xf32>
  %u1 = memref.cast %o : memref<3x2x2xf32> to memref<*xf32>
  call @printMemrefF32(%u1) : (memref<*xf32>) -> ()
  %u2 = memref.cast %lse : memref<3x2xf32> to memref<*xf32>
  call @printMemrefF32(%u2) : (memref<*xf32>) -> ()
  memref.dealloc %o : memref<3x2x2xf32>
  memref.dealloc %lse : memref<3x2xf32>
  return
}

func.func private @printMemrefF32(memref<*xf32>)
