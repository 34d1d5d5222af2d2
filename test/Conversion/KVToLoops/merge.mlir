// RUN: kvir-opt %s --kv-to-loops | FileCheck %s

// kv.merge, row by row: m = max over inputs of lse; empty if m == -inf
// (then the reference is 0 so no -inf - -inf appears); w = B^(lse - m) as
// exp((lse - m) * ln B); o = sum w o / sum w; lse = m + ln(sum w) / ln B.
// Base 2 here: ln 2 = 0.693147182, 1 / ln 2 = 1.44269502.

!s = !kv.state<?x2x4xf32, base = 2>

// CHECK-LABEL: func.func @merge
// The inputs are copies of the loaded buffers (value semantics).
// CHECK: %[[AO:.*]] = memref.alloc(%{{.*}}) : memref<?x2x4xf32>
// CHECK: %[[AL:.*]] = memref.alloc(%{{.*}}) : memref<?x2xf32>
// CHECK: %[[BO:.*]] = memref.alloc(%{{.*}}) : memref<?x2x4xf32>
// CHECK: %[[BL:.*]] = memref.alloc(%{{.*}}) : memref<?x2xf32>
// CHECK: %[[ROWS:.*]] = memref.dim %[[AL]], %{{.*}} : memref<?x2xf32>
// CHECK: %[[MO:.*]] = memref.alloc(%[[ROWS]]) : memref<?x2x4xf32>
// CHECK: %[[ML:.*]] = memref.alloc(%[[ROWS]]) : memref<?x2xf32>
// CHECK: %[[ACC:.*]] = memref.alloc() : memref<4xf32>
// CHECK: scf.for %[[R:[^ ]*]] = %{{.*}} to %[[ROWS]] step
// CHECK: scf.for %[[H:[^ ]*]] = %{{.*}} to %c2{{[_0-9]*}} step
// Pass 1: the max LSE.
// CHECK: %[[NINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT: %[[LA:.*]] = memref.load %[[AL]][%[[R]], %[[H]]] : memref<?x2xf32>
// CHECK-NEXT: %[[M1:.*]] = arith.maximumf %[[NINF]], %[[LA]] : f32
// CHECK-NEXT: %[[LB:.*]] = memref.load %[[BL]][%[[R]], %[[H]]] : memref<?x2xf32>
// CHECK-NEXT: %[[M:.*]] = arith.maximumf %[[M1]], %[[LB]] : f32
// CHECK-NEXT: %[[NINF2:.*]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT: %[[EMPTY:.*]] = arith.cmpf oeq, %[[M]], %[[NINF2]] : f32
// CHECK-NEXT: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[REF:.*]] = arith.select %[[EMPTY]], %[[ZERO]], %[[M]] : f32
// Pass 2: weights 2^(lse - ref) and the weighted outputs.
// CHECK: %[[LA2:.*]] = memref.load %[[AL]][%[[R]], %[[H]]] : memref<?x2xf32>
// CHECK-NEXT: %[[DA:.*]] = arith.subf %[[LA2]], %[[REF]] : f32
// CHECK-NEXT: %[[LN2:.*]] = arith.constant 0.693147182 : f32
// CHECK-NEXT: %[[EA:.*]] = arith.mulf %[[DA]], %[[LN2]] : f32
// CHECK-NEXT: %[[WA:.*]] = math.exp %[[EA]] : f32
// CHECK: memref.load %[[AO]][%[[R]], %[[H]], %{{.*}}] : memref<?x2x4xf32>
// CHECK: arith.mulf %[[WA]], %{{.*}} : f32
// CHECK: %[[SA:.*]] = arith.addf %{{.*}}, %[[WA]] : f32
// CHECK: %[[LB2:.*]] = memref.load %[[BL]][%[[R]], %[[H]]] : memref<?x2xf32>
// CHECK-NEXT: %[[DB:.*]] = arith.subf %[[LB2]], %[[REF]] : f32
// CHECK: %[[WB:.*]] = math.exp
// CHECK: memref.load %[[BO]][%[[R]], %[[H]], %{{.*}}] : memref<?x2x4xf32>
// CHECK: %[[SUM:.*]] = arith.addf %[[SA]], %[[WB]] : f32
// Normalize; an empty row gets 0 and -inf.
// CHECK: %[[NUM:.*]] = memref.load %[[ACC]]
// CHECK-NEXT: %[[O:.*]] = arith.divf %[[NUM]], %[[SUM]] : f32
// CHECK-NEXT: %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[OS:.*]] = arith.select %[[EMPTY]], %[[Z]], %[[O]] : f32
// CHECK-NEXT: memref.store %[[OS]], %[[MO]][%[[R]], %[[H]], %{{.*}}] : memref<?x2x4xf32>
// CHECK: %[[LOG:.*]] = math.log %[[SUM]] : f32
// CHECK-NEXT: %[[INVLN2:.*]] = arith.constant 1.44269502 : f32
// CHECK-NEXT: %[[LOG2:.*]] = arith.mulf %[[LOG]], %[[INVLN2]] : f32
// CHECK-NEXT: %[[LSE:.*]] = arith.addf %[[M]], %[[LOG2]] : f32
// CHECK-NEXT: %[[NINF3:.*]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT: %[[LSES:.*]] = arith.select %[[EMPTY]], %[[NINF3]], %[[LSE]] : f32
// CHECK-NEXT: memref.store %[[LSES]], %[[ML]][%[[R]], %[[H]]] : memref<?x2xf32>
// CHECK: memref.dealloc %[[ACC]]
func.func @merge(%o1: memref<?x2x4xf32>, %l1: memref<?x2xf32>, %o2: memref<?x2x4xf32>, %l2: memref<?x2xf32>, %o: memref<?x2x4xf32>, %l: memref<?x2xf32>) {
  %a = kv.load_state %o1, %l1 : memref<?x2x4xf32>, memref<?x2xf32> -> !s
  %b = kv.load_state %o2, %l2 : memref<?x2x4xf32>, memref<?x2xf32> -> !s
  %m = kv.merge %a, %b : !s, !s -> !s
  kv.store_state %m, %o, %l : !s, memref<?x2x4xf32>, memref<?x2xf32>
  return
}
