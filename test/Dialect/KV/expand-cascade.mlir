// RUN: kvir-opt %s -kv-expand-cascade -split-input-file | FileCheck %s
// RUN: kvir-opt %s -kv-expand-cascade -canonicalize -split-input-file | FileCheck %s --check-prefix=CANON

// kv-expand-cascade: one kv.prefill per level over that level's qo_indptr
// and KV, causal only on the last level, every attention attribute carried
// to every level, the levels before the last marked `kv.shared_level` (a
// hint for tall query tiles), and one variadic kv.merge of the level
// states.

!kv0 = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!kv1 = !kv.paged<page_size = 1, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = hnd, storage = split, table = block_table>
!s = !kv.state<?x8x64xf16, base = 2>

// CHECK-LABEL: func.func @three_levels
// CHECK-SAME: (%[[Q:[^:]*]]: memref<?x8x64xf16>, %[[I0:[^:]*]]: memref<?xi32>, %[[I1:[^:]*]]: memref<?xi32>, %[[I2:[^:]*]]: memref<?xi32>, %[[K0:[^:]*]]: !kv.paged<{{.*}}>, %[[K1:[^:]*]]: !kv.paged<{{.*}}>, %[[K2:[^:]*]]: !kv.paged<{{.*}}>)
// CHECK-NOT: kv.cascade
// The window and RoPE read positions in the concatenation of a row's
// levels: each shared level's rows get theirs from the levels from it on.
// CHECK: %[[ROWS:.*]] = memref.dim %[[Q]], %{{.*}} : memref<?x8x64xf16>
// CHECK: %[[POS0:.*]] = memref.alloc(%[[ROWS]]) : memref<?xi32>
// CHECK: kv.cascade_positions levels(%[[I0]], %[[I1]], %[[I2]] : {{.*}}) kvs(%[[K0]], %[[K1]], %[[K2]] : {{.*}}) into %[[POS0]] : memref<?xi32>
// CHECK: %[[POS1:.*]] = memref.alloc(%[[ROWS]]) : memref<?xi32>
// CHECK: kv.cascade_positions levels(%[[I1]], %[[I2]] : {{.*}}) kvs(%[[K1]], %[[K2]] : {{.*}}) into %[[POS1]] : memref<?xi32>
// CHECK: %[[P0:.*]] = kv.prefill %[[Q]], %[[I0]], %[[K0]] positions(%[[POS0]] : memref<?xi32>) {kv.shared_level, logits_soft_cap = 3.000000e+01 : f32, rope = #kv.rope<rotate_half, theta = 1.000000e+04, scale = 1.000000e+00>, sm_scale = 1.250000e-01 : f32, window_left = 64 : i64} : memref<?x8x64xf16>, memref<?xi32>, !kv.paged<{{.*}}table = csr> -> <?x8x64xf16, base = 2>
// CHECK: %[[P1:.*]] = kv.prefill %[[Q]], %[[I1]], %[[K1]] positions(%[[POS1]] : memref<?xi32>) {kv.shared_level, logits_soft_cap = 3.000000e+01 : f32, rope = #kv.rope<rotate_half, theta = 1.000000e+04, scale = 1.000000e+00>, sm_scale = 1.250000e-01 : f32, window_left = 64 : i64} : memref<?x8x64xf16>, memref<?xi32>, !kv.paged<{{.*}}table = block_table> -> <?x8x64xf16, base = 2>
// The last level's rows sit bottom-right on its keys: no positions.
// CHECK: %[[P2:.*]] = kv.prefill %[[Q]], %[[I2]], %[[K2]] {causal, logits_soft_cap = 3.000000e+01 : f32, rope = #kv.rope<rotate_half, theta = 1.000000e+04, scale = 1.000000e+00>, sm_scale = 1.250000e-01 : f32, window_left = 64 : i64} : memref<?x8x64xf16>, memref<?xi32>, !kv.paged<{{.*}}table = csr> -> <?x8x64xf16, base = 2>
// CHECK: %[[M:.*]] = kv.merge %[[P0]], %[[P1]], %[[P2]] : !kv.state<?x8x64xf16, base = 2>, !kv.state<?x8x64xf16, base = 2>, !kv.state<?x8x64xf16, base = 2> -> <?x8x64xf16, base = 2>
// CHECK: memref.dealloc %[[POS0]]
// CHECK: memref.dealloc %[[POS1]]
// CHECK: return %[[M]]
func.func @three_levels(%q: memref<?x8x64xf16>, %qi0: memref<?xi32>, %qi1: memref<?xi32>, %qi2: memref<?xi32>,
                        %kv0: !kv0, %kv1: !kv1, %kv2: !kv0) -> !s {
  %s = kv.cascade %q levels(%qi0, %qi1, %qi2 : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      kvs(%kv0, %kv1, %kv2 : !kv0, !kv1, !kv0)
      {causal, sm_scale = 0.125 : f32, logits_soft_cap = 30.0 : f32, window_left = 64 : i64, rope = #kv.rope<rotate_half>}
      : memref<?x8x64xf16> -> !s
  return %s : !s
}

// -----

!kvt = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x64xf16, base = e>

// Without `causal` no level is causal (no attributes but the shared-level
// mark here); without a window or RoPE no positions are needed.
// CHECK-LABEL: func.func @not_causal
// CHECK-NOT: cascade_positions
// CHECK: kv.prefill %{{[^ ]*}}, %{{[^ ]*}}, %{{[^ ]*}} {kv.shared_level} : memref<?x8x64xf16>
// CHECK: kv.prefill %{{[^ ]*}}, %{{[^ ]*}}, %{{[^ ]*}} : memref<?x8x64xf16>
// CHECK: kv.merge
func.func @not_causal(%q: memref<?x8x64xf16>, %qi0: memref<?xi32>, %qi1: memref<?xi32>, %kv0: !kvt, %kv1: !kvt) -> !s {
  %s = kv.cascade %q levels(%qi0, %qi1 : memref<?xi32>, memref<?xi32>) kvs(%kv0, %kv1 : !kvt, !kvt)
      : memref<?x8x64xf16> -> !s
  return %s : !s
}

// -----

!kvt = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x64xf16, base = e>

// A single level is a causal prefill; the one-operand merge folds away
// (the pass's greedy driver folds).
// CHECK-LABEL: func.func @one_level
// CHECK-NEXT: %[[P:.*]] = kv.prefill %{{.*}}, %{{.*}}, %{{.*}} {causal}
// CHECK-NEXT: return %[[P]]
// CANON-LABEL: func.func @one_level
// CANON-NEXT: %[[P:.*]] = kv.prefill %{{.*}}, %{{.*}}, %{{.*}} {causal}
// CANON-NEXT: return %[[P]]
func.func @one_level(%q: memref<?x8x64xf16>, %qi: memref<?xi32>, %kv: !kvt) -> !s {
  %s = kv.cascade %q levels(%qi : memref<?xi32>) kvs(%kv : !kvt) {causal} : memref<?x8x64xf16> -> !s
  return %s : !s
}

// -----

!kvt = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x64xf16, base = e>

// The level merge is an ordinary merge: merged with another state it
// flattens under canonicalization.
// CANON-LABEL: func.func @merge_flattens
// CANON: %[[P0:.*]] = kv.prefill
// CANON: %[[P1:.*]] = kv.prefill
// CANON: %[[M:.*]] = kv.merge %{{.*}}, %{{.*}}, %{{.*}} :
// CANON-NOT: kv.merge
// CANON: return %[[M]]
func.func @merge_flattens(%q: memref<?x8x64xf16>, %qi: memref<?xi32>, %kv: !kvt, %other: !s) -> !s {
  %s = kv.cascade %q levels(%qi, %qi : memref<?xi32>, memref<?xi32>) kvs(%kv, %kv : !kvt, !kvt) : memref<?x8x64xf16> -> !s
  %m = kv.merge %s, %other : !s, !s -> !s
  return %m : !s
}

// -----

!kvt = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<16x8x64xf16, base = e>

// A window alone needs the positions too; static rows give a static buffer.
// CHECK-LABEL: func.func @window_static_rows
// CHECK: %[[POS:.*]] = memref.alloc() : memref<16xi32>
// CHECK: kv.cascade_positions {{.*}} into %[[POS]] : memref<16xi32>
// CHECK: kv.prefill {{.*}} positions(%[[POS]] : memref<16xi32>) {kv.shared_level, window_left = 8 : i64}
// CHECK: kv.prefill {{.*}} {window_left = 8 : i64}
// CHECK: kv.merge
// CHECK: memref.dealloc %[[POS]]
func.func @window_static_rows(%q: memref<16x8x64xf16>, %qi0: memref<?xi32>, %qi1: memref<?xi32>, %kv0: !kvt, %kv1: !kvt) -> !s {
  %s = kv.cascade %q levels(%qi0, %qi1 : memref<?xi32>, memref<?xi32>) kvs(%kv0, %kv1 : !kvt, !kvt)
      {window_left = 8 : i64} : memref<16x8x64xf16> -> !s
  return %s : !s
}

// -----

// Sinks join once, after the levels merge; ALiBi reads positions, so the
// shared level gets its rows' positions as a window or RoPE would.
!p = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x64xf16, base = 2>
// CHECK-LABEL: func.func @sinks_alibi
// CHECK: kv.cascade_positions
// CHECK: %[[L0:.*]] = kv.prefill %{{.*}}, %{{.*}}, %{{.*}} positions(%{{.*}} : memref<?xi32>) {alibi, kv.shared_level}
// CHECK: %[[L1:.*]] = kv.prefill %{{.*}}, %{{.*}}, %{{.*}} {alibi, causal}
// CHECK: %[[M:.*]] = kv.merge %[[L0]], %[[L1]]
// CHECK: %[[S:.*]] = kv.merge_sinks %[[M]], %{{.*}} : <?x8x64xf16, base = 2>, memref<8xf32>
// CHECK: return %[[S]]
// CANON-LABEL: func.func @sinks_alibi
// CANON: kv.merge_sinks
func.func @sinks_alibi(%q: memref<?x8x64xf16>, %qi0: memref<?xi32>, %qi1: memref<?xi32>, %kv0: !p, %kv1: !p, %sinks: memref<8xf32>) -> !s {
  %s = kv.cascade %q levels(%qi0, %qi1 : memref<?xi32>, memref<?xi32>)
      kvs(%kv0, %kv1 : !p, !p) sinks(%sinks : memref<8xf32>) {alibi, causal}
      : memref<?x8x64xf16> -> !s
  return %s : !s
}

// -----

// Regions see each row as a row of its last-level request at its position
// in the concatenation of levels: every level's prefill gets a copy of the
// regions and that frame (the last level's qo_indptr, level 0's
// positions), the shared level its own positions too.
!p = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x64xf16, base = 2>
// CHECK-LABEL: func.func @regions
// CHECK-SAME: (%{{[^:]*}}: memref<?x8x64xf16>, %[[I0:[^:]*]]: memref<?xi32>, %[[I1:[^:]*]]: memref<?xi32>, %{{[^:]*}}: !kv.paged<{{.*}}>, %{{[^:]*}}: !kv.paged<{{.*}}>, %[[DOC:[^:]*]]: memref<?xi32>)
// CHECK: kv.cascade_positions {{.*}} into %[[POS:.*]] : memref<?xi32>
// CHECK: %[[L0:.*]] = kv.prefill %{{.*}}, %[[I0]], %{{.*}} positions(%[[POS]] : memref<?xi32>) frame(%[[I1]], %[[POS]] : memref<?xi32>, memref<?xi32>) mask_mod {
// CHECK: memref.load %[[DOC]]
// CHECK: } {kv.shared_level}
// CHECK: %[[L1:.*]] = kv.prefill %{{.*}}, %[[I1]], %{{.*}} frame(%[[I1]], %[[POS]] : memref<?xi32>, memref<?xi32>) mask_mod {
// CHECK: memref.load %[[DOC]]
// CHECK: } {causal}
// CHECK: kv.merge %[[L0]], %[[L1]]
func.func @regions(%q: memref<?x8x64xf16>, %qi0: memref<?xi32>, %qi1: memref<?xi32>, %kv0: !p, %kv1: !p, %doc: memref<?xi32>) -> !s {
  %s = kv.cascade %q levels(%qi0, %qi1 : memref<?xi32>, memref<?xi32>)
      kvs(%kv0, %kv1 : !p, !p) mask_mod {
  ^bb0(%b: index, %h: index, %p: index, %j: index):
    %dp = memref.load %doc[%p] : memref<?xi32>
    %dj = memref.load %doc[%j] : memref<?xi32>
    %same = arith.cmpi eq, %dp, %dj : i32
    kv.yield %same : i1
  } {causal} : memref<?x8x64xf16> -> !s
  return %s : !s
}
