// RUN: kvir-opt %s --convert-linalg-to-loops --kv-lower-to-llvm | mlir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s

// kv.mla_decode: s_j = sm_scale * (<q_nope, ckv_j> + <q_pe, kpe_j>),
// o = sum p_j ckv_j, all heads on the one latent KV. ckv (width 4) and kpe
// (width 2) are strided slices of one 6-wide pool (FlashMLA's 512 + 64).
//
// page_size = 2, block_table = [[2, 0], [1, 0]], seq_lens = [3, 1]:
//   request 0: tokens (page 2, slot 0), (2, 1), (0, 0) with
//     ckv (1, 2, 3, 4), (5, 6, 7, 8), (9, 10, 11, 12) and
//     kpe (-100, 7), (0, 7), (-100, 7).
//   request 1: token (1, 0), ckv (2, 20, 30, 40), kpe (3, 0).
// Unused ckv entries hold 1e4.
// sm_scale = 1:
//   request 0, head 0: q_nope = q_pe = 0 -> o = mean of ckv = (5, 6, 7, 8),
//     lse = ln 3 = 1.09861.
//   request 0, head 1: q_nope = 0, q_pe = (1, 0): logits = kpe[0] =
//     (-100, 0, -100) -> o = (5, 6, 7, 8) again but lse = 0.
//   request 1, head 0: q_nope = (1, 0, 0, 0), q_pe = (1, 0): logit =
//     2 + 3 = 5 -> o = (2, 20, 30, 40), lse = 5.
//   request 1, head 1: q = 0: logit 0 -> o = (2, 20, 30, 40), lse = 0.
// Default sm_scale 1 / sqrt(4 + 2): request 1 head 0's lse = 5 / sqrt(6) =
//   2.04124; request 0 head 1: logits (-40.8, 0, -40.8) -> lse 0.

// CHECK: rank = 3 offset = 0 sizes = [2, 2, 4]
// CHECK-NEXT: {{\[\[\[}}5, 6, 7, 8]
// CHECK-NEXT: {{\[}}5, 6, 7, 8]
// CHECK-NEXT: {{\[\[}}2, 20, 30, 40]
// CHECK-NEXT: {{\[}}2, 20, 30, 40]
// CHECK: rank = 2 offset = 0 sizes = [2, 2]
// CHECK-NEXT: {{\[\[}}1.09861, 0]
// CHECK-NEXT: {{\[}}5, 0]
// default sm_scale
// CHECK: rank = 2 offset = 0 sizes = [2, 2]
// CHECK-NEXT: {{\[\[}}1.09861, 0]
// CHECK-NEXT: {{\[}}2.04124, 0]

!mla = !kv.paged<page_size = 2, kv_heads = 1, head_dim = 4, head_dim_v = 4, dtype = f32, layout = nhd, storage = mla, table = block_table, pe_dim = 2>
!ckv = memref<3x2x4xf32, strided<[12, 6, 1]>>
!kpe = memref<3x2x2xf32, strided<[12, 6, 1], offset: 4>>

// pool[page][slot][ckv 0..3 | kpe 0..1]
memref.global "private" constant @pool : memref<3x2x6xf32> = dense<[
  [[9.0, 10.0, 11.0, 12.0, -100.0, 7.0], [10000.0, 10000.0, 10000.0, 10000.0, -100.0, 0.0]],
  [[2.0, 20.0, 30.0, 40.0, 3.0, 0.0], [10000.0, 10000.0, 10000.0, 10000.0, -100.0, 0.0]],
  [[1.0, 2.0, 3.0, 4.0, -100.0, 7.0], [5.0, 6.0, 7.0, 8.0, 0.0, 7.0]]
]>
memref.global "private" constant @block_table : memref<2x2xi32> = dense<[[2, 0], [1, 0]]>
memref.global "private" constant @seq_lens : memref<2xi32> = dense<[3, 1]>
memref.global "private" constant @q_nope : memref<2x2x4xf32> = dense<[[[0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]], [[1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]]>
memref.global "private" constant @q_pe : memref<2x2x2xf32> = dense<[[[0.0, 0.0], [1.0, 0.0]], [[1.0, 0.0], [0.0, 0.0]]]>

func.func @main() {
  %pool = memref.get_global @pool : memref<3x2x6xf32>
  %ckv = memref.subview %pool[0, 0, 0] [3, 2, 4] [1, 1, 1] : memref<3x2x6xf32> to !ckv
  %kpe = memref.subview %pool[0, 0, 4] [3, 2, 2] [1, 1, 1] : memref<3x2x6xf32> to !kpe
  %bt = memref.get_global @block_table : memref<2x2xi32>
  %lens = memref.get_global @seq_lens : memref<2xi32>
  %qn = memref.get_global @q_nope : memref<2x2x4xf32>
  %qp = memref.get_global @q_pe : memref<2x2x2xf32>
  %kv = kv.paged_view pools(%ckv, %kpe : !ckv, !kpe) tables(%bt, %lens : memref<2x2xi32>, memref<2xi32>) : !mla
  %o = memref.alloc() : memref<2x2x4xf32>
  %lse = memref.alloc() : memref<2x2xf32>
  %s = kv.mla_decode %qn, %qp, %kv {sm_scale = 1.0 : f32} : memref<2x2x4xf32>, memref<2x2x2xf32>, !mla -> !kv.state<2x2x4xf32, base = e>
  kv.store_state %s, %o, %lse : !kv.state<2x2x4xf32, base = e>, memref<2x2x4xf32>, memref<2x2xf32>
  %u1 = memref.cast %o : memref<2x2x4xf32> to memref<*xf32>
  call @printMemrefF32(%u1) : (memref<*xf32>) -> ()
  %u2 = memref.cast %lse : memref<2x2xf32> to memref<*xf32>
  call @printMemrefF32(%u2) : (memref<*xf32>) -> ()
  %d = kv.mla_decode %qn, %qp, %kv : memref<2x2x4xf32>, memref<2x2x2xf32>, !mla -> !kv.state<2x2x4xf32, base = e>
  kv.store_state %d, %o, %lse : !kv.state<2x2x4xf32, base = e>, memref<2x2x4xf32>, memref<2x2xf32>
  %u3 = memref.cast %lse : memref<2x2xf32> to memref<*xf32>
  call @printMemrefF32(%u3) : (memref<*xf32>) -> ()
  memref.dealloc %o : memref<2x2x4xf32>
  memref.dealloc %lse : memref<2x2xf32>
  return
}

func.func private @printMemrefF32(memref<*xf32>)
