// RUN: kvir-opt %s --kv-to-loops -split-input-file | FileCheck %s

// kv.rebase: lse_to = lse_from * ln(B_from) / ln(B_to), and an imported +inf
// LSE (FlashMLA's empty set) becomes -inf with a zero output.

!e = !kv.state<?x2x4xf32, base = e>
!t = !kv.state<?x2x4xf32, base = 2>

// Base 2 -> e: multiply by ln 2.
// CHECK-LABEL: func.func @two_to_e
// CHECK: %[[IO:.*]] = memref.alloc(%{{.*}}) : memref<?x2x4xf32>
// CHECK: %[[IL:.*]] = memref.alloc(%{{.*}}) : memref<?x2xf32>
// CHECK: %[[ROWS:.*]] = memref.dim %[[IL]], %c0{{[_0-9]*}} : memref<?x2xf32>
// CHECK: %[[OO:.*]] = memref.alloc(%[[ROWS]]) : memref<?x2x4xf32>
// CHECK: %[[OL:.*]] = memref.alloc(%[[ROWS]]) : memref<?x2xf32>
// CHECK: scf.for %[[R:[^ ]*]] = %{{.*}} to %[[ROWS]] step
// CHECK: scf.for %[[H:[^ ]*]] = %{{.*}} to %c2{{[_0-9]*}} step
// CHECK-NEXT: %[[L:.*]] = memref.load %[[IL]][%[[R]], %[[H]]] : memref<?x2xf32>
// CHECK-NEXT: %[[PINF:.*]] = arith.constant 0x7F800000 : f32
// CHECK-NEXT: %[[ISINF:.*]] = arith.cmpf oeq, %[[L]], %[[PINF]] : f32
// CHECK-NEXT: %[[LN2:.*]] = arith.constant 0.693147182 : f32
// CHECK-NEXT: %[[SC:.*]] = arith.mulf %[[L]], %[[LN2]] : f32
// CHECK-NEXT: %[[NINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT: %[[NL:.*]] = arith.select %[[ISINF]], %[[NINF]], %[[SC]] : f32
// CHECK-NEXT: memref.store %[[NL]], %[[OL]][%[[R]], %[[H]]] : memref<?x2xf32>
// CHECK: scf.for %[[D:[^ ]*]] =
// CHECK-NEXT: %[[O:.*]] = memref.load %[[IO]][%[[R]], %[[H]], %[[D]]] : memref<?x2x4xf32>
// CHECK-NEXT: %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[NO:.*]] = arith.select %[[ISINF]], %[[Z]], %[[O]] : f32
// CHECK-NEXT: memref.store %[[NO]], %[[OO]][%[[R]], %[[H]], %[[D]]] : memref<?x2x4xf32>
func.func @two_to_e(%io: memref<?x2x4xf32>, %il: memref<?x2xf32>, %o: memref<?x2x4xf32>, %l: memref<?x2xf32>) {
  %a = kv.load_state %io, %il : memref<?x2x4xf32>, memref<?x2xf32> -> !t
  %r = kv.rebase %a : !t -> !e
  kv.store_state %r, %o, %l : !e, memref<?x2x4xf32>, memref<?x2xf32>
  return
}

// -----

!e = !kv.state<?x2x4xbf16, base = e>
!t = !kv.state<?x2x4xbf16, base = 2>

// Base e -> 2: multiply by 1 / ln 2; the zero output is of the element type.
// CHECK-LABEL: func.func @e_to_two
// CHECK: %[[ISINF:.*]] = arith.cmpf oeq, %{{.*}}, %{{.*}} : f32
// CHECK-NEXT: %[[INV:.*]] = arith.constant 1.44269502 : f32
// CHECK-NEXT: arith.mulf %{{.*}}, %[[INV]] : f32
// CHECK: %[[O:.*]] = memref.load %{{.*}} : memref<?x2x4xbf16>
// CHECK-NEXT: %[[Z:.*]] = arith.constant 0.000000e+00 : bf16
// CHECK-NEXT: arith.select %[[ISINF]], %[[Z]], %[[O]] : bf16
func.func @e_to_two(%io: memref<?x2x4xbf16>, %il: memref<?x2xf32>, %o: memref<?x2x4xbf16>, %l: memref<?x2xf32>) {
  %a = kv.load_state %io, %il : memref<?x2x4xbf16>, memref<?x2xf32> -> !e
  %r = kv.rebase %a : !e -> !t
  kv.store_state %r, %o, %l : !t, memref<?x2x4xbf16>, memref<?x2xf32>
  return
}

// -----

!e = !kv.state<?x2x4xf32, base = e, partitions = 3>

// Same base (normalization only), partitioned: no scaling, and the loops
// run over the partitions with [part, row, head] indices.
// CHECK-LABEL: func.func @same_base_partitioned
// CHECK: %[[IL:.*]] = memref.alloc(%{{.*}}) : memref<3x?x2xf32>
// CHECK: %[[PARTS:.*]] = memref.dim %[[IL]], %c0{{[_0-9]*}} : memref<3x?x2xf32>
// CHECK: %[[ROWS:.*]] = memref.dim %[[IL]], %c1{{[_0-9]*}} : memref<3x?x2xf32>
// CHECK: %[[OL:.*]] = memref.alloc(%[[ROWS]]) : memref<3x?x2xf32>
// CHECK: scf.for %[[P:[^ ]*]] = %{{.*}} to %[[PARTS]] step
// CHECK: scf.for %[[R:[^ ]*]] = %{{.*}} to %[[ROWS]] step
// CHECK: scf.for %[[H:[^ ]*]] =
// CHECK-NEXT: %[[L:.*]] = memref.load %[[IL]][%[[P]], %[[R]], %[[H]]] : memref<3x?x2xf32>
// CHECK-NOT: arith.mulf
// CHECK: %[[NL:.*]] = arith.select %{{.*}}, %{{.*}}, %[[L]] : f32
// CHECK-NEXT: memref.store %[[NL]], %[[OL]][%[[P]], %[[R]], %[[H]]] : memref<3x?x2xf32>
func.func @same_base_partitioned(%io: memref<3x?x2x4xf32>, %il: memref<3x?x2xf32>, %o: memref<3x?x2x4xf32>, %l: memref<3x?x2xf32>) {
  %a = kv.load_state %io, %il : memref<3x?x2x4xf32>, memref<3x?x2xf32> -> !e
  %r = kv.rebase %a : !e -> !e
  kv.store_state %r, %o, %l : !e, memref<3x?x2x4xf32>, memref<3x?x2xf32>
  return
}
