// RUN: kvir-opt %s --kv-to-loops | FileCheck %s

// logits_soft_cap c: s = c * tanh(s / c), applied to the scaled logit before
// the online softmax; sm_scale replaces the 1/sqrt(D) default.

!kvt = !kv.paged<page_size = 4, kv_heads = 1, head_dim = 4, head_dim_v = 4, dtype = f32, layout = nhd, storage = combined, table = block_table>

// CHECK-LABEL: func.func @soft_cap
// CHECK: %[[DOT:.*]] = scf.for {{.*}} -> (f32)
// CHECK: %[[SCALE:.*]] = arith.constant 2.500000e-01 : f32
// CHECK-NEXT: %[[S:.*]] = arith.mulf %[[DOT]], %[[SCALE]] : f32
// CHECK-NEXT: %[[CAP:.*]] = arith.constant 3.000000e+01 : f32
// CHECK-NEXT: %[[DIV:.*]] = arith.divf %[[S]], %[[CAP]] : f32
// CHECK-NEXT: %[[T:.*]] = math.tanh %[[DIV]] : f32
// CHECK-NEXT: %[[CAPPED:.*]] = arith.mulf %[[CAP]], %[[T]] : f32
// CHECK-NEXT: %[[M:.*]] = arith.maximumf %{{.*}}, %[[CAPPED]] : f32
// The weights are taken relative to the new max (0 while it is -inf).
// CHECK: %[[REF:.*]] = arith.select %{{.*}}, %{{.*}}, %[[M]] : f32
// CHECK: arith.subf %[[CAPPED]], %[[REF]] : f32
func.func @soft_cap(%q: memref<?x1x4xf32>, %pool: memref<?x2x4x1x4xf32>, %bt: memref<?x?xi32>, %lens: memref<?xi32>, %o: memref<?x1x4xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x4x1x4xf32>) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) : !kvt
  %s = kv.decode %q, %kv {sm_scale = 0.25 : f32, logits_soft_cap = 30.0 : f32} : memref<?x1x4xf32>, !kvt -> !kv.state<?x1x4xf32, base = e>
  kv.store_state %s, %o : !kv.state<?x1x4xf32, base = e>, memref<?x1x4xf32>
  return
}
