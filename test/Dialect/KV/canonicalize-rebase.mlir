// RUN: kvir-opt %s -canonicalize -split-input-file | FileCheck %s

// RebaseOp::fold (KVCanonicalize.cpp): rebases compose, and a same-base
// rebase is dropped only where its input can never carry a +inf LSE (the
// FlashMLA empty-set convention that rebase normalizes).

!e = !kv.state<?x4x8xf32, base = e>
!two = !kv.state<?x4x8xf32, base = 2>

// rebase(rebase(x)) -> rebase(x).
// CHECK-LABEL: func.func @compose
// CHECK-SAME: (%[[X:[^:]*]]: !kv.state<?x4x8xf32, base = 2>)
// CHECK-NEXT: %[[R:.*]] = kv.rebase %[[X]] : <?x4x8xf32, base = 2> -> <?x4x8xf32, base = e>
// CHECK-NEXT: return %[[R]]
func.func @compose(%x: !two) -> !e {
  %a = kv.rebase %x : !two -> !e
  %b = kv.rebase %a : !e -> !two
  %c = kv.rebase %b : !two -> !e
  return %c : !e
}

// -----

!e = !kv.state<?x4x8xf32, base = e>
!two = !kv.state<?x4x8xf32, base = 2>

// e -> 2 -> e over a function argument composes to a same-base rebase, which
// stays: the argument may hold +inf.
// CHECK-LABEL: func.func @compose_to_same_base
// CHECK-SAME: (%[[X:[^:]*]]: !kv.state<?x4x8xf32, base = e>)
// CHECK-NEXT: %[[R:.*]] = kv.rebase %[[X]] : <?x4x8xf32, base = e> -> <?x4x8xf32, base = e>
// CHECK-NEXT: return %[[R]]
func.func @compose_to_same_base(%x: !e) -> !e {
  %a = kv.rebase %x : !e -> !two
  %b = kv.rebase %a : !two -> !e
  return %b : !e
}

// -----

!kvt = !kv.paged<page_size = 4, kv_heads = 4, head_dim = 8, head_dim_v = 8, dtype = f32, layout = nhd, storage = combined, table = csr>
!two = !kv.state<?x4x8xf32, base = 2>

// A decode result is normalized: a same-base rebase of it folds away.
// CHECK-LABEL: func.func @same_base_decode
// CHECK-NEXT: %[[D:.*]] = kv.decode
// CHECK-NEXT: return %[[D]]
func.func @same_base_decode(%q: memref<?x4x8xf32>, %kv: !kvt) -> !two {
  %d = kv.decode %q, %kv : memref<?x4x8xf32>, !kvt -> !two
  %r = kv.rebase %d : !two -> !two
  return %r : !two
}

// -----

!kvt = !kv.paged<page_size = 4, kv_heads = 4, head_dim = 8, head_dim_v = 8, dtype = f32, layout = nhd, storage = combined, table = csr>
!e = !kv.state<?x4x8xf32, base = e>
!two = !kv.state<?x4x8xf32, base = 2>

// ... also once a round trip through the other base has composed to it.
// CHECK-LABEL: func.func @round_trip_decode
// CHECK-NEXT: %[[D:.*]] = kv.decode
// CHECK-NEXT: return %[[D]]
func.func @round_trip_decode(%q: memref<?x4x8xf32>, %kv: !kvt) -> !two {
  %d = kv.decode %q, %kv : memref<?x4x8xf32>, !kvt -> !two
  %a = kv.rebase %d : !two -> !e
  %b = kv.rebase %a : !e -> !two
  return %b : !two
}

// -----

!e = !kv.state<?x4x8xf32, base = e>

// A base-changing rebase of a normalized state is a real conversion: kept.
// CHECK-LABEL: func.func @base_change_kept
// CHECK: %[[S:.*]] = kv.empty_state
// CHECK-NEXT: %[[R:.*]] = kv.rebase %[[S]] : <?x4x8xf32, base = e> -> <?x4x8xf32, base = 2>
// CHECK-NEXT: return %[[R]]
func.func @base_change_kept(%n: index) -> !kv.state<?x4x8xf32, base = 2> {
  %s = kv.empty_state %n : !e
  %r = kv.rebase %s : !e -> !kv.state<?x4x8xf32, base = 2>
  return %r : !kv.state<?x4x8xf32, base = 2>
}

