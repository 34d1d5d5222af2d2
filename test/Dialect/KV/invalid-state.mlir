// RUN: kvir-opt %s -split-input-file -verify-diagnostics

// Verifiers of the state ops (KVOps.cpp): merge, merge_partitions, rebase,
// empty_state, load_state and store_state.

func.func @merge_none() {
  // expected-error @below {{'kv.merge' op needs at least one state}}
  %m = "kv.merge"() : () -> !kv.state<?x4x8xf32, base = e>
  return
}

// -----

func.func @merge_bases(%a: !kv.state<?x4x8xf32, base = e>, %b: !kv.state<?x4x8xf32, base = 2>) {
  // expected-error @below {{'kv.merge' op cannot merge a state of LSE base 2 into one of base e (operand #1); convert it with kv.rebase}}
  %m = kv.merge %a, %b : !kv.state<?x4x8xf32, base = e>, !kv.state<?x4x8xf32, base = 2> -> !kv.state<?x4x8xf32, base = e>
  return
}

// -----

func.func @merge_result_base(%a: !kv.state<?x4x8xf32, base = e>) {
  // expected-error @below {{'kv.merge' op cannot merge a state of LSE base e into one of base 2 (operand #0); convert it with kv.rebase}}
  %m = kv.merge %a, %a : !kv.state<?x4x8xf32, base = e>, !kv.state<?x4x8xf32, base = e> -> !kv.state<?x4x8xf32, base = 2>
  return
}

// -----

func.func @merge_types(%a: !kv.state<?x4x8xf32, base = e>, %b: !kv.state<?x4x8xf16, base = e>) {
  // expected-error @below {{'kv.merge' op operand #1 has type '!kv.state<?x4x8xf16, base = e>', expected the result type '!kv.state<?x4x8xf32, base = e>'}}
  %m = kv.merge %a, %b : !kv.state<?x4x8xf32, base = e>, !kv.state<?x4x8xf16, base = e> -> !kv.state<?x4x8xf32, base = e>
  return
}

// -----

// Static and dynamic rows are different types: merge needs exact types.
func.func @merge_rows(%a: !kv.state<?x4x8xf32, base = e>, %b: !kv.state<3x4x8xf32, base = e>) {
  // expected-error @below {{'kv.merge' op operand #1 has type '!kv.state<3x4x8xf32, base = e>', expected the result type '!kv.state<?x4x8xf32, base = e>'}}
  %m = kv.merge %a, %b : !kv.state<?x4x8xf32, base = e>, !kv.state<3x4x8xf32, base = e> -> !kv.state<?x4x8xf32, base = e>
  return
}

// -----

func.func @merge_partitioned(%a: !kv.state<?x4x8xf32, base = e, partitions = 2>) {
  // expected-error @below {{'kv.merge' op merges whole states, got '!kv.state<?x4x8xf32, base = e, partitions = 2>'; reduce a partition axis with kv.merge_partitions first}}
  %m = kv.merge %a, %a : !kv.state<?x4x8xf32, base = e, partitions = 2>, !kv.state<?x4x8xf32, base = e, partitions = 2> -> !kv.state<?x4x8xf32, base = e, partitions = 2>
  return
}

// -----

func.func @merge_partitions_whole(%a: !kv.state<?x4x8xf32, base = e>) {
  // expected-error @below {{'kv.merge_partitions' op input '!kv.state<?x4x8xf32, base = e>' has no partition axis}}
  %m = kv.merge_partitions %a : !kv.state<?x4x8xf32, base = e> -> !kv.state<?x4x8xf32, base = e>
  return
}

// -----

func.func @merge_partitions_result(%a: !kv.state<?x4x8xf32, base = e, partitions = 4>) {
  // expected-error @below {{'kv.merge_partitions' op result must be '!kv.state<?x4x8xf32, base = e>', got '!kv.state<?x4x8xf32, base = 2>'}}
  %m = kv.merge_partitions %a : !kv.state<?x4x8xf32, base = e, partitions = 4> -> !kv.state<?x4x8xf32, base = 2>
  return
}

// -----

func.func @merge_partitions_keeps_axis(%a: !kv.state<?x4x8xf32, base = e, partitions = 4>) {
  // expected-error @below {{'kv.merge_partitions' op result must be '!kv.state<?x4x8xf32, base = e>', got '!kv.state<?x4x8xf32, base = e, partitions = 4>'}}
  %m = kv.merge_partitions %a : !kv.state<?x4x8xf32, base = e, partitions = 4> -> !kv.state<?x4x8xf32, base = e, partitions = 4>
  return
}

// -----

func.func @rebase_dtype(%a: !kv.state<?x4x8xf32, base = 2>) {
  // expected-error @below {{'kv.rebase' op may change only the LSE base; '!kv.state<?x4x8xf32, base = 2>' cannot become '!kv.state<?x4x8xf16, base = e>'}}
  %r = kv.rebase %a : !kv.state<?x4x8xf32, base = 2> -> !kv.state<?x4x8xf16, base = e>
  return
}

// -----

func.func @rebase_partitions(%a: !kv.state<?x4x8xf32, base = 2, partitions = 4>) {
  // expected-error @below {{'kv.rebase' op may change only the LSE base; '!kv.state<?x4x8xf32, base = 2, partitions = 4>' cannot become '!kv.state<?x4x8xf32, base = e>'}}
  %r = kv.rebase %a : !kv.state<?x4x8xf32, base = 2, partitions = 4> -> !kv.state<?x4x8xf32, base = e>
  return
}

