// RUN: kvir-opt %s --convert-linalg-to-loops --kv-lower-to-llvm | mlir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s
// RUN: kvir-opt %s --kv-expand-cascade --canonicalize --cse --convert-linalg-to-loops --kv-lower-to-llvm | mlir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s

// A 2-level cascade (shared prefix + unique suffixes), causal on the last
// level only; each row's state is the merge over the levels. Base 2.
// With q = 0 every logit is 0, so the result is the mean of V over every
// key the row sees across both levels, and lse_2 = log2(#keys).
//
// Level 0 (NHD split, block table): one request holding all 3 query rows
// (qo_indptr [0, 3]) over the prefix P0 = (0, 6), P1 = (6, 0).
// Level 1 (HND combined, CSR, page_size 1): qo_indptr [0, 2, 3];
//   request 0 (rows 0, 1): pages [3, 1] -> S0 = (9, 0), S1 = (1, 10);
//     causal: row 0 (p = 0) sees S0, row 1 (p = 1) sees S0, S1.
//   request 1 (row 2): page [0] -> T0 = (3, 0).
// Page 2 of level 1 holds 1e4 (a trap).
//   row 0: P0, P1, S0 -> (15 / 3, 6 / 3) = (5, 2), lse_2 = log2 3 = 1.58496.
//   row 1: P0, P1, S0, S1 -> (16 / 4, 16 / 4) = (4, 4), lse_2 = 2.
//   row 2: P0, P1, T0 -> (9 / 3, 6 / 3) = (3, 2), lse_2 = log2 3.
// (Causal on level 0 too would hide the prefix from row 0.)

// CHECK: rank = 3 offset = 0 sizes = [3, 1, 2]
// CHECK-NEXT: {{\[\[\[}}5, 2]
// CHECK-NEXT: {{\[\[}}4, 4]
// CHECK-NEXT: {{\[\[}}3, 2]
// CHECK: rank = 2 offset = 0 sizes = [3, 1]
// CHECK-NEXT: {{\[\[}}1.58496]
// CHECK-NEXT: {{\[}}2]
// CHECK-NEXT: {{\[}}1.58496]

// The same with window_left = 1: positions are in the concatenation of a
// row's levels (prefix keys at 0, 1; then the row's level-1 keys).
//   row 0 (p = 2): P1, S0 -> (7.5, 0), lse_2 = 1.
//   row 1 (p = 3): S0, S1 -> (5, 5), lse_2 = 1.
//   row 2 (p = 2): P1, T0 -> (4.5, 0), lse_2 = 1.
// (Level-local positions would give row 0 the whole prefix instead.)
// CHECK: rank = 3 offset = 0 sizes = [3, 1, 2]
// CHECK-NEXT: {{\[\[\[}}7.5, 0]
// CHECK-NEXT: {{\[\[}}5, 5]
// CHECK-NEXT: {{\[\[}}4.5, 0]
// CHECK: rank = 2 offset = 0 sizes = [3, 1]
// CHECK-NEXT: {{\[\[}}1]
// CHECK-NEXT: {{\[}}1]
// CHECK-NEXT: {{\[}}1]

!kv0 = !kv.paged<page_size = 2, kv_heads = 1, head_dim = 2, head_dim_v = 2, dtype = f32, layout = nhd, storage = split, table = block_table>
!kv1 = !kv.paged<page_size = 1, kv_heads = 1, head_dim = 2, head_dim_v = 2, dtype = f32, layout = hnd, storage = combined, table = csr>
!s = !kv.state<3x1x2xf32, base = 2>

