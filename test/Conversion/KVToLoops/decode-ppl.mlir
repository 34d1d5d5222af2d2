// RUN: kvir-opt %s --kv-to-loops -split-input-file | FileCheck %s

// OpenPPL cache layouts 0..3 over a token axis with a layer index. The table
// yields a token index (token_table: cachestarts[b][t / page_size] +
// t % page_size; token_offset: cachestarts[b] + t); the layout sees token
// page * page_size + slot of that index, and the layer is a constant index.

!kvt = !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f32, layout = ppl0, storage = combined, table = token_table, layer = 3>

// ppl0: (T, L, 2, H, D).
// CHECK-LABEL: func.func @ppl0
// CHECK-SAME: (%{{[^:]*}}: memref<?x2x8xf32>, %[[POOL:[^:]*]]: memref<?x4x2x2x8xf32>, %[[STARTS:[^:]*]]: memref<?x?xi32>
// CHECK: scf.for %[[REQ:[^ ]*]] =
// CHECK: scf.for %[[HEAD:[^ ]*]] = %c0 to %c2{{[_0-9]*}} step
// CHECK: %[[KVH:.*]] = arith.divui %[[HEAD]], %c1{{.*}} : index
// CHECK: scf.for %[[J:[^ ]*]] = {{.*}} iter_args
// CHECK: scf.for %[[D:[^ ]*]] = {{.*}} iter_args
// CHECK-DAG: %[[LP:.*]] = arith.divui %[[J]], %c4{{.*}} : index
// CHECK-DAG: %[[S0:.*]] = arith.remui %[[J]], %c4{{.*}} : index
// CHECK-DAG: %[[ST:.*]] = memref.load %[[STARTS]][%[[REQ]], %[[LP]]] : memref<?x?xi32>
// CHECK-DAG: %[[STI:.*]] = arith.index_cast %[[ST]] : i32 to index
// CHECK-DAG: %[[TI:.*]] = arith.addi %[[STI]], %[[S0]] : index
// CHECK-DAG: %[[PG:.*]] = arith.divui %[[TI]], %c4{{.*}} : index
// CHECK-DAG: %[[SL:.*]] = arith.remui %[[TI]], %c4{{.*}} : index
// CHECK-DAG: %[[M:.*]] = arith.muli %[[PG]], %c4{{.*}} : index
// CHECK-DAG: %[[TOK:.*]] = arith.addi %[[M]], %[[SL]] : index
// CHECK: memref.load %[[POOL]][%[[TOK]], %c3{{(_[0-9]+)?}}, %c0{{(_[0-9]+)?}}, %[[KVH]], %[[D]]] : memref<?x4x2x2x8xf32>
func.func @ppl0(%q: memref<?x2x8xf32>, %pool: memref<?x4x2x2x8xf32>, %starts: memref<?x?xi32>, %lens: memref<?xi32>, %o: memref<?x2x8xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x4x2x2x8xf32>) tables(%starts, %lens : memref<?x?xi32>, memref<?xi32>) : !kvt
  %s = kv.decode %q, %kv : memref<?x2x8xf32>, !kvt -> !kv.state<?x2x8xf32, base = e>
  kv.store_state %s, %o : !kv.state<?x2x8xf32, base = e>, memref<?x2x8xf32>
  return
}

// -----

!kvt = !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f32, layout = ppl1, storage = combined, table = token_offset, layer = 1>

// ppl1: (L, T, 2, H, D), with token_offset: cachestarts[b] + t.
// CHECK-LABEL: func.func @ppl1
// CHECK-SAME: (%{{[^:]*}}: memref<?x2x8xf32>, %[[POOL:[^:]*]]: memref<2x?x2x2x8xf32>, %[[STARTS:[^:]*]]: memref<?xi32>
// CHECK: scf.for %[[REQ:[^ ]*]] =
// CHECK: scf.for %[[HEAD:[^ ]*]] = %c0 to %c2{{[_0-9]*}} step
// CHECK: %[[KVH:.*]] = arith.divui %[[HEAD]], %c1{{.*}} : index
// CHECK: scf.for %[[J:[^ ]*]] = {{.*}} iter_args
// CHECK: scf.for %[[D:[^ ]*]] = {{.*}} iter_args
// CHECK-DAG: %[[ST:.*]] = memref.load %[[STARTS]][%[[REQ]]] : memref<?xi32>
// CHECK-DAG: %[[STI:.*]] = arith.index_cast %[[ST]] : i32 to index
// CHECK-DAG: %[[TI:.*]] = arith.addi %[[STI]], %[[J]] : index
// CHECK-DAG: %[[PG:.*]] = arith.divui %[[TI]], %c4{{.*}} : index
// CHECK-DAG: %[[SL:.*]] = arith.remui %[[TI]], %c4{{.*}} : index
// CHECK-DAG: %[[M:.*]] = arith.muli %[[PG]], %c4{{.*}} : index
// CHECK-DAG: %[[TOK:.*]] = arith.addi %[[M]], %[[SL]] : index
// CHECK: memref.load %[[POOL]][%c1{{(_[0-9]+)?}}, %[[TOK]], %c0{{(_[0-9]+)?}}, %[[KVH]], %[[D]]] : memref<2x?x2x2x8xf32>
func.func @ppl1(%q: memref<?x2x8xf32>, %pool: memref<2x?x2x2x8xf32>, %starts: memref<?xi32>, %lens: memref<?xi32>, %o: memref<?x2x8xf32>) {
  %kv = kv.paged_view pools(%pool : memref<2x?x2x2x8xf32>) tables(%starts, %lens : memref<?xi32>, memref<?xi32>) : !kvt
  %s = kv.decode %q, %kv : memref<?x2x8xf32>, !kvt -> !kv.state<?x2x8xf32, base = e>
  kv.store_state %s, %o : !kv.state<?x2x8xf32, base = e>, memref<?x2x8xf32>
  return
}

