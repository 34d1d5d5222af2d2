// RUN: kvir-opt %s --kv-to-loops | FileCheck %s

// The CSR page table (FlashInfer): n = indptr[b+1] - indptr[b] pages,
// kv_len = page_size * (n - 1) + last_page_len[b] for n > 0 and 0 for an
// empty request; token t reads page indices[indptr[b] + t / page_size] at
// slot t % page_size.

!kvt = !kv.paged<page_size = 16, kv_heads = 1, head_dim = 4, head_dim_v = 4, dtype = f32, layout = nhd, storage = split, table = csr>

// CHECK-LABEL: func.func @csr
// CHECK-SAME: (%{{[^:]*}}: memref<?x1x4xf32>, %[[K:[^:]*]]: memref<?x16x1x4xf32>, %{{[^:]*}}: memref<?x16x1x4xf32>, %[[IP:[^:]*]]: memref<?xi32>, %[[IX:[^:]*]]: memref<?xi32>, %[[LAST:[^:]*]]: memref<?xi32>
// CHECK: scf.for %[[REQ:[^ ]*]] =
// CHECK: %[[S32:.*]] = memref.load %[[IP]][%[[REQ]]] : memref<?xi32>
// CHECK: %[[START:.*]] = arith.index_cast %[[S32]] : i32 to index
// CHECK: %[[NEXT:.*]] = arith.addi %[[REQ]], %[[ONE:.*]] : index
// CHECK: %[[E32:.*]] = memref.load %[[IP]][%[[NEXT]]] : memref<?xi32>
// CHECK: %[[END:.*]] = arith.index_cast %[[E32]] : i32 to index
// CHECK: %[[NP:.*]] = arith.subi %[[END]], %[[START]] : index
// CHECK: %[[L32:.*]] = memref.load %[[LAST]][%[[REQ]]] : memref<?xi32>
// CHECK: %[[LASTI:.*]] = arith.index_cast %[[L32]] : i32 to index
// CHECK: %[[NM1:.*]] = arith.subi %[[NP]], %[[ONE]] : index
// CHECK: %[[FULL:.*]] = arith.muli %[[NM1]], %c16{{.*}} : index
// CHECK: %[[LEN:.*]] = arith.addi %[[FULL]], %[[LASTI]] : index
// CHECK: %[[NOPAGES:.*]] = arith.cmpi sle, %[[NP]], %c0{{.*}} : index
// CHECK: %[[KVLEN:.*]] = arith.select %[[NOPAGES]], %c0{{.*}}, %[[LEN]] : index
// The key loop runs over [0, kv_len).
// CHECK: %[[HI:.*]] = arith.maxsi %c0{{.*}}, %[[KVLEN]] : index
// CHECK: scf.for %[[J:[^ ]*]] = %c0{{.*}} to %[[HI]] {{.*}} iter_args
// CHECK: scf.for %[[D:[^ ]*]] = {{.*}} iter_args
// CHECK-DAG: %[[LP:.*]] = arith.divui %[[J]], %c16{{.*}} : index
// CHECK-DAG: %[[SLOT:.*]] = arith.remui %[[J]], %c16{{.*}} : index
// CHECK-DAG: %[[F32:.*]] = memref.load %[[IP]][%[[REQ]]] : memref<?xi32>
// CHECK-DAG: %[[FIRST:.*]] = arith.index_cast %[[F32]] : i32 to index
// CHECK-DAG: %[[POS:.*]] = arith.addi %[[FIRST]], %[[LP]] : index
// CHECK-DAG: %[[P32:.*]] = memref.load %[[IX]][%[[POS]]] : memref<?xi32>
// CHECK-DAG: %[[PAGE:.*]] = arith.index_cast %[[P32]] : i32 to index
// CHECK: memref.load %[[K]][%[[PAGE]], %[[SLOT]], %{{.*}}, %[[D]]] : memref<?x16x1x4xf32>
func.func @csr(%q: memref<?x1x4xf32>, %k: memref<?x16x1x4xf32>, %v: memref<?x16x1x4xf32>, %ip: memref<?xi32>, %ix: memref<?xi32>, %last: memref<?xi32>, %o: memref<?x1x4xf32>) {
  %kv = kv.paged_view pools(%k, %v : memref<?x16x1x4xf32>, memref<?x16x1x4xf32>) tables(%ip, %ix, %last : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !kvt
  %s = kv.decode %q, %kv : memref<?x1x4xf32>, !kvt -> !kv.state<?x1x4xf32, base = e>
  kv.store_state %s, %o : !kv.state<?x1x4xf32, base = e>, memref<?x1x4xf32>
  return
}
