// RUN: kvir-opt %s -canonicalize -split-input-file | FileCheck %s

// The merge algebra as canonicalization (KVCanonicalize.cpp): merge is
// associative and commutative with the empty state as identity, and rebases
// compose.

!s = !kv.state<?x4x8xf32, base = e>

// merge(merge(a, b), c) -> merge(a, b, c) when the inner merge has one use.
// CHECK-LABEL: func.func @flatten
// CHECK-SAME: (%[[A:[^:]*]]: !kv.state<?x4x8xf32, base = e>, %[[B:[^:]*]]: !kv.state<?x4x8xf32, base = e>, %[[C:[^:]*]]: !kv.state<?x4x8xf32, base = e>)
// CHECK-NEXT: %[[M:.*]] = kv.merge %[[A]], %[[B]], %[[C]] : !kv.state<?x4x8xf32, base = e>, !kv.state<?x4x8xf32, base = e>, !kv.state<?x4x8xf32, base = e> -> <?x4x8xf32, base = e>
// CHECK-NEXT: return %[[M]]
func.func @flatten(%a: !s, %b: !s, %c: !s) -> !s {
  %ab = kv.merge %a, %b : !s, !s -> !s
  %abc = kv.merge %ab, %c : !s, !s -> !s
  return %abc : !s
}

// -----

!s = !kv.state<?x4x8xf32, base = e>

// Flattening reaches through several levels on both sides.
// CHECK-LABEL: func.func @flatten_deep
// CHECK-SAME: (%[[A:[^:]*]]: {{.*}}, %[[B:[^:]*]]: {{.*}}, %[[C:[^:]*]]: {{.*}}, %[[D:[^:]*]]: {{.*}}, %[[E:[^:]*]]: {{.*}})
// CHECK-NEXT: %[[M:.*]] = kv.merge %[[A]], %[[B]], %[[C]], %[[D]], %[[E]] :
// CHECK-NEXT: return %[[M]]
func.func @flatten_deep(%a: !s, %b: !s, %c: !s, %d: !s, %e: !s) -> !s {
  %ab = kv.merge %a, %b : !s, !s -> !s
  %abc = kv.merge %ab, %c : !s, !s -> !s
  %de = kv.merge %d, %e : !s, !s -> !s
  %all = kv.merge %abc, %de : !s, !s -> !s
  return %all : !s
}

// -----

!s = !kv.state<?x4x8xf32, base = e>

// An inner merge with another use is kept: flattening would compute it twice.
// CHECK-LABEL: func.func @multi_use_kept
// CHECK-SAME: (%[[A:[^:]*]]: {{.*}}, %[[B:[^:]*]]: {{.*}}, %[[C:[^:]*]]: {{.*}})
// CHECK-NEXT: %[[AB:.*]] = kv.merge %[[A]], %[[B]] :
// CHECK-NEXT: %[[ABC:.*]] = kv.merge %[[AB]], %[[C]] :
// CHECK-NEXT: return %[[AB]], %[[ABC]]
func.func @multi_use_kept(%a: !s, %b: !s, %c: !s) -> (!s, !s) {
  %ab = kv.merge %a, %b : !s, !s -> !s
  %abc = kv.merge %ab, %c : !s, !s -> !s
  return %ab, %abc : !s, !s
}

// -----

!s = !kv.state<?x4x8xf32, base = e>

// Used twice by the same merge is two uses: kept as well.
// CHECK-LABEL: func.func @same_merge_twice
// CHECK-SAME: (%[[A:[^:]*]]: {{.*}}, %[[B:[^:]*]]: {{.*}})
// CHECK-NEXT: %[[AB:.*]] = kv.merge %[[A]], %[[B]] :
// CHECK-NEXT: %[[M:.*]] = kv.merge %[[AB]], %[[AB]] :
// CHECK-NEXT: return %[[M]]
func.func @same_merge_twice(%a: !s, %b: !s) -> !s {
  %ab = kv.merge %a, %b : !s, !s -> !s
  %m = kv.merge %ab, %ab : !s, !s -> !s
  return %m : !s
}

// -----

!s = !kv.state<?x4x8xf32, base = e>

// An inner merge outside a loop is not pulled into it: it would be
// recomputed on every iteration.
// CHECK-LABEL: func.func @other_block_kept
// CHECK-SAME: (%[[A:[^:]*]]: {{.*}}, %[[B:[^:]*]]: {{.*}}, %[[C:[^:]*]]: {{.*}}, %[[O:[^:]*]]: memref<?x4x8xf32>
// CHECK: %[[AB:.*]] = kv.merge %[[A]], %[[B]] :
// CHECK: scf.for
// CHECK-NEXT: %[[M:.*]] = kv.merge %[[AB]], %[[C]] :
// CHECK-NEXT: kv.store_state %[[M]], %[[O]]
func.func @other_block_kept(%a: !s, %b: !s, %c: !s, %o: memref<?x4x8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %ab = kv.merge %a, %b : !s, !s -> !s
  scf.for %i = %c0 to %n step %c1 {
    %m = kv.merge %ab, %c : !s, !s -> !s
    kv.store_state %m, %o : !s, memref<?x4x8xf32>
  }
  return
}

// -----

!s = !kv.state<?x4x8xf32, base = e>

