// RUN: kvir-runner %s --validate-tables -e good --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s --check-prefix=GOOD
// RUN: not kvir-runner %s --validate-tables -e page_past_pool --entry-point-result=void --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s --check-prefix=PAGE
// RUN: not kvir-runner %s --validate-tables -e last_page_len --entry-point-result=void --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s --check-prefix=LAST
// RUN: not kvir-runner %s --validate-tables -e decreasing_indptr --entry-point-result=void --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s --check-prefix=INDPTR
// RUN: not kvir-runner %s --validate-tables -e block_table_negative --entry-point-result=void --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s --check-prefix=BLOCK
// RUN: kvir-runner %s --validate-tables -e causal_rows --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s --check-prefix=CAUSAL
// RUN: kvir-runner %s --validate-tables -e good_i64 --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s --check-prefix=GOOD64
// RUN: not kvir-runner %s --validate-tables -e block_table_i64_huge --entry-point-result=void --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s --check-prefix=HUGE
// RUN: kvir-runner %s --validate-tables -e topk_good --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s --check-prefix=TOPK
// RUN: not kvir-runner %s --validate-tables -e topk_repeated --entry-point-result=void --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s --check-prefix=TWICE
// RUN: not kvir-runner %s --validate-tables -e topk_past_keys --entry-point-result=void --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s --check-prefix=PAST

// kvir-runner --validate-tables checks every page table before a kv op
// reads it and stops, naming the request and the entry, instead of reading
// out of bounds (without the flag these programs read garbage or fault).
// The pool holds 2 pages of 4 tokens.

// GOOD: rank = 2 offset = 0 sizes = [2, 1]
// GOOD-NEXT: {{\[\[}}-inf]
// GOOD-NEXT: {{\[}}2.58496]
// PAGE: kvir: invalid page table: request 1: kv_indices[1] = 5 names a page past the pool (2 pages of 4 tokens)
// PAGE-NOT: Stack dump
// LAST: kvir: invalid page table: request 1: kv_last_page_len[1] = 5, expected 1 <= last_page_len <= page_size (4) for a request with pages
// INDPTR: kvir: invalid page table: request 0: kv_indptr[1] = 2 < kv_indptr[0] = 3, expected a non-decreasing kv_indptr
// BLOCK: kvir: invalid page table: request 1: block_table[1][0] = -3 is a negative page id
// A causal request may have more rows than keys: request 1's 3 rows sit at
// positions -1, 0, 1 of its 2 keys, so the first sees none (0, lse -inf)
// and the others 1 and 2 keys (V = 2, lse log2 1 and log2 2).
// CAUSAL: rank = 3 offset = 0 sizes = [4, 1, 2]
// CAUSAL-NEXT: {{\[\[\[}}2, 2]]
// CAUSAL-NEXT: {{\[\[}}0, 0]]
// CAUSAL-NEXT: {{\[\[}}2, 2]]
// CAUSAL-NEXT: {{\[\[}}2, 2]]]
// CAUSAL: rank = 2 offset = 0 sizes = [4, 1]
// CAUSAL-NEXT: {{\[\[}}0]
// CAUSAL-NEXT: {{\[}}-inf]
// CAUSAL-NEXT: {{\[}}0]
// CAUSAL-NEXT: {{\[}}1]]
// int64 tables (OpenPPL) are checked through int32 copies that saturate:
// 5000000000 reads as INT32_MAX, still a page past the pool.
// GOOD64: rank = 2 offset = 0 sizes = [2, 1]
// GOOD64-NEXT: {{\[\[}}0]
// GOOD64-NEXT: {{\[}}1]
// Top-k lists: request 1 (6 keys) selects 3 of them and two -1s, so its
// lse is log2(3) = 1.58496; a key listed twice, or one past kv_len, stops.
// TOPK: rank = 2 offset = 0 sizes = [2, 1]
// TOPK-NEXT: {{\[\[}}-inf]
// TOPK-NEXT: {{\[}}1.58496]
// TWICE: kvir: invalid page table: topk[1] lists key 5 twice (entries 0 and 3); a row selects each key at most once
// PAST: kvir: invalid page table: topk[1][2] = 6 is not a key of request 1 (kv_len 6) nor -1 (padding)
// HUGE: kvir: invalid page table: request 1: block_table[1][0] = 2147483647 names a page past the pool (2 pages of 4 tokens)

