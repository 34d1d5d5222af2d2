// RUN: kvir-opt %s --kv-to-loops -split-input-file | FileCheck %s

// The HND layouts: head before slot, (pages, 2, H, page_size, D) combined
// and (pages, H, page_size, D) for each split pool.

!kvt = !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = bf16, layout = hnd, storage = combined, table = csr>

// CHECK-LABEL: func.func @hnd_combined
// CHECK-SAME: %[[POOL:[^:]*]]: memref<?x2x2x4x8xbf16>, %{{[^:]*}}: memref<?xi32>, %[[IX:[^:]*]]: memref<?xi32>
// CHECK: scf.for %[[HEAD:[^ ]*]] = %{{.*}} to %c2
// CHECK: %[[KVH:.*]] = arith.divui %[[HEAD]], %c1{{.*}} : index
// CHECK: scf.for %[[J:[^ ]*]] = {{.*}} iter_args
// CHECK: scf.for %[[D:[^ ]*]] = {{.*}} iter_args
// CHECK-DAG: %[[SLOT:.*]] = arith.remui %[[J]], %c4{{.*}} : index
// CHECK-DAG: %[[P32:.*]] = memref.load %[[IX]]
// CHECK-DAG: %[[PAGE:.*]] = arith.index_cast %[[P32]] : i32 to index
// CHECK: memref.load %[[POOL]][%[[PAGE]], %c0{{(_[0-9]+)?}}, %[[KVH]], %[[SLOT]], %[[D]]] : memref<?x2x2x4x8xbf16>
// CHECK: scf.for %[[DV:[^ ]*]] =
// CHECK-DAG: %[[VSLOT:.*]] = arith.remui %[[J]], %c4{{.*}} : index
// CHECK-DAG: %[[VP32:.*]] = memref.load %[[IX]]
// CHECK-DAG: %[[VPAGE:.*]] = arith.index_cast %[[VP32]] : i32 to index
// CHECK: memref.load %[[POOL]][%[[VPAGE]], %c1{{(_[0-9]+)?}}, %[[KVH]], %[[VSLOT]], %[[DV]]] : memref<?x2x2x4x8xbf16>
func.func @hnd_combined(%q: memref<?x2x8xbf16>, %pool: memref<?x2x2x4x8xbf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %last: memref<?xi32>, %o: memref<?x2x8xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x2x4x8xbf16>) tables(%ip, %ix, %last : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !kvt
  %s = kv.decode %q, %kv : memref<?x2x8xbf16>, !kvt -> !kv.state<?x2x8xf32, base = e>
  kv.store_state %s, %o : !kv.state<?x2x8xf32, base = e>, memref<?x2x8xf32>
  return
}

// -----

!kvt = !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 4, dtype = f32, layout = hnd, storage = split, table = csr>

// CHECK-LABEL: func.func @hnd_split
// CHECK-SAME: %[[K:[^:]*]]: memref<?x2x4x8xf32>, %[[V:[^:]*]]: memref<?x2x4x4xf32>, %{{[^:]*}}: memref<?xi32>, %[[IX:[^:]*]]: memref<?xi32>
// CHECK: scf.for %[[HEAD:[^ ]*]] = %{{.*}} to %c2
// CHECK: %[[KVH:.*]] = arith.divui %[[HEAD]], %c1{{.*}} : index
// CHECK: scf.for %[[J:[^ ]*]] = {{.*}} iter_args
// CHECK: scf.for %[[D:[^ ]*]] = {{.*}} iter_args
// CHECK-DAG: %[[SLOT:.*]] = arith.remui %[[J]], %c4{{.*}} : index
// CHECK-DAG: %[[P32:.*]] = memref.load %[[IX]]
// CHECK-DAG: %[[PAGE:.*]] = arith.index_cast %[[P32]] : i32 to index
// CHECK: memref.load %[[K]][%[[PAGE]], %[[KVH]], %[[SLOT]], %[[D]]] : memref<?x2x4x8xf32>
// The V loop runs over head_dim_v = 4.
// CHECK: scf.for %[[DV:[^ ]*]] = %{{.*}} to %c4
// CHECK-DAG: %[[VSLOT:.*]] = arith.remui %[[J]], %c4{{.*}} : index
// CHECK-DAG: %[[VP32:.*]] = memref.load %[[IX]]
// CHECK-DAG: %[[VPAGE:.*]] = arith.index_cast %[[VP32]] : i32 to index
// CHECK: memref.load %[[V]][%[[VPAGE]], %[[KVH]], %[[VSLOT]], %[[DV]]] : memref<?x2x4x4xf32>
func.func @hnd_split(%q: memref<?x2x8xf32>, %k: memref<?x2x4x8xf32>, %v: memref<?x2x4x4xf32>, %ip: memref<?xi32>, %ix: memref<?xi32>, %last: memref<?xi32>, %o: memref<?x2x4xf32>) {
  %kv = kv.paged_view pools(%k, %v : memref<?x2x4x8xf32>, memref<?x2x4x4xf32>) tables(%ip, %ix, %last : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !kvt
  %s = kv.decode %q, %kv : memref<?x2x8xf32>, !kvt -> !kv.state<?x2x4xf32, base = e>
  kv.store_state %s, %o : !kv.state<?x2x4xf32, base = e>, memref<?x2x4xf32>
  return
}
