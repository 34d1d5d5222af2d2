// RUN: kvir-opt %s --kv-to-loops -split-input-file | FileCheck %s

// RoPE on the fly: the query row is rotated at its position p_i and each key
// at its own position j, by angle pos * scale * theta^(-2 pair / D) computed
// as exp2(pair * (-2 log2(theta) / D)); interleave pairs (2i, 2i + 1),
// rotate_half pairs (i, i + D / 2); (a, b) -> (a cos - b sin, b cos + a sin).

!kvt = !kv.paged<page_size = 4, kv_heads = 1, head_dim = 4, head_dim_v = 4, dtype = f32, layout = nhd, storage = combined, table = block_table>

// CHECK-LABEL: func.func @interleave
// CHECK-SAME: (%{{[^:]*}}: memref<?x1x4xf32>, %[[POOL:[^:]*]]: memref<?x2x4x1x4xf32>
// Decode: the query sits at p = kv_len - 1.
// CHECK: {{^ *}}scf.for %[[ROW:[^ ]*]] = %c0 to %[[QOLEN:[^ ]*]] step
// CHECK: %[[BASE:.*]] = arith.subi %{{.*}}, %[[QOLEN]] : index
// CHECK: %[[POS:.*]] = arith.addi %[[BASE]], %[[ROW]] : index
// Query rotation, D / 2 = 2 pairs.
// CHECK: scf.for %[[PAIR:[^ ]*]] = %c0{{[_0-9]*}} to %c2{{[_0-9]*}} step
// CHECK-NEXT: %[[TWO:.*]] = arith.constant 2 : index
// CHECK-NEXT: %[[DA:.*]] = arith.muli %[[PAIR]], %[[TWO]] : index
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1 : index
// CHECK-NEXT: %[[DB:.*]] = arith.addi %[[DA]], %[[ONE]] : index
// CHECK-NEXT: %[[PI:.*]] = arith.index_cast %[[PAIR]] : index to i32
// CHECK-NEXT: %[[PF:.*]] = arith.uitofp %[[PI]] : i32 to f32
// -2 * log2(1e4) / 4
// CHECK-NEXT: %[[EXPC:.*]] = arith.constant -6.64385605 : f32
// CHECK-NEXT: %[[EXPN:.*]] = arith.mulf %[[PF]], %[[EXPC]] : f32
// CHECK-NEXT: %[[FREQ:.*]] = math.exp2 %[[EXPN]] : f32
// CHECK-NEXT: %[[POSI:.*]] = arith.index_cast %[[POS]] : index to i32
// CHECK-NEXT: %[[POSF:.*]] = arith.sitofp %[[POSI]] : i32 to f32
// CHECK-NEXT: %[[SCALE:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT: %[[PS:.*]] = arith.mulf %[[POSF]], %[[SCALE]] : f32
// CHECK-NEXT: %[[ANGLE:.*]] = arith.mulf %[[PS]], %[[FREQ]] : f32
// CHECK-NEXT: %[[COS:.*]] = math.cos %[[ANGLE]] : f32
// CHECK-NEXT: %[[SIN:.*]] = math.sin %[[ANGLE]] : f32
// CHECK-NEXT: %[[A:.*]] = memref.load %[[QROW:.*]][%[[DA]]] : memref<4xf32>
// CHECK-NEXT: %[[B:.*]] = memref.load %[[QROW]][%[[DB]]] : memref<4xf32>
// CHECK-NEXT: %[[AC:.*]] = arith.mulf %[[A]], %[[COS]] : f32
// CHECK-NEXT: %[[BS:.*]] = arith.mulf %[[B]], %[[SIN]] : f32
// CHECK-NEXT: %[[RA:.*]] = arith.subf %[[AC]], %[[BS]] : f32
// CHECK-NEXT: %[[BC:.*]] = arith.mulf %[[B]], %[[COS]] : f32
// CHECK-NEXT: %[[AS:.*]] = arith.mulf %[[A]], %[[SIN]] : f32
// CHECK-NEXT: %[[RB:.*]] = arith.addf %[[BC]], %[[AS]] : f32
// CHECK-NEXT: memref.store %[[RA]], %[[QROW]][%[[DA]]] : memref<4xf32>
// CHECK-NEXT: memref.store %[[RB]], %[[QROW]][%[[DB]]] : memref<4xf32>
// Keys are rotated at their own position j, pair by pair, inside the dot
// product.
// CHECK: %{{.*}}:2 = scf.for %[[J:[^ ]*]] = {{.*}} iter_args
// CHECK: scf.for %[[KPAIR:[^ ]*]] = %c0{{[_0-9]*}} to %c2{{[_0-9]*}} step %{{[^ ]*}} iter_args
// CHECK: %[[KDA:.*]] = arith.muli %[[KPAIR]], %{{.*}} : index
// CHECK: %[[KDB:.*]] = arith.addi %[[KDA]], %{{.*}} : index
// CHECK: %[[JI:.*]] = arith.index_cast %[[J]] : index to i32
// CHECK: %[[JF:.*]] = arith.sitofp %[[JI]] : i32 to f32
// CHECK: %[[KCOS:.*]] = math.cos
// CHECK: %[[KSIN:.*]] = math.sin
// CHECK: %[[KA:.*]] = memref.load %[[POOL]][%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[KDA]]] : memref<?x2x4x1x4xf32>
// CHECK: %[[KB:.*]] = memref.load %[[POOL]][%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[KDB]]] : memref<?x2x4x1x4xf32>
// CHECK-NEXT: %[[KAC:.*]] = arith.mulf %[[KA]], %[[KCOS]] : f32
// CHECK-NEXT: %[[KBS:.*]] = arith.mulf %[[KB]], %[[KSIN]] : f32
// CHECK-NEXT: %[[KRA:.*]] = arith.subf %[[KAC]], %[[KBS]] : f32
// CHECK-NEXT: %[[KBC:.*]] = arith.mulf %[[KB]], %[[KCOS]] : f32
// CHECK-NEXT: %[[KAS:.*]] = arith.mulf %[[KA]], %[[KSIN]] : f32
// CHECK-NEXT: %[[KRB:.*]] = arith.addf %[[KBC]], %[[KAS]] : f32
// CHECK-NEXT: %[[QA:.*]] = memref.load %[[QROW]][%[[KDA]]] : memref<4xf32>
// CHECK-NEXT: %[[QB:.*]] = memref.load %[[QROW]][%[[KDB]]] : memref<4xf32>
// CHECK-NEXT: %[[T1:.*]] = arith.mulf %[[QA]], %[[KRA]] : f32
// CHECK-NEXT: %[[T2:.*]] = arith.mulf %[[QB]], %[[KRB]] : f32
func.func @interleave(%q: memref<?x1x4xf32>, %pool: memref<?x2x4x1x4xf32>, %bt: memref<?x?xi32>, %lens: memref<?xi32>, %o: memref<?x1x4xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x4x1x4xf32>) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) : !kvt
  %s = kv.decode %q, %kv {rope = #kv.rope<interleave, theta = 1.0e4, scale = 0.5>} : memref<?x1x4xf32>, !kvt -> !kv.state<?x1x4xf32, base = e>
  kv.store_state %s, %o : !kv.state<?x1x4xf32, base = e>, memref<?x1x4xf32>
  return
}

