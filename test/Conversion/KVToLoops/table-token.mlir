// RUN: kvir-opt %s --kv-to-loops -split-input-file | FileCheck %s

// OpenPPL token tables. cache_mode 1 (token_table): token t of request b is
// pool token cachestarts[b][t / page_size] + t % page_size. cache_mode 0
// (token_offset): cachestarts[b] + t. Both read kv_len from kv_lens[b]. With
// an NHD layout, the pool token index is split back into (page, slot).

!kvt = !kv.paged<page_size = 8, kv_heads = 1, head_dim = 4, head_dim_v = 4, dtype = f32, layout = nhd, storage = split, table = token_table>

// CHECK-LABEL: func.func @token_table
// CHECK-SAME: (%{{[^:]*}}: memref<?x1x4xf32>, %[[K:[^:]*]]: memref<?x8x1x4xf32>, %{{[^:]*}}: memref<?x8x1x4xf32>, %[[ST:[^:]*]]: memref<?x?xi32>, %[[LENS:[^:]*]]: memref<?xi32>
// CHECK: scf.for %[[REQ:[^ ]*]] =
// CHECK: memref.load %[[LENS]][%[[REQ]]] : memref<?xi32>
// CHECK: scf.for %[[J:[^ ]*]] = {{.*}} iter_args
// CHECK: scf.for %[[D:[^ ]*]] = {{.*}} iter_args
// CHECK-DAG: %[[LP:.*]] = arith.divui %[[J]], %c8{{.*}} : index
// CHECK-DAG: %[[OFF:.*]] = arith.remui %[[J]], %c8{{.*}} : index
// CHECK-DAG: %[[S32:.*]] = memref.load %[[ST]][%[[REQ]], %[[LP]]] : memref<?x?xi32>
// CHECK-DAG: %[[S:.*]] = arith.index_cast %[[S32]] : i32 to index
// CHECK-DAG: %[[TOK:.*]] = arith.addi %[[S]], %[[OFF]] : index
// CHECK-DAG: %[[PAGE:.*]] = arith.divui %[[TOK]], %c8{{.*}} : index
// CHECK-DAG: %[[SLOT:.*]] = arith.remui %[[TOK]], %c8{{.*}} : index
// CHECK: memref.load %[[K]][%[[PAGE]], %[[SLOT]], %{{.*}}, %[[D]]] : memref<?x8x1x4xf32>
func.func @token_table(%q: memref<?x1x4xf32>, %k: memref<?x8x1x4xf32>, %v: memref<?x8x1x4xf32>, %st: memref<?x?xi32>, %lens: memref<?xi32>, %o: memref<?x1x4xf32>) {
  %kv = kv.paged_view pools(%k, %v : memref<?x8x1x4xf32>, memref<?x8x1x4xf32>) tables(%st, %lens : memref<?x?xi32>, memref<?xi32>) : !kvt
  %s = kv.decode %q, %kv : memref<?x1x4xf32>, !kvt -> !kv.state<?x1x4xf32, base = e>
  kv.store_state %s, %o : !kv.state<?x1x4xf32, base = e>, memref<?x1x4xf32>
  return
}

// -----

!kvt = !kv.paged<page_size = 8, kv_heads = 1, head_dim = 4, head_dim_v = 4, dtype = f32, layout = nhd, storage = split, table = token_offset>

// CHECK-LABEL: func.func @token_offset
// CHECK-SAME: (%{{[^:]*}}: memref<?x1x4xf32>, %[[K:[^:]*]]: memref<?x8x1x4xf32>, %{{[^:]*}}: memref<?x8x1x4xf32>, %[[ST:[^:]*]]: memref<?xi32>, %[[LENS:[^:]*]]: memref<?xi32>
// CHECK: scf.for %[[REQ:[^ ]*]] =
// CHECK: memref.load %[[LENS]][%[[REQ]]] : memref<?xi32>
// CHECK: scf.for %[[J:[^ ]*]] = {{.*}} iter_args
// CHECK: scf.for %[[D:[^ ]*]] = {{.*}} iter_args
// CHECK-DAG: %[[S32:.*]] = memref.load %[[ST]][%[[REQ]]] : memref<?xi32>
// CHECK-DAG: %[[S:.*]] = arith.index_cast %[[S32]] : i32 to index
// CHECK-DAG: %[[TOK:.*]] = arith.addi %[[S]], %[[J]] : index
// CHECK-DAG: %[[PAGE:.*]] = arith.divui %[[TOK]], %c8{{.*}} : index
// CHECK-DAG: %[[SLOT:.*]] = arith.remui %[[TOK]], %c8{{.*}} : index
// CHECK: memref.load %[[K]][%[[PAGE]], %[[SLOT]], %{{.*}}, %[[D]]] : memref<?x8x1x4xf32>
func.func @token_offset(%q: memref<?x1x4xf32>, %k: memref<?x8x1x4xf32>, %v: memref<?x8x1x4xf32>, %st: memref<?xi32>, %lens: memref<?xi32>, %o: memref<?x1x4xf32>) {
  %kv = kv.paged_view pools(%k, %v : memref<?x8x1x4xf32>, memref<?x8x1x4xf32>) tables(%st, %lens : memref<?xi32>, memref<?xi32>) : !kvt
  %s = kv.decode %q, %kv : memref<?x1x4xf32>, !kvt -> !kv.state<?x1x4xf32, base = e>
  kv.store_state %s, %o : !kv.state<?x1x4xf32, base = e>, memref<?x1x4xf32>
  return
}
