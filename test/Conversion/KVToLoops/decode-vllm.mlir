// RUN: kvir-opt %s --kv-to-loops | FileCheck %s

// The vLLM layout: K [p, h, d / x, slot, x] with x = 8 for f16, reached
// through floordiv / mod of the dim by x; V [p, h, d, slot]. Pages come from
// the block table block_table[b][t / page_size].

!kvt = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 16, head_dim_v = 16, dtype = f16, layout = vllm, storage = split, table = block_table>

// CHECK-LABEL: func.func @decode_vllm
// CHECK-SAME: (%[[Q:[^:]*]]: memref<?x4x16xf16>, %[[K:[^:]*]]: memref<?x2x2x16x8xf16>, %[[V:[^:]*]]: memref<?x2x16x16xf16>, %[[BT:[^:]*]]: memref<?x?xi32>, %[[LENS:[^:]*]]: memref<?xi32>
// CHECK: scf.for %[[REQ:[^ ]*]] =
// kv_len = seq_lens[b].
// CHECK: memref.load %[[LENS]][%[[REQ]]] : memref<?xi32>
// CHECK: scf.for %[[ROW:[^ ]*]] =
// CHECK: scf.for %[[HEAD:[^ ]*]] =
// CHECK: %[[KVH:.*]] = arith.divui %[[HEAD]], %c2{{.*}} : index
// CHECK: scf.for %[[J:[^ ]*]] = {{.*}} iter_args
// CHECK: scf.for %[[D:[^ ]*]] = {{.*}} iter_args
// CHECK-DAG: %[[LP:.*]] = arith.divui %[[J]], %c16{{(_[0-9]+)?}} : index
// CHECK-DAG: %[[SLOT:.*]] = arith.remui %[[J]], %c16{{(_[0-9]+)?}} : index
// CHECK-DAG: %[[BLK:.*]] = memref.load %[[BT]][%[[REQ]], %[[LP]]] : memref<?x?xi32>
// CHECK-DAG: %[[PAGE:.*]] = arith.index_cast %[[BLK]] : i32 to index
// d floordiv 8 (expanded for signed operands) ...
// CHECK: %[[NEG:.*]] = arith.cmpi slt, %[[D]], %{{.*}} : index
// CHECK: %[[FLIP:.*]] = arith.subi %c-1{{.*}}, %[[D]] : index
// CHECK: %[[SEL:.*]] = arith.select %[[NEG]], %[[FLIP]], %[[D]] : index
// CHECK: %[[DIV:.*]] = arith.divsi %[[SEL]], %c8{{.*}} : index
// CHECK: %[[UNFLIP:.*]] = arith.subi %c-1{{.*}}, %[[DIV]] : index
// CHECK: %[[DX:.*]] = arith.select %[[NEG]], %[[UNFLIP]], %[[DIV]] : index
// ... and d mod 8.
// CHECK: %[[REM:.*]] = arith.remsi %[[D]], %c8{{.*}} : index
// CHECK: %[[RNEG:.*]] = arith.cmpi slt, %[[REM]], %{{.*}} : index
// CHECK: %[[RADJ:.*]] = arith.addi %[[REM]], %c8{{.*}} : index
// CHECK: %[[DM:.*]] = arith.select %[[RNEG]], %[[RADJ]], %[[REM]] : index
// CHECK: memref.load %[[K]][%[[PAGE]], %[[KVH]], %[[DX]], %[[SLOT]], %[[DM]]] : memref<?x2x2x16x8xf16>
// V: [page, head, d, slot], no packing.
// CHECK: scf.for %[[DV:[^ ]*]] =
// CHECK-DAG: %[[VLP:.*]] = arith.divui %[[J]], %{{.*}} : index
// CHECK-DAG: %[[VSLOT:.*]] = arith.remui %[[J]], %{{.*}} : index
// CHECK-DAG: %[[VBLK:.*]] = memref.load %[[BT]][%[[REQ]], %[[VLP]]] : memref<?x?xi32>
// CHECK-DAG: %[[VPAGE:.*]] = arith.index_cast %[[VBLK]] : i32 to index
// CHECK: memref.load %[[V]][%[[VPAGE]], %[[KVH]], %[[DV]], %[[VSLOT]]] : memref<?x2x16x16xf16>
func.func @decode_vllm(%q: memref<?x4x16xf16>, %k: memref<?x2x2x16x8xf16>, %v: memref<?x2x16x16xf16>, %bt: memref<?x?xi32>, %lens: memref<?xi32>, %o: memref<?x4x16xf16>) {
  %kv = kv.paged_view pools(%k, %v : memref<?x2x2x16x8xf16>, memref<?x2x16x16xf16>) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) : !kvt
  %s = kv.decode %q, %kv : memref<?x4x16xf16>, !kvt -> !kv.state<?x4x16xf16, base = e>
  kv.store_state %s, %o : !kv.state<?x4x16xf16, base = e>, memref<?x4x16xf16>
  return
}
