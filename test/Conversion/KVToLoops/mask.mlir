// RUN: kvir-opt %s --kv-to-loops -split-input-file | FileCheck %s

// Custom masks on kv.prefill: entry k = i * kv_len + j of request b's
// block. An i1 mask is one bool per entry: element offset_b + k. An i8 mask
// is bit-packed in little bit order with each request's block starting at a
// byte boundary: bit k % 8 of byte offset_b + k / 8. The key update is
// guarded by the entry, and the request offset advances by the block size
// (qo_len * kv_len bools, or ceil(qo_len * kv_len / 8) bytes).

!rag = !kv.ragged<kv_heads = 1, head_dim = 4, head_dim_v = 4, dtype = f32>

// CHECK-LABEL: func.func @bool_mask
// CHECK-SAME: %[[M:[^:]*]]: memref<?xi1>
// The request loop carries the mask offset.
// CHECK: %{{.*}} = scf.for %[[REQ:[^ ]*]] = %{{.*}} iter_args(%[[OFF:[^ ]*]] = %c0{{[_0-9]*}}) -> (index)
// CHECK: %[[KVLEN:.*]] = arith.subi
// CHECK: %[[QOLEN:.*]] = arith.subi
// CHECK: scf.for %[[I:[^ ]*]] = %{{.*}} to %[[QOLEN]]
// CHECK: scf.for %[[J:[^ ]*]] = {{.*}} iter_args
// CHECK: %[[IK:.*]] = arith.muli %[[I]], %[[KVLEN]] : index
// CHECK: %[[IKJ:.*]] = arith.addi %[[IK]], %[[J]] : index
// CHECK: %[[BIT:.*]] = arith.addi %[[OFF]], %[[IKJ]] : index
// CHECK: %[[VIS:.*]] = memref.load %[[M]][%[[BIT]]] : memref<?xi1>
// CHECK: %{{.*}}:2 = scf.if %[[VIS]] -> (f32, f32)
// CHECK: math.exp
// CHECK: } else {
// CHECK-NEXT: scf.yield %{{.*}}, %{{.*}} : f32, f32
// The next request starts qo_len * kv_len bools later.
// CHECK: %[[BLOCK:.*]] = arith.muli %[[QOLEN]], %[[KVLEN]] : index
// CHECK: %[[NEXT:.*]] = arith.addi %[[OFF]], %[[BLOCK]] : index
// CHECK: scf.yield %[[NEXT]] : index
func.func @bool_mask(%q: memref<?x1x4xf32>, %qo: memref<?xi32>, %k: memref<?x1x4xf32>, %v: memref<?x1x4xf32>, %kvi: memref<?xi32>, %m: memref<?xi1>, %o: memref<?x1x4xf32>) {
  %kv = kv.ragged_view %k, %v, %kvi : memref<?x1x4xf32>, memref<?x1x4xf32>, memref<?xi32> -> !rag
  %s = kv.prefill %q, %qo, %kv mask(%m : memref<?xi1>) : memref<?x1x4xf32>, memref<?xi32>, !rag -> !kv.state<?x1x4xf32, base = e>
  kv.store_state %s, %o : !kv.state<?x1x4xf32, base = e>, memref<?x1x4xf32>
  return
}

// -----

!rag = !kv.ragged<kv_heads = 1, head_dim = 4, head_dim_v = 4, dtype = f32>

