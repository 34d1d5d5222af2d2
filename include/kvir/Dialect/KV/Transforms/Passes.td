//===- Passes.td - kv dialect transformation passes -------*- tablegen -*-===//
#ifndef KVIR_DIALECT_KV_TRANSFORMS_PASSES_TD
#define KVIR_DIALECT_KV_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def KVExpandCascade : Pass<"kv-expand-cascade"> {
  let summary = "Expand kv.cascade into per-level prefill and a merge";
  let description = [{
    A cascade's state is, per query row, the merge over levels of the row's
    state against its level-`l` request (docs/Semantics.md). This pass
    writes that identity out: one `kv.prefill` per level (causal only on the
    last) and one variadic `kv.merge`, which canonicalization can then treat
    like any other merge.
  }];
  let dependentDialects = ["::kvir::kv::KVDialect"];
}

def KVSpecializeLayout : Pass<"kv-specialize-layout"> {
  let summary = "Resolve preset KV layouts into explicit affine maps";
  let description = [{
    Rewrites the preset layouts of `kv.paged_view` results (nhd, hnd, vllm,
    ppl0-3, llama) into `layout = affine` with the explicit `k_map`/`v_map`
    from (page, kv, slot, head, dim) to pool indices, so that later stages
    only ever compose address arithmetic from maps. It also proves, from the
    maps and the pool memrefs' strides, how many consecutive head-dim
    elements are contiguous and aligned, and records it as
    `kv.vector_width` on the view (the load width lowering may use).
  }];
  let dependentDialects = ["::kvir::kv::KVDialect"];
}

#endif // KVIR_DIALECT_KV_TRANSFORMS_PASSES_TD
