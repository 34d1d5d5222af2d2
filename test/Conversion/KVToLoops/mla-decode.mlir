// RUN: kvir-opt %s --kv-to-loops | FileCheck %s

// kv.mla_decode: the query row is [q_nope | q_pe] (512 + 64 in DeepSeek,
// 8 + 4 here); s_j = sm_scale * (<q_nope, ckv_j> + <q_pe, kpe_j>), with one
// dot product over ckv continuing into one over kpe; o = sum p_j ckv_j; all
// heads share the latent KV (kv head = head / H = 0); the default sm_scale
// is 1 / sqrt(512 + 64), here 1 / sqrt(12).

!mla = !kv.paged<page_size = 4, kv_heads = 1, head_dim = 8, head_dim_v = 8, dtype = f32, layout = nhd, storage = mla, table = block_table, pe_dim = 4>

// CHECK-LABEL: func.func @mla
// CHECK-SAME: (%[[QN:[^:]*]]: memref<?x2x8xf32>, %[[QP:[^:]*]]: memref<?x2x4xf32>, %[[CKV:[^:]*]]: memref<?x4x8xf32>, %[[KPE:[^:]*]]: memref<?x4x4xf32>
// CHECK: %[[QROW:.*]] = memref.alloc() : memref<12xf32>
// CHECK: scf.for %[[HEAD:[^ ]*]] = %c0 to %c2{{[_0-9]*}} step
// CHECK: %[[KVH:.*]] = arith.divui %[[HEAD]], %c2{{[_0-9]*}} : index
// q_nope fills [0, 8), q_pe fills [8, 12).
// CHECK: memref.load %[[QN]][%{{.*}}, %[[HEAD]], %{{.*}}] : memref<?x2x8xf32>
// CHECK: memref.store %{{.*}}, %[[QROW]][%{{.*}}] : memref<12xf32>
// CHECK: %[[C8:.*]] = arith.constant 8 : index
// CHECK: scf.for %[[DP:[^ ]*]] =
// CHECK-NEXT: memref.load %[[QP]][%{{.*}}, %[[HEAD]], %[[DP]]] : memref<?x2x4xf32>
// CHECK-NEXT: %[[AT:.*]] = arith.addi %[[C8]], %[[DP]] : index
// CHECK-NEXT: memref.store %{{.*}}, %[[QROW]][%[[AT]]] : memref<12xf32>
// CHECK: %{{.*}}:2 = scf.for %[[J:[^ ]*]] = {{.*}} iter_args
// CHECK: %[[NOPE:.*]] = scf.for {{.*}} iter_args(%{{[^ ]*}} = %{{.*}}) -> (f32)
// CHECK: memref.load %[[CKV]][%{{.*}}, %{{.*}}, %{{.*}}] : memref<?x4x8xf32>
// CHECK: %[[DOT:.*]] = scf.for {{.*}} iter_args(%{{[^ ]*}} = %[[NOPE]]) -> (f32)
// CHECK: memref.load %[[KPE]][%{{.*}}, %{{.*}}, %{{.*}}] : memref<?x4x4xf32>
// CHECK: %[[SC:.*]] = arith.constant 0.288675129 : f32
// CHECK-NEXT: arith.mulf %[[DOT]], %[[SC]] : f32
// The value is ckv.
// CHECK: scf.for
// CHECK: memref.load %[[CKV]][%{{.*}}, %{{.*}}, %{{.*}}] : memref<?x4x8xf32>
// CHECK-NOT: memref.load %[[KPE]]
// CHECK: arith.constant 1.44269502 : f32
func.func @mla(%qn: memref<?x2x8xf32>, %qp: memref<?x2x4xf32>, %ckv: memref<?x4x8xf32>, %kpe: memref<?x4x4xf32>, %bt: memref<?x?xi32>, %lens: memref<?xi32>, %o: memref<?x2x8xf32>) {
  %kv = kv.paged_view pools(%ckv, %kpe : memref<?x4x8xf32>, memref<?x4x4xf32>) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) : !mla
  %s = kv.mla_decode %qn, %qp, %kv : memref<?x2x8xf32>, memref<?x2x4xf32>, !mla -> !kv.state<?x2x8xf32, base = 2>
  kv.store_state %s, %o : !kv.state<?x2x8xf32, base = 2>, memref<?x2x8xf32>
  return
}
