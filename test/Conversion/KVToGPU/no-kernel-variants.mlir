// RUN: kvir-opt %s -split-input-file --convert-kv-to-gpu=chip=sm_90a -verify-diagnostics

// Every attention kernel runs the variants; a sink merge still needs
// buffers to write.

// A sink merge whose state is not stored has no buffers to write.
!s = !kv.state<?x8x64xf16, base = e>
func.func @merge_sinks_unstored(%o0: memref<?x8x64xf16>, %l0: memref<?x8xf32>, %sinks: memref<8xf32>) -> !s {
  %a = kv.load_state %o0, %l0 : memref<?x8x64xf16>, memref<?x8xf32> -> !s
  // expected-error @below {{'kv.merge_sinks' op has no GPU kernel: its state is not stored by a kv.store_state (its only user)}}
  %m = kv.merge_sinks %a, %sinks : !s, memref<8xf32>
  return %m : !s
}

// -----

// Top-k gathers single tokens; vLLM's V pool is read in chunks of slots.
!c = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f16, layout = vllm, storage = split, table = block_table>
!s = !kv.state<?x8x128xf16, base = e>
func.func @topk_vllm(%q: memref<?x8x128xf16>, %k: memref<?x2x16x16x8xf16>, %v: memref<?x2x128x16xf16>, %bt: memref<?x?xi32>, %lens: memref<?xi32>, %idx: memref<?x64xi32>, %o: memref<?x8x128xf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%k, %v : memref<?x2x16x16x8xf16>, memref<?x2x128x16xf16>) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) : !c
  // expected-error @below {{'kv.decode' op has no GPU kernel: top-k gathers single tokens, and vLLM's transposed V pool is read in chunks of consecutive slots}}
  %s = kv.decode %q, %kv topk(%idx : memref<?x64xi32>) : memref<?x8x128xf16>, !c -> !s
  kv.store_state %s, %o, %l : !s, memref<?x8x128xf16>, memref<?x8xf32>
  return
}

