// RUN: kvir-opt %s --kv-to-loops -split-input-file | FileCheck %s

// Causal and sliding-window visibility become the bounds of the key loop:
// with p_i = kv_len - qo_len + i, causal keeps j < min(kv_len, p_i + 1) and
// window_left = w keeps j >= max(0, p_i - w).

!rag = !kv.ragged<kv_heads = 1, head_dim = 4, head_dim_v = 4, dtype = f32>

// CHECK-LABEL: func.func @causal_window
// The request loop; kv_len = kv_indptr[b+1] - kv_indptr[b].
// CHECK: scf.for %{{[^ ]*}} = %{{.*}} iter_args(%{{[^ ]*}} = %c0{{[_0-9]*}}) -> (index)
// CHECK: %[[KVLEN:.*]] = arith.subi
// CHECK: %[[QOLEN:.*]] = arith.subi
// CHECK: scf.for %[[I:[^ ]*]] = %{{.*}} to %[[QOLEN]]
// CHECK: %[[BASE:.*]] = arith.subi %[[KVLEN]], %[[QOLEN]] : index
// CHECK: %[[POS:.*]] = arith.addi %[[BASE]], %[[I]] : index
// CHECK: %[[POS1:.*]] = arith.addi %[[POS]], %c1{{[_0-9]*}} : index
// CHECK: %[[HI:.*]] = arith.minsi %[[KVLEN]], %[[POS1]] : index
// CHECK: %[[W:.*]] = arith.constant 5 : index
// CHECK: %[[POSW:.*]] = arith.subi %[[POS]], %[[W]] : index
// CHECK: %[[LO:.*]] = arith.maxsi %c0{{[_0-9]*}}, %[[POSW]] : index
// An empty range when lo > hi.
// CHECK: %[[UB:.*]] = arith.maxsi %[[LO]], %[[HI]] : index
// CHECK: scf.for %{{[^ ]*}} = %[[LO]] to %[[UB]] step %{{[^ ]*}} iter_args
func.func @causal_window(%q: memref<?x1x4xf32>, %qo: memref<?xi32>, %k: memref<?x1x4xf32>, %v: memref<?x1x4xf32>, %kvi: memref<?xi32>, %o: memref<?x1x4xf32>) {
  %kv = kv.ragged_view %k, %v, %kvi : memref<?x1x4xf32>, memref<?x1x4xf32>, memref<?xi32> -> !rag
  %s = kv.prefill %q, %qo, %kv {causal, window_left = 5 : i64} : memref<?x1x4xf32>, memref<?xi32>, !rag -> !kv.state<?x1x4xf32, base = e>
  kv.store_state %s, %o : !kv.state<?x1x4xf32, base = e>, memref<?x1x4xf32>
  return
}

// -----

!rag = !kv.ragged<kv_heads = 1, head_dim = 4, head_dim_v = 4, dtype = f32>

// Causal alone: keys [0, min(kv_len, p_i + 1)).
// CHECK-LABEL: func.func @causal
// The request loop; kv_len = kv_indptr[b+1] - kv_indptr[b].
// CHECK: scf.for %{{[^ ]*}} = %{{.*}} iter_args(%{{[^ ]*}} = %c0{{[_0-9]*}}) -> (index)
// CHECK: %[[KVLEN:.*]] = arith.subi
// CHECK: %[[QOLEN:.*]] = arith.subi
// CHECK: scf.for %[[I:[^ ]*]] = %{{.*}} to %[[QOLEN]]
// CHECK: %[[BASE:.*]] = arith.subi %[[KVLEN]], %[[QOLEN]] : index
// CHECK: %[[POS:.*]] = arith.addi %[[BASE]], %[[I]] : index
// CHECK: %[[POS1:.*]] = arith.addi %[[POS]], %c1{{[_0-9]*}} : index
// CHECK: %[[HI:.*]] = arith.minsi %[[KVLEN]], %[[POS1]] : index
// CHECK-NOT: arith.maxsi %c0{{[_0-9]*}}, %{{.*}}
// CHECK: %[[UB:.*]] = arith.maxsi %c0{{[_0-9]*}}, %[[HI]] : index
// CHECK: scf.for %{{[^ ]*}} = %c0{{[_0-9]*}} to %[[UB]] step %{{[^ ]*}} iter_args
func.func @causal(%q: memref<?x1x4xf32>, %qo: memref<?xi32>, %k: memref<?x1x4xf32>, %v: memref<?x1x4xf32>, %kvi: memref<?xi32>, %o: memref<?x1x4xf32>) {
  %kv = kv.ragged_view %k, %v, %kvi : memref<?x1x4xf32>, memref<?x1x4xf32>, memref<?xi32> -> !rag
  %s = kv.prefill %q, %qo, %kv {causal} : memref<?x1x4xf32>, memref<?xi32>, !rag -> !kv.state<?x1x4xf32, base = e>
  kv.store_state %s, %o : !kv.state<?x1x4xf32, base = e>, memref<?x1x4xf32>
  return
}

// -----

!kvt = !kv.paged<page_size = 4, kv_heads = 1, head_dim = 4, head_dim_v = 4, dtype = f32, layout = nhd, storage = combined, table = block_table>

// Decode with a window: the query sits at kv_len - 1, keys j >= kv_len - 1 - w,
// and no causal bound (every key is in the past).
// CHECK-LABEL: func.func @decode_window
// CHECK: %[[LEN32:.*]] = memref.load %{{.*}} : memref<?xi32>
// CHECK: %[[KVLEN:.*]] = arith.index_cast %[[LEN32]] : i32 to index
// CHECK: %[[BASE:.*]] = arith.subi %[[KVLEN]], %[[QOLEN:.*]] : index
// CHECK: %[[POS:.*]] = arith.addi %[[BASE]], %{{.*}} : index
// CHECK-NOT: arith.minsi
// CHECK: %[[W:.*]] = arith.constant 2 : index
// CHECK: %[[POSW:.*]] = arith.subi %[[POS]], %[[W]] : index
// CHECK: %[[LO:.*]] = arith.maxsi %c0{{[_0-9]*}}, %[[POSW]] : index
// CHECK: %[[UB:.*]] = arith.maxsi %[[LO]], %[[KVLEN]] : index
// CHECK: scf.for %{{[^ ]*}} = %[[LO]] to %[[UB]] step %{{[^ ]*}} iter_args
func.func @decode_window(%q: memref<?x1x4xf32>, %pool: memref<?x2x4x1x4xf32>, %bt: memref<?x?xi32>, %lens: memref<?xi32>, %o: memref<?x1x4xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x4x1x4xf32>) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) : !kvt
  %s = kv.decode %q, %kv {window_left = 2 : i64} : memref<?x1x4xf32>, !kvt -> !kv.state<?x1x4xf32, base = e>
  kv.store_state %s, %o : !kv.state<?x1x4xf32, base = e>, memref<?x1x4xf32>
  return
}
