//===- Passes.td - kv dialect transformation passes -------*- tablegen -*-===//
#ifndef KVIR_DIALECT_KV_TRANSFORMS_PASSES_TD
#define KVIR_DIALECT_KV_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def KVExpandCascade : Pass<"kv-expand-cascade"> {
  let summary = "Expand kv.cascade into per-level prefill and a merge";
  let description = [{
    A cascade's state is, per query row, the merge over levels of the row's
    state against its level-`l` request (DESIGN.md section 2). This pass
    writes that identity out: one `kv.prefill` per level (causal only on the
    last) and one variadic `kv.merge`, which canonicalization can then treat
    like any other merge.
  }];
  let dependentDialects = ["::kvir::kv::KVDialect"];
}

#endif // KVIR_DIALECT_KV_TRANSFORMS_PASSES_TD
