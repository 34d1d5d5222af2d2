// RUN: kvir-opt %s --convert-linalg-to-loops --kv-lower-to-llvm | mlir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s

// Empty requests give the empty state (o = 0, lse = -inf, never NaN), in
// base e and base 2, for decode over a block table (seq_len 0), over CSR
// (no page) and for prefill over ragged KV (no row). The non-empty requests
// beside them check the base: lse_2 = ln(sum exp) / ln 2.
//
// q = 0, so every logit is 0: o = mean of V and lse = ln(kv_len) in base e,
// log2(kv_len) in base 2. page_size = 4, K = 3 everywhere, unused V = 1e4.
// Block table [[0], [1]], seq_lens = [0, 2]:
//   request 0: empty -> (0, 0), -inf.
//   request 1: page 1 slots 0, 1: V = (2, 4), (4, 8) -> (3, 6),
//     base 2: lse = log2 2 = 1.
// CSR kv_indptr = [0, 0, 1], kv_indices = [0], kv_last_page_len = [4, 3]:
//   request 0: no page -> (0, 0), -inf.
//   request 1: page 0 slots 0..2: V = (1, 1), (2, 2), (6, 6) -> (3, 3),
//     base 2: lse = log2 3 = 1.58496; base e: lse = ln 3 = 1.09861.
// Ragged prefill, qo_indptr = [0, 1, 2], kv_indptr = [0, 0, 1]:
//   request 0: one query row, no key -> (0, 0), -inf.
//   request 1: one key (5, 7) -> (5, 7), lse = 0.

// Block table, base 2.
// CHECK: rank = 3 offset = 0 sizes = [2, 1, 2]
// CHECK-NEXT: {{\[\[\[}}0, 0]
// CHECK-NEXT: {{\[\[}}3, 6]
// CHECK: rank = 2 offset = 0 sizes = [2, 1]
// CHECK-NEXT: {{\[\[}}-inf]
// CHECK-NEXT: {{\[}}1]
// CSR, base 2.
// CHECK: rank = 3 offset = 0 sizes = [2, 1, 2]
// CHECK-NEXT: {{\[\[\[}}0, 0]
// CHECK-NEXT: {{\[\[}}3, 3]
// CHECK: rank = 2 offset = 0 sizes = [2, 1]
// CHECK-NEXT: {{\[\[}}-inf]
// CHECK-NEXT: {{\[}}1.58496]
// CSR, base e.
// CHECK: rank = 3 offset = 0 sizes = [2, 1, 2]
// CHECK-NEXT: {{\[\[\[}}0, 0]
// CHECK-NEXT: {{\[\[}}3, 3]
// CHECK: rank = 2 offset = 0 sizes = [2, 1]
// CHECK-NEXT: {{\[\[}}-inf]
// CHECK-NEXT: {{\[}}1.09861]
// Ragged prefill, base e.
// CHECK: rank = 3 offset = 0 sizes = [2, 1, 2]
// CHECK-NEXT: {{\[\[\[}}0, 0]
// CHECK-NEXT: {{\[\[}}5, 7]
// CHECK: rank = 2 offset = 0 sizes = [2, 1]
// CHECK-NEXT: {{\[\[}}-inf]
// CHECK-NEXT: {{\[}}0]

!bt = !kv.paged<page_size = 4, kv_heads = 1, head_dim = 2, head_dim_v = 2, dtype = f32, layout = nhd, storage = split, table = block_table>
!csr = !kv.paged<page_size = 4, kv_heads = 1, head_dim = 2, head_dim_v = 2, dtype = f32, layout = nhd, storage = split, table = csr>
!rag = !kv.ragged<kv_heads = 1, head_dim = 2, head_dim_v = 2, dtype = f32>
!s2 = !kv.state<2x1x2xf32, base = 2>
!se = !kv.state<2x1x2xf32, base = e>

// K and V [page][slot][head][dim]
memref.global "private" constant @k : memref<2x4x1x2xf32> = dense<[
  [[[3.0, 3.0]], [[3.0, 3.0]], [[3.0, 3.0]], [[3.0, 3.0]]],
  [[[3.0, 3.0]], [[3.0, 3.0]], [[3.0, 3.0]], [[3.0, 3.0]]]
]>
memref.global "private" constant @v : memref<2x4x1x2xf32> = dense<[
  [[[1.0, 1.0]], [[2.0, 2.0]], [[6.0, 6.0]], [[10000.0, 10000.0]]],
  [[[2.0, 4.0]], [[4.0, 8.0]], [[10000.0, 10000.0]], [[10000.0, 10000.0]]]
]>
memref.global "private" constant @block_table : memref<2x1xi32> = dense<[[0], [1]]>
memref.global "private" constant @seq_lens : memref<2xi32> = dense<[0, 2]>
memref.global "private" constant @kv_indptr : memref<3xi32> = dense<[0, 0, 1]>
memref.global "private" constant @kv_indices : memref<1xi32> = dense<[0]>
memref.global "private" constant @last : memref<2xi32> = dense<[4, 3]>
memref.global "private" constant @rk : memref<1x1x2xf32> = dense<[[[1.0, 1.0]]]>
memref.global "private" constant @rv : memref<1x1x2xf32> = dense<[[[5.0, 7.0]]]>
memref.global "private" constant @qo_indptr : memref<3xi32> = dense<[0, 1, 2]>
memref.global "private" constant @q : memref<2x1x2xf32> = dense<0.0>

