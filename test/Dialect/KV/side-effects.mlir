// RUN: kvir-opt %s -cse -split-input-file | FileCheck %s
// RUN: kvir-opt %s -canonicalize -split-input-file | FileCheck %s --check-prefix=DCE

// Attention ops and kv.load_state read memory: CSE may merge two identical
// reads with no write in between, but never across a write (kv.append into
// the pool, a store into the buffers), which would give a stale state. An
// unused read is still dead code.

!kvt = !kv.paged<page_size = 2, kv_heads = 1, head_dim = 2, head_dim_v = 2, dtype = f32, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x1x2xf32, base = e>

// CHECK-LABEL: func.func @decode_across_append
// CHECK: %[[A:.*]] = kv.decode
// CHECK: kv.append
// CHECK: %[[B:.*]] = kv.decode
// CHECK: return %[[A]], %[[B]]
// DCE-LABEL: func.func @decode_across_append
// DCE: kv.decode
// DCE: kv.append
// DCE: kv.decode
func.func @decode_across_append(%q: memref<?x1x2xf32>, %kv: !kvt, %k: memref<?x1x2xf32>, %b: memref<?xi32>) -> (!s, !s) {
  %s1 = kv.decode %q, %kv : memref<?x1x2xf32>, !kvt -> !s
  kv.append %k, %k, %b, %b into %kv : memref<?x1x2xf32>, memref<?x1x2xf32>, memref<?xi32>, memref<?xi32>, !kvt
  %s2 = kv.decode %q, %kv : memref<?x1x2xf32>, !kvt -> !s
  return %s1, %s2 : !s, !s
}

// -----

!kvt = !kv.paged<page_size = 2, kv_heads = 1, head_dim = 2, head_dim_v = 2, dtype = f32, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x1x2xf32, base = e>

// A write to the queries separates two prefills as well.
// CHECK-LABEL: func.func @prefill_across_store
// CHECK: %[[A:.*]] = kv.prefill
// CHECK: memref.store
// CHECK: %[[B:.*]] = kv.prefill
// CHECK: return %[[A]], %[[B]]
func.func @prefill_across_store(%q: memref<?x1x2xf32>, %qo: memref<?xi32>, %kv: !kvt, %x: f32) -> (!s, !s) {
  %c0 = arith.constant 0 : index
  %s1 = kv.prefill %q, %qo, %kv {causal} : memref<?x1x2xf32>, memref<?xi32>, !kvt -> !s
  memref.store %x, %q[%c0, %c0, %c0] : memref<?x1x2xf32>
  %s2 = kv.prefill %q, %qo, %kv {causal} : memref<?x1x2xf32>, memref<?xi32>, !kvt -> !s
  return %s1, %s2 : !s, !s
}

// -----

!s = !kv.state<?x1x2xf32, base = e>

// kv.load_state reads the buffers as they are when it executes.
// CHECK-LABEL: func.func @load_across_store
// CHECK: %[[A:.*]] = kv.load_state
// CHECK: memref.store
// CHECK: %[[B:.*]] = kv.load_state
// CHECK: return %[[A]], %[[B]]
func.func @load_across_store(%o: memref<?x1x2xf32>, %l: memref<?x1xf32>, %x: f32) -> (!s, !s) {
  %c0 = arith.constant 0 : index
  %s1 = kv.load_state %o, %l : memref<?x1x2xf32>, memref<?x1xf32> -> !s
  memref.store %x, %l[%c0, %c0] : memref<?x1xf32>
  %s2 = kv.load_state %o, %l : memref<?x1x2xf32>, memref<?x1xf32> -> !s
  return %s1, %s2 : !s, !s
}

// -----

!s = !kv.state<?x1x2xf32, base = e>

// kv.store_state writes: a load after it is not the load before it.
// CHECK-LABEL: func.func @load_across_store_state
// CHECK: %[[A:.*]] = kv.load_state
// CHECK: kv.store_state
// CHECK: %[[B:.*]] = kv.load_state
// CHECK: return %[[A]], %[[B]]
func.func @load_across_store_state(%o: memref<?x1x2xf32>, %l: memref<?x1xf32>, %other: !s) -> (!s, !s) {
  %s1 = kv.load_state %o, %l : memref<?x1x2xf32>, memref<?x1xf32> -> !s
  kv.store_state %other, %o, %l : !s, memref<?x1x2xf32>, memref<?x1xf32>
  %s2 = kv.load_state %o, %l : memref<?x1x2xf32>, memref<?x1xf32> -> !s
  return %s1, %s2 : !s, !s
}

// -----

!kvt = !kv.paged<page_size = 2, kv_heads = 1, head_dim = 2, head_dim_v = 2, dtype = f32, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x1x2xf32, base = e>

// Without a write in between, two identical reads are one.
// CHECK-LABEL: func.func @same_reads
// CHECK: %[[A:.*]] = kv.decode
// CHECK-NOT: kv.decode
// CHECK: %[[L:.*]] = kv.load_state
// CHECK-NOT: kv.load_state
// CHECK: return %[[A]], %[[A]], %[[L]], %[[L]]
func.func @same_reads(%q: memref<?x1x2xf32>, %kv: !kvt, %o: memref<?x1x2xf32>, %l: memref<?x1xf32>) -> (!s, !s, !s, !s) {
  %s1 = kv.decode %q, %kv : memref<?x1x2xf32>, !kvt -> !s
  %s2 = kv.decode %q, %kv : memref<?x1x2xf32>, !kvt -> !s
  %l1 = kv.load_state %o, %l : memref<?x1x2xf32>, memref<?x1xf32> -> !s
  %l2 = kv.load_state %o, %l : memref<?x1x2xf32>, memref<?x1xf32> -> !s
  return %s1, %s2, %l1, %l2 : !s, !s, !s, !s
}

// -----

!kvt = !kv.paged<page_size = 2, kv_heads = 1, head_dim = 2, head_dim_v = 2, dtype = f32, layout = nhd, storage = combined, table = csr>
!mla = !kv.paged<page_size = 2, kv_heads = 1, head_dim = 2, head_dim_v = 2, dtype = f32, layout = nhd, storage = mla, table = csr, pe_dim = 2>
!s = !kv.state<?x1x2xf32, base = e>

// Unused reads are dead; the append, a write, stays.
// DCE-LABEL: func.func @dead_reads
// DCE-NOT: kv.decode
// DCE-NOT: kv.prefill
// DCE-NOT: kv.mla_decode
// DCE-NOT: kv.cascade
// DCE-NOT: kv.load_state
// DCE: kv.append
// DCE-NEXT: return
func.func @dead_reads(%q: memref<?x1x2xf32>, %qo: memref<?xi32>, %kv: !kvt, %mla: !mla, %o: memref<?x1x2xf32>, %l: memref<?x1xf32>, %b: memref<?xi32>) {
  %a = kv.decode %q, %kv : memref<?x1x2xf32>, !kvt -> !s
  %p = kv.prefill %q, %qo, %kv : memref<?x1x2xf32>, memref<?xi32>, !kvt -> !s
  %m = kv.mla_decode %q, %q, %mla : memref<?x1x2xf32>, memref<?x1x2xf32>, !mla -> !s
  %c = kv.cascade %q levels(%qo : memref<?xi32>) kvs(%kv : !kvt) : memref<?x1x2xf32> -> !s
  %ls = kv.load_state %o, %l : memref<?x1x2xf32>, memref<?x1xf32> -> !s
  kv.append %q, %q, %b, %b into %kv : memref<?x1x2xf32>, memref<?x1x2xf32>, memref<?xi32>, memref<?xi32>, !kvt
  return
}
