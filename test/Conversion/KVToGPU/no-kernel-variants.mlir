// RUN: kvir-opt %s -split-input-file --convert-kv-to-gpu=chip=sm_90a -verify-diagnostics

// Attention variants a kernel does not run are errors under kv-to-nvvm /
// kv-to-ptx naming what the op has, never a kernel that silently drops
// them: an f32 prefill's query rows (the decode kernel reading a
// prefill's rows) take none yet.

!c = !kv.paged<page_size = 16, kv_heads = 1, head_dim = 64, head_dim_v = 64, dtype = f32, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x64xf32, base = e>
func.func @f32_prefill_sinks(%q: memref<?x8x64xf32>, %qo: memref<?xi32>, %pool: memref<?x2x16x1x64xf32>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>, %sinks: memref<8xf32>, %o: memref<?x8x64xf32>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x1x64xf32>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !c
  // expected-error @below {{'kv.prefill' op has no GPU kernel: the f32 prefill (query rows) kernel does not run sinks, a mask_mod region yet (kv-to-loops does: kvir-runner runs such ops on host loops)}}
  %s = kv.prefill %q, %qo, %kv sinks(%sinks : memref<8xf32>) mask_mod {
  ^bb0(%r: index, %h: index, %p: index, %j: index):
    %t = arith.constant true
    kv.yield %t : i1
  } {causal} : memref<?x8x64xf32>, memref<?xi32>, !c -> !s
  kv.store_state %s, %o, %l : !s, memref<?x8x64xf32>, memref<?x8xf32>
  return
}

// -----

// A sink merge whose state is not stored has no buffers to write.
!s = !kv.state<?x8x64xf16, base = e>
func.func @merge_sinks_unstored(%o0: memref<?x8x64xf16>, %l0: memref<?x8xf32>, %sinks: memref<8xf32>) -> !s {
  %a = kv.load_state %o0, %l0 : memref<?x8x64xf16>, memref<?x8xf32> -> !s
  // expected-error @below {{'kv.merge_sinks' op has no GPU kernel: its state is not stored by a kv.store_state (its only user)}}
  %m = kv.merge_sinks %a, %sinks : !s, memref<8xf32>
  return %m : !s
}
