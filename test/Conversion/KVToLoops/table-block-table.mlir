// RUN: kvir-opt %s --kv-to-loops | FileCheck %s

// The vLLM block table: kv_len = seq_lens[b], and token t reads page
// block_table[b][t / page_size] (a 2-D load) at slot t % page_size.

!kvt = !kv.paged<page_size = 16, kv_heads = 1, head_dim = 4, head_dim_v = 4, dtype = f32, layout = nhd, storage = split, table = block_table>

// CHECK-LABEL: func.func @block_table
// CHECK-SAME: (%{{[^:]*}}: memref<?x1x4xf32>, %[[K:[^:]*]]: memref<?x16x1x4xf32>, %[[V:[^:]*]]: memref<?x16x1x4xf32>, %[[BT:[^:]*]]: memref<?x?xi32>, %[[LENS:[^:]*]]: memref<?xi32>
// CHECK: scf.for %[[REQ:[^ ]*]] =
// CHECK: %[[L32:.*]] = memref.load %[[LENS]][%[[REQ]]] : memref<?xi32>
// CHECK: %[[KVLEN:.*]] = arith.index_cast %[[L32]] : i32 to index
// CHECK: %[[HI:.*]] = arith.maxsi %c0{{.*}}, %[[KVLEN]] : index
// CHECK: scf.for %[[J:[^ ]*]] = %c0{{.*}} to %[[HI]] {{.*}} iter_args
// CHECK: scf.for %[[D:[^ ]*]] = {{.*}} iter_args
// CHECK-DAG: %[[LP:.*]] = arith.divui %[[J]], %c16{{.*}} : index
// CHECK-DAG: %[[SLOT:.*]] = arith.remui %[[J]], %c16{{.*}} : index
// CHECK-DAG: %[[P32:.*]] = memref.load %[[BT]][%[[REQ]], %[[LP]]] : memref<?x?xi32>
// CHECK-DAG: %[[PAGE:.*]] = arith.index_cast %[[P32]] : i32 to index
// CHECK: memref.load %[[K]][%[[PAGE]], %[[SLOT]], %{{.*}}, %[[D]]] : memref<?x16x1x4xf32>
// CHECK: %[[VP32:.*]] = memref.load %[[BT]][%[[REQ]], %{{.*}}] : memref<?x?xi32>
// CHECK: %[[VPAGE:.*]] = arith.index_cast %[[VP32]] : i32 to index
// CHECK: memref.load %[[V]][%[[VPAGE]], %{{.*}}, %{{.*}}, %{{.*}}] : memref<?x16x1x4xf32>
func.func @block_table(%q: memref<?x1x4xf32>, %k: memref<?x16x1x4xf32>, %v: memref<?x16x1x4xf32>, %bt: memref<?x?xi32>, %lens: memref<?xi32>, %o: memref<?x1x4xf32>) {
  %kv = kv.paged_view pools(%k, %v : memref<?x16x1x4xf32>, memref<?x16x1x4xf32>) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) : !kvt
  %s = kv.decode %q, %kv : memref<?x1x4xf32>, !kvt -> !kv.state<?x1x4xf32, base = e>
  kv.store_state %s, %o : !kv.state<?x1x4xf32, base = e>, memref<?x1x4xf32>
  return
}
