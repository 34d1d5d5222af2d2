// RUN: kvir-opt %s -split-input-file -verify-diagnostics

// StateType::parse and StateType::verify (KVDialect.cpp).

// expected-error @below {{a state has shape rows x heads x head_dim_v, got 2 dims}}
func.func @two_dims(%a: !kv.state<32x128xf16, base = e>)

// -----

// expected-error @below {{a state has shape rows x heads x head_dim_v, got 4 dims}}
func.func @four_dims(%a: !kv.state<8x?x32x128xf16, base = e>)

// -----

// expected-error @below {{expected 'base'}}
func.func @no_base(%a: !kv.state<?x32x128xf16, partitions = 4>)

// -----

// expected-error @below {{LSE base must be 'e' or '2'}}
func.func @base_ten(%a: !kv.state<?x32x128xf16, base = 10>)

// -----

// A keyword other than `e` gets exactly this one diagnostic.
// expected-error @below {{LSE base must be 'e' or '2'}}
func.func @base_keyword(%a: !kv.state<?x32x128xf16, base = two>)

// -----

// expected-error @below {{expected 'partitions'}}
func.func @bad_trailing_key(%a: !kv.state<?x32x128xf16, base = e, parts = 4>)

// -----

// An explicit 0 would silently mean "no partition axis".
// expected-error @below {{partitions must be positive or '?', got 0 (omit it for a state without a partition axis)}}
func.func @zero_partitions(%a: !kv.state<?x32x128xf16, base = e, partitions = 0>)

// -----

// expected-error @below {{partitions must be positive or '?', got -2 (omit it for a state without a partition axis)}}
func.func @negative_partitions(%a: !kv.state<?x32x128xf16, base = e, partitions = -2>)

// -----

// expected-error @below {{expected '>'}}
func.func @unclosed(%a: !kv.state<?x32x128xf16, base = e, partitions = 4, rows = 3>)

// -----

// expected-error @below {{state heads and head_dim_v must be static and positive}}
func.func @dynamic_heads(%a: !kv.state<?x?x128xf16, base = e>)

// -----

// expected-error @below {{state heads and head_dim_v must be static and positive}}
func.func @dynamic_dv(%a: !kv.state<?x32x?xf16, base = e>)

// -----

// expected-error @below {{state heads and head_dim_v must be static and positive}}
func.func @zero_heads(%a: !kv.state<?x0x128xf16, base = 2>)

// -----

// expected-error @below {{state heads and head_dim_v must be static and positive}}
func.func @zero_dv(%a: !kv.state<4x8x0xf16, base = 2>)

// -----

// expected-error @below {{state output type must be f16, bf16 or f32, got 'f64'}}
func.func @f64_output(%a: !kv.state<?x32x128xf64, base = e>)

// -----

// expected-error @below {{state output type must be f16, bf16 or f32, got 'i32'}}
func.func @int_output(%a: !kv.state<?x32x128xi32, base = e>)