!bt = !kv.paged<page_size = 4, kv_heads = 1, head_dim = 2, head_dim_v = 2, dtype = f32, layout = nhd, storage = split, table = block_table>
!csr = !kv.paged<page_size = 4, kv_heads = 1, head_dim = 2, head_dim_v = 2, dtype = f32, layout = nhd, storage = split, table = csr>
!s2 = !kv.state<2x1x2xf32, base = 2>
!s4 = !kv.state<4x1x2xf32, base = 2>

memref.global "private" constant @k : memref<2x4x1x2xf32> = dense<1.0>
memref.global "private" constant @v : memref<2x4x1x2xf32> = dense<2.0>
memref.global "private" constant @q : memref<2x1x2xf32> = dense<0.0>

func.func private @printMemrefF32(memref<*xf32>)

func.func @decode_csr(%indptr: memref<3xi32>, %indices: memref<2xi32>, %last: memref<2xi32>) {
  %k = memref.get_global @k : memref<2x4x1x2xf32>
  %v = memref.get_global @v : memref<2x4x1x2xf32>
  %q = memref.get_global @q : memref<2x1x2xf32>
  %o = memref.alloc() : memref<2x1x2xf32>
  %lse = memref.alloc() : memref<2x1xf32>
  %kv = kv.paged_view pools(%k, %v : memref<2x4x1x2xf32>, memref<2x4x1x2xf32>)
      tables(%indptr, %indices, %last : memref<3xi32>, memref<2xi32>, memref<2xi32>) : !csr
  %s = kv.decode %q, %kv : memref<2x1x2xf32>, !csr -> !s2
  kv.store_state %s, %o, %lse : !s2, memref<2x1x2xf32>, memref<2x1xf32>
  %u = memref.cast %lse : memref<2x1xf32> to memref<*xf32>
  call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  memref.dealloc %o : memref<2x1x2xf32>
  memref.dealloc %lse : memref<2x1xf32>
  return
}

memref.global "private" constant @indptr_ok : memref<3xi32> = dense<[0, 0, 2]>
memref.global "private" constant @indices_ok : memref<2xi32> = dense<[1, 0]>
memref.global "private" constant @last_ok : memref<2xi32> = dense<[4, 2]>
// Request 0 is empty (lse -inf), request 1 has 6 keys on pages 1 and 0;
// q = 0 makes every logit 0, so its lse is log2(6) = 2.58496.
func.func @good() {
  %ip = memref.get_global @indptr_ok : memref<3xi32>
  %ix = memref.get_global @indices_ok : memref<2xi32>
  %last = memref.get_global @last_ok : memref<2xi32>
  call @decode_csr(%ip, %ix, %last) : (memref<3xi32>, memref<2xi32>, memref<2xi32>) -> ()
  return
}

memref.global "private" constant @indices_past : memref<2xi32> = dense<[1, 5]>
func.func @page_past_pool() {
  %ip = memref.get_global @indptr_ok : memref<3xi32>
  %ix = memref.get_global @indices_past : memref<2xi32>
  %last = memref.get_global @last_ok : memref<2xi32>
  call @decode_csr(%ip, %ix, %last) : (memref<3xi32>, memref<2xi32>, memref<2xi32>) -> ()
  return
}

memref.global "private" constant @last_big : memref<2xi32> = dense<[4, 5]>
func.func @last_page_len() {
  %ip = memref.get_global @indptr_ok : memref<3xi32>
  %ix = memref.get_global @indices_ok : memref<2xi32>
  %last = memref.get_global @last_big : memref<2xi32>
  call @decode_csr(%ip, %ix, %last) : (memref<3xi32>, memref<2xi32>, memref<2xi32>) -> ()
  return
}

