// RUN: kvir-opt %s --kv-to-loops -split-input-file | FileCheck %s

// kv.empty_state: buffers filled with o = 0 and lse = -inf. The dynamic size
// operands are the partition count (when `?`) then the row count, matching
// the [P, N, H, ...] buffer shape.

// CHECK-LABEL: func.func @partitioned
// CHECK-SAME: (%[[P:[^:]*]]: index, %[[N:[^:]*]]: index
// CHECK: %[[O:.*]] = memref.alloc(%[[P]], %[[N]]) : memref<?x?x2x4xf16>
// CHECK: %[[L:.*]] = memref.alloc(%[[P]], %[[N]]) : memref<?x?x2xf32>
// CHECK: scf.for
// CHECK: scf.for
// CHECK: scf.for
// CHECK: scf.for %[[D:[^ ]*]] =
// CHECK-NEXT: %[[Z:.*]] = arith.constant 0.000000e+00 : f16
// CHECK-NEXT: memref.store %[[Z]], %[[O]][%{{.*}}, %{{.*}}, %{{.*}}, %[[D]]] : memref<?x?x2x4xf16>
// CHECK: scf.for
// CHECK: scf.for
// CHECK: scf.for %[[H:[^ ]*]] =
// CHECK-NEXT: %[[NINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT: memref.store %[[NINF]], %[[L]][%{{.*}}, %{{.*}}, %[[H]]] : memref<?x?x2xf32>
func.func @partitioned(%p: index, %n: index, %o: memref<?x?x2x4xf16>, %l: memref<?x?x2xf32>) {
  %e = kv.empty_state %p, %n : !kv.state<?x2x4xf16, base = 2, partitions = ?>
  kv.store_state %e, %o, %l : !kv.state<?x2x4xf16, base = 2, partitions = ?>, memref<?x?x2x4xf16>, memref<?x?x2xf32>
  return
}

// -----

// Static sizes: no size operands, static buffers.
// CHECK-LABEL: func.func @static
// CHECK: %[[O:.*]] = memref.alloc() : memref<3x2x4xf32>
// CHECK: %[[L:.*]] = memref.alloc() : memref<3x2xf32>
// CHECK: arith.constant 0.000000e+00 : f32
// CHECK: memref.store %{{.*}}, %[[O]]
// CHECK: arith.constant 0xFF800000 : f32
// CHECK: memref.store %{{.*}}, %[[L]]
func.func @static(%o: memref<3x2x4xf32>) {
  %e = kv.empty_state : !kv.state<3x2x4xf32, base = e>
  kv.store_state %e, %o : !kv.state<3x2x4xf32, base = e>, memref<3x2x4xf32>
  return
}

// -----

// Dynamic rows, static partitions.
// CHECK-LABEL: func.func @rows_only
// CHECK-SAME: (%[[N:[^:]*]]: index
// CHECK: memref.alloc(%[[N]]) : memref<2x?x2x4xf32>
// CHECK: memref.alloc(%[[N]]) : memref<2x?x2xf32>
func.func @rows_only(%n: index, %o: memref<2x?x2x4xf32>) {
  %e = kv.empty_state %n : !kv.state<?x2x4xf32, base = e, partitions = 2>
  kv.store_state %e, %o : !kv.state<?x2x4xf32, base = e, partitions = 2>, memref<2x?x2x4xf32>
  return
}