// -----

!e = !kv.state<?x4x8xf32, base = e>

// Merge, merge_partitions and empty_state results are normalized too.
// CHECK-LABEL: func.func @same_base_normalized
// CHECK-SAME: (%[[A:[^:]*]]: {{.*}}, %[[B:[^:]*]]: {{.*}}, %[[P:[^:]*]]: {{.*}})
// CHECK-NEXT: %[[M:.*]] = kv.merge %[[A]], %[[B]]
// CHECK-NEXT: %[[MP:.*]] = kv.merge_partitions %[[P]]
// CHECK-NOT: kv.rebase
// CHECK: return %[[M]], %[[MP]]
func.func @same_base_normalized(%a: !e, %b: !e, %p: !kv.state<?x4x8xf32, base = e, partitions = 2>) -> (!e, !e) {
  %m = kv.merge %a, %b : !e, !e -> !e
  %rm = kv.rebase %m : !e -> !e
  %mp = kv.merge_partitions %p : !kv.state<?x4x8xf32, base = e, partitions = 2> -> !e
  %rmp = kv.rebase %mp : !e -> !e
  return %rm, %rmp : !e, !e
}

// -----

!e = !kv.state<?x4x8xf32, base = e>

// A loaded state may carry +inf for an empty set (FlashMLA): the same-base
// rebase that normalizes it must stay.
// CHECK-LABEL: func.func @same_base_load_state_kept
// CHECK-NEXT: %[[L:.*]] = kv.load_state
// CHECK-NEXT: %[[R:.*]] = kv.rebase %[[L]] : <?x4x8xf32, base = e> -> <?x4x8xf32, base = e>
// CHECK-NEXT: return %[[R]]
func.func @same_base_load_state_kept(%o: memref<?x4x8xf32>, %l: memref<?x4xf32>) -> !e {
  %s = kv.load_state %o, %l : memref<?x4x8xf32>, memref<?x4xf32> -> !e
  %r = kv.rebase %s : !e -> !e
  return %r : !e
}

// -----

!e = !kv.state<?x4x8xf32, base = e>
!two = !kv.state<?x4x8xf32, base = 2>

// Composition keeps the normalization of a loaded state: the two rebases
// become one same-base rebase of the load, not nothing.
// CHECK-LABEL: func.func @load_state_round_trip
// CHECK-NEXT: %[[L:.*]] = kv.load_state
// CHECK-NEXT: %[[R:.*]] = kv.rebase %[[L]] : <?x4x8xf32, base = e> -> <?x4x8xf32, base = e>
// CHECK-NEXT: return %[[R]]
func.func @load_state_round_trip(%o: memref<?x4x8xf32>, %l: memref<?x4xf32>) -> !e {
  %s = kv.load_state %o, %l : memref<?x4x8xf32>, memref<?x4xf32> -> !e
  %a = kv.rebase %s : !e -> !two
  %b = kv.rebase %a : !two -> !e
  return %b : !e
}

// -----

!e = !kv.state<?x4x8xf32, base = e>

// A same-base rebase of a same-base rebase of a loaded state: one remains.
// CHECK-LABEL: func.func @load_state_twice
// CHECK-NEXT: %[[L:.*]] = kv.load_state
// CHECK-NEXT: %[[R:.*]] = kv.rebase %[[L]] :
// CHECK-NEXT: return %[[R]]
func.func @load_state_twice(%o: memref<?x4x8xf32>, %l: memref<?x4xf32>) -> !e {
  %s = kv.load_state %o, %l : memref<?x4x8xf32>, memref<?x4xf32> -> !e
  %a = kv.rebase %s : !e -> !e
  %b = kv.rebase %a : !e -> !e
  return %b : !e
}
