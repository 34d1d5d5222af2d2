// RUN: not kvir-opt %s -split-input-file 2>&1 | FileCheck %s --implicit-check-not="PLEASE submit" --implicit-check-not="Stack dump"
// RUN: not kvir-opt %s 2>&1 | FileCheck %s --check-prefix=WHOLE

// Malformed kv IR makes kvir-opt exit non-zero with a diagnostic, never
// crash (`not` fails on a crash) and never print a module. Each chunk is
// checked for its first diagnostic, in order.

// WHOLE: error: expected '<'
// WHOLE-NOT: module

// CHECK: malformed.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: expected '<'
func.func @garbage(%a: !kv.paged page_size = 16) { return }

// -----

// CHECK: malformed.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: expected ::kvir::kv::LayoutKind to be one of
func.func @bad_layout(%a: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = tnd, storage = combined, table = csr>) { return }

// -----

// Truncated type.
// CHECK: malformed.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: unbalanced '<' character in pretty dialect name
func.func @truncated(%a: !kv.state<?x32x128xf16, base = 2) { return }

// -----

// CHECK: malformed.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: expected non-function type
func.func @negative_rows(%a: !kv.state<-1x32x128xf16, base = 2>) { return }

// -----

// CHECK: malformed.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: expected keyword for pairing of rotary dimensions
func.func @bad_rope() attributes {r = #kv.rope<>} { return }

// -----

// CHECK: malformed.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: unknown attribute `rotary` in dialect `kv`
func.func @bad_attr() attributes {r = #kv.rotary<interleave>} { return }

// -----

// Custom syntax with a missing keyword.
func.func @missing_into(%k: memref<?x1x8xf32>, %b: memref<?xi32>, %kv: !kv.paged<page_size = 4, kv_heads = 1, head_dim = 8, head_dim_v = 8, dtype = f32, layout = nhd, storage = combined, table = csr>) {
  // CHECK: malformed.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: custom op 'kv.append' expected 'into'
  kv.append %k, %k, %b, %b %kv : memref<?x1x8xf32>, memref<?x1x8xf32>, memref<?xi32>, memref<?xi32>, !kv.paged<page_size = 4, kv_heads = 1, head_dim = 8, head_dim_v = 8, dtype = f32, layout = nhd, storage = combined, table = csr>
  return
}

// -----

// Operand and type counts disagree.
func.func @count(%a: !kv.state<?x4x8xf32, base = e>) {
  // CHECK: malformed.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: custom op 'kv.merge' number of operands and types do not match: got 1 operands and 2 types
  %m = kv.merge %a : !kv.state<?x4x8xf32, base = e>, !kv.state<?x4x8xf32, base = e> -> !kv.state<?x4x8xf32, base = e>
  return
}

// -----

// Well-formed syntax, invalid IR: the verifier failure is also an error exit.
func.func @verifier(%a: !kv.state<?x4x8xf32, base = e>, %b: !kv.state<?x4x8xf32, base = 2>) {
  // CHECK: malformed.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: 'kv.merge' op cannot merge a state of LSE base 2 into one of base e
  %m = kv.merge %a, %b : !kv.state<?x4x8xf32, base = e>, !kv.state<?x4x8xf32, base = 2> -> !kv.state<?x4x8xf32, base = e>
  return
}

// -----

// A type error inside an otherwise valid op.
func.func @bad_state_in_op(%o: memref<?x4x8xf32>, %l: memref<?x4xf32>) {
  // CHECK: malformed.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: partitions must be positive or '?', got 0
  %s = kv.load_state %o, %l : memref<?x4x8xf32>, memref<?x4xf32> -> !kv.state<?x4x8xf32, base = e, partitions = 0>
  return
}

// -----

// CHECK: malformed.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: expected SSA operand
%x = kv.decode : memref<1x1x8xf32>
