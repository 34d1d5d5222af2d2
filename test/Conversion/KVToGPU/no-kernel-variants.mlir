// RUN: kvir-opt %s -split-input-file --convert-kv-to-gpu=chip=sm_90a -verify-diagnostics

// Attention variants the kernels do not run yet are errors under
// kv-to-nvvm / kv-to-ptx naming what the op has, never a kernel that
// silently drops them.

// head_dim != head_dim_v: only the tensor-core decode could run it.
!c = !kv.paged<page_size = 16, kv_heads = 1, head_dim = 192, head_dim_v = 128, dtype = bf16, layout = nhd, storage = split, table = csr>
!s = !kv.state<?x8x128xbf16, base = e>
func.func @decode_sinks(%q: memref<?x8x192xbf16>, %k: memref<?x16x1x192xbf16>, %v: memref<?x16x1x128xbf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>, %sinks: memref<8xf32>, %o: memref<?x8x128xbf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%k, %v : memref<?x16x1x192xbf16>, memref<?x16x1x128xbf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !c
  // expected-error @below {{'kv.decode' op has no GPU kernel: on tensor cores: the tensor-core decode kernel does not run sinks, ALiBi yet}}
  %s = kv.decode %q, %kv sinks(%sinks : memref<8xf32>) {alibi, window_left = 127 : i64} : memref<?x8x192xbf16>, !c -> !s
  kv.store_state %s, %o, %l : !s, memref<?x8x128xbf16>, memref<?x8xf32>
  return
}

// -----

!c = !kv.paged<page_size = 16, kv_heads = 1, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x64xf16, base = e>
func.func @prefill_mask_mod(%q: memref<?x8x64xf16>, %qo: memref<?xi32>, %pool: memref<?x2x16x1x64xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>, %o: memref<?x8x64xf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x1x64xf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !c
  // expected-error @below {{'kv.prefill' op has no GPU kernel: the prefill kernel does not run a score_mod region, a mask_mod region yet}}
  %s = kv.prefill %q, %qo, %kv score_mod {
  ^bb0(%x: f32, %r: index, %h: index, %p: index, %j: index):
    kv.yield %x : f32
  } mask_mod {
  ^bb0(%r: index, %h: index, %p: index, %j: index):
    %t = arith.constant true
    kv.yield %t : i1
  } {causal} : memref<?x8x64xf16>, memref<?xi32>, !c -> !s
  kv.store_state %s, %o, %l : !s, memref<?x8x64xf16>, memref<?x8xf32>
  return
}

// -----

!mla = !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = bf16, layout = nhd, storage = mla, table = block_table, pe_dim = 64>
!s = !kv.state<?x16x512xbf16, base = e>
func.func @mla_alibi(%qn: memref<?x16x512xbf16>, %qp: memref<?x16x64xbf16>, %ckv: memref<?x64x512xbf16>, %kpe: memref<?x64x64xbf16>, %bt: memref<?x?xi32>, %lens: memref<?xi32>, %o: memref<?x16x512xbf16>, %l: memref<?x16xf32>) {
  %kv = kv.paged_view pools(%ckv, %kpe : memref<?x64x512xbf16>, memref<?x64x64xbf16>) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) : !mla
  // expected-error @below {{'kv.mla_decode' op has no GPU kernel: the MLA kernel does not run ALiBi yet}}
  %s = kv.mla_decode %qn, %qp, %kv {alibi} : memref<?x16x512xbf16>, memref<?x16x64xbf16>, !mla -> !s
  kv.store_state %s, %o, %l : !s, memref<?x16x512xbf16>, memref<?x16xf32>
  return
}

// -----

!s = !kv.state<?x8x64xf16, base = e>
func.func @merge_sinks(%o0: memref<?x8x64xf16>, %l0: memref<?x8xf32>, %sinks: memref<8xf32>, %o: memref<?x8x64xf16>, %l: memref<?x8xf32>) {
  %a = kv.load_state %o0, %l0 : memref<?x8x64xf16>, memref<?x8xf32> -> !s
  // expected-error @below {{'kv.merge_sinks' op has no GPU kernel: kv.merge_sinks has no GPU kernel yet}}
  %m = kv.merge_sinks %a, %sinks : !s, memref<8xf32>
  kv.store_state %m, %o, %l : !s, memref<?x8x64xf16>, memref<?x8xf32>
  return
}
