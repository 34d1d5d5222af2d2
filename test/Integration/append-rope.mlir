// RUN: kvir-opt %s --convert-linalg-to-loops --kv-lower-to-llvm | mlir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s

// kv.append with RoPE: K is rotated at its position before it is written,
// V is not. theta = 4 and scale = pi / 3 with D = 4 give pair i the angle
// pos * pi/3 * 4^(-2i/4): pair 0 turns by pos * pi/3, pair 1 by pos * pi/6.
// cos(pi/3) = sin(pi/6) = 0.5, sin(pi/3) = cos(pi/6) = 0.866025;
// cos(2pi/3) = -0.5, sin(2pi/3) = 0.866025.
// (a, b) -> (a cos - b sin, b cos + a sin).
//
// Cache A, interleave (pairs (0, 1), (2, 3)), one page of 4 slots, block
// table [[0]]:
//   row 0 at position 1, k = (1, 0, 1, 0): pair 0 (1, 0) -> (0.5, 0.866025),
//     pair 1 (1, 0) -> (0.866025, 0.5): (0.5, 0.866025, 0.866025, 0.5).
//   row 1 at position 0, k = (1, 2, 3, 4): angle 0, unchanged.
// Cache B, rotate_half (pairs (0, 2), (1, 3)):
//   row 0 at position 1, k = (1, 1, 0, 0): pair 0 (k0, k2) = (1, 0) ->
//     (0.5, 0.866025); pair 1 (k1, k3) = (1, 0) -> (0.866025, 0.5):
//     (0.5, 0.866025, 0.866025, 0.5).
//   row 1 at position 2, k = (1, 0, 0, 1): pair 0 (1, 0) at 2pi/3 ->
//     (-0.5, 0.866025); pair 1 (0, 1) at pi/3 -> (-0.866025, 0.5):
//     (-0.5, -0.866025, 0.866025, 0.5).
// V rows (1, 2, 3, 4) and (5, 6, 7, 8) are written as they are.

// A: K[slot][head][dim] of page 0
// CHECK: rank = 3 offset = 0 sizes = [4, 1, 4]
// CHECK-NEXT: {{\[\[\[}}1, 2, 3, 4]
// CHECK-NEXT: {{\[\[}}0.5, 0.866025, 0.866025, 0.5]
// CHECK-NEXT: {{\[\[}}0, 0, 0, 0]
// CHECK-NEXT: {{\[\[}}0, 0, 0, 0]
// A: V
// CHECK: rank = 3 offset = 0 sizes = [4, 1, 4]
// CHECK-NEXT: {{\[\[\[}}5, 6, 7, 8]
// CHECK-NEXT: {{\[\[}}1, 2, 3, 4]
// CHECK-NEXT: {{\[\[}}0, 0, 0, 0]
// CHECK-NEXT: {{\[\[}}0, 0, 0, 0]
// B: K
// CHECK: rank = 3 offset = 0 sizes = [4, 1, 4]
// CHECK-NEXT: {{\[\[\[}}0, 0, 0, 0]
// CHECK-NEXT: {{\[\[}}0.5, 0.866025, 0.866025, 0.5]
// CHECK-NEXT: {{\[\[}}-0.5, -0.866025, 0.866025, 0.5]
// CHECK-NEXT: {{\[\[}}0, 0, 0, 0]

!kvt = !kv.paged<page_size = 4, kv_heads = 1, head_dim = 4, head_dim_v = 4, dtype = f32, layout = nhd, storage = split, table = block_table>

