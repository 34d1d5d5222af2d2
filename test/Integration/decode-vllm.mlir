// RUN: kvir-opt %s --convert-linalg-to-loops --kv-lower-to-llvm | mlir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s

// kv.decode over the vLLM layout: K [blocks, H, D / x, block_size, x] with
// x = 16 bytes / 4 = 4 for f32, V [blocks, H, D, block_size], a block table
// and seq_lens.
//
// block_size = 2, D = 8. block_table = [[1, 0], [2, 0]], seq_lens = [3, 1]:
//   request 0: t0 = (block 1, slot 0), t1 = (1, 1), t2 = (block 0, slot 0).
//   request 1: t0 = (block 2, slot 0).
// V[block][0][d][slot] = 100 * block + 10 * slot + d + 1.
// q = e_5 (dim 5 = chunk 5 floordiv 4 = 1, lane 5 mod 4 = 1) and
// sm_scale = 1, so the logit of a token is its K[5]. K[5] = -100 everywhere
// except block 0 slot 0 (K[5] = 0) and block 2 slot 0 (K[5] = 0.5); every
// other K element is 7, which a wrong (chunk, lane) would read.
//   request 0: logits (-100, -100, 0) -> o = V(block 0, slot 0)
//     = (1, 2, ..., 8), lse = 0 + ln(1 + 2e^-100) = 0 (the other tokens add
//     under 1e-41 to o).
//   request 1: one key, logit 0.5 -> o = V(block 2, slot 0)
//     = (201, 202, ..., 208), lse = 0.5.

// CHECK: rank = 3 offset = 0 sizes = [2, 1, 8]
// CHECK-NEXT: {{\[\[\[}}1, 2, 3, 4, 5, 6, 7, 8]
// CHECK-NEXT: {{\[\[}}201, 202, 203, 204, 205, 206, 207, 208]
// CHECK: rank = 2 offset = 0 sizes = [2, 1]
// CHECK-NEXT: {{\[\[}}0]
// CHECK-NEXT: {{\[}}0.5]

!kvt = !kv.paged<page_size = 2, kv_heads = 1, head_dim = 8, head_dim_v = 8, dtype = f32, layout = vllm, storage = split, table = block_table>

// K[block][head][d / 4][slot][d % 4]
memref.global "private" constant @k : memref<3x1x2x2x4xf32> = dense<[
  // block 0
  [[[[7.0, 7.0, 7.0, 7.0], [7.0, 7.0, 7.0, 7.0]], [[7.0, 0.0, 7.0, 7.0], [7.0, -100.0, 7.0, 7.0]]]],
  // block 1
  [[[[7.0, 7.0, 7.0, 7.0], [7.0, 7.0, 7.0, 7.0]], [[7.0, -100.0, 7.0, 7.0], [7.0, -100.0, 7.0, 7.0]]]],
  // block 2
  [[[[7.0, 7.0, 7.0, 7.0], [7.0, 7.0, 7.0, 7.0]], [[7.0, 0.5, 7.0, 7.0], [7.0, -100.0, 7.0, 7.0]]]]
]>
// V[block][head][d][slot]
memref.global "private" constant @v : memref<3x1x8x2xf32> = dense<[
  // block 0
  [[[1.0, 11.0], [2.0, 12.0], [3.0, 13.0], [4.0, 14.0], [5.0, 15.0], [6.0, 16.0], [7.0, 17.0], [8.0, 18.0]]],
  // block 1
  [[[101.0, 111.0], [102.0, 112.0], [103.0, 113.0], [104.0, 114.0], [105.0, 115.0], [106.0, 116.0], [107.0, 117.0], [108.0, 118.0]]],
  // block 2
  [[[201.0, 211.0], [202.0, 212.0], [203.0, 213.0], [204.0, 214.0], [205.0, 215.0], [206.0, 216.0], [207.0, 217.0], [208.0, 218.0]]]
]>
memref.global "private" constant @block_table : memref<2x2xi32> = dense<[[1, 0], [2, 0]]>
memref.global "private" constant @seq_lens : memref<2xi32> = dense<[3, 1]>
memref.global "private" constant @q : memref<2x1x8xf32> = dense<[[[0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0]], [[0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0]]]>

func.func @main() {
  %k = memref.get_global @k : memref<3x1x2x2x4xf32>
  %v = memref.get_global @v : memref<3x1x8x2xf32>
  %bt = memref.get_global @block_table : memref<2x2xi32>
  %lens = memref.get_global @seq_lens : memref<2xi32>
  %q = memref.get_global @q : memref<2x1x8xf32>
  %kv = kv.paged_view pools(%k, %v : memref<3x1x2x2x4xf32>, memref<3x1x8x2xf32>)
      tables(%bt, %lens : memref<2x2xi32>, memref<2xi32>) : !kvt
  %s = kv.decode %q, %kv {sm_scale = 1.0 : f32} : memref<2x1x8xf32>, !kvt -> !kv.state<2x1x8xf32, base = e>
  %o = memref.alloc() : memref<2x1x8xf32>
  %lse = memref.alloc() : memref<2x1xf32>
  kv.store_state %s, %o, %lse : !kv.state<2x1x8xf32, base = e>, memref<2x1x8xf32>, memref<2x1xf32>
  %u1 = memref.cast %o : memref<2x1x8xf32> to memref<*xf32>
  call @printMemrefF32(%u1) : (memref<*xf32>) -> ()
  %u2 = memref.cast %lse : memref<2x1xf32> to memref<*xf32>
  call @printMemrefF32(%u2) : (memref<*xf32>) -> ()
  memref.dealloc %o : memref<2x1x8xf32>
  memref.dealloc %lse : memref<2x1xf32>
  return
}

func.func private @printMemrefF32(memref<*xf32>)
