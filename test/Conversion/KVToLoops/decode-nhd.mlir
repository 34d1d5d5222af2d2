// RUN: kvir-opt %s --kv-to-loops | FileCheck %s

// kv.decode over a combined NHD pool with a CSR table: the loop nest
// (requests, query rows, heads, keys with an online softmax), the GQA head
// mapping, the K and V loads at (page, kv, slot, head, dim) and the base-2
// LSE.

!kvt = !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = nhd, storage = combined, table = csr>

// CHECK-LABEL: func.func @decode_nhd
// CHECK-SAME: (%[[Q:[^:]*]]: memref<?x4x8xf16>, %[[POOL:[^:]*]]: memref<?x2x4x2x8xf16>, %[[IP:[^:]*]]: memref<?xi32>, %[[IX:[^:]*]]: memref<?xi32>, %[[LAST:[^:]*]]: memref<?xi32>, %[[O:[^:]*]]: memref<?x4x8xf16>, %[[L:[^:]*]]: memref<?x4xf32>)
// CHECK-NOT: kv.
// The state buffers: o[N, Hq, Dv] in f16 and lse[N, Hq] in f32.
// CHECK: %[[N:.*]] = memref.dim %[[Q]], %{{.*}} : memref<?x4x8xf16>
// CHECK: %[[OUT:.*]] = memref.alloc(%[[N]]) : memref<?x4x8xf16>
// CHECK: %[[LSE:.*]] = memref.alloc(%[[N]]) : memref<?x4xf32>
// One request per query row.
// CHECK: scf.for %[[REQ:[^ ]*]] = %{{.*}} to %[[N]]
// Its query rows (one for decode).
// CHECK: scf.for %{{[^ ]*}} = %{{.*}} to %{{.*}} step
// Query heads: kv head = head / (Hq / Hkv) = head / 2.
// CHECK: scf.for %[[HEAD:[^ ]*]] = %{{.*}} to %[[C4:[^ ]*]]
// CHECK: %[[KVH:.*]] = arith.divui %[[HEAD]], %[[C2:.*]] : index
// Keys: K at kv = 0 ...
// CHECK: %[[KEYS:.*]]:2 = scf.for %[[J:[^ ]*]] =
// CHECK: scf.for %[[D:[^ ]*]] =
// CHECK-DAG: %[[LP:.*]] = arith.divui %[[J]], %c4{{(_[0-9]+)?}} : index
// CHECK-DAG: %[[SLOT:.*]] = arith.remui %[[J]], %c4{{(_[0-9]+)?}} : index
// CHECK-DAG: %[[FIRST:.*]] = memref.load %[[IP]][%[[REQ]]] : memref<?xi32>
// CHECK-DAG: %[[FIRSTI:.*]] = arith.index_cast %[[FIRST]] : i32 to index
// CHECK-DAG: %[[IDX:.*]] = arith.addi %[[FIRSTI]], %[[LP]] : index
// CHECK-DAG: %[[PAGE32:.*]] = memref.load %[[IX]][%[[IDX]]] : memref<?xi32>
// CHECK-DAG: %[[PAGE:.*]] = arith.index_cast %[[PAGE32]] : i32 to index
// (index constants print as %c<value>[_<n>])
// CHECK: %[[K:.*]] = memref.load %[[POOL]][%[[PAGE]], %c0{{(_[0-9]+)?}}, %[[SLOT]], %[[KVH]], %[[D]]] : memref<?x2x4x2x8xf16>
// CHECK: arith.extf %[[K]] : f16 to f32
// Default sm_scale = 1 / sqrt(8).
// CHECK: arith.constant 0.353553385 : f32
// CHECK: math.exp
// ... and V at kv = 1.
// CHECK: memref.load %[[POOL]][%{{.*}}, %c1{{(_[0-9]+)?}}, %{{.*}}, %[[KVH]], %{{.*}}] : memref<?x2x4x2x8xf16>
// Normalize, write o, then lse = (m + ln l) * log2(e) for base 2, -inf when
// no key was seen.
// CHECK: arith.cmpf oeq, %[[KEYS]]#1, %{{.*}} : f32
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: memref.store %{{.*}}, %[[OUT]][%{{.*}}, %[[HEAD]], %{{.*}}] : memref<?x4x8xf16>
// CHECK: %[[EMPTY:.*]] = arith.cmpf oeq, %[[KEYS]]#1, %{{.*}} : f32
// CHECK: %[[LOG:.*]] = math.log %[[KEYS]]#1 : f32
// CHECK: %[[LN:.*]] = arith.addf %[[KEYS]]#0, %[[LOG]] : f32
// CHECK: %[[LOG2E:.*]] = arith.constant 1.44269502 : f32
// CHECK: %[[LSE2:.*]] = arith.mulf %[[LN]], %[[LOG2E]] : f32
// CHECK: %[[NINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: %[[SEL:.*]] = arith.select %[[EMPTY]], %[[NINF]], %[[LSE2]] : f32
// CHECK: memref.store %[[SEL]], %[[LSE]][%{{.*}}, %[[HEAD]]] : memref<?x4xf32>
// kv.store_state copies into the caller's buffers, then the state is freed.
// CHECK: memref.store %{{.*}}, %[[O]]
// CHECK: memref.store %{{.*}}, %[[L]]
// CHECK: memref.dealloc %[[OUT]]
// CHECK: memref.dealloc %[[LSE]]
// CHECK-NEXT: return
func.func @decode_nhd(%q: memref<?x4x8xf16>, %pool: memref<?x2x4x2x8xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %last: memref<?xi32>, %o: memref<?x4x8xf16>, %l: memref<?x4xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x4x2x8xf16>) tables(%ip, %ix, %last : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !kvt
  %s = kv.decode %q, %kv : memref<?x4x8xf16>, !kvt -> !kv.state<?x4x8xf16, base = 2>
  kv.store_state %s, %o, %l : !kv.state<?x4x8xf16, base = 2>, memref<?x4x8xf16>, memref<?x4xf32>
  return
}
