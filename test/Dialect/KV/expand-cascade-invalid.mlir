// RUN: kvir-opt %s -kv-expand-cascade -verify-diagnostics

// A cascade's regions see the row's request and positions in the
// concatenation of its levels, which no level's prefill knows yet.
!p = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x64xf16, base = 2>
func.func @regions(%q: memref<?x8x64xf16>, %qi0: memref<?xi32>, %qi1: memref<?xi32>, %kv0: !p, %kv1: !p) -> !s {
  // expected-error @below {{score_mod / mask_mod regions on a cascade are not supported yet: a level's prefill sees its own request and level-local key positions, not the row's request and its positions in the concatenation of levels}}
  %s = kv.cascade %q levels(%qi0, %qi1 : memref<?xi32>, memref<?xi32>)
      kvs(%kv0, %kv1 : !p, !p) mask_mod {
  ^bb0(%b: index, %h: index, %p: index, %j: index):
    %t = arith.constant true
    kv.yield %t : i1
  } {causal} : memref<?x8x64xf16> -> !s
  return %s : !s
}
