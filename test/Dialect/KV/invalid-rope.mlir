// RUN: kvir-opt %s -split-input-file -verify-diagnostics

// RopeAttr::parse and RopeAttr::verify (KVDialect.cpp).

// expected-error @below {{expected one of [interleave, rotate_half] for pairing of rotary dimensions, got: neox}}
func.func @style() attributes {r = #kv.rope<neox>}

// -----

// expected-error @below {{unknown rope parameter 'base', expected theta, scale, rotary_dim, factor, low_freq_factor, high_freq_factor or original_max_position}}
func.func @unknown_key() attributes {r = #kv.rope<interleave, base = 1.0e4>}

// -----

// expected-error @below {{rope parameter 'theta' given twice}}
func.func @duplicate_theta() attributes {r = #kv.rope<interleave, theta = 1.0e4, theta = 5.0e5>}

// -----

// expected-error @below {{rope parameter 'scale' given twice}}
func.func @duplicate_scale() attributes {r = #kv.rope<rotate_half, scale = 2.0, theta = 1.0e4, scale = 4.0>}

// -----

// expected-error @below {{expected '='}}
func.func @no_equal() attributes {r = #kv.rope<interleave, theta 1.0e4>}

// -----

// expected-error @below {{expected floating point literal}}
func.func @not_a_number() attributes {r = #kv.rope<interleave, theta = large>}

// -----

// expected-error @below {{expected '>'}}
func.func @missing_comma() attributes {r = #kv.rope<interleave theta = 2.0>}

// -----

// expected-error @below {{rope theta must be greater than 1, got 1.000000e+00}}
func.func @theta_one() attributes {r = #kv.rope<interleave, theta = 1.0>}

// -----

// expected-error @below {{rope theta must be greater than 1, got -1.000000e+04}}
func.func @theta_negative() attributes {r = #kv.rope<rotate_half, theta = -1.0e4>}

// -----

// expected-error @below {{rope scale must be positive, got 0.000000e+00}}
func.func @scale_zero() attributes {r = #kv.rope<interleave, scale = 0.0>}

// -----

// expected-error @below {{rope scale must be positive, got -5.000000e-01}}
func.func @scale_negative() attributes {r = #kv.rope<interleave, scale = -0.5>}

// -----

// expected-error @below {{rope rotary_dim must be a positive even number of dims (or omitted: the whole head dim), got 33}}
func.func @rotary_odd() attributes {r = #kv.rope<interleave, rotary_dim = 33>}

// -----

// expected-error @below {{rope rotary_dim must be a positive even number of dims (or omitted: the whole head dim), got 9223372036854775807}}
func.func @rotary_int64_max() attributes {r = #kv.rope<interleave, rotary_dim = 9223372036854775807>}

// -----

// expected-error @below {{rope rotary_dim must be a positive even number of dims (or omitted: the whole head dim), got -2}}
func.func @rotary_negative() attributes {r = #kv.rope<interleave, rotary_dim = -2>}

// -----

// expected-error @below {{expected integer value}}
func.func @rotary_float() attributes {r = #kv.rope<interleave, rotary_dim = 32.5>}

// -----

// expected-error @below {{Llama 3.1 rope scaling needs factor, low_freq_factor, high_freq_factor and original_max_position together}}
func.func @llama_partial() attributes {r = #kv.rope<rotate_half, factor = 8.0, low_freq_factor = 1.0>}

// -----

// expected-error @below {{rope factor (Llama 3.1 scaling) must be at least 1, got 5.000000e-01}}
func.func @llama_factor() attributes {r = #kv.rope<rotate_half, factor = 0.5, low_freq_factor = 1.0, high_freq_factor = 4.0, original_max_position = 8192.0>}

// -----

// expected-error @below {{rope factor (Llama 3.1 scaling) must be at least 1, got 0}}
func.func @llama_factor_zero() attributes {r = #kv.rope<rotate_half, factor = 0.0, low_freq_factor = 1.0, high_freq_factor = 4.0, original_max_position = 8192.0>}

// -----

// expected-error @below {{rope needs 0 < low_freq_factor < high_freq_factor, got 4.000000e+00 and 1.000000e+00}}
func.func @llama_bands() attributes {r = #kv.rope<rotate_half, factor = 8.0, low_freq_factor = 4.0, high_freq_factor = 1.0, original_max_position = 8192.0>}

// -----

// expected-error @below {{rope original_max_position must be positive, got -1.000000e+00}}
func.func @llama_context() attributes {r = #kv.rope<rotate_half, factor = 8.0, low_freq_factor = 1.0, high_freq_factor = 4.0, original_max_position = -1.0>}

// -----

!c = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
func.func @rotary_wider(%q: memref<?x4x64xf16>, %p: memref<?x2x16x2x64xf16>, %a: memref<?xi32>) {
  %kv = kv.paged_view pools(%p : memref<?x2x16x2x64xf16>) tables(%a, %a, %a : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !c
  // expected-error @below {{'kv.decode' op rope rotary_dim 96 exceeds head_dim 64}}
  %s = kv.decode %q, %kv {rope = #kv.rope<interleave, rotary_dim = 96>} : memref<?x4x64xf16>, !c -> !kv.state<?x4x64xf16, base = e>
  return
}

// -----

!c = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
func.func @rotary_int64_even(%q: memref<?x4x64xf16>, %p: memref<?x2x16x2x64xf16>, %a: memref<?xi32>) {
  %kv = kv.paged_view pools(%p : memref<?x2x16x2x64xf16>) tables(%a, %a, %a : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !c
  // expected-error @below {{'kv.decode' op rope rotary_dim 9223372036854775806 exceeds head_dim 64}}
  %s = kv.decode %q, %kv {rope = #kv.rope<interleave, rotary_dim = 9223372036854775806>} : memref<?x4x64xf16>, !c -> !kv.state<?x4x64xf16, base = e>
  return
}

// -----

!c = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
func.func @append_rotary_wider(%k: memref<?x2x64xf16>, %v: memref<?x2x64xf16>, %b: memref<?xi32>, %pos: memref<?xi32>, %p: memref<?x2x16x2x64xf16>, %a: memref<?xi32>) {
  %kv = kv.paged_view pools(%p : memref<?x2x16x2x64xf16>) tables(%a, %a, %a : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !c
  // expected-error @below {{'kv.append' op rope rotary_dim 128 exceeds head_dim 64}}
  kv.append %k, %v, %b, %pos into %kv {rope = #kv.rope<rotate_half, rotary_dim = 128>} : memref<?x2x64xf16>, memref<?x2x64xf16>, memref<?xi32>, memref<?xi32>, !c
  return
}
