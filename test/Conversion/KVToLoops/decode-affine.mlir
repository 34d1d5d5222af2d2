// RUN: kvir-opt %s --kv-to-loops | FileCheck %s

// An affine layout: the K and V pool indices are k_map and v_map applied to
// (page, kv, slot, head, dim), expanded into index arithmetic.

// K: (p, kv, s, h, d) -> (p * 4 + s, h, d), a token-major [T, H, D] pool.
// V: (p, kv, s, h, d) -> (h, d, p * 4 + s), a [H, D, T] pool.
!kvt = !kv.paged<page_size = 4, kv_heads = 1, head_dim = 8, head_dim_v = 8, dtype = f32, layout = affine, storage = split, table = csr, k_map = (p, kv, s, h, d) -> (p * 4 + s, h, d), v_map = (p, kv, s, h, d) -> (h, d, p * 4 + s)>

// CHECK-LABEL: func.func @decode_affine
// CHECK-SAME: (%{{[^:]*}}: memref<?x1x8xf32>, %[[K:[^:]*]]: memref<?x1x8xf32>, %[[V:[^:]*]]: memref<1x8x?xf32>, %{{[^:]*}}: memref<?xi32>, %[[IX:[^:]*]]: memref<?xi32>
// CHECK: scf.for %[[HEAD:[^ ]*]] = %c0 to %c1{{[_0-9]*}} step
// CHECK: %[[KVH:.*]] = arith.divui %[[HEAD]], %c1{{.*}} : index
// CHECK: scf.for %[[J:[^ ]*]] = {{.*}} iter_args
// CHECK: scf.for %[[D:[^ ]*]] = {{.*}} iter_args
// CHECK-DAG: %[[SLOT:.*]] = arith.remui %[[J]], %c4{{.*}} : index
// CHECK-DAG: %[[P32:.*]] = memref.load %[[IX]]
// CHECK-DAG: %[[PAGE:.*]] = arith.index_cast %[[P32]] : i32 to index
// CHECK-DAG: %[[M:.*]] = arith.muli %[[PAGE]], %c4{{.*}} : index
// CHECK-DAG: %[[TOK:.*]] = arith.addi %[[M]], %[[SLOT]] : index
// CHECK: memref.load %[[K]][%[[TOK]], %[[KVH]], %[[D]]] : memref<?x1x8xf32>
// CHECK: scf.for %[[DV:[^ ]*]] =
// CHECK-DAG: %[[VSLOT:.*]] = arith.remui %[[J]], %c4{{.*}} : index
// CHECK-DAG: %[[VP32:.*]] = memref.load %[[IX]]
// CHECK-DAG: %[[VPAGE:.*]] = arith.index_cast %[[VP32]] : i32 to index
// CHECK-DAG: %[[VM:.*]] = arith.muli %[[VPAGE]], %c4{{.*}} : index
// CHECK-DAG: %[[VTOK:.*]] = arith.addi %[[VM]], %[[VSLOT]] : index
// CHECK: memref.load %[[V]][%[[KVH]], %[[DV]], %[[VTOK]]] : memref<1x8x?xf32>
func.func @decode_affine(%q: memref<?x1x8xf32>, %k: memref<?x1x8xf32>, %v: memref<1x8x?xf32>, %ip: memref<?xi32>, %ix: memref<?xi32>, %last: memref<?xi32>, %o: memref<?x1x8xf32>) {
  %kv = kv.paged_view pools(%k, %v : memref<?x1x8xf32>, memref<1x8x?xf32>) tables(%ip, %ix, %last : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !kvt
  %s = kv.decode %q, %kv : memref<?x1x8xf32>, !kvt -> !kv.state<?x1x8xf32, base = e>
  kv.store_state %s, %o : !kv.state<?x1x8xf32, base = e>, memref<?x1x8xf32>
  return
}
