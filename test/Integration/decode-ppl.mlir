// RUN: kvir-opt %s --convert-linalg-to-loops --kv-lower-to-llvm | mlir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s

// kv.decode over OpenPPL cache_layout 3, (L, 2, H, T, D), reading layer 1 of
// 2, through a token table (cache_mode 1): token t of request b is pool
// token cachestarts[b][t / page_size] + t % page_size.
//
// page_size = 2, cachestarts = [[4, 0], [6, 0]], kv_lens = [3, 2]:
//   request 0: tokens 4, 5, then cachestarts[0][1] + 0 = 0.
//   request 1: tokens 6, 7.
// Layer 0 holds 1000 everywhere (its K head 1 dim 0 is 0): reading it would
// change every result. Pool tokens no request uses hold 1e4 in V.
//
// sm_scale = 1, two query heads over two KV heads.
// Head 0: q = (0, 0) -> o = mean of V, lse = ln(kv_len).
//   request 0: V = (1, 2), (3, 4), (5, 6) -> (3, 4), lse = ln 3 = 1.09861.
//   request 1: V = (10, 20), (30, 40) -> (20, 30), lse = ln 2 = 0.693147.
// Head 1: q = (1, 0), logit = K[0] = -100 except pool tokens 0 and 7 (0):
//   request 0: token 0 -> o = (11, 12), lse = 0.
//   request 1: token 7 -> o = (13, 14), lse = 0.

// CHECK: rank = 3 offset = 0 sizes = [2, 2, 2]
// CHECK-NEXT: {{\[\[\[}}3, 4]
// CHECK-NEXT: {{\[}}11, 12]
// CHECK-NEXT: {{\[\[}}20, 30]
// CHECK-NEXT: {{\[}}13, 14]
// CHECK: rank = 2 offset = 0 sizes = [2, 2]
// CHECK-NEXT: {{\[\[}}1.09861, 0]
// CHECK-NEXT: {{\[}}0.693147, 0]

!kvt = !kv.paged<page_size = 2, kv_heads = 2, head_dim = 2, head_dim_v = 2, dtype = f32, layout = ppl3, storage = combined, table = token_table, layer = 1>

// pool[layer][kv][head][token][dim]
memref.global "private" constant @pool : memref<2x2x2x8x2xf32> = dense<[
  // layer 0 (not read)
  [[[[1000.0, 1000.0], [1000.0, 1000.0], [1000.0, 1000.0], [1000.0, 1000.0], [1000.0, 1000.0], [1000.0, 1000.0], [1000.0, 1000.0], [1000.0, 1000.0]], [[0.0, 1000.0], [0.0, 1000.0], [0.0, 1000.0], [0.0, 1000.0], [0.0, 1000.0], [0.0, 1000.0], [0.0, 1000.0], [0.0, 1000.0]]], [[[1000.0, 1000.0], [1000.0, 1000.0], [1000.0, 1000.0], [1000.0, 1000.0], [1000.0, 1000.0], [1000.0, 1000.0], [1000.0, 1000.0], [1000.0, 1000.0]], [[1000.0, 1000.0], [1000.0, 1000.0], [1000.0, 1000.0], [1000.0, 1000.0], [1000.0, 1000.0], [1000.0, 1000.0], [1000.0, 1000.0], [1000.0, 1000.0]]]],
  // layer 1
  [[[[50.0, 50.0], [50.0, 50.0], [50.0, 50.0], [50.0, 50.0], [50.0, 50.0], [50.0, 50.0], [50.0, 50.0], [50.0, 50.0]], [[0.0, 0.0], [-100.0, 0.0], [-100.0, 0.0], [-100.0, 0.0], [-100.0, 0.0], [-100.0, 0.0], [-100.0, 0.0], [0.0, 0.0]]], [[[5.0, 6.0], [10000.0, 10000.0], [10000.0, 10000.0], [10000.0, 10000.0], [1.0, 2.0], [3.0, 4.0], [10.0, 20.0], [30.0, 40.0]], [[11.0, 12.0], [10000.0, 10000.0], [10000.0, 10000.0], [10000.0, 10000.0], [500.0, 600.0], [500.0, 600.0], [500.0, 600.0], [13.0, 14.0]]]]
]>
memref.global "private" constant @cachestarts : memref<2x2xi32> = dense<[[4, 0], [6, 0]]>
memref.global "private" constant @kv_lens : memref<2xi32> = dense<[3, 2]>
memref.global "private" constant @q : memref<2x2x2xf32> = dense<[[[0.0, 0.0], [1.0, 0.0]], [[0.0, 0.0], [1.0, 0.0]]]>

func.func @main() {
  %pool = memref.get_global @pool : memref<2x2x2x8x2xf32>
  %starts = memref.get_global @cachestarts : memref<2x2xi32>
  %lens = memref.get_global @kv_lens : memref<2xi32>
  %q = memref.get_global @q : memref<2x2x2xf32>
  %kv = kv.paged_view pools(%pool : memref<2x2x2x8x2xf32>)
      tables(%starts, %lens : memref<2x2xi32>, memref<2xi32>) : !kvt
  %s = kv.decode %q, %kv {sm_scale = 1.0 : f32} : memref<2x2x2xf32>, !kvt -> !kv.state<2x2x2xf32, base = e>
  %o = memref.alloc() : memref<2x2x2xf32>
  %lse = memref.alloc() : memref<2x2xf32>
  kv.store_state %s, %o, %lse : !kv.state<2x2x2xf32, base = e>, memref<2x2x2xf32>, memref<2x2xf32>
  %u1 = memref.cast %o : memref<2x2x2xf32> to memref<*xf32>
  call @printMemrefF32(%u1) : (memref<*xf32>) -> ()
  %u2 = memref.cast %lse : memref<2x2xf32> to memref<*xf32>
  call @printMemrefF32(%u2) : (memref<*xf32>) -> ()
  memref.dealloc %o : memref<2x2x2xf32>
  memref.dealloc %lse : memref<2x2xf32>
  return
}

func.func private @printMemrefF32(memref<*xf32>)