memref.global "private" constant @indptr_down : memref<3xi32> = dense<[3, 2, 2]>
func.func @decreasing_indptr() {
  %ip = memref.get_global @indptr_down : memref<3xi32>
  %ix = memref.get_global @indices_ok : memref<2xi32>
  %last = memref.get_global @last_ok : memref<2xi32>
  call @decode_csr(%ip, %ix, %last) : (memref<3xi32>, memref<2xi32>, memref<2xi32>) -> ()
  return
}

memref.global "private" constant @block_table : memref<2x1xi32> = dense<[[0], [-3]]>
memref.global "private" constant @seq_lens : memref<2xi32> = dense<[1, 2]>
func.func @block_table_negative() {
  %k = memref.get_global @k : memref<2x4x1x2xf32>
  %v = memref.get_global @v : memref<2x4x1x2xf32>
  %q = memref.get_global @q : memref<2x1x2xf32>
  %bt = memref.get_global @block_table : memref<2x1xi32>
  %lens = memref.get_global @seq_lens : memref<2xi32>
  %o = memref.alloc() : memref<2x1x2xf32>
  %lse = memref.alloc() : memref<2x1xf32>
  %kv = kv.paged_view pools(%k, %v : memref<2x4x1x2xf32>, memref<2x4x1x2xf32>)
      tables(%bt, %lens : memref<2x1xi32>, memref<2xi32>) : !bt
  %s = kv.decode %q, %kv : memref<2x1x2xf32>, !bt -> !s2
  kv.store_state %s, %o, %lse : !s2, memref<2x1x2xf32>, memref<2x1xf32>
  memref.dealloc %o : memref<2x1x2xf32>
  memref.dealloc %lse : memref<2x1xf32>
  return
}

// Request 1 has 3 query rows over 2 keys: a causal prefill cannot align
// its last row with its last key.
memref.global "private" constant @qo : memref<3xi32> = dense<[0, 1, 4]>
memref.global "private" constant @q4 : memref<4x1x2xf32> = dense<0.0>
memref.global "private" constant @seq_ok : memref<2xi32> = dense<[1, 2]>
memref.global "private" constant @bt_ok : memref<2x1xi32> = dense<[[0], [1]]>
func.func @causal_rows() {
  %k = memref.get_global @k : memref<2x4x1x2xf32>
  %v = memref.get_global @v : memref<2x4x1x2xf32>
  %q = memref.get_global @q4 : memref<4x1x2xf32>
  %qo = memref.get_global @qo : memref<3xi32>
  %bt = memref.get_global @bt_ok : memref<2x1xi32>
  %lens = memref.get_global @seq_ok : memref<2xi32>
  %o = memref.alloc() : memref<4x1x2xf32>
  %lse = memref.alloc() : memref<4x1xf32>
  %kv = kv.paged_view pools(%k, %v : memref<2x4x1x2xf32>, memref<2x4x1x2xf32>)
      tables(%bt, %lens : memref<2x1xi32>, memref<2xi32>) : !bt
  %s = kv.prefill %q, %qo, %kv {causal} : memref<4x1x2xf32>, memref<3xi32>, !bt -> !s4
  kv.store_state %s, %o, %lse : !s4, memref<4x1x2xf32>, memref<4x1xf32>
  %uo = memref.cast %o : memref<4x1x2xf32> to memref<*xf32>
  call @printMemrefF32(%uo) : (memref<*xf32>) -> ()
  %ul = memref.cast %lse : memref<4x1xf32> to memref<*xf32>
  call @printMemrefF32(%ul) : (memref<*xf32>) -> ()
  memref.dealloc %o : memref<4x1x2xf32>
  memref.dealloc %lse : memref<4x1xf32>
  return
}

