// RUN: kvir-opt %s -kv-canonicalize-variants -split-input-file | FileCheck %s

// Regions that compute a built-in variant become it (CanonicalizeVariants.cpp).

!p = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x64xf16, base = 2>

// Gemma's soft cap and sliding window as regions.
// CHECK-LABEL: func.func @gemma
// CHECK: kv.prefill %{{.*}}, %{{.*}}, %{{.*}} {causal, logits_soft_cap = 5.000000e+01 : f32, window_left = 4095 : i64}
// CHECK-NOT: score_mod
// CHECK-NOT: mask_mod
func.func @gemma(%q: memref<?x8x64xf16>, %qo: memref<?xi32>, %kv: !p) -> !s {
  %s = kv.prefill %q, %qo, %kv score_mod {
  ^bb0(%x: f32, %b: index, %h: index, %p: index, %j: index):
    %c = arith.constant 50.0 : f32
    %d = arith.divf %x, %c : f32
    %t = math.tanh %d : f32
    %r = arith.mulf %c, %t : f32
    kv.yield %r : f32
  } mask_mod {
  ^bb0(%b: index, %h: index, %p: index, %j: index):
    %w = arith.constant 4095 : index
    %d = arith.subi %p, %j : index
    %in = arith.cmpi sle, %d, %w : index
    kv.yield %in : i1
  } {causal} : memref<?x8x64xf16>, memref<?xi32>, !p -> !s
  return %s : !s
}

// -----

!p = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x64xf16, base = 2>

// Other spellings: j >= p - w (a smaller window than the attribute's wins),
// p - j < w + 1, j <= p (causal), the tanh on the left.
// CHECK-LABEL: func.func @spellings
// CHECK: kv.decode %{{.*}}, %{{.*}} {logits_soft_cap = 3.000000e+01 : f32, window_left = 100 : i64}
// CHECK: kv.decode %{{.*}}, %{{.*}} {window_left = 63 : i64}
// CHECK: kv.prefill %{{.*}}, %{{.*}}, %{{.*}} {causal}
// CHECK: kv.decode %{{.*}}, %{{.*}} :
func.func @spellings(%q: memref<?x8x64xf16>, %qo: memref<?xi32>, %kv: !p) -> (!s, !s, !s, !s) {
  %a = kv.decode %q, %kv score_mod {
  ^bb0(%x: f32, %b: index, %h: index, %p: index, %j: index):
    %c = arith.constant 30.0 : f32
    %d = arith.divf %x, %c : f32
    %t = math.tanh %d : f32
    %r = arith.mulf %t, %c : f32
    kv.yield %r : f32
  } mask_mod {
  ^bb0(%b: index, %h: index, %p: index, %j: index):
    %w = arith.constant 100 : index
    %lo = arith.subi %p, %w : index
    %in = arith.cmpi sge, %j, %lo : index
    kv.yield %in : i1
  } {window_left = 200 : i64} : memref<?x8x64xf16>, !p -> !s
  %b = kv.decode %q, %kv mask_mod {
  ^bb0(%r: index, %h: index, %p: index, %j: index):
    %w = arith.constant 64 : index
    %d = arith.subi %p, %j : index
    %in = arith.cmpi slt, %d, %w : index
    kv.yield %in : i1
  } : memref<?x8x64xf16>, !p -> !s
  %c = kv.prefill %q, %qo, %kv mask_mod {
  ^bb0(%r: index, %h: index, %p: index, %j: index):
    %in = arith.cmpi sle, %j, %p : index
    kv.yield %in : i1
  } : memref<?x8x64xf16>, memref<?xi32>, !p -> !s
  %d = kv.decode %q, %kv score_mod {
  ^bb0(%x: f32, %r: index, %h: index, %p: index, %j: index):
    kv.yield %x : f32
  } mask_mod {
  ^bb0(%r: index, %h: index, %p: index, %j: index):
    %t = arith.constant true
    kv.yield %t : i1
  } : memref<?x8x64xf16>, !p -> !s
  return %a, %b, %c, %d : !s, !s, !s, !s
}

// -----

!p = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x64xf16, base = 2>

// Not rewritten: a soft cap beside the attribute's (two caps), unsigned
// compares (negative distances differ; the identity score_mod beside it
// goes), a region doing more than the pattern, different constants inside
// and outside the tanh.
// CHECK-LABEL: func.func @kept
// CHECK: kv.decode %{{.*}}, %{{.*}} score_mod {
// CHECK: kv.decode %{{.*}}, %{{.*}} mask_mod {
// CHECK: arith.cmpi ule
// CHECK: kv.decode %{{.*}}, %{{.*}} score_mod {
// CHECK: memref.load
// CHECK: kv.decode %{{.*}}, %{{.*}} score_mod {
func.func @kept(%q: memref<?x8x64xf16>, %kv: !p, %t: memref<8xf32>) -> (!s, !s, !s, !s) {
  %r0 = kv.decode %q, %kv score_mod {
  ^bb0(%x: f32, %b: index, %h: index, %p: index, %j: index):
    %c = arith.constant 30.0 : f32
    %d = arith.divf %x, %c : f32
    %th = math.tanh %d : f32
    %r = arith.mulf %c, %th : f32
    kv.yield %r : f32
  } {logits_soft_cap = 20.0 : f32} : memref<?x8x64xf16>, !p -> !s
  %r1 = kv.decode %q, %kv score_mod {
  ^bb0(%x: f32, %bb: index, %h: index, %p: index, %j: index):
    kv.yield %x : f32
  } mask_mod {
  ^bb0(%r: index, %h: index, %p: index, %j: index):
    %w = arith.constant 64 : index
    %d = arith.subi %p, %j : index
    %in = arith.cmpi ule, %d, %w : index
    kv.yield %in : i1
  } : memref<?x8x64xf16>, !p -> !s
  %r2 = kv.decode %q, %kv score_mod {
  ^bb0(%x: f32, %bb: index, %h: index, %p: index, %j: index):
    %c = arith.constant 30.0 : f32
    %y = memref.load %t[%h] : memref<8xf32>
    %x2 = arith.mulf %x, %y : f32
    %d = arith.divf %x2, %c : f32
    %th = math.tanh %d : f32
    %r = arith.mulf %c, %th : f32
    kv.yield %r : f32
  } : memref<?x8x64xf16>, !p -> !s
  %r3 = kv.decode %q, %kv score_mod {
  ^bb0(%x: f32, %bb: index, %h: index, %p: index, %j: index):
    %c = arith.constant 30.0 : f32
    %c2 = arith.constant 20.0 : f32
    %d = arith.divf %x, %c2 : f32
    %th = math.tanh %d : f32
    %r = arith.mulf %c, %th : f32
    kv.yield %r : f32
  } : memref<?x8x64xf16>, !p -> !s
  return %r0, %r1, %r2, %r3 : !s, !s, !s, !s
}