// CHECK-LABEL: func.func @packed_mask
// CHECK-SAME: %[[M:[^:]*]]: memref<?xi8>
// CHECK: %{{.*}} = scf.for %[[REQ:[^ ]*]] = %{{.*}} iter_args(%[[OFF:[^ ]*]] = %c0{{[_0-9]*}}) -> (index)
// CHECK: %[[KVLEN:.*]] = arith.subi
// CHECK: %[[QOLEN:.*]] = arith.subi
// CHECK: scf.for %[[J:[^ ]*]] = {{.*}} iter_args
// CHECK: %[[I:.*]] = arith.muli %{{.*}}, %[[KVLEN]] : index
// CHECK-NEXT: %[[BIT:.*]] = arith.addi %[[I]], %[[J]] : index
// The block's byte bit / 8, from the request's first byte.
// CHECK-NEXT: %[[C8:.*]] = arith.constant 8 : index
// CHECK-NEXT: %[[BYTEOFF:.*]] = arith.divui %[[BIT]], %[[C8]] : index
// CHECK-NEXT: %[[BYTEIDX:.*]] = arith.addi %[[OFF]], %[[BYTEOFF]] : index
// CHECK-NEXT: %[[BYTE:.*]] = memref.load %[[M]][%[[BYTEIDX]]] : memref<?xi8>
// Bit bit % 8 of that byte.
// CHECK-NEXT: %[[C8B:.*]] = arith.constant 8 : index
// CHECK-NEXT: %[[POS:.*]] = arith.remui %[[BIT]], %[[C8B]] : index
// CHECK-NEXT: %[[SHIFT:.*]] = arith.index_cast %[[POS]] : index to i32
// CHECK-NEXT: %[[WORD:.*]] = arith.extui %[[BYTE]] : i8 to i32
// CHECK-NEXT: %[[SH:.*]] = arith.shrui %[[WORD]], %[[SHIFT]] : i32
// CHECK-NEXT: %[[VIS:.*]] = arith.trunci %[[SH]] : i32 to i1
// CHECK-NEXT: %{{.*}}:2 = scf.if %[[VIS]] -> (f32, f32)
// The next request starts ceil(qo_len * kv_len / 8) bytes later.
// CHECK: %[[BITS:.*]] = arith.muli %[[QOLEN]], %[[KVLEN]] : index
// CHECK-NEXT: %[[C7:.*]] = arith.constant 7 : index
// CHECK-NEXT: %[[UP:.*]] = arith.addi %[[BITS]], %[[C7]] : index
// CHECK-NEXT: %[[C8C:.*]] = arith.constant 8 : index
// CHECK-NEXT: %[[BYTES:.*]] = arith.divui %[[UP]], %[[C8C]] : index
// CHECK-NEXT: %[[NEXT:.*]] = arith.addi %[[OFF]], %[[BYTES]] : index
// CHECK-NEXT: scf.yield %[[NEXT]] : index
func.func @packed_mask(%q: memref<?x1x4xf32>, %qo: memref<?xi32>, %k: memref<?x1x4xf32>, %v: memref<?x1x4xf32>, %kvi: memref<?xi32>, %m: memref<?xi8>, %o: memref<?x1x4xf32>) {
  %kv = kv.ragged_view %k, %v, %kvi : memref<?x1x4xf32>, memref<?x1x4xf32>, memref<?xi32> -> !rag
  %s = kv.prefill %q, %qo, %kv mask(%m : memref<?xi8>) : memref<?x1x4xf32>, memref<?xi32>, !rag -> !kv.state<?x1x4xf32, base = e>
  kv.store_state %s, %o : !kv.state<?x1x4xf32, base = e>, memref<?x1x4xf32>
  return
}

// -----

!rag = !kv.ragged<kv_heads = 1, head_dim = 4, head_dim_v = 4, dtype = f32>

// Without a mask the request loop carries the offset unchanged and no key is
// guarded.
// CHECK-LABEL: func.func @no_mask
// CHECK: %{{.*}} = scf.for %{{[^ ]*}} = %{{.*}} iter_args(%[[OFF:[^ ]*]] = %c0{{[_0-9]*}}) -> (index)
// CHECK-NOT: scf.if
// CHECK: scf.yield %[[OFF]] : index
func.func @no_mask(%q: memref<?x1x4xf32>, %qo: memref<?xi32>, %k: memref<?x1x4xf32>, %v: memref<?x1x4xf32>, %kvi: memref<?xi32>, %o: memref<?x1x4xf32>) {
  %kv = kv.ragged_view %k, %v, %kvi : memref<?x1x4xf32>, memref<?x1x4xf32>, memref<?xi32> -> !rag
  %s = kv.prefill %q, %qo, %kv : memref<?x1x4xf32>, memref<?xi32>, !rag -> !kv.state<?x1x4xf32, base = e>
  kv.store_state %s, %o : !kv.state<?x1x4xf32, base = e>, memref<?x1x4xf32>
  return
}