// -----

func.func @empty_missing_size() {
  // expected-error @below {{'kv.empty_state' op '!kv.state<?x4x8xf32, base = e>' has 1 dynamic size(s), got 0 size operand(s)}}
  %e = kv.empty_state : !kv.state<?x4x8xf32, base = e>
  return
}

// -----

func.func @empty_extra_size(%n: index) {
  // expected-error @below {{'kv.empty_state' op '!kv.state<2x4x8xf32, base = e, partitions = 3>' has 0 dynamic size(s), got 1 size operand(s)}}
  %e = kv.empty_state %n : !kv.state<2x4x8xf32, base = e, partitions = 3>
  return
}

// -----

func.func @empty_two_dynamic(%n: index) {
  // expected-error @below {{'kv.empty_state' op '!kv.state<?x4x8xf32, base = 2, partitions = ?>' has 2 dynamic size(s), got 1 size operand(s)}}
  %e = kv.empty_state %n : !kv.state<?x4x8xf32, base = 2, partitions = ?>
  return
}

// -----

func.func @load_output_dtype(%o: memref<?x4x8xf16>, %l: memref<?x4xf32>) {
  // expected-error @below {{'kv.load_state' op output buffer must be a memref of 'f32', got 'memref<?x4x8xf16>'}}
  %s = kv.load_state %o, %l : memref<?x4x8xf16>, memref<?x4xf32> -> !kv.state<?x4x8xf32, base = e>
  return
}

// -----

func.func @load_output_shape(%o: memref<?x8x4xf32>, %l: memref<?x4xf32>) {
  // expected-error @below {{'kv.load_state' op output buffer has shape ?x8x4, expected ?x4x8 ([partitions,] rows, heads, head_dim_v)}}
  %s = kv.load_state %o, %l : memref<?x8x4xf32>, memref<?x4xf32> -> !kv.state<?x4x8xf32, base = e>
  return
}

// -----

func.func @load_lse_dtype(%o: memref<?x4x8xf32>, %l: memref<?x4xf16>) {
  // expected-error @below {{'kv.load_state' op lse buffer must be a memref of f32, got 'memref<?x4xf16>'}}
  %s = kv.load_state %o, %l : memref<?x4x8xf32>, memref<?x4xf16> -> !kv.state<?x4x8xf32, base = e>
  return
}

// -----

// A partitioned state's buffers lead with the partition axis.
func.func @load_partitioned_lse(%o: memref<4x?x4x8xf32>, %l: memref<?x4xf32>) {
  // expected-error @below {{'kv.load_state' op lse buffer has shape ?x4, expected 4x?x4 ([partitions,] rows, heads)}}
  %s = kv.load_state %o, %l : memref<4x?x4x8xf32>, memref<?x4xf32> -> !kv.state<?x4x8xf32, base = e, partitions = 4>
  return
}

// -----

func.func @load_static_rows(%o: memref<3x4x8xf32>, %l: memref<3x4xf32>) {
  // expected-error @below {{'kv.load_state' op output buffer has shape 3x4x8, expected 2x4x8 ([partitions,] rows, heads, head_dim_v)}}
  %s = kv.load_state %o, %l : memref<3x4x8xf32>, memref<3x4xf32> -> !kv.state<2x4x8xf32, base = e>
  return
}

// -----

func.func @store_output_dtype(%s: !kv.state<?x4x8xbf16, base = 2>, %o: memref<?x4x8xf16>) {
  // expected-error @below {{'kv.store_state' op output buffer must be a memref of 'bf16', got 'memref<?x4x8xf16>'}}
  kv.store_state %s, %o : !kv.state<?x4x8xbf16, base = 2>, memref<?x4x8xf16>
  return
}

// -----

func.func @store_output_rank(%s: !kv.state<?x4x8xf32, base = 2, partitions = ?>, %o: memref<?x4x8xf32>) {
  // expected-error @below {{'kv.store_state' op output buffer has shape ?x4x8, expected ?x?x4x8 ([partitions,] rows, heads, head_dim_v)}}
  kv.store_state %s, %o : !kv.state<?x4x8xf32, base = 2, partitions = ?>, memref<?x4x8xf32>
  return
}

// -----

func.func @store_lse_dtype(%s: !kv.state<?x4x8xf32, base = 2>, %o: memref<?x4x8xf32>, %l: memref<?x4xf64>) {
  // expected-error @below {{'kv.store_state' op lse buffer must be a memref of f32, got 'memref<?x4xf64>'}}
  kv.store_state %s, %o, %l : !kv.state<?x4x8xf32, base = 2>, memref<?x4x8xf32>, memref<?x4xf64>
  return
}

// -----

func.func @store_lse_shape(%s: !kv.state<?x4x8xf32, base = 2>, %o: memref<?x4x8xf32>, %l: memref<?x4x1xf32>) {
  // expected-error @below {{'kv.store_state' op lse buffer has shape ?x4x1, expected ?x4 ([partitions,] rows, heads)}}
  kv.store_state %s, %o, %l : !kv.state<?x4x8xf32, base = 2>, memref<?x4x8xf32>, memref<?x4x1xf32>
  return
}
