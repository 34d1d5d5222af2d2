// RUN: kvir-opt %s --kv-to-loops | FileCheck %s

// kv-to-loops expands kv.cascade itself (as kv-expand-cascade does): one
// attention nest per level over that level's qo_indptr and page table, the
// causal bound only on the last level, then the merge of the level states.

!kv0 = !kv.paged<page_size = 4, kv_heads = 1, head_dim = 4, head_dim_v = 4, dtype = f32, layout = nhd, storage = combined, table = block_table>
!kv1 = !kv.paged<page_size = 2, kv_heads = 1, head_dim = 4, head_dim_v = 4, dtype = f32, layout = nhd, storage = split, table = csr>

// CHECK-LABEL: func.func @cascade
// CHECK-SAME: (%[[Q:[^:]*]]: memref<?x1x4xf32>, %[[QI0:[^:]*]]: memref<?xi32>, %[[QI1:[^:]*]]: memref<?xi32>, %[[P0:[^:]*]]: memref<?x2x4x1x4xf32>, %[[BT:[^:]*]]: memref<?x?xi32>, %[[LENS:[^:]*]]: memref<?xi32>, %[[K1:[^:]*]]: memref<?x2x1x4xf32>
// CHECK-NOT: kv.
// Level 0: shared prefix, not causal.
// CHECK: %[[O0:.*]] = memref.alloc(%{{.*}}) : memref<?x1x4xf32>
// CHECK: %[[L0:.*]] = memref.alloc(%{{.*}}) : memref<?x1xf32>
// CHECK: memref.dim %[[QI0]]
// CHECK-NOT: arith.minsi
// CHECK: memref.load %[[P0]]
// Level 1: causal.
// CHECK: %[[O1:.*]] = memref.alloc(%{{.*}}) : memref<?x1x4xf32>
// CHECK: %[[L1:.*]] = memref.alloc(%{{.*}}) : memref<?x1xf32>
// CHECK: memref.dim %[[QI1]]
// CHECK: arith.minsi
// CHECK: memref.load %[[K1]]
// The merge of the two level states (base 2).
// CHECK: memref.load %[[L0]]
// CHECK: memref.load %[[L1]]
// CHECK: arith.constant 0.693147182 : f32
// CHECK: memref.load %[[O0]]
// CHECK: memref.load %[[O1]]
// CHECK-NOT: kv.
func.func @cascade(%q: memref<?x1x4xf32>, %qi0: memref<?xi32>, %qi1: memref<?xi32>,
                   %p0: memref<?x2x4x1x4xf32>, %bt: memref<?x?xi32>, %lens: memref<?xi32>,
                   %k1: memref<?x2x1x4xf32>, %v1: memref<?x2x1x4xf32>, %ip: memref<?xi32>, %ix: memref<?xi32>, %last: memref<?xi32>,
                   %o: memref<?x1x4xf32>, %l: memref<?x1xf32>) {
  %kv0 = kv.paged_view pools(%p0 : memref<?x2x4x1x4xf32>) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) : !kv0
  %kv1 = kv.paged_view pools(%k1, %v1 : memref<?x2x1x4xf32>, memref<?x2x1x4xf32>) tables(%ip, %ix, %last : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !kv1
  %s = kv.cascade %q levels(%qi0, %qi1 : memref<?xi32>, memref<?xi32>) kvs(%kv0, %kv1 : !kv0, !kv1) {causal}
      : memref<?x1x4xf32> -> !kv.state<?x1x4xf32, base = 2>
  kv.store_state %s, %o, %l : !kv.state<?x1x4xf32, base = 2>, memref<?x1x4xf32>, memref<?x1xf32>
  return
}