// -----

!kvt = !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f32, layout = ppl2, storage = combined, table = token_table, layer = 2>

// ppl2: (L, 2, T, H, D).
// CHECK-LABEL: func.func @ppl2
// CHECK-SAME: (%{{[^:]*}}: memref<?x2x8xf32>, %[[POOL:[^:]*]]: memref<4x2x?x2x8xf32>
// CHECK: scf.for %[[HEAD:[^ ]*]] = %c0 to %c2{{[_0-9]*}} step
// CHECK: %[[KVH:.*]] = arith.divui %[[HEAD]], %c1{{.*}} : index
// CHECK: scf.for %[[J:[^ ]*]] = {{.*}} iter_args
// CHECK: scf.for %[[D:[^ ]*]] = {{.*}} iter_args
// CHECK-DAG: %[[M:.*]] = arith.muli %{{.*}}, %c4{{.*}} : index
// CHECK-DAG: %[[TOK:.*]] = arith.addi %[[M]], %{{.*}} : index
// CHECK: memref.load %[[POOL]][%c2{{(_[0-9]+)?}}, %c0{{(_[0-9]+)?}}, %[[TOK]], %[[KVH]], %[[D]]] : memref<4x2x?x2x8xf32>
func.func @ppl2(%q: memref<?x2x8xf32>, %pool: memref<4x2x?x2x8xf32>, %starts: memref<?x?xi32>, %lens: memref<?xi32>, %o: memref<?x2x8xf32>) {
  %kv = kv.paged_view pools(%pool : memref<4x2x?x2x8xf32>) tables(%starts, %lens : memref<?x?xi32>, memref<?xi32>) : !kvt
  %s = kv.decode %q, %kv : memref<?x2x8xf32>, !kvt -> !kv.state<?x2x8xf32, base = e>
  kv.store_state %s, %o : !kv.state<?x2x8xf32, base = e>, memref<?x2x8xf32>
  return
}

// -----

!kvt = !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f32, layout = ppl3, storage = combined, table = token_table, layer = 2>

// ppl3: (L, 2, H, T, D); V sits at kv = 1.
// CHECK-LABEL: func.func @ppl3
// CHECK-SAME: (%{{[^:]*}}: memref<?x2x8xf32>, %[[POOL:[^:]*]]: memref<3x2x2x?x8xf32>
// CHECK: scf.for %[[HEAD:[^ ]*]] = %c0 to %c2{{[_0-9]*}} step
// CHECK: %[[KVH:.*]] = arith.divui %[[HEAD]], %c1{{.*}} : index
// CHECK: scf.for %[[J:[^ ]*]] = {{.*}} iter_args
// CHECK: scf.for %[[D:[^ ]*]] = {{.*}} iter_args
// CHECK-DAG: %[[M:.*]] = arith.muli %{{.*}}, %c4{{.*}} : index
// CHECK-DAG: %[[TOK:.*]] = arith.addi %[[M]], %{{.*}} : index
// CHECK: memref.load %[[POOL]][%c2{{(_[0-9]+)?}}, %c0{{(_[0-9]+)?}}, %[[KVH]], %[[TOK]], %[[D]]] : memref<3x2x2x?x8xf32>
// CHECK: scf.for %[[DV:[^ ]*]] =
// CHECK: %[[VM:.*]] = arith.muli %{{.*}}, %c4{{.*}} : index
// CHECK: %[[VTOK:.*]] = arith.addi %[[VM]], %{{.*}} : index
// CHECK: memref.load %[[POOL]][%c2{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}, %[[KVH]], %[[VTOK]], %[[DV]]] : memref<3x2x2x?x8xf32>
func.func @ppl3(%q: memref<?x2x8xf32>, %pool: memref<3x2x2x?x8xf32>, %starts: memref<?x?xi32>, %lens: memref<?xi32>, %o: memref<?x2x8xf32>) {
  %kv = kv.paged_view pools(%pool : memref<3x2x2x?x8xf32>) tables(%starts, %lens : memref<?x?xi32>, memref<?xi32>) : !kvt
  %s = kv.decode %q, %kv : memref<?x2x8xf32>, !kvt -> !kv.state<?x2x8xf32, base = e>
  kv.store_state %s, %o : !kv.state<?x2x8xf32, base = e>, memref<?x2x8xf32>
  return
}