// The same block-table decode over int64 tables.
func.func @decode_bt_i64(%bt: memref<2x1xi64>, %lens: memref<2xi64>) {
  %k = memref.get_global @k : memref<2x4x1x2xf32>
  %v = memref.get_global @v : memref<2x4x1x2xf32>
  %q = memref.get_global @q : memref<2x1x2xf32>
  %o = memref.alloc() : memref<2x1x2xf32>
  %lse = memref.alloc() : memref<2x1xf32>
  %kv = kv.paged_view pools(%k, %v : memref<2x4x1x2xf32>, memref<2x4x1x2xf32>)
      tables(%bt, %lens : memref<2x1xi64>, memref<2xi64>) : !bt
  %s = kv.decode %q, %kv : memref<2x1x2xf32>, !bt -> !s2
  kv.store_state %s, %o, %lse : !s2, memref<2x1x2xf32>, memref<2x1xf32>
  %u = memref.cast %lse : memref<2x1xf32> to memref<*xf32>
  call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  memref.dealloc %o : memref<2x1x2xf32>
  memref.dealloc %lse : memref<2x1xf32>
  return
}

// Request 0 has 1 key on page 0, request 1 has 2 keys on page 1: lse
// log2(1) = 0 and log2(2) = 1 (q = 0).
memref.global "private" constant @bt64_ok : memref<2x1xi64> = dense<[[0], [1]]>
memref.global "private" constant @lens64 : memref<2xi64> = dense<[1, 2]>
func.func @good_i64() {
  %bt = memref.get_global @bt64_ok : memref<2x1xi64>
  %lens = memref.get_global @lens64 : memref<2xi64>
  call @decode_bt_i64(%bt, %lens) : (memref<2x1xi64>, memref<2xi64>) -> ()
  return
}

memref.global "private" constant @bt64_huge : memref<2x1xi64> = dense<[[0], [5000000000]]>
func.func @block_table_i64_huge() {
  %bt = memref.get_global @bt64_huge : memref<2x1xi64>
  %lens = memref.get_global @lens64 : memref<2xi64>
  call @decode_bt_i64(%bt, %lens) : (memref<2x1xi64>, memref<2xi64>) -> ()
  return
}

func.func @decode_topk(%sel: memref<2x5xi32>) {
  %k = memref.get_global @k : memref<2x4x1x2xf32>
  %v = memref.get_global @v : memref<2x4x1x2xf32>
  %q = memref.get_global @q : memref<2x1x2xf32>
  %ip = memref.get_global @indptr_ok : memref<3xi32>
  %ix = memref.get_global @indices_ok : memref<2xi32>
  %last = memref.get_global @last_ok : memref<2xi32>
  %o = memref.alloc() : memref<2x1x2xf32>
  %lse = memref.alloc() : memref<2x1xf32>
  %kv = kv.paged_view pools(%k, %v : memref<2x4x1x2xf32>, memref<2x4x1x2xf32>)
      tables(%ip, %ix, %last : memref<3xi32>, memref<2xi32>, memref<2xi32>) : !csr
  %s = kv.decode %q, %kv topk(%sel : memref<2x5xi32>) : memref<2x1x2xf32>, !csr -> !s2
  kv.store_state %s, %o, %lse : !s2, memref<2x1x2xf32>, memref<2x1xf32>
  %u = memref.cast %lse : memref<2x1xf32> to memref<*xf32>
  call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  memref.dealloc %o : memref<2x1x2xf32>
  memref.dealloc %lse : memref<2x1xf32>
  return
}

memref.global "private" constant @topk_ok : memref<2x5xi32> = dense<[[-1, -1, -1, -1, -1], [5, -1, 0, 2, -1]]>
func.func @topk_good() {
  %t = memref.get_global @topk_ok : memref<2x5xi32>
  call @decode_topk(%t) : (memref<2x5xi32>) -> ()
  return
}

memref.global "private" constant @topk_twice : memref<2x5xi32> = dense<[[-1, -1, -1, -1, -1], [5, -1, 0, 5, -1]]>
func.func @topk_repeated() {
  %t = memref.get_global @topk_twice : memref<2x5xi32>
  call @decode_topk(%t) : (memref<2x5xi32>) -> ()
  return
}

memref.global "private" constant @topk_past : memref<2x5xi32> = dense<[[-1, -1, -1, -1, -1], [5, -1, 6, 2, -1]]>
func.func @topk_past_keys() {
  %t = memref.get_global @topk_past : memref<2x5xi32>
  call @decode_topk(%t) : (memref<2x5xi32>) -> ()
  return
}
