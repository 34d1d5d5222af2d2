// RUN: kvir-opt %s --kv-to-loops -split-input-file | FileCheck %s

// kv.load_state copies the buffers as they are now into the state's own
// buffers (value semantics: a later write to the source must not change the
// state); kv.store_state copies a state out, with or without its LSE. State
// buffers are freed at the end of the block once every use is inside it.

!s = !kv.state<?x2x4xf32, base = e>

// CHECK-LABEL: func.func @load_store
// CHECK-SAME: (%[[IO:[^:]*]]: memref<?x2x4xf32>, %[[IL:[^:]*]]: memref<?x2xf32>, %[[OO:[^:]*]]: memref<?x2x4xf32>, %[[OL:[^:]*]]: memref<?x2xf32>)
// CHECK: %[[N:.*]] = memref.dim %[[IO]], %c0{{[_0-9]*}} : memref<?x2x4xf32>
// CHECK: %[[SO:.*]] = memref.alloc(%[[N]]) : memref<?x2x4xf32>
// CHECK: %[[SL:.*]] = memref.alloc(%[[N]]) : memref<?x2xf32>
// CHECK: %[[X:.*]] = memref.load %[[IO]][%{{.*}}, %{{.*}}, %{{.*}}] : memref<?x2x4xf32>
// CHECK-NEXT: memref.store %[[X]], %[[SO]][%{{.*}}, %{{.*}}, %{{.*}}] : memref<?x2x4xf32>
// CHECK: %[[Y:.*]] = memref.load %[[IL]][%{{.*}}, %{{.*}}] : memref<?x2xf32>
// CHECK-NEXT: memref.store %[[Y]], %[[SL]][%{{.*}}, %{{.*}}] : memref<?x2xf32>
// The write to the source after the load does not reach the state ...
// CHECK: memref.store %{{.*}}, %[[IO]]
// ... which is then stored out with its LSE,
// CHECK: %[[A:.*]] = memref.load %[[SO]][%{{.*}}, %{{.*}}, %{{.*}}] : memref<?x2x4xf32>
// CHECK-NEXT: memref.store %[[A]], %[[OO]][%{{.*}}, %{{.*}}, %{{.*}}] : memref<?x2x4xf32>
// CHECK: %[[B:.*]] = memref.load %[[SL]][%{{.*}}, %{{.*}}] : memref<?x2xf32>
// CHECK-NEXT: memref.store %[[B]], %[[OL]][%{{.*}}, %{{.*}}] : memref<?x2xf32>
// ... and without.
// CHECK: %[[C:.*]] = memref.load %[[SO]][%{{.*}}, %{{.*}}, %{{.*}}] : memref<?x2x4xf32>
// CHECK-NEXT: memref.store %[[C]], %[[OO]][%{{.*}}, %{{.*}}, %{{.*}}] : memref<?x2x4xf32>
// CHECK-NOT: memref.store %{{.*}}, %[[OL]]
// CHECK: memref.dealloc %[[SO]]
// CHECK-NEXT: memref.dealloc %[[SL]]
// CHECK-NEXT: return
func.func @load_store(%io: memref<?x2x4xf32>, %il: memref<?x2xf32>, %oo: memref<?x2x4xf32>, %ol: memref<?x2xf32>) {
  %s = kv.load_state %io, %il : memref<?x2x4xf32>, memref<?x2xf32> -> !s
  %c0 = arith.constant 0 : index
  %f = arith.constant 7.0 : f32
  memref.store %f, %io[%c0, %c0, %c0] : memref<?x2x4xf32>
  kv.store_state %s, %oo, %ol : !s, memref<?x2x4xf32>, memref<?x2xf32>
  kv.store_state %s, %oo : !s, memref<?x2x4xf32>
  return
}

// -----

// A state used inside a nested region is freed at the end of its own block,
// after the region; the use inside the region is lowered in place.
!s = !kv.state<?x2x4xf32, base = e>
// CHECK-LABEL: func.func @nested_use
// CHECK: %[[SO:.*]] = memref.alloc(%{{.*}}) : memref<?x2x4xf32>
// CHECK: scf.if
// CHECK: memref.load %[[SO]]
// CHECK: }
// CHECK: memref.dealloc %[[SO]]
// CHECK: return
func.func @nested_use(%io: memref<?x2x4xf32>, %il: memref<?x2xf32>, %oo: memref<?x2x4xf32>, %c: i1) {
  %s = kv.load_state %io, %il : memref<?x2x4xf32>, memref<?x2xf32> -> !s
  scf.if %c {
    kv.store_state %s, %oo : !s, memref<?x2x4xf32>
  }
  return
}
