// RUN: kvir-opt %s --kv-to-loops -split-input-file -verify-diagnostics

// What kv-to-loops cannot lower is diagnosed, not miscompiled: states and
// KV views must be made and consumed by kv ops inside the function.

!s = !kv.state<?x2x4xf32, base = e>
func.func @return_state(%io: memref<?x2x4xf32>, %il: memref<?x2xf32>) -> !s {
  %s = kv.load_state %io, %il : memref<?x2x4xf32>, memref<?x2xf32> -> !s
  // expected-error @below {{'func.return' op uses a kv value that kv-to-loops cannot lower here; materialize states with kv.store_state}}
  return %s : !s
}

// -----

!s = !kv.state<?x2x4xf32, base = e>
func.func private @consume(!s)
func.func @call_with_state(%io: memref<?x2x4xf32>, %il: memref<?x2xf32>) {
  %s = kv.load_state %io, %il : memref<?x2x4xf32>, memref<?x2xf32> -> !s
  // expected-error @below {{'func.call' op uses a kv value that kv-to-loops cannot lower here; materialize states with kv.store_state}}
  func.call @consume(%s) : (!s) -> ()
  return
}

// -----

!kvt = !kv.paged<page_size = 4, kv_heads = 1, head_dim = 4, head_dim_v = 4, dtype = f32, layout = nhd, storage = combined, table = block_table>
func.func private @use_kv(!kvt)
func.func @call_with_view(%pool: memref<?x2x4x1x4xf32>, %bt: memref<?x?xi32>, %lens: memref<?xi32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x4x1x4xf32>) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) : !kvt
  // expected-error @below {{'func.call' op uses a kv value that kv-to-loops cannot lower here; materialize states with kv.store_state}}
  func.call @use_kv(%kv) : (!kvt) -> ()
  return
}

// -----

!s = !kv.state<?x2x4xf32, base = e>
// expected-error @below {{'func.func' op has a kv-typed block argument, which kv-to-loops cannot lower; pass buffers instead}}
func.func @state_argument(%s: !s, %o: memref<?x2x4xf32>) {
  kv.store_state %s, %o : !s, memref<?x2x4xf32>
  return
}

// -----

!kvt = !kv.paged<page_size = 4, kv_heads = 1, head_dim = 4, head_dim_v = 4, dtype = f32, layout = nhd, storage = combined, table = block_table>
// expected-error @below {{'func.func' op has a kv-typed block argument, which kv-to-loops cannot lower; pass buffers instead}}
func.func @view_argument(%q: memref<?x1x4xf32>, %kv: !kvt, %o: memref<?x1x4xf32>) {
  %s = kv.decode %q, %kv : memref<?x1x4xf32>, !kvt -> !kv.state<?x1x4xf32, base = e>
  kv.store_state %s, %o : !kv.state<?x1x4xf32, base = e>, memref<?x1x4xf32>
  return
}

// -----

// A state carried through a loop is a region argument too.
!s = !kv.state<?x2x4xf32, base = e>
func.func @loop_carried(%io: memref<?x2x4xf32>, %il: memref<?x2xf32>, %o: memref<?x2x4xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %s = kv.load_state %io, %il : memref<?x2x4xf32>, memref<?x2xf32> -> !s
  // expected-error @below {{'scf.for' op has a kv-typed block argument, which kv-to-loops cannot lower; pass buffers instead}}
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %s) -> (!s) {
    %m = kv.merge %acc, %s : !s, !s -> !s
    scf.yield %m : !s
  }
  kv.store_state %r, %o : !s, memref<?x2x4xf32>
  return
}

// -----

// A KV value that does not come from a view op.
!kvt = !kv.paged<page_size = 4, kv_heads = 1, head_dim = 4, head_dim_v = 4, dtype = f32, layout = nhd, storage = combined, table = block_table>
func.func @kv_from_cast(%q: memref<?x1x4xf32>, %x: i64, %o: memref<?x1x4xf32>) {
  %kv = builtin.unrealized_conversion_cast %x : i64 to !kvt
  // expected-error @below {{'kv.decode' op kv-to-loops needs its KV operand to be defined by kv.paged_view or kv.ragged_view in the same function}}
  %s = kv.decode %q, %kv : memref<?x1x4xf32>, !kvt -> !kv.state<?x1x4xf32, base = e>
  kv.store_state %s, %o : !kv.state<?x1x4xf32, base = e>, memref<?x1x4xf32>
  return
}

// -----

// A state that no kv op produced.
!s = !kv.state<?x2x4xf32, base = e>
func.func @state_from_cast(%x: i64, %o: memref<?x2x4xf32>) {
  %s = builtin.unrealized_conversion_cast %x : i64 to !s
  // expected-error @below {{'kv.store_state' op kv-to-loops needs this state to be produced by a kv op in the same function (import states with kv.load_state)}}
  kv.store_state %s, %o : !s, memref<?x2x4xf32>
  return
}

// -----

// Appending through a view that is not a kv.paged_view.
!kvt = !kv.paged<page_size = 4, kv_heads = 1, head_dim = 4, head_dim_v = 4, dtype = f32, layout = nhd, storage = combined, table = block_table>
func.func @append_from_cast(%k: memref<?x1x4xf32>, %b: memref<?xi32>, %x: i64) {
  %kv = builtin.unrealized_conversion_cast %x : i64 to !kvt
  // expected-error @below {{'kv.append' op kv-to-loops needs its KV operand to be defined by kv.paged_view or kv.ragged_view in the same function}}
  kv.append %k, %k, %b, %b into %kv : memref<?x1x4xf32>, memref<?x1x4xf32>, memref<?xi32>, memref<?xi32>, !kvt
  return
}
