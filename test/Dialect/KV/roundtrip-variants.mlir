// RUN: kvir-opt %s | kvir-opt | FileCheck %s
// RUN: kvir-opt %s --mlir-print-op-generic | kvir-opt | FileCheck %s

// Attention variants (sinks, ALiBi, score_mod / mask_mod regions) on every
// attention op survive print -> parse -> print, directly and generically.

!csr = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!mla = !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = bf16, layout = nhd, storage = mla, table = block_table, pe_dim = 64>
!s = !kv.state<?x8x64xf16, base = 2>
!sm = !kv.state<?x16x512xbf16, base = e>

// gpt-oss: sinks with a sliding window.
// CHECK-LABEL: func.func @decode_sinks
// CHECK: kv.decode %{{.*}}, %{{.*}} sinks(%{{.*}} : memref<8xf32>) {window_left = 127 : i64} : memref<?x8x64xf16>, <{{.*}}> -> <?x8x64xf16, base = 2>
func.func @decode_sinks(%q: memref<?x8x64xf16>, %kv: !csr, %sinks: memref<8xf32>) -> !s {
  %s = kv.decode %q, %kv sinks(%sinks : memref<8xf32>) {window_left = 127 : i64}
      : memref<?x8x64xf16>, !csr -> !s
  return %s : !s
}

// CHECK-LABEL: func.func @alibi
// CHECK: kv.decode %{{.*}}, %{{.*}} {alibi}
// CHECK: kv.prefill %{{.*}}, %{{.*}}, %{{.*}} alibi_slopes(%{{.*}} : memref<?xf32>) {causal}
func.func @alibi(%q: memref<?x8x64xf16>, %qo: memref<?xi32>, %kv: !csr,
                 %slopes: memref<?xf32>) -> (!s, !s) {
  %a = kv.decode %q, %kv {alibi} : memref<?x8x64xf16>, !csr -> !s
  %b = kv.prefill %q, %qo, %kv alibi_slopes(%slopes : memref<?xf32>) {causal}
      : memref<?x8x64xf16>, memref<?xi32>, !csr -> !s
  return %a, %b : !s, !s
}

// A document mask (FlexAttention's example) and a score_mod reading a
// per-head table captured from above.
// CHECK-LABEL: func.func @regions
// CHECK: kv.prefill %{{.*}}, %{{.*}}, %{{.*}} score_mod {
// CHECK-NEXT: ^bb0(%[[S:.*]]: f32, %{{.*}}: index, %[[H:.*]]: index, %{{.*}}: index, %{{.*}}: index):
// CHECK-NEXT: %[[B:.*]] = memref.load %{{.*}}[%[[H]]] : memref<8xf32>
// CHECK-NEXT: %[[R:.*]] = arith.addf %[[S]], %[[B]] : f32
// CHECK-NEXT: kv.yield %[[R]] : f32
// CHECK-NEXT: } mask_mod {
// CHECK-NEXT: ^bb0(%{{.*}}: index, %{{.*}}: index, %[[P:.*]]: index, %[[J:.*]]: index):
// CHECK: arith.cmpi eq
// CHECK: kv.yield %{{.*}} : i1
// CHECK-NEXT: } {causal}
func.func @regions(%q: memref<?x8x64xf16>, %qo: memref<?xi32>, %kv: !csr,
                   %bias: memref<8xf32>, %doc: memref<?xi32>) -> !s {
  %s = kv.prefill %q, %qo, %kv score_mod {
  ^bb0(%score: f32, %b: index, %h: index, %p: index, %j: index):
    %x = memref.load %bias[%h] : memref<8xf32>
    %r = arith.addf %score, %x : f32
    kv.yield %r : f32
  } mask_mod {
  ^bb0(%b: index, %h: index, %p: index, %j: index):
    %dp = memref.load %doc[%p] : memref<?xi32>
    %dj = memref.load %doc[%j] : memref<?xi32>
    %same = arith.cmpi eq, %dp, %dj : i32
    kv.yield %same : i1
  } {causal} : memref<?x8x64xf16>, memref<?xi32>, !csr -> !s
  return %s : !s
}

