// RUN: kvir-opt %s --convert-linalg-to-loops --kv-lower-to-llvm | mlir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s

// Split-KV: decoding a request over all its pages equals merging the
// decodes of its pages taken in two halves (the merge identity of
// docs/Semantics.md). Base 2.
//
// NHD combined, page_size = 2, kv_heads = 2, sm_scale = 1. The full view
// has pages [0, 1] (kv_len 4); half A has page 0, half B page 1 (kv_len 2
// each).
// Head 0: q = 0 -> o = mean of V head 0 = mean((1, 10), (3, 30), (5, 50),
//   (7, 70)) = (4, 40), lse_2 = log2 4 = 2. Halves: (2, 20) and (6, 60),
//   each lse_2 = log2 2 = 1; their merge has equal weights: (4, 40), 2.
// Head 1: q = (1, 0), logit K[0] = -100 except page 1 slot 1 (0):
//   o = V head 1 there = (9, 11), lse_2 = 0 (0 / ln 2). Half A sees only
//   -100 logits: lse_2 = (-100 + ln 2) / ln 2 = -143.27; merged with half B
//   (lse_2 = 0, o = (9, 11)) its weight is 2^-143 (a denormal): (9, 11), 0.

// full decode
// CHECK: rank = 3 offset = 0 sizes = [1, 2, 2]
// CHECK-NEXT: {{\[\[\[}}4, 40]
// CHECK-NEXT: {{\[}}9, 11]
// CHECK: rank = 2 offset = 0 sizes = [1, 2]
// CHECK-NEXT: {{\[\[}}2, 0]
// merge of the halves
// CHECK: rank = 3 offset = 0 sizes = [1, 2, 2]
// CHECK-NEXT: {{\[\[\[}}4, 40]
// CHECK-NEXT: {{\[}}9, 11]
// CHECK: rank = 2 offset = 0 sizes = [1, 2]
// CHECK-NEXT: {{\[\[}}2, 0]

!kvt = !kv.paged<page_size = 2, kv_heads = 2, head_dim = 2, head_dim_v = 2, dtype = f32, layout = nhd, storage = combined, table = csr>
!s = !kv.state<1x2x2xf32, base = 2>

// pool[page][kv][slot][head][dim]
memref.global "private" constant @pool : memref<2x2x2x2x2xf32> = dense<[
  // page 0
  [[[[5.0, 5.0], [-100.0, 0.0]], [[5.0, 5.0], [-100.0, 0.0]]], [[[1.0, 10.0], [2.0, 2.0]], [[3.0, 30.0], [2.0, 2.0]]]],
  // page 1
  [[[[5.0, 5.0], [-100.0, 0.0]], [[5.0, 5.0], [0.0, 0.0]]], [[[5.0, 50.0], [2.0, 2.0]], [[7.0, 70.0], [9.0, 11.0]]]]
]>
memref.global "private" constant @indptr : memref<2xi32> = dense<[0, 2]>
memref.global "private" constant @both : memref<2xi32> = dense<[0, 1]>
memref.global "private" constant @half_indptr : memref<2xi32> = dense<[0, 1]>
memref.global "private" constant @page0 : memref<1xi32> = dense<[0]>
memref.global "private" constant @page1 : memref<1xi32> = dense<[1]>
memref.global "private" constant @last : memref<1xi32> = dense<[2]>
memref.global "private" constant @q : memref<1x2x2xf32> = dense<[[[0.0, 0.0], [1.0, 0.0]]]>

func.func @main() {
  %pool = memref.get_global @pool : memref<2x2x2x2x2xf32>
  %indptr = memref.get_global @indptr : memref<2xi32>
  %both = memref.get_global @both : memref<2xi32>
  %hip = memref.get_global @half_indptr : memref<2xi32>
  %p0 = memref.get_global @page0 : memref<1xi32>
  %p1 = memref.get_global @page1 : memref<1xi32>
  %last = memref.get_global @last : memref<1xi32>
  %q = memref.get_global @q : memref<1x2x2xf32>
  %o = memref.alloc() : memref<1x2x2xf32>
  %lse = memref.alloc() : memref<1x2xf32>

  %full = kv.paged_view pools(%pool : memref<2x2x2x2x2xf32>) tables(%indptr, %both, %last : memref<2xi32>, memref<2xi32>, memref<1xi32>) : !kvt
  %sf = kv.decode %q, %full {sm_scale = 1.0 : f32} : memref<1x2x2xf32>, !kvt -> !s
  kv.store_state %sf, %o, %lse : !s, memref<1x2x2xf32>, memref<1x2xf32>
  %u1 = memref.cast %o : memref<1x2x2xf32> to memref<*xf32>
  call @printMemrefF32(%u1) : (memref<*xf32>) -> ()
  %u2 = memref.cast %lse : memref<1x2xf32> to memref<*xf32>
  call @printMemrefF32(%u2) : (memref<*xf32>) -> ()

  %a = kv.paged_view pools(%pool : memref<2x2x2x2x2xf32>) tables(%hip, %p0, %last : memref<2xi32>, memref<1xi32>, memref<1xi32>) : !kvt
  %b = kv.paged_view pools(%pool : memref<2x2x2x2x2xf32>) tables(%hip, %p1, %last : memref<2xi32>, memref<1xi32>, memref<1xi32>) : !kvt
  %sa = kv.decode %q, %a {sm_scale = 1.0 : f32} : memref<1x2x2xf32>, !kvt -> !s
  %sb = kv.decode %q, %b {sm_scale = 1.0 : f32} : memref<1x2x2xf32>, !kvt -> !s
  %m = kv.merge %sa, %sb : !s, !s -> !s
  kv.store_state %m, %o, %lse : !s, memref<1x2x2xf32>, memref<1x2xf32>
  %u3 = memref.cast %o : memref<1x2x2xf32> to memref<*xf32>
  call @printMemrefF32(%u3) : (memref<*xf32>) -> ()
  %u4 = memref.cast %lse : memref<1x2xf32> to memref<*xf32>
  call @printMemrefF32(%u4) : (memref<*xf32>) -> ()

  memref.dealloc %o : memref<1x2x2xf32>
  memref.dealloc %lse : memref<1x2xf32>
  return
}

func.func private @printMemrefF32(memref<*xf32>)