memref.global "private" @ak : memref<1x4x1x4xf32> = dense<0.0>
memref.global "private" @av : memref<1x4x1x4xf32> = dense<0.0>
memref.global "private" @bk : memref<1x4x1x4xf32> = dense<0.0>
memref.global "private" @bv : memref<1x4x1x4xf32> = dense<0.0>
memref.global "private" constant @block_table : memref<1x1xi32> = dense<[[0]]>
memref.global "private" constant @seq_lens : memref<1xi32> = dense<[4]>
memref.global "private" constant @batch : memref<2xi32> = dense<[0, 0]>
memref.global "private" constant @apos : memref<2xi32> = dense<[1, 0]>
memref.global "private" constant @bpos : memref<2xi32> = dense<[1, 2]>
memref.global "private" constant @ak_new : memref<2x1x4xf32> = dense<[[[1.0, 0.0, 1.0, 0.0]], [[1.0, 2.0, 3.0, 4.0]]]>
memref.global "private" constant @bk_new : memref<2x1x4xf32> = dense<[[[1.0, 1.0, 0.0, 0.0]], [[1.0, 0.0, 0.0, 1.0]]]>
memref.global "private" constant @v_new : memref<2x1x4xf32> = dense<[[[1.0, 2.0, 3.0, 4.0]], [[5.0, 6.0, 7.0, 8.0]]]>

func.func @main() {
  %ak = memref.get_global @ak : memref<1x4x1x4xf32>
  %av = memref.get_global @av : memref<1x4x1x4xf32>
  %bk = memref.get_global @bk : memref<1x4x1x4xf32>
  %bv = memref.get_global @bv : memref<1x4x1x4xf32>
  %bt = memref.get_global @block_table : memref<1x1xi32>
  %lens = memref.get_global @seq_lens : memref<1xi32>
  %batch = memref.get_global @batch : memref<2xi32>
  %apos = memref.get_global @apos : memref<2xi32>
  %bpos = memref.get_global @bpos : memref<2xi32>
  %aknew = memref.get_global @ak_new : memref<2x1x4xf32>
  %bknew = memref.get_global @bk_new : memref<2x1x4xf32>
  %vnew = memref.get_global @v_new : memref<2x1x4xf32>
  %a = kv.paged_view pools(%ak, %av : memref<1x4x1x4xf32>, memref<1x4x1x4xf32>) tables(%bt, %lens : memref<1x1xi32>, memref<1xi32>) : !kvt
  %b = kv.paged_view pools(%bk, %bv : memref<1x4x1x4xf32>, memref<1x4x1x4xf32>) tables(%bt, %lens : memref<1x1xi32>, memref<1xi32>) : !kvt
  kv.append %aknew, %vnew, %batch, %apos into %a {rope = #kv.rope<interleave, theta = 4.0, scale = 1.04719758>}
      : memref<2x1x4xf32>, memref<2x1x4xf32>, memref<2xi32>, memref<2xi32>, !kvt
  kv.append %bknew, %vnew, %batch, %bpos into %b {rope = #kv.rope<rotate_half, theta = 4.0, scale = 1.04719758>}
      : memref<2x1x4xf32>, memref<2x1x4xf32>, memref<2xi32>, memref<2xi32>, !kvt
  %ak0 = memref.subview %ak[0, 0, 0, 0] [1, 4, 1, 4] [1, 1, 1, 1] : memref<1x4x1x4xf32> to memref<4x1x4xf32>
  %av0 = memref.subview %av[0, 0, 0, 0] [1, 4, 1, 4] [1, 1, 1, 1] : memref<1x4x1x4xf32> to memref<4x1x4xf32>
  %bk0 = memref.subview %bk[0, 0, 0, 0] [1, 4, 1, 4] [1, 1, 1, 1] : memref<1x4x1x4xf32> to memref<4x1x4xf32>
  %u1 = memref.cast %ak0 : memref<4x1x4xf32> to memref<*xf32>
  call @printMemrefF32(%u1) : (memref<*xf32>) -> ()
  %u2 = memref.cast %av0 : memref<4x1x4xf32> to memref<*xf32>
  call @printMemrefF32(%u2) : (memref<*xf32>) -> ()
  %u3 = memref.cast %bk0 : memref<4x1x4xf32> to memref<*xf32>
  call @printMemrefF32(%u3) : (memref<*xf32>) -> ()
  return
}

func.func private @printMemrefF32(memref<*xf32>)
