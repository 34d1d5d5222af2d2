//===- KVTypes.td - kv dialect types ----------------------*- tablegen -*-===//
#ifndef KVIR_DIALECT_KV_IR_KVTYPES_TD
#define KVIR_DIALECT_KV_IR_KVTYPES_TD

include "kvir/Dialect/KV/IR/KVAttrs.td"
include "mlir/IR/AttrTypeBase.td"

class KV_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<KV_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

def KV_PagedType : KV_Type<"Paged", "paged"> {
  let summary = "a paged KV cache: pools addressed through a page table";
  let description = [{
    A logical `K_b[kv_len[b], kv_heads, head_dim]`, `V_b[kv_len[b], kv_heads,
    head_dim_v]` per request `b`, stored in pages of `page_size` tokens.

    - `dtype`: the activation type of K and V (f16, bf16 or f32). Attention
      reads them in this type; quantized caches store `quant`'s type and
      dequantize to it.
    - `layout`: where `(page, kv, slot, head, dim)` lives in the pool
      (`nhd`, `hnd`, `vllm`, `ppl0`..`ppl3` with `layer`, `llama`, or
      `affine` with `k_map`/`v_map`: 5-d affine maps whose results index the
      pool memref).
    - `storage`: `combined` (one pool, K at kv = 0 and V at kv = 1), `split`
      (K and V pools) or `mla` (ckv of width `head_dim` and kpe of width
      `pe_dim`, no head axis).
    - `table`: `csr` (FlashInfer), `block_table` (vLLM), `token_table`
      (OpenPPL cache_mode 1) or `token_offset` (OpenPPL cache_mode 0, Llama).
    - `quant`: `int8_group` with `quant_group` dims per scale, or
      `fp8_e4m3`/`fp8_e5m2` with per-tensor scales.

    ```mlir
    !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128,
              dtype = f16, layout = nhd, storage = combined, table = csr>
    ```
  }];
  let parameters = (ins
    "int64_t":$page_size,
    "int64_t":$kv_heads,
    "int64_t":$head_dim,
    "int64_t":$head_dim_v,
    "::mlir::Type":$dtype,
    EnumParameter<KV_LayoutKind>:$layout,
    EnumParameter<KV_Storage>:$storage,
    EnumParameter<KV_TableForm>:$table,
    DefaultValuedParameter<"::kvir::kv::Quant", "::kvir::kv::Quant::none">:$quant,
    DefaultValuedParameter<"int64_t", "0">:$quant_group,
    DefaultValuedParameter<"int64_t", "0">:$layer,
    DefaultValuedParameter<"int64_t", "0">:$pe_dim,
    OptionalParameter<"::mlir::AffineMap">:$k_map,
    OptionalParameter<"::mlir::AffineMap">:$v_map
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    bool isQuantized() const { return getQuant() != ::kvir::kv::Quant::none; }
    bool isFp8() const {
      return getQuant() == ::kvir::kv::Quant::fp8_e4m3 ||
             getQuant() == ::kvir::kv::Quant::fp8_e5m2;
    }
    bool isMla() const { return getStorage() == ::kvir::kv::Storage::mla; }
    /// The element type the pools store: the activation type, int8, or fp8.
    ::mlir::Type getStorageElementType() const;
    /// Number of pool memrefs the view takes (1 combined, 2 split or MLA).
    unsigned getNumPools() const;
    /// Number of i32 table memrefs the table form takes.
    unsigned getNumTables() const;
    /// Number of int8 scale pools (0 unless int8_group).
    unsigned getNumScalePools() const;
  }];
}

def KV_RaggedType : KV_Type<"Ragged", "ragged"> {
  let summary = "ragged (unpaged) K and V of a batch, indexed by kv_indptr";
  let description = [{
    `K[nnz_kv, kv_heads, head_dim]` and `V[nnz_kv, kv_heads, head_dim_v]`,
    request `b` owning rows `kv_indptr[b] .. kv_indptr[b+1]`, as FlashInfer's
    ragged prefill.
  }];
  let parameters = (ins "int64_t":$kv_heads, "int64_t":$head_dim,
                        "int64_t":$head_dim_v, "::mlir::Type":$dtype);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def KV_StateType : KV_Type<"State", "state"> {
  let summary = "an attention state: normalized output and log-sum-exp";
  let description = [{
    `o[rows, heads, head_dim_v]` in `elementType` and `lse[rows, heads]` in
    f32, the log-sum-exp of the logits in base `e` or `2`. With a partition
    axis the state holds `partitions` partial states per row (split-KV),
    reduced by `kv.merge_partitions`. `?` marks a size known at run time.

    ```mlir
    !kv.state<?x32x128xf16, base = 2>
    !kv.state<?x32x128xf32, base = e, partitions = 8>
    ```
  }];
  let parameters = (ins "int64_t":$rows, "int64_t":$heads,
                        "int64_t":$head_dim_v, "::mlir::Type":$elementType,
                        EnumParameter<KV_LseBase>:$base,
                        DefaultValuedParameter<"int64_t", "0">:$partitions);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    bool isPartitioned() const { return getPartitions() != 0; }
    /// The same state with another LSE base.
    StateType withBase(::kvir::kv::LseBase base) const;
    /// The state without its partition axis.
    StateType withoutPartitions() const;
    /// Shape of the output buffer: [partitions,] rows, heads, head_dim_v.
    ::llvm::SmallVector<int64_t> getOutputShape() const;
    /// Shape of the LSE buffer: [partitions,] rows, heads.
    ::llvm::SmallVector<int64_t> getLseShape() const;
  }];
}

def KV_AnyKV : AnyTypeOf<[KV_PagedType, KV_RaggedType], "paged or ragged KV">;

#endif // KVIR_DIALECT_KV_IR_KVTYPES_TD