memref.global "private" constant @k0 : memref<1x2x1x2xf32> = dense<1.0>
memref.global "private" constant @v0 : memref<1x2x1x2xf32> = dense<[[[[0.0, 6.0]], [[6.0, 0.0]]]]>
memref.global "private" constant @bt0 : memref<1x1xi32> = dense<[[0]]>
memref.global "private" constant @lens0 : memref<1xi32> = dense<[2]>
memref.global "private" constant @qo0 : memref<2xi32> = dense<[0, 3]>
// pool[page][kv][head][slot][dim]
memref.global "private" constant @pool1 : memref<4x2x1x1x2xf32> = dense<[
  [[[[1.0, 1.0]]], [[[3.0, 0.0]]]],
  [[[[1.0, 1.0]]], [[[1.0, 10.0]]]],
  [[[[1.0, 1.0]]], [[[10000.0, 10000.0]]]],
  [[[[1.0, 1.0]]], [[[9.0, 0.0]]]]
]>
memref.global "private" constant @indptr1 : memref<3xi32> = dense<[0, 2, 3]>
memref.global "private" constant @indices1 : memref<3xi32> = dense<[3, 1, 0]>
memref.global "private" constant @last1 : memref<2xi32> = dense<[1, 1]>
memref.global "private" constant @qo1 : memref<3xi32> = dense<[0, 2, 3]>
memref.global "private" constant @q : memref<3x1x2xf32> = dense<0.0>

func.func @main() {
  %k0 = memref.get_global @k0 : memref<1x2x1x2xf32>
  %v0 = memref.get_global @v0 : memref<1x2x1x2xf32>
  %bt0 = memref.get_global @bt0 : memref<1x1xi32>
  %lens0 = memref.get_global @lens0 : memref<1xi32>
  %qo0 = memref.get_global @qo0 : memref<2xi32>
  %pool1 = memref.get_global @pool1 : memref<4x2x1x1x2xf32>
  %ip1 = memref.get_global @indptr1 : memref<3xi32>
  %ix1 = memref.get_global @indices1 : memref<3xi32>
  %last1 = memref.get_global @last1 : memref<2xi32>
  %qo1 = memref.get_global @qo1 : memref<3xi32>
  %q = memref.get_global @q : memref<3x1x2xf32>
  %kv0 = kv.paged_view pools(%k0, %v0 : memref<1x2x1x2xf32>, memref<1x2x1x2xf32>) tables(%bt0, %lens0 : memref<1x1xi32>, memref<1xi32>) : !kv0
  %kv1 = kv.paged_view pools(%pool1 : memref<4x2x1x1x2xf32>) tables(%ip1, %ix1, %last1 : memref<3xi32>, memref<3xi32>, memref<2xi32>) : !kv1
  %s = kv.cascade %q levels(%qo0, %qo1 : memref<2xi32>, memref<3xi32>) kvs(%kv0, %kv1 : !kv0, !kv1) {causal}
      : memref<3x1x2xf32> -> !s
  %o = memref.alloc() : memref<3x1x2xf32>
  %lse = memref.alloc() : memref<3x1xf32>
  kv.store_state %s, %o, %lse : !s, memref<3x1x2xf32>, memref<3x1xf32>
  %u1 = memref.cast %o : memref<3x1x2xf32> to memref<*xf32>
  call @printMemrefF32(%u1) : (memref<*xf32>) -> ()
  %u2 = memref.cast %lse : memref<3x1xf32> to memref<*xf32>
  call @printMemrefF32(%u2) : (memref<*xf32>) -> ()
  memref.dealloc %o : memref<3x1x2xf32>
  memref.dealloc %lse : memref<3x1xf32>

  %w = kv.cascade %q levels(%qo0, %qo1 : memref<2xi32>, memref<3xi32>) kvs(%kv0, %kv1 : !kv0, !kv1) {causal, window_left = 1 : i64}
      : memref<3x1x2xf32> -> !s
  %wo = memref.alloc() : memref<3x1x2xf32>
  %wlse = memref.alloc() : memref<3x1xf32>
  kv.store_state %w, %wo, %wlse : !s, memref<3x1x2xf32>, memref<3x1xf32>
  %w1 = memref.cast %wo : memref<3x1x2xf32> to memref<*xf32>
  call @printMemrefF32(%w1) : (memref<*xf32>) -> ()
  %w2 = memref.cast %wlse : memref<3x1xf32> to memref<*xf32>
  call @printMemrefF32(%w2) : (memref<*xf32>) -> ()
  memref.dealloc %wo : memref<3x1x2xf32>
  memref.dealloc %wlse : memref<3x1xf32>
  return
}

func.func private @printMemrefF32(memref<*xf32>)