// -----

!rag = !kv.ragged<kv_heads = 1, head_dim = 8, head_dim_v = 8, dtype = f32>

// rotate_half on prefill: pairs (i, i + 4), theta 5e5: -2 * log2(5e5) / 8.
// CHECK-LABEL: func.func @rotate_half
// CHECK: scf.for %[[PAIR:[^ ]*]] = %c0{{[_0-9]*}} to %c4{{[_0-9]*}} step
// CHECK-NEXT: %[[HALF:.*]] = arith.constant 4 : index
// CHECK-NEXT: %[[DB:.*]] = arith.addi %[[PAIR]], %[[HALF]] : index
// CHECK: arith.constant -4.73289204 : f32
// CHECK: math.cos
// CHECK: math.sin
// CHECK: memref.load %{{.*}}[%[[PAIR]]] : memref<8xf32>
// CHECK-NEXT: memref.load %{{.*}}[%[[DB]]] : memref<8xf32>
func.func @rotate_half(%q: memref<?x1x8xf32>, %qo: memref<?xi32>, %k: memref<?x1x8xf32>, %v: memref<?x1x8xf32>, %kvi: memref<?xi32>, %o: memref<?x1x8xf32>) {
  %kv = kv.ragged_view %k, %v, %kvi : memref<?x1x8xf32>, memref<?x1x8xf32>, memref<?xi32> -> !rag
  %s = kv.prefill %q, %qo, %kv {causal, rope = #kv.rope<rotate_half, theta = 5.0e5>} : memref<?x1x8xf32>, memref<?xi32>, !rag -> !kv.state<?x1x8xf32, base = e>
  kv.store_state %s, %o : !kv.state<?x1x8xf32, base = e>, memref<?x1x8xf32>
  return
}
