// RUN: kvir-opt %s --kv-to-loops | FileCheck %s

// kv.merge_partitions: the merge identity over a runtime partition axis, as
// scf.for loops over [0, P) for the max LSE and for the weights (base e:
// w = exp(lse - m)). Output accumulates in f32 and rounds to f16 at the end.

!p = !kv.state<?x2x4xf16, base = e, partitions = ?>
!s = !kv.state<?x2x4xf16, base = e>

// CHECK-LABEL: func.func @merge_partitions
// CHECK-SAME: (%[[PO:[^:]*]]: memref<?x?x2x4xf16>, %[[PL:[^:]*]]: memref<?x?x2xf32>
// load_state allocates [P, N, ...] buffers: partitions first.
// CHECK: %[[N:.*]] = memref.dim %[[PO]], %c1{{[_0-9]*}} : memref<?x?x2x4xf16>
// CHECK: %[[P:.*]] = memref.dim %[[PO]], %c0{{[_0-9]*}} : memref<?x?x2x4xf16>
// CHECK: %[[IO:.*]] = memref.alloc(%[[P]], %[[N]]) : memref<?x?x2x4xf16>
// CHECK: %[[IL:.*]] = memref.alloc(%[[P]], %[[N]]) : memref<?x?x2xf32>
// CHECK: %[[PARTS:.*]] = memref.dim %[[IL]], %c0{{[_0-9]*}} : memref<?x?x2xf32>
// CHECK: %[[ROWS:.*]] = memref.dim %[[IL]], %c1{{[_0-9]*}} : memref<?x?x2xf32>
// CHECK: %[[MO:.*]] = memref.alloc(%[[ROWS]]) : memref<?x2x4xf16>
// CHECK: %[[ML:.*]] = memref.alloc(%[[ROWS]]) : memref<?x2xf32>
// CHECK: scf.for %[[R:[^ ]*]] = %{{.*}} to %[[ROWS]] step
// CHECK: scf.for %[[H:[^ ]*]] = %{{.*}} to %c2{{[_0-9]*}} step
// CHECK: %[[M:.*]] = scf.for %[[PI:[^ ]*]] = %{{.*}} to %[[PARTS]] step %{{[^ ]*}} iter_args(%[[MAX:[^ ]*]] = %{{.*}}) -> (f32)
// CHECK-NEXT: %[[L:.*]] = memref.load %[[IL]][%[[PI]], %[[R]], %[[H]]] : memref<?x?x2xf32>
// CHECK-NEXT: %[[NM:.*]] = arith.maximumf %[[MAX]], %[[L]] : f32
// CHECK-NEXT: scf.yield %[[NM]] : f32
// CHECK: %[[EMPTY:.*]] = arith.cmpf oeq, %[[M]], %{{.*}} : f32
// CHECK: %[[REF:.*]] = arith.select %[[EMPTY]], %{{.*}}, %[[M]] : f32
// Base e: the LSEs are used as they are.
// CHECK: %[[SUM:.*]] = scf.for %[[PJ:[^ ]*]] = %{{.*}} to %[[PARTS]] step %{{[^ ]*}} iter_args(%[[ACC:[^ ]*]] = %{{.*}}) -> (f32)
// CHECK-NEXT: %[[L2:.*]] = memref.load %[[IL]][%[[PJ]], %[[R]], %[[H]]] : memref<?x?x2xf32>
// CHECK-NEXT: %[[D:.*]] = arith.subf %[[L2]], %[[REF]] : f32
// CHECK-NEXT: %[[W:.*]] = math.exp %[[D]] : f32
// CHECK: %[[OV:.*]] = memref.load %[[IO]][%[[PJ]], %[[R]], %[[H]], %{{.*}}] : memref<?x?x2x4xf16>
// CHECK-NEXT: %[[OF:.*]] = arith.extf %[[OV]] : f16 to f32
// CHECK-NEXT: math.fma %[[OF]], %[[W]], %{{.*}} : f32
// CHECK: %[[NS:.*]] = arith.addf %[[ACC]], %[[W]] : f32
// CHECK-NEXT: scf.yield %[[NS]] : f32
// CHECK: arith.divf %{{.*}}, %[[SUM]] : f32
// CHECK: %[[T:.*]] = arith.truncf %{{.*}} : f32 to f16
// CHECK-NEXT: memref.store %[[T]], %[[MO]][%[[R]], %[[H]], %{{.*}}] : memref<?x2x4xf16>
// CHECK: math.log %[[SUM]] : f32
// CHECK: memref.store %{{.*}}, %[[ML]][%[[R]], %[[H]]] : memref<?x2xf32>
func.func @merge_partitions(%po: memref<?x?x2x4xf16>, %pl: memref<?x?x2xf32>, %o: memref<?x2x4xf16>, %l: memref<?x2xf32>) {
  %a = kv.load_state %po, %pl : memref<?x?x2x4xf16>, memref<?x?x2xf32> -> !p
  %m = kv.merge_partitions %a : !p -> !s
  kv.store_state %m, %o, %l : !s, memref<?x2x4xf16>, memref<?x2xf32>
  return
}
