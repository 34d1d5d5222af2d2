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
    like any other merge. The levels before the last carry the unit
    attribute `kv.shared_level`: their query rows are those of every
    request sharing the level's keys, a hint kv-tile takes for tall query
    tiles. With a window or RoPE, each shared level's prefill also takes
    its rows' positions in the concatenation of the levels from it on
    (`kv.cascade_positions` into a new buffer, freed after the merge).
    score_mod / mask_mod regions are copied into every level's prefill with
    the cascade's frame (`frame(last-level qo_indptr, level-0 positions)`):
    they see each row as a row of its last-level request at its position
    in the concatenation of all levels, and each key at its position there.
  }];
  let dependentDialects = ["::kvir::kv::KVDialect",
                           "::mlir::memref::MemRefDialect"];
}

def KVCanonicalizeVariants : Pass<"kv-canonicalize-variants"> {
  let summary = "Rewrite regions that compute a built-in variant into it";
  let description = [{
    A `score_mod` or `mask_mod` region that computes one of the built-in
    variants becomes the built-in, so that a user who writes the region gets
    the same kernel (the same symbol, bit for bit the same results) as one
    who writes the attribute:

    | region                                          | becomes                          |
    |-------------------------------------------------|----------------------------------|
    | score_mod `c * tanh(s / c)` (c > 0 a constant)  | `logits_soft_cap = c`            |
    | score_mod yielding `s`                          | (nothing)                        |
    | mask_mod `p - j <= w`, `p - j < w + 1`, `j >= p - w` (w >= 0, signed) | `window_left = w` (the smaller of two) |
    | mask_mod `j <= p` on kv.prefill / kv.cascade    | `causal`                         |
    | mask_mod `j <= p` on kv.decode                  | (nothing: every key is)          |
    | mask_mod yielding `true`                        | (nothing)                        |

    Only whole regions are rewritten (the region is exactly the pattern);
    kv.mla_decode has neither a soft cap nor a window. kv-to-nvvm runs it
    first.
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

def KVValidateTables : Pass<"kv-validate-tables", "::mlir::ModuleOp"> {
  let summary = "Check page tables at run time before kv ops read them";
  let description = [{
    After every `kv.paged_view`, calls the table check of kvir's runtime
    library for the view's table form (`kvir_check_csr`,
    `kvir_check_block_table`, `kvir_check_token_table`,
    `kvir_check_token_offset`; include/kvir/Runtime/TableCheck.h) with its
    tables and the pool's capacity in tokens (read from the pool's page or
    token axis; unknown, so unchecked, for `affine` maps whose page axis is
    not a plain dimension), and before every `kv.prefill` with query rows
    the check of `qo_indptr` (monotone, within q's rows), and before every
    `kv.decode` / `kv.mla_decode` with `topk` the check of its lists (`kvir_check_topk`: each entry -1 or a key
    of the row's request, no key twice in a row). A failed check prints which request and which entry
    is wrong and exits the program with status 1 before anything reads the
    tables. Tables with a non-identity layout are copied to dense buffers
    first. Run it before kv-to-loops or convert-kv-to-gpu (`kvir-runner
    --validate-tables` does); the calls resolve against libKVIRRuntime.
  }];
  let dependentDialects = [
    "::kvir::kv::KVDialect", "::mlir::arith::ArithDialect",
    "::mlir::func::FuncDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def KVRejectGPUKernels : Pass<"kv-reject-gpu-kernels", "::mlir::ModuleOp"> {
  let summary = "Fail on a module holding GPU kernels (the CPU path)";
  let description = [{
    kv-lower-to-llvm lowers a module for the CPU (mlir-runner, MLIR's
    ExecutionEngine). A `gpu.module` or `gpu.launch_func` in it cannot run
    there, and the host conversions would rewrite kernel bodies into IR that
    is neither a kernel nor valid host code. This pass reports the first
    such op, saying to run the module with kvir-runner (the emulator) or to
    compile it with kv-to-ptx, and fails the pipeline before anything else
    runs.
  }];
}

#endif // KVIR_DIALECT_KV_TRANSFORMS_PASSES_TD
