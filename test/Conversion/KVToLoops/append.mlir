// RUN: kvir-opt %s --kv-to-loops | FileCheck %s

// kv.append: row i goes to request batch_indices[i] at token positions[i],
// located through the page table; K is rotated at its position first (RoPE),
// V is written as is; values are rounded to the pool's element type.

!kvt = !kv.paged<page_size = 4, kv_heads = 2, head_dim = 4, head_dim_v = 4, dtype = f16, layout = nhd, storage = combined, table = csr>

// CHECK-LABEL: func.func @append
// CHECK-SAME: (%[[K:[^:]*]]: memref<?x2x4xf16>, %[[V:[^:]*]]: memref<?x2x4xf16>, %[[B:[^:]*]]: memref<?xi32>, %[[P:[^:]*]]: memref<?xi32>, %[[POOL:[^:]*]]: memref<?x2x4x2x4xf16>, %[[IP:[^:]*]]: memref<?xi32>, %[[IX:[^:]*]]: memref<?xi32>
// CHECK: %[[BUF:.*]] = memref.alloc() : memref<4xf32>
// CHECK: %[[NNZ:.*]] = memref.dim %[[K]], %{{.*}} : memref<?x2x4xf16>
// CHECK: scf.for %[[I:[^ ]*]] = %c0{{[_0-9]*}} to %[[NNZ]] step
// CHECK-NEXT: %[[R32:.*]] = memref.load %[[B]][%[[I]]] : memref<?xi32>
// CHECK-NEXT: %[[REQ:.*]] = arith.index_cast %[[R32]] : i32 to index
// CHECK-NEXT: %[[P32:.*]] = memref.load %[[P]][%[[I]]] : memref<?xi32>
// CHECK-NEXT: %[[POS:.*]] = arith.index_cast %[[P32]] : i32 to index
// CHECK-DAG: %[[LP:.*]] = arith.divui %[[POS]], %c4{{(_[0-9]+)?}} : index
// CHECK-DAG: %[[SLOT:.*]] = arith.remui %[[POS]], %c4{{(_[0-9]+)?}} : index
// CHECK-DAG: %[[F32:.*]] = memref.load %[[IP]][%[[REQ]]] : memref<?xi32>
// CHECK-DAG: %[[F:.*]] = arith.index_cast %[[F32]] : i32 to index
// CHECK-DAG: %[[AT:.*]] = arith.addi %[[F]], %[[LP]] : index
// CHECK-DAG: %[[PG32:.*]] = memref.load %[[IX]][%[[AT]]] : memref<?xi32>
// CHECK-DAG: %[[PAGE:.*]] = arith.index_cast %[[PG32]] : i32 to index
// CHECK: scf.for %[[H:[^ ]*]] = %c0{{[_0-9]*}} to %c2{{[_0-9]*}} step
// Gather k[i, h, :] in f32.
// CHECK: memref.load %[[K]][%[[I]], %[[H]], %{{.*}}] : memref<?x2x4xf16>
// CHECK: arith.extf
// CHECK: memref.store %{{.*}}, %[[BUF]][%{{.*}}] : memref<4xf32>
// rotate_half RoPE of K at its position.
// CHECK: arith.index_cast %[[POS]] : index to i32
// CHECK: math.cos
// CHECK: math.sin
// CHECK: memref.store %{{.*}}, %[[BUF]]
// CHECK: memref.store %{{.*}}, %[[BUF]]
// Write K at kv = 0.
// CHECK: scf.for %[[D:[^ ]*]] =
// CHECK-NEXT: %[[X:.*]] = memref.load %[[BUF]][%[[D]]] : memref<4xf32>
// CHECK-NEXT: %[[XH:.*]] = arith.truncf %[[X]] : f32 to f16
// CHECK-NEXT: %[[KC:.*]] = arith.constant 0 : index
// CHECK-NEXT: memref.store %[[XH]], %[[POOL]][%[[PAGE]], %[[KC]], %[[SLOT]], %[[H]], %[[D]]] : memref<?x2x4x2x4xf16>
// V: gathered, not rotated, written at kv = 1.
// CHECK: memref.load %[[V]][%[[I]], %[[H]], %{{.*}}] : memref<?x2x4xf16>
// CHECK-NOT: math.cos
// CHECK: scf.for %[[DV:[^ ]*]] =
// CHECK-NEXT: %[[Y:.*]] = memref.load %[[BUF]][%[[DV]]] : memref<4xf32>
// CHECK-NEXT: %[[YH:.*]] = arith.truncf %[[Y]] : f32 to f16
// CHECK-NEXT: %[[VC:.*]] = arith.constant 1 : index
// CHECK-NEXT: memref.store %[[YH]], %[[POOL]][%[[PAGE]], %[[VC]], %[[SLOT]], %[[H]], %[[DV]]] : memref<?x2x4x2x4xf16>
// CHECK: memref.dealloc %[[BUF]]
func.func @append(%k: memref<?x2x4xf16>, %v: memref<?x2x4xf16>, %b: memref<?xi32>, %p: memref<?xi32>, %pool: memref<?x2x4x2x4xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %last: memref<?xi32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x4x2x4xf16>) tables(%ip, %ix, %last : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !kvt
  kv.append %k, %v, %b, %p into %kv {rope = #kv.rope<rotate_half>} : memref<?x2x4xf16>, memref<?x2x4xf16>, memref<?xi32>, memref<?xi32>, !kvt
  return
}
