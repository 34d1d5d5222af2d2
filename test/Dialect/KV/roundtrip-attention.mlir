// RUN: kvir-opt %s | kvir-opt | FileCheck %s

// The attention attributes (sm_scale, logits_soft_cap, window_left, rope,
// causal) and the custom mask operand round-trip on every op that takes them.

!kvt = !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr>
!rag = !kv.ragged<kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = bf16>
!s = !kv.state<?x32x128xf16, base = 2>

// CHECK-LABEL: func.func @decode_attrs
// CHECK: kv.decode %{{.*}}, %{{.*}} {logits_soft_cap = 3.000000e+01 : f32, rope = #kv.rope<rotate_half, theta = 5.000000e+05, scale = 1.250000e-01>, sm_scale = 0.0883883461 : f32, window_left = 127 : i64} : memref<?x32x128xf16>, <{{.*}}> -> <?x32x128xf16, base = 2>
func.func @decode_attrs(%q: memref<?x32x128xf16>, %kv: !kvt) -> !s {
  %s = kv.decode %q, %kv {sm_scale = 0.0883883461 : f32, logits_soft_cap = 30.0 : f32,
                          window_left = 127 : i64,
                          rope = #kv.rope<rotate_half, theta = 5.0e5, scale = 0.125>}
      : memref<?x32x128xf16>, !kvt -> !s
  return %s : !s
}

// window_left = 0: only the query's own position is visible.
// CHECK-LABEL: func.func @decode_window_zero
// CHECK: kv.decode %{{.*}}, %{{.*}} {window_left = 0 : i64}
func.func @decode_window_zero(%q: memref<?x32x128xf16>, %kv: !kvt) -> !s {
  %s = kv.decode %q, %kv {window_left = 0 : i64} : memref<?x32x128xf16>, !kvt -> !s
  return %s : !s
}

// CHECK-LABEL: func.func @prefill_mask_bool
// CHECK-SAME: %[[M:[^:]*]]: memref<?xi1>
// CHECK: kv.prefill %{{.*}}, %{{.*}}, %{{.*}} mask(%[[M]] : memref<?xi1>) : memref<?x32x128xf16>, memref<?xi32>, !kv.paged<{{.*}}> -> <?x32x128xf16, base = 2>
func.func @prefill_mask_bool(%q: memref<?x32x128xf16>, %qo: memref<?xi32>, %kv: !kvt, %m: memref<?xi1>) -> !s {
  %s = kv.prefill %q, %qo, %kv mask(%m : memref<?xi1>) : memref<?x32x128xf16>, memref<?xi32>, !kvt -> !s
  return %s : !s
}

// CHECK-LABEL: func.func @prefill_mask_packed
// CHECK-SAME: %[[M:[^:]*]]: memref<?xi8>
// CHECK: kv.prefill %{{.*}}, %{{.*}}, %{{.*}} mask(%[[M]] : memref<?xi8>) {causal, logits_soft_cap = 5.000000e+01 : f32, window_left = 4 : i64}
func.func @prefill_mask_packed(%q: memref<?x32x128xf16>, %qo: memref<?xi32>, %kv: !kvt, %m: memref<?xi8>) -> !s {
  %s = kv.prefill %q, %qo, %kv mask(%m : memref<?xi8>) {causal, window_left = 4 : i64, logits_soft_cap = 50.0 : f32}
      : memref<?x32x128xf16>, memref<?xi32>, !kvt -> !s
  return %s : !s
}

// GQA on ragged KV: 8 query heads over 2 KV heads, rope on the fly.
// CHECK-LABEL: func.func @prefill_ragged_rope
// CHECK: kv.prefill %{{.*}}, %{{.*}}, %{{.*}} {causal, rope = #kv.rope<interleave, theta = 1.000000e+04, scale = 1.000000e+00>} : memref<?x8x64xbf16>, memref<?xi32>, !kv.ragged<kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = bf16> -> <?x8x64xf32, base = e>
func.func @prefill_ragged_rope(%q: memref<?x8x64xbf16>, %qo: memref<?xi32>, %kv: !rag) -> !kv.state<?x8x64xf32, base = e> {
  %s = kv.prefill %q, %qo, %kv {causal, rope = #kv.rope<interleave>}
      : memref<?x8x64xbf16>, memref<?xi32>, !rag -> !kv.state<?x8x64xf32, base = e>
  return %s : !kv.state<?x8x64xf32, base = e>
}

// CHECK-LABEL: func.func @cascade_attrs
// CHECK: kv.cascade %{{.*}} levels(%{{.*}} : memref<?xi32>) kvs(%{{.*}} : !kv.paged<{{.*}}>) {causal, logits_soft_cap = 2.000000e+01 : f32, rope = #kv.rope<interleave, theta = 1.000000e+04, scale = 1.000000e+00>, sm_scale = 1.250000e-01 : f32, window_left = 9 : i64} : memref<?x32x128xf16> -> <?x32x128xf16, base = 2>
func.func @cascade_attrs(%q: memref<?x32x128xf16>, %qi: memref<?xi32>, %kv: !kvt) -> !s {
  %s = kv.cascade %q levels(%qi : memref<?xi32>) kvs(%kv : !kvt)
      {causal, sm_scale = 0.125 : f32, logits_soft_cap = 20.0 : f32, window_left = 9 : i64, rope = #kv.rope<interleave>}
      : memref<?x32x128xf16> -> !s
  return %s : !s
}

// CHECK-LABEL: func.func @append_rope
// CHECK: kv.append %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} into %{{.*}} {rope = #kv.rope<rotate_half, theta = 1.000000e+06, scale = 1.000000e+00>} : memref<4x8x128xf16>, memref<4x8x128xf16>, memref<4xi32>, memref<4xi32>, <{{.*}}>
func.func @append_rope(%k: memref<4x8x128xf16>, %v: memref<4x8x128xf16>, %b: memref<4xi32>, %p: memref<4xi32>, %kv: !kvt) {
  kv.append %k, %v, %b, %p into %kv {rope = #kv.rope<rotate_half, theta = 1.0e6>}
      : memref<4x8x128xf16>, memref<4x8x128xf16>, memref<4xi32>, memref<4xi32>, !kvt
  return
}

// Partial rotary and Llama 3.1's frequency scaling (printed only when
// given).
// CHECK-LABEL: func.func @decode_llama31_rope
// CHECK: rope = #kv.rope<interleave, theta = 5.000000e+05, scale = 1.000000e+00, rotary_dim = 64, factor = 8.000000e+00, low_freq_factor = 1.000000e+00, high_freq_factor = 4.000000e+00, original_max_position = 8.192000e+03>
func.func @decode_llama31_rope(%q: memref<?x32x128xf16>, %kv: !kvt) -> !s {
  %s = kv.decode %q, %kv {rope = #kv.rope<interleave, original_max_position = 8192.0, theta = 5.0e5, rotary_dim = 64, factor = 8.0, high_freq_factor = 4.0, low_freq_factor = 1.0>} : memref<?x32x128xf16>, !kvt -> !s
  return %s : !s
}
