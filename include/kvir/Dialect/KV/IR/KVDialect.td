//===- KVDialect.td - The kv dialect ----------------------*- tablegen -*-===//
#ifndef KVIR_DIALECT_KV_IR_KVDIALECT_TD
#define KVIR_DIALECT_KV_IR_KVDIALECT_TD

include "mlir/IR/OpBase.td"

def KV_Dialect : Dialect {
  let name = "kv";
  let cppNamespace = "::kvir::kv";
  let summary = "Paged KV-cache tensors, attention states and their merge";
  let description = [{
    The `kv` dialect models the data structures of LLM-inference attention:
    paged KV caches (`!kv.paged`) viewed over pool and page-table memrefs,
    ragged KV (`!kv.ragged`), and attention states (`!kv.state`: a normalized
    output plus its log-sum-exp in a stated base). Attention ops produce
    states; `kv.merge` combines states of disjoint key sets. States have value
    semantics, so the merge algebra (associativity, commutativity, the empty
    state as identity) is ordinary canonicalization. The KV pool is mutated
    only by `kv.append`. The attention ops and `kv.load_state` read memory
    (their memrefs and the buffers behind their KV views) when they execute,
    so they stay ordered against writes such as `kv.append`; the view ops and
    the state ops (`kv.merge`, `kv.merge_partitions`, `kv.rebase`,
    `kv.empty_state`) are pure.

    The semantics of every op are in docs/Semantics.md.
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  let hasCanonicalizer = 0;
  // `kv.vector_width` (kv-specialize-layout's proof, or a user's) on a view;
  // `kv.shared_level` (kv-expand-cascade's) on a prefill.
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Marks a cascade's shared-level kv.prefill: its query rows are those
    /// of every request sharing the level's keys.
    static ::llvm::StringRef getSharedLevelAttrName() {
      return "kv.shared_level";
    }
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

class KV_Op<string mnemonic, list<Trait> traits = []>
    : Op<KV_Dialect, mnemonic, traits>;

#endif // KVIR_DIALECT_KV_IR_KVDIALECT_TD