// CHECK-LABEL: func.func @mla_and_cascade
// CHECK: kv.mla_decode %{{.*}}, %{{.*}}, %{{.*}} sinks(%{{.*}} : memref<16xf32>) mask_mod {
// CHECK: kv.cascade %{{.*}} levels(%{{.*}}, %{{.*}} : memref<?xi32>, memref<?xi32>) kvs(%{{.*}}, %{{.*}} : !kv.paged<{{.*}}>, !kv.paged<{{.*}}>) sinks(%{{.*}} : memref<8xf32>) {alibi, causal}
func.func @mla_and_cascade(%qn: memref<?x16x512xbf16>, %qp: memref<?x16x64xbf16>,
                           %mla: !mla, %msinks: memref<16xf32>,
                           %q: memref<?x8x64xf16>, %qo: memref<?xi32>,
                           %kv0: !csr, %kv1: !csr, %sinks: memref<8xf32>)
    -> (!sm, !s) {
  %m = kv.mla_decode %qn, %qp, %mla sinks(%msinks : memref<16xf32>) mask_mod {
  ^bb0(%b: index, %h: index, %p: index, %j: index):
    %c64 = arith.constant 64 : index
    %far = arith.cmpi uge, %j, %c64 : index
    kv.yield %far : i1
  } : memref<?x16x512xbf16>, memref<?x16x64xbf16>, !mla -> !sm
  %c = kv.cascade %q levels(%qo, %qo : memref<?xi32>, memref<?xi32>)
      kvs(%kv0, %kv1 : !csr, !csr) sinks(%sinks : memref<8xf32>) {alibi, causal}
      : memref<?x8x64xf16> -> !s
  return %m, %c : !sm, !s
}

// CHECK-LABEL: func.func @merge_sinks
// CHECK: kv.merge_sinks %{{.*}}, %{{.*}} : <?x8x64xf16, base = 2>, memref<8xf32>
func.func @merge_sinks(%a: !s, %sinks: memref<8xf32>) -> !s {
  %r = kv.merge_sinks %a, %sinks : !s, memref<8xf32>
  return %r : !s
}

// Top-k sparse selection (DeepSeek-V3.2) on a decode and an MLA decode,
// beside the other variants.
// CHECK-LABEL: func.func @topk
// CHECK: kv.decode %{{.*}}, %{{.*}} topk(%{{.*}} : memref<?x2048xi32>) sinks(%{{.*}} : memref<8xf32>) {window_left = 127 : i64}
// CHECK: kv.mla_decode %{{.*}}, %{{.*}}, %{{.*}} rows(%{{.*}} : memref<?xi32>) topk(%{{.*}} : memref<?x2048xi32>) {causal}
func.func @topk(%q: memref<?x8x64xf16>, %kv: !csr, %idx: memref<?x2048xi32>,
                %sinks: memref<8xf32>, %qn: memref<?x16x512xbf16>,
                %qp: memref<?x16x64xbf16>, %mla: !mla, %qo: memref<?xi32>)
    -> (!s, !sm) {
  %a = kv.decode %q, %kv topk(%idx : memref<?x2048xi32>) sinks(%sinks : memref<8xf32>)
      {window_left = 127 : i64} : memref<?x8x64xf16>, !csr -> !s
  %b = kv.mla_decode %qn, %qp, %mla rows(%qo : memref<?xi32>) topk(%idx : memref<?x2048xi32>)
      {causal} : memref<?x16x512xbf16>, memref<?x16x64xbf16>, !mla -> !sm
  return %a, %b : !s, !sm
}

// A prefill in a cascade's frame (what kv-expand-cascade writes).
// CHECK-LABEL: func.func @frame
// CHECK: kv.prefill %{{.*}}, %{{.*}}, %{{.*}} positions(%{{.*}} : memref<?xi32>) frame(%{{.*}}, %{{.*}} : memref<?xi32>, memref<?xi32>) mask_mod {
func.func @frame(%q: memref<?x8x64xf16>, %qo: memref<?xi32>, %kv: !csr,
                 %pos: memref<?xi32>, %fi: memref<?xi32>, %fp: memref<?xi32>) -> !s {
  %s = kv.prefill %q, %qo, %kv positions(%pos : memref<?xi32>)
      frame(%fi, %fp : memref<?xi32>, memref<?xi32>) mask_mod {
  ^bb0(%b: index, %h: index, %p: index, %j: index):
    %c = arith.cmpi ule, %j, %p : index
    kv.yield %c : i1
  } : memref<?x8x64xf16>, memref<?xi32>, !csr -> !s
  return %s : !s
}