func.func @main() {
  %k = memref.get_global @k : memref<2x4x1x2xf32>
  %v = memref.get_global @v : memref<2x4x1x2xf32>
  %bt = memref.get_global @block_table : memref<2x1xi32>
  %lens = memref.get_global @seq_lens : memref<2xi32>
  %ip = memref.get_global @kv_indptr : memref<3xi32>
  %ix = memref.get_global @kv_indices : memref<1xi32>
  %last = memref.get_global @last : memref<2xi32>
  %rk = memref.get_global @rk : memref<1x1x2xf32>
  %rv = memref.get_global @rv : memref<1x1x2xf32>
  %qo = memref.get_global @qo_indptr : memref<3xi32>
  %q = memref.get_global @q : memref<2x1x2xf32>
  %o = memref.alloc() : memref<2x1x2xf32>
  %lse = memref.alloc() : memref<2x1xf32>

  %kv0 = kv.paged_view pools(%k, %v : memref<2x4x1x2xf32>, memref<2x4x1x2xf32>)
      tables(%bt, %lens : memref<2x1xi32>, memref<2xi32>) : !bt
  %s0 = kv.decode %q, %kv0 : memref<2x1x2xf32>, !bt -> !s2
  kv.store_state %s0, %o, %lse : !s2, memref<2x1x2xf32>, memref<2x1xf32>
  %u1 = memref.cast %o : memref<2x1x2xf32> to memref<*xf32>
  call @printMemrefF32(%u1) : (memref<*xf32>) -> ()
  %u2 = memref.cast %lse : memref<2x1xf32> to memref<*xf32>
  call @printMemrefF32(%u2) : (memref<*xf32>) -> ()

  %kv1 = kv.paged_view pools(%k, %v : memref<2x4x1x2xf32>, memref<2x4x1x2xf32>)
      tables(%ip, %ix, %last : memref<3xi32>, memref<1xi32>, memref<2xi32>) : !csr
  %s1 = kv.decode %q, %kv1 : memref<2x1x2xf32>, !csr -> !s2
  kv.store_state %s1, %o, %lse : !s2, memref<2x1x2xf32>, memref<2x1xf32>
  %u3 = memref.cast %o : memref<2x1x2xf32> to memref<*xf32>
  call @printMemrefF32(%u3) : (memref<*xf32>) -> ()
  %u4 = memref.cast %lse : memref<2x1xf32> to memref<*xf32>
  call @printMemrefF32(%u4) : (memref<*xf32>) -> ()

  %s2 = kv.decode %q, %kv1 : memref<2x1x2xf32>, !csr -> !se
  kv.store_state %s2, %o, %lse : !se, memref<2x1x2xf32>, memref<2x1xf32>
  %u5 = memref.cast %o : memref<2x1x2xf32> to memref<*xf32>
  call @printMemrefF32(%u5) : (memref<*xf32>) -> ()
  %u6 = memref.cast %lse : memref<2x1xf32> to memref<*xf32>
  call @printMemrefF32(%u6) : (memref<*xf32>) -> ()

  %kv2 = kv.ragged_view %rk, %rv, %ip : memref<1x1x2xf32>, memref<1x1x2xf32>, memref<3xi32> -> !rag
  %s3 = kv.prefill %q, %qo, %kv2 : memref<2x1x2xf32>, memref<3xi32>, !rag -> !se
  kv.store_state %s3, %o, %lse : !se, memref<2x1x2xf32>, memref<2x1xf32>
  %u7 = memref.cast %o : memref<2x1x2xf32> to memref<*xf32>
  call @printMemrefF32(%u7) : (memref<*xf32>) -> ()
  %u8 = memref.cast %lse : memref<2x1xf32> to memref<*xf32>
  call @printMemrefF32(%u8) : (memref<*xf32>) -> ()

  memref.dealloc %o : memref<2x1x2xf32>
  memref.dealloc %lse : memref<2x1xf32>
  return
}

func.func private @printMemrefF32(memref<*xf32>)