// merge(a, empty, b) -> merge(a, b).
// CHECK-LABEL: func.func @drop_empty
// CHECK-SAME: (%[[A:[^:]*]]: {{.*}}, %[[B:[^:]*]]: {{.*}}, %[[N:[^:]*]]: index)
// CHECK-NOT: kv.empty_state
// CHECK-NEXT: %[[M:.*]] = kv.merge %[[A]], %[[B]] : !kv.state<?x4x8xf32, base = e>, !kv.state<?x4x8xf32, base = e> -> <?x4x8xf32, base = e>
// CHECK-NEXT: return %[[M]]
func.func @drop_empty(%a: !s, %b: !s, %n: index) -> !s {
  %e = kv.empty_state %n : !s
  %m = kv.merge %a, %e, %b : !s, !s, !s -> !s
  return %m : !s
}

// -----

!s = !kv.state<?x4x8xf32, base = e>

// merge(a, empty) -> a: the empty operand drops out, then the one-operand
// merge folds to its operand.
// CHECK-LABEL: func.func @merge_with_empty
// CHECK-SAME: (%[[A:[^:]*]]: {{.*}}, %[[N:[^:]*]]: index)
// CHECK-NEXT: return %[[A]]
func.func @merge_with_empty(%a: !s, %n: index) -> !s {
  %e = kv.empty_state %n : !s
  %m = kv.merge %e, %a : !s, !s -> !s
  return %m : !s
}

// -----

!s = !kv.state<?x4x8xf32, base = e>

// CHECK-LABEL: func.func @single_operand
// CHECK-SAME: (%[[A:[^:]*]]: {{.*}})
// CHECK-NEXT: return %[[A]]
func.func @single_operand(%a: !s) -> !s {
  %m = kv.merge %a : !s -> !s
  return %m : !s
}

// -----

// All operands empty: the result is the empty state.
// CHECK-LABEL: func.func @all_empty
// CHECK-NEXT: %[[E:.*]] = kv.empty_state : <2x4x8xf16, base = 2>
// CHECK-NEXT: return %[[E]]
func.func @all_empty() -> !kv.state<2x4x8xf16, base = 2> {
  %e0 = kv.empty_state : !kv.state<2x4x8xf16, base = 2>
  %e1 = kv.empty_state : !kv.state<2x4x8xf16, base = 2>
  %m = kv.merge %e0, %e1, %e0 : !kv.state<2x4x8xf16, base = 2>, !kv.state<2x4x8xf16, base = 2>, !kv.state<2x4x8xf16, base = 2> -> !kv.state<2x4x8xf16, base = 2>
  return %m : !kv.state<2x4x8xf16, base = 2>
}

// -----

!s = !kv.state<?x4x8xf32, base = e>

// Flattening and dropping empties together: merge(merge(a, empty), merge(b, c)).
// CHECK-LABEL: func.func @flatten_and_drop
// CHECK-SAME: (%[[A:[^:]*]]: {{.*}}, %[[B:[^:]*]]: {{.*}}, %[[C:[^:]*]]: {{.*}}, %[[N:[^:]*]]: index)
// CHECK-NEXT: %[[M:.*]] = kv.merge %[[A]], %[[B]], %[[C]] :
// CHECK-NEXT: return %[[M]]
func.func @flatten_and_drop(%a: !s, %b: !s, %c: !s, %n: index) -> !s {
  %e = kv.empty_state %n : !s
  %ae = kv.merge %a, %e : !s, !s -> !s
  %bc = kv.merge %b, %c : !s, !s -> !s
  %m = kv.merge %ae, %bc : !s, !s -> !s
  return %m : !s
}

// -----

// A sink merge folds into the attention op that made the state.
!csr = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!s8 = !kv.state<?x8x64xf16, base = 2>
// CHECK-LABEL: func.func @fold_sinks
// CHECK-SAME: %[[SINKS:[^:]*]]: memref<8xf32>
// CHECK-NEXT: %[[S:.*]] = kv.decode %{{.*}}, %{{.*}} sinks(%[[SINKS]] : memref<8xf32>) {window_left = 7 : i64}
// CHECK-NEXT: return %[[S]]
func.func @fold_sinks(%q: memref<?x8x64xf16>, %kv: !csr, %sinks: memref<8xf32>) -> !s8 {
  %s = kv.decode %q, %kv {window_left = 7 : i64} : memref<?x8x64xf16>, !csr -> !s8
  %r = kv.merge_sinks %s, %sinks : !s8, memref<8xf32>
  return %r : !s8
}

// -----

// Not when the op has sinks already, when the state has another use, or
// when the sinks are defined after the op.
!csr = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!s8 = !kv.state<?x8x64xf16, base = 2>
// CHECK-LABEL: func.func @keep_sinks
// CHECK-COUNT-3: kv.merge_sinks
func.func @keep_sinks(%q: memref<?x8x64xf16>, %kv: !csr, %sinks: memref<8xf32>)
    -> (!s8, !s8, !s8, !s8) {
  %a = kv.decode %q, %kv sinks(%sinks : memref<8xf32>) : memref<?x8x64xf16>, !csr -> !s8
  %a2 = kv.merge_sinks %a, %sinks : !s8, memref<8xf32>
  %b = kv.decode %q, %kv : memref<?x8x64xf16>, !csr -> !s8
  %b2 = kv.merge_sinks %b, %sinks : !s8, memref<8xf32>
  %c = kv.decode %q, %kv {window_left = 3 : i64} : memref<?x8x64xf16>, !csr -> !s8
  %late = memref.alloc() : memref<8xf32>
  %c2 = kv.merge_sinks %c, %late : !s8, memref<8xf32>
  return %a2, %b, %b2, %c2 : !s8, !s8, !s8, !s8
}
