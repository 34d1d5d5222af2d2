// RUN: kvir-opt %s -split-input-file -verify-diagnostics

// RopeAttr::parse and RopeAttr::verify (KVDialect.cpp).

// expected-error @below {{expected one of [interleave, rotate_half] for pairing of rotary dimensions, got: neox}}
func.func @style() attributes {r = #kv.rope<neox>}

// -----

// expected-error @below {{unknown rope parameter 'base', expected 'theta' or 'scale'}}
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
