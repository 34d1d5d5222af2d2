// RUN: kvir-opt %s --kv-to-loops | FileCheck %s

// The Llama contiguous cache (max_batch, max_seq, H, D) with token offsets:
// token t of request b is row cachestarts[b] + t of the flattened
// (batch, seq) axis, i.e. (idx / max_seq, idx % max_seq); kv_len = kv_lens[b].

!kvt = !kv.paged<page_size = 8, kv_heads = 2, head_dim = 4, head_dim_v = 4, dtype = f32, layout = llama, storage = split, table = token_offset>

// CHECK-LABEL: func.func @decode_llama
// CHECK-SAME: (%{{[^:]*}}: memref<?x2x4xf32>, %[[K:[^:]*]]: memref<3x8x2x4xf32>, %[[V:[^:]*]]: memref<3x8x2x4xf32>, %[[STARTS:[^:]*]]: memref<3xi32>, %[[LENS:[^:]*]]: memref<3xi32>
// CHECK: scf.for %[[REQ:[^ ]*]] =
// CHECK: %[[LEN:.*]] = memref.load %[[LENS]][%[[REQ]]] : memref<3xi32>
// CHECK: %[[LENI:.*]] = arith.index_cast %[[LEN]] : i32 to index
// CHECK: scf.for %[[HEAD:[^ ]*]] = %c0 to %c2{{[_0-9]*}} step
// CHECK: %[[KVH:.*]] = arith.divui %[[HEAD]], %c1{{.*}} : index
// The key loop runs to kv_len.
// CHECK: %[[HI:.*]] = arith.maxsi %c0{{.*}}, %[[LENI]] : index
// CHECK: scf.for %[[J:[^ ]*]] = %c0{{.*}} to %[[HI]] {{.*}} iter_args
// CHECK: scf.for %[[D:[^ ]*]] = {{.*}} iter_args
// CHECK: %[[ST:.*]] = memref.load %[[STARTS]][%[[REQ]]] : memref<3xi32>
// CHECK: %[[STI:.*]] = arith.index_cast %[[ST]] : i32 to index
// CHECK: %[[IDX:.*]] = arith.addi %[[STI]], %[[J]] : index
// CHECK: %[[B:.*]] = arith.divui %[[IDX]], %c8{{.*}} : index
// CHECK: %[[T:.*]] = arith.remui %[[IDX]], %c8{{.*}} : index
// CHECK: memref.load %[[K]][%[[B]], %[[T]], %[[KVH]], %[[D]]] : memref<3x8x2x4xf32>
// CHECK: scf.for %[[DV:[^ ]*]] =
// CHECK: %[[VIDX:.*]] = arith.addi %{{.*}}, %[[J]] : index
// CHECK: %[[VB:.*]] = arith.divui %[[VIDX]], %c8{{.*}} : index
// CHECK: %[[VT:.*]] = arith.remui %[[VIDX]], %c8{{.*}} : index
// CHECK: memref.load %[[V]][%[[VB]], %[[VT]], %[[KVH]], %[[DV]]] : memref<3x8x2x4xf32>
func.func @decode_llama(%q: memref<?x2x4xf32>, %k: memref<3x8x2x4xf32>, %v: memref<3x8x2x4xf32>, %starts: memref<3xi32>, %lens: memref<3xi32>, %o: memref<?x2x4xf32>) {
  %kv = kv.paged_view pools(%k, %v : memref<3x8x2x4xf32>, memref<3x8x2x4xf32>) tables(%starts, %lens : memref<3xi32>, memref<3xi32>) : !kvt
  %s = kv.decode %q, %kv : memref<?x2x4xf32>, !kvt -> !kv.state<?x2x4xf32, base = e>
  kv.store_state %s, %o : !kv.state<?x2x4xf32, base = e>, memref<?x2x4xf32>
  return
}
