// RUN: kvir-opt %s --kv-to-loops | FileCheck %s

// kv.prefill over ragged KV: B = dim(qo_indptr) - 1 requests; request b owns
// query rows [qo_indptr[b], qo_indptr[b+1]) and K/V rows
// [kv_indptr[b], kv_indptr[b+1]); key j of request b is row kv_indptr[b] + j.
// GQA: 4 query heads over 2 KV heads.

!rag = !kv.ragged<kv_heads = 2, head_dim = 4, head_dim_v = 4, dtype = f16>

// CHECK-LABEL: func.func @prefill_ragged
// CHECK-SAME: (%[[Q:[^:]*]]: memref<?x4x4xf16>, %[[QO:[^:]*]]: memref<?xi32>, %[[K:[^:]*]]: memref<?x2x4xf16>, %[[V:[^:]*]]: memref<?x2x4xf16>, %[[KVI:[^:]*]]: memref<?xi32>
// CHECK: %[[ROWS:.*]] = memref.dim %[[Q]], %{{.*}} : memref<?x4x4xf16>
// CHECK: %[[OUT:.*]] = memref.alloc(%[[ROWS]]) : memref<?x4x4xf16>
// CHECK: %[[NQO:.*]] = memref.dim %[[QO]], %{{.*}} : memref<?xi32>
// CHECK: %[[B:.*]] = arith.subi %[[NQO]], %c1{{[_0-9]*}} : index
// CHECK: scf.for %[[REQ:[^ ]*]] = %c0{{[_0-9]*}} to %[[B]] step
// kv_len = kv_indptr[b + 1] - kv_indptr[b].
// CHECK: %[[NEXT:.*]] = arith.addi %[[REQ]], %c1{{[_0-9]*}} : index
// CHECK: %[[KE32:.*]] = memref.load %[[KVI]][%[[NEXT]]] : memref<?xi32>
// CHECK: %[[KE:.*]] = arith.index_cast %[[KE32]] : i32 to index
// CHECK: %[[KS32:.*]] = memref.load %[[KVI]][%[[REQ]]] : memref<?xi32>
// CHECK: %[[KS:.*]] = arith.index_cast %[[KS32]] : i32 to index
// CHECK: %[[KVLEN:.*]] = arith.subi %[[KE]], %[[KS]] : index
// Query rows of the request.
// CHECK: %[[QS32:.*]] = memref.load %[[QO]][%[[REQ]]] : memref<?xi32>
// CHECK: %[[QS:.*]] = arith.index_cast %[[QS32]] : i32 to index
// CHECK: %[[QE32:.*]] = memref.load %[[QO]][%{{.*}}] : memref<?xi32>
// CHECK: %[[QE:.*]] = arith.index_cast %[[QE32]] : i32 to index
// CHECK: %[[QOLEN:.*]] = arith.subi %[[QE]], %[[QS]] : index
// CHECK: scf.for %[[I:[^ ]*]] = %c0{{[_0-9]*}} to %[[QOLEN]] step
// CHECK: %[[ROW:.*]] = arith.addi %[[QS]], %[[I]] : index
// CHECK: scf.for %[[HEAD:[^ ]*]] = %c0{{[_0-9]*}} to %c4{{[_0-9]*}} step
// CHECK: %[[KVH:.*]] = arith.divui %[[HEAD]], %c2{{[_0-9]*}} : index
// CHECK: memref.load %[[Q]][%[[ROW]], %[[HEAD]], %{{.*}}] : memref<?x4x4xf16>
// CHECK: %{{.*}}:2 = scf.for %[[J:[^ ]*]] = %c0{{[_0-9]*}} to %{{.*}} iter_args
// CHECK: scf.for %[[D:[^ ]*]] =
// CHECK: %[[F32:.*]] = memref.load %[[KVI]][%[[REQ]]] : memref<?xi32>
// CHECK: %[[F:.*]] = arith.index_cast %[[F32]] : i32 to index
// CHECK: %[[KROW:.*]] = arith.addi %[[F]], %[[J]] : index
// CHECK: memref.load %[[K]][%[[KROW]], %[[KVH]], %[[D]]] : memref<?x2x4xf16>
// CHECK: %[[VROW:.*]] = arith.addi %{{.*}}, %[[J]] : index
// CHECK: memref.load %[[V]][%[[VROW]], %[[KVH]], %{{.*}}] : memref<?x2x4xf16>
// CHECK: memref.store %{{.*}}, %[[OUT]][%[[ROW]], %[[HEAD]], %{{.*}}] : memref<?x4x4xf16>
func.func @prefill_ragged(%q: memref<?x4x4xf16>, %qo: memref<?xi32>, %k: memref<?x2x4xf16>, %v: memref<?x2x4xf16>, %kvi: memref<?xi32>, %o: memref<?x4x4xf16>) {
  %kv = kv.ragged_view %k, %v, %kvi : memref<?x2x4xf16>, memref<?x2x4xf16>, memref<?xi32> -> !rag
  %s = kv.prefill %q, %qo, %kv : memref<?x4x4xf16>, memref<?xi32>, !rag -> !kv.state<?x4x4xf16, base = e>
  kv.store_state %s, %o : !kv.state<?x4x4xf16, base = e>, memref<?x4x4xf16>
  return
}
