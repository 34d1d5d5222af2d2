// RUN: kvir-opt %s --kv-to-loops | FileCheck %s

// kv.merge, row by row, in base e: m = max over inputs of lse * ln B; the
// reference is m, or 0 if m == -inf (so no -inf - -inf appears);
// w = exp(lse * ln B - ref); o = sum w o / sum w; lse = (m + ln(sum w)) / ln B.
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
// LSEs in base 2 are taken to base e (* ln 2) for the max and the weights.
// CHECK: %[[LA:.*]] = memref.load %[[AL]][%[[R]], %[[H]]] : memref<?x2xf32>
// CHECK: %[[LAE:.*]] = arith.mulf %[[LA]], %[[LN2:.*]] : f32
// CHECK-NEXT: %[[M1:.*]] = arith.maximumf %[[NINF]], %[[LAE]] : f32
// CHECK: %[[LB:.*]] = memref.load %[[BL]][%[[R]], %[[H]]] : memref<?x2xf32>
// CHECK: %[[LBE:.*]] = arith.mulf %[[LB]], %{{.*}} : f32
// CHECK-NEXT: %[[M:.*]] = arith.maximumf %[[M1]], %[[LBE]] : f32
// The reference point: the max, or 0 when every input is empty (-inf).
// CHECK: %[[EMPTY:.*]] = arith.cmpf oeq, %[[M]], %{{.*}} : f32
// CHECK: %[[REF:.*]] = arith.select %[[EMPTY]], %{{.*}}, %[[M]] : f32
// w_a = e^(l_a ln 2 - ref), o += w_a o_a.
// CHECK: %[[LA2:.*]] = memref.load %[[AL]][%[[R]], %[[H]]] : memref<?x2xf32>
// CHECK: %[[LA2E:.*]] = arith.mulf %[[LA2]], %{{.*}} : f32
// CHECK-NEXT: %[[DA:.*]] = arith.subf %[[LA2E]], %[[REF]] : f32
// CHECK-NEXT: %[[WA:.*]] = math.exp %[[DA]] : f32
// CHECK: %[[OA:.*]] = memref.load %[[AO]][%[[R]], %[[H]], %{{.*}}] : memref<?x2x4xf32>
// CHECK: math.fma %[[OA]], %[[WA]], %{{.*}} : f32
// CHECK: %[[SA:.*]] = arith.addf %{{.*}}, %[[WA]] : f32
// CHECK: %[[LB2:.*]] = memref.load %[[BL]][%[[R]], %[[H]]] : memref<?x2xf32>
// CHECK: arith.subf %{{.*}}, %[[REF]] : f32
// CHECK: %[[WB:.*]] = math.exp
// CHECK: memref.load %[[BO]][%[[R]], %[[H]], %{{.*}}] : memref<?x2x4xf32>
// CHECK: %[[SUM:.*]] = arith.addf %[[SA]], %[[WB]] : f32
// o = acc / sum (0 when the sum is 0: every input empty).
// CHECK: %[[NUM:.*]] = memref.load %[[ACC]]
// CHECK: %[[ZERO:.*]] = arith.cmpf oeq, %[[SUM]], %{{.*}} : f32
// CHECK: %[[INV:.*]] = arith.divf %{{.*}}, %[[SUM]] : f32
// CHECK-NEXT: %[[O:.*]] = arith.mulf %[[NUM]], %[[INV]] : f32
// CHECK: %[[OS:.*]] = arith.select %[[ZERO]], %{{.*}}, %[[O]] : f32
// CHECK-NEXT: memref.store %[[OS]], %[[MO]][%[[R]], %[[H]], %{{.*}}] : memref<?x2x4xf32>
// lse = (m + ln sum) * log2(e), -inf when the sum is 0.
// CHECK: %[[NOSUM:.*]] = arith.cmpf oeq, %[[SUM]], %{{.*}} : f32
// CHECK-NEXT: %[[LOG:.*]] = math.log %[[SUM]] : f32
// CHECK-NEXT: %[[LSEE:.*]] = arith.addf %[[M]], %[[LOG]] : f32
// CHECK-NEXT: %[[INVLN2:.*]] = arith.constant 1.44269502 : f32
// CHECK-NEXT: %[[LSE:.*]] = arith.mulf %[[LSEE]], %[[INVLN2]] : f32
// CHECK-NEXT: %[[NINF3:.*]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT: %[[LSES:.*]] = arith.select %[[NOSUM]], %[[NINF3]], %[[LSE]] : f32
// CHECK-NEXT: memref.store %[[LSES]], %[[ML]][%[[R]], %[[H]]] : memref<?x2xf32>
// CHECK: memref.dealloc %[[ACC]]
func.func @merge(%o1: memref<?x2x4xf32>, %l1: memref<?x2xf32>, %o2: memref<?x2x4xf32>, %l2: memref<?x2xf32>, %o: memref<?x2x4xf32>, %l: memref<?x2xf32>) {
  %a = kv.load_state %o1, %l1 : memref<?x2x4xf32>, memref<?x2xf32> -> !s
  %b = kv.load_state %o2, %l2 : memref<?x2x4xf32>, memref<?x2xf32> -> !s
  %m = kv.merge %a, %b : !s, !s -> !s
  kv.store_state %m, %o, %l : !s, memref<?x2x4xf32>, memref<?x2xf32>
  return
}
