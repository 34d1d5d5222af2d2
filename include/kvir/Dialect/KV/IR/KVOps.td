//===- KVOps.td - kv dialect operations -------------------*- tablegen -*-===//
#ifndef KVIR_DIALECT_KV_IR_KVOPS_TD
#define KVIR_DIALECT_KV_IR_KVOPS_TD

include "kvir/Dialect/KV/IR/KVTypes.td"
include "kvir/Dialect/KV/IR/KVInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/CommonTypeConstraints.td"

//===----------------------------------------------------------------------===//
// Views
//===----------------------------------------------------------------------===//

def KV_PagedViewOp : KV_Op<"paged_view", [Pure, AttrSizedOperandSegments]> {
  let summary = "view pool and page-table memrefs as a paged KV cache";
  let description = [{
    Builds a `!kv.paged` value; no data moves. Operands by storage:
    `pools` is the combined pool, `K, V` for split storage, or `ckv, kpe` for
    MLA (strided memrefs, so slices of one 576-wide pool work). `tables` by
    table form, each i32 or i64 (OpenPPL's int64 `cachestarts`):

    | table          | tables                                    |
    |----------------|-------------------------------------------|
    | `csr`          | `kv_indptr[B+1], kv_indices[n], kv_last_page_len[B]` |
    | `block_table`  | `block_table[B, max_blocks], seq_lens[B]` |
    | `token_table`  | `cachestarts[B, max_pages], kv_lens[B]`   |
    | `token_offset` | `cachestarts[B], kv_lens[B]`              |

    int8-group caches take their scale pools (one per K/V pool) in `scales`;
    fp8 caches take the per-tensor f32 `k_scale` and `v_scale`.

    ```mlir
    %kv = kv.paged_view pools(%pool : memref<?x2x16x8x128xf16>)
        tables(%indptr, %indices, %last : memref<?xi32>, memref<?xi32>, memref<?xi32>)
        : !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128,
                    head_dim_v = 128, dtype = f16, layout = nhd,
                    storage = combined, table = csr>
    ```
  }];
  let arguments = (ins Variadic<AnyMemRef>:$pools,
                       Variadic<AnyMemRef>:$tables,
                       Variadic<AnyMemRef>:$scales,
                       Optional<F32>:$k_scale,
                       Optional<F32>:$v_scale);
  let results = (outs KV_PagedType:$result);
  let assemblyFormat = [{
    `pools` `(` $pools `:` type($pools) `)`
    `tables` `(` $tables `:` type($tables) `)`
    (`scales` `(` $scales^ `:` type($scales) `)`)?
    (`fp8_scales` `(` $k_scale^ `,` $v_scale `)`)?
    attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The widest head-dim vector (elements, at most 16 bytes of storage)
    /// every pool of the view allows: the `kv.vector_width` attribute
    /// kv-specialize-layout records, else the layout's proven contiguity.
    int64_t getVectorWidth();
  }];
}

def KV_RaggedViewOp : KV_Op<"ragged_view", [Pure]> {
  let summary = "view ragged K/V buffers and kv_indptr as ragged KV";
  let arguments = (ins AnyMemRef:$k, AnyMemRef:$v, AnyMemRef:$kv_indptr);
  let results = (outs KV_RaggedType:$result);
  let assemblyFormat = [{
    $k `,` $v `,` $kv_indptr attr-dict `:` type($k) `,` type($v) `,`
    type($kv_indptr) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

// An attention op reads the memory behind its KV operand (pools, tables,
// scales) when it executes, so it is ordered against writes to it such as
// kv.append: it is not Pure, only a reader.
class KV_ReadKV<TypeConstraint type>
    : Arg<type, "the KV whose buffers the op reads", [MemRead]>;

defvar KV_AttentionAttrs = (ins OptionalAttr<F32Attr>:$sm_scale,
                                OptionalAttr<F32Attr>:$logits_soft_cap,
                                OptionalAttr<I64Attr>:$window_left,
                                OptionalAttr<KV_RopeAttr>:$rope);

// The variants every attention op takes (docs/Semantics.md, "Variants"):
// attention sinks, ALiBi, and the score_mod / mask_mod regions.
defvar KV_VariantOperands =
    (ins Arg<Optional<AnyMemRef>, "sink logits per query head",
             [MemRead]>:$sinks,
         Arg<Optional<AnyMemRef>, "ALiBi slopes per query head",
             [MemRead]>:$alibi_slopes,
         UnitAttr:$alibi);
defvar KV_VariantRegions = (region MaxSizedRegion<1>:$score_mod,
                                   MaxSizedRegion<1>:$mask_mod);
defvar KV_VariantFormat = [{
  (`sinks` `(` $sinks^ `:` type($sinks) `)`)?
  (`alibi_slopes` `(` $alibi_slopes^ `:` type($alibi_slopes) `)`)?
  (`score_mod` $score_mod^)? (`mask_mod` $mask_mod^)?
}];
/// Sparse selection (kv.decode, kv.mla_decode): per query row, `topk` key
/// indices into the request's keys.
defvar KV_TopkOperand =
    (ins Arg<Optional<AnyMemRef>, "selected keys per query row",
             [MemRead]>:$topk);
defvar KV_TopkFormat = [{ (`topk` `(` $topk^ `:` type($topk) `)`)? }];
defvar KV_AttentionTraits = [AttrSizedOperandSegments,
                             DeclareOpInterfaceMethods<
                                 KV_AttentionVariantOpInterface>];

def KV_DecodeOp : KV_Op<"decode", KV_AttentionTraits> {
  let summary = "batch decode: one query row per request over a paged cache";
  let description = [{
    `q[B, Hq, D]` attends request `b`'s keys; query head `h` reads KV head
    `h / (Hq / Hkv)`. The query sits at position `kv_len[b] - 1`.
    `sm_scale` defaults to `1/sqrt(D)`; `logits_soft_cap` c > 0 applies
    `c * tanh(s / c)`; `window_left` w >= 0 keeps keys `j >= kv_len - 1 - w`;
    `rope` rotates q and k on the fly at their positions. The result's LSE
    base and output type are those of the result type. With
    `topk(%idx : memref<B x K x i32>)` the query sees only the keys its row
    lists (DeepSeek-V3.2's indexer): `-1` entries are padding, every other
    entry a key index in `[0, kv_len)` listed at most once; the other rules
    (window, variants) apply to the listed keys.

    ```mlir
    %s = kv.decode %q, %kv {sm_scale = 0.0883883 : f32}
        : memref<?x32x128xf16>, !kv.paged<...> -> !kv.state<?x32x128xf16, base = 2>
    ```
  }];
  let arguments = !con((ins Arg<AnyMemRef, "queries", [MemRead]>:$q,
                            KV_ReadKV<KV_PagedType>:$kv),
                       KV_TopkOperand, KV_AttentionAttrs, KV_VariantOperands);
  let results = (outs KV_StateType:$result);
  let regions = KV_VariantRegions;
  let assemblyFormat = !strconcat("$q `,` $kv ", KV_TopkFormat,
                                  KV_VariantFormat, [{
    attr-dict `:` type($q) `,` type($kv) `->` type($result)
  }]);
  let hasVerifier = 1;
}

def KV_PrefillOp : KV_Op<"prefill", KV_AttentionTraits> {
  let summary = "batch prefill / append attention over paged or ragged KV";
  let description = [{
    `q[nnz, Hq, D]` with request `b` owning rows `qo_indptr[b] ..
    qo_indptr[b+1]`. Row `i` of request `b` sits at position
    `p_i = kv_len[b] - qo_len[b] + i`, or at `positions[row]` when
    `positions` (i32, one per query row) is given: the rows of a cascade's
    shared level sit after that level's keys at the positions of their own
    later levels. Key `j` is visible iff every enabled rule holds: `causal`
    (`j <= p_i`), `window_left` w (`j >= p_i - w`), and the custom `mask`:
    per-request row-major `qo_len x kv_len` blocks, one byte per bool for an
    `i1` memref, or bit-packed (little bit order, each request's block
    starting at a byte boundary) for an `i8` memref. `rope` rotates the
    query row at `p_i` and key `j` at `j`.

    `frame(%indptr, %pos : memref<?xi32>, memref<?xi32>)` gives the
    variants (ALiBi, score_mod, mask_mod) other coordinates, those of a
    cascade's concatenated levels (kv-expand-cascade writes it): row `r`
    is a row of request `b'` of `indptr` at position `pos[r]`, and key `j`
    sits at `j + pos[r] - p_r`.

    ```mlir
    %s = kv.prefill %q, %qo_indptr, %kv mask(%m : memref<?xi8>) {causal}
        : memref<?x32x128xf16>, memref<?xi32>, !kv.paged<...>
        -> !kv.state<?x32x128xf16, base = 2>
    ```
  }];
  let arguments = !con((ins Arg<AnyMemRef, "queries", [MemRead]>:$q,
                            Arg<AnyMemRef, "query row offsets",
                                [MemRead]>:$qo_indptr,
                            KV_ReadKV<KV_AnyKV>:$kv,
                            Arg<Optional<AnyMemRef>, "custom mask",
                                [MemRead]>:$mask,
                            Arg<Optional<AnyMemRef>, "query row positions",
                                [MemRead]>:$positions,
                            Arg<Optional<AnyMemRef>,
                                "the variants' query row offsets",
                                [MemRead]>:$frame_indptr,
                            Arg<Optional<AnyMemRef>,
                                "the variants' query row positions",
                                [MemRead]>:$frame_positions,
                            UnitAttr:$causal),
                       KV_AttentionAttrs, KV_VariantOperands);
  let results = (outs KV_StateType:$result);
  let regions = KV_VariantRegions;
  let assemblyFormat = !strconcat([{
    $q `,` $qo_indptr `,` $kv (`mask` `(` $mask^ `:` type($mask) `)`)?
    (`positions` `(` $positions^ `:` type($positions) `)`)?
    (`frame` `(` $frame_indptr^ `,` $frame_positions `:`
       type($frame_indptr) `,` type($frame_positions) `)`)?
  }], KV_VariantFormat, [{
    attr-dict `:` type($q) `,` type($qo_indptr) `,` type($kv) `->` type($result)
  }]);
  let hasVerifier = 1;
}

def KV_MlaDecodeOp : KV_Op<"mla_decode", KV_AttentionTraits> {
  let summary = "multi-head latent attention decode over an MLA cache";
  let description = [{
    `s_j = sm_scale * (<q_nope, ckv_j> + <q_pe, kpe_j>)`, `o = sum p_j ckv_j`,
    all heads sharing the one latent KV. One query row per request, or, with
    `rows(qo_indptr)`, request `b` owns rows `qo_indptr[b] .. qo_indptr[b+1]`
    (speculative decoding, chunked prefill): row `i` sits at position
    `kv_len[b] - qo_len[b] + i` and `causal` hides the keys after it.
    `topk(%idx : memref<rows x K x i32>)` selects each query row's keys as
    kv.decode's does (FlashMLA's sparse decode).

    ```mlir
    %s = kv.mla_decode %q_nope, %q_pe, %kv rows(%qo : memref<?xi32>) {causal}
        : memref<?x128x512xbf16>, memref<?x128x64xbf16>, !kv.paged<...>
        -> !kv.state<?x128x512xbf16, base = e>
    ```
  }];
  let arguments = !con((ins Arg<AnyMemRef, "latent queries",
                                [MemRead]>:$q_nope,
                            Arg<AnyMemRef, "rotary queries", [MemRead]>:$q_pe,
                            KV_ReadKV<KV_PagedType>:$kv,
                            Arg<Optional<AnyMemRef>, "query row offsets",
                                [MemRead]>:$qo_indptr,
                            UnitAttr:$causal,
                            OptionalAttr<F32Attr>:$sm_scale),
                       KV_TopkOperand, KV_VariantOperands);
  let results = (outs KV_StateType:$result);
  let regions = KV_VariantRegions;
  let assemblyFormat = !strconcat([{
    $q_nope `,` $q_pe `,` $kv (`rows` `(` $qo_indptr^ `:` type($qo_indptr) `)`)?
  }], KV_TopkFormat, KV_VariantFormat, [{
    attr-dict `:` type($q_nope) `,` type($q_pe) `,` type($kv) `->`
    type($result)
  }]);
  let hasVerifier = 1;
}

def KV_CascadeOp : KV_Op<"cascade", KV_AttentionTraits> {
  let summary = "multi-level cascade attention over shared-prefix levels";
  let description = [{
    Levels `0 .. L-1` share the query rows; level `l` groups them into
    requests with `qo_indptrs[l]` and reads `kvs[l]`. Each row's state is the
    merge over levels of its state against its level-`l` request's keys.
    `causal` applies to the last level only. Positions (causal, window,
    RoPE) are positions in the concatenation of a row's levels, level 0
    first, so level `l`'s keys come after the row's keys of levels `< l`.

    ```mlir
    %s = kv.cascade %q levels(%qi0, %qi1 : memref<?xi32>, memref<?xi32>)
         kvs(%kv0, %kv1 : !kv.paged<...>, !kv.paged<...>) {causal}
         : memref<?x32x128xf16> -> !kv.state<?x32x128xf16, base = 2>
    ```
  }];
  let arguments = !con((ins Arg<AnyMemRef, "queries", [MemRead]>:$q,
                            Arg<Variadic<AnyMemRef>, "query row offsets per level",
                                [MemRead]>:$qo_indptrs,
                            KV_ReadKV<Variadic<KV_PagedType>>:$kvs,
                            UnitAttr:$causal),
                       KV_AttentionAttrs, KV_VariantOperands);
  let results = (outs KV_StateType:$result);
  let regions = KV_VariantRegions;
  let assemblyFormat = !strconcat([{
    $q `levels` `(` $qo_indptrs `:` type($qo_indptrs) `)`
    `kvs` `(` $kvs `:` type($kvs) `)`
  }], KV_VariantFormat, [{
    attr-dict `:` type($q) `->` type($result)
  }]);
  let hasVerifier = 1;
}

def KV_CascadePositionsOp : KV_Op<"cascade_positions",
                                  [AttrSizedOperandSegments]> {
  let summary = "positions of a cascade's query rows from a level on";
  let description = [{
    Levels `l .. L-1` of a cascade (the tail of its `qo_indptrs` and `kvs`):
    writes `positions[r]`, the position of query row `r` in the
    concatenation of its requests' keys of these levels, level `l`'s first.
    With `b` the row's request of the last level, that is the sum over the
    given levels of `kv_len` of the row's request there, minus
    `qo_indptr_last[b+1] - r` (bottom-right alignment on the last level). A
    row outside a level's requests adds no keys of it. kv-expand-cascade
    computes this for the non-last levels of a windowed or rotary cascade,
    whose rows sit past their shared keys.

    ```mlir
    kv.cascade_positions levels(%qi0, %qi1 : memref<?xi32>, memref<?xi32>)
        kvs(%kv0, %kv1 : !kv.paged<...>, !kv.paged<...>)
        into %pos : memref<?xi32>
    ```
  }];
  let arguments = (ins Arg<Variadic<AnyMemRef>, "query row offsets per level",
                           [MemRead]>:$qo_indptrs,
                       KV_ReadKV<Variadic<KV_PagedType>>:$kvs,
                       Arg<AnyMemRef, "positions per query row",
                           [MemWrite]>:$positions);
  let assemblyFormat = [{
    `levels` `(` $qo_indptrs `:` type($qo_indptrs) `)`
    `kvs` `(` $kvs `:` type($kvs) `)`
    `into` $positions attr-dict `:` type($positions)
  }];
  let hasVerifier = 1;
}

def KV_AppendOp : KV_Op<"append"> {
  let summary = "write ragged new K/V rows into a paged cache";
  let description = [{
    Row `i` of `k[nnz, Hkv, D]`, `v[nnz, Hkv, Dv]` goes to request
    `batch_indices[i]` at token `positions[i]`, through the page table (pages
    already allocated). `rope` rotates k at its position first. Quantized
    caches quantize on write (int8 groups write their scales too). For an
    MLA cache (FlashInfer's `append_paged_mla_kv_cache`), k is the latent
    `ckv[nnz, 1, head_dim]` and v the rotary `kpe[nnz, 1, pe_dim]`, already
    rotated.
  }];
  let arguments = (ins AnyMemRef:$k, AnyMemRef:$v, AnyMemRef:$batch_indices,
                       AnyMemRef:$positions, KV_PagedType:$kv,
                       OptionalAttr<KV_RopeAttr>:$rope);
  let assemblyFormat = [{
    $k `,` $v `,` $batch_indices `,` $positions `into` $kv attr-dict `:`
    type($k) `,` type($v) `,` type($batch_indices) `,` type($positions) `,`
    type($kv)
  }];
  let hasVerifier = 1;
}

def KV_YieldOp : KV_Op<"yield", [Pure, Terminator, ReturnLike,
    ParentOneOf<["DecodeOp", "PrefillOp", "MlaDecodeOp", "CascadeOp"]>]> {
  let summary = "the value of a score_mod or mask_mod region";
  let arguments = (ins AnyType:$value);
  let assemblyFormat = "$value attr-dict `:` type($value)";
}

//===----------------------------------------------------------------------===//
// States
//===----------------------------------------------------------------------===//

def KV_MergeSinksOp : KV_Op<"merge_sinks",
    [AllTypesMatch<["input", "result"]>]> {
  let summary = "merge per-query-head attention sinks into a state";
  let description = [{
    Row `r`, head `h` of the result is the merge of the input's state with
    the state `(0, sinks[h] / ln B)` of a key with logit `sinks[h]` and no
    value: `o = o_in e^{lse} / (e^{lse} + e^{sink})` and `lse` includes the
    sink. Applied once to a row's whole state (after split-KV and cascade
    merges), never per partition. Attention ops with a `sinks` operand are
    their op without it followed by this op.

    ```mlir
    %s = kv.merge_sinks %state, %sinks
        : !kv.state<?x64x64xbf16, base = e>, memref<64xf32>
    ```
  }];
  let arguments = (ins KV_StateType:$input,
                       Arg<AnyMemRef, "sink logits per query head",
                           [MemRead]>:$sinks);
  let results = (outs KV_StateType:$result);
  let assemblyFormat = [{
    $input `,` $sinks attr-dict `:` type($input) `,` type($sinks)
  }];
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def KV_MergeOp : KV_Op<"merge", [Pure, Commutative]> {
  let summary = "merge attention states of disjoint key sets";
  let description = [{
    `m = max(l_a, l_b)`; if `m == -inf` the result is `(0, -inf)`, else
    `o = (w_a o_a + w_b o_b) / (w_a + w_b)`, `l = m + log_B(w_a + w_b)` with
    `w = B^(l - m)`. Variadic; all operands have the result type, a whole
    state (reduce a partition axis with `kv.merge_partitions`).
  }];
  let arguments = (ins Variadic<KV_StateType>:$states);
  let results = (outs KV_StateType:$result);
  let assemblyFormat = "$states attr-dict `:` type($states) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def KV_MergePartitionsOp : KV_Op<"merge_partitions", [Pure]> {
  let summary = "reduce a partitioned state over its partition axis";
  let arguments = (ins KV_StateType:$input);
  let results = (outs KV_StateType:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def KV_RebaseOp : KV_Op<"rebase", [Pure]> {
  let summary = "change a state's LSE base, normalizing imported +inf to -inf";
  let description = [{
    `lse_e = lse_2 * ln 2`. An LSE of `+inf` (FlashMLA's convention for an
    empty key set) becomes `-inf` with a zero output, so an imported empty
    state is never merged as if it dominated.
  }];
  let arguments = (ins KV_StateType:$input);
  let results = (outs KV_StateType:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def KV_EmptyStateOp : KV_Op<"empty_state", [Pure]> {
  let summary = "the state of the empty key set: (0, -inf)";
  let description = [{
    The size operands give the dynamic sizes of the result type in buffer
    order: the partition count first (when `partitions = ?`), then the row
    count (when the rows are `?`).

    ```mlir
    %e = kv.empty_state %parts, %rows
        : !kv.state<?x32x128xf32, base = e, partitions = ?>
    ```
  }];
  let arguments = (ins Variadic<Index>:$dynamic_sizes);
  let results = (outs KV_StateType:$result);
  let assemblyFormat = "($dynamic_sizes^)? attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def KV_LoadStateOp : KV_Op<"load_state"> {
  let summary = "import a state from output and LSE buffers";
  let description = [{
    Reads `o[[P,] N, H, Dv]` and `lse[[P,] N, H]` (f32) as they are now. A
    state made elsewhere with `+inf` for empty sets goes through `kv.rebase`.
  }];
  let arguments = (ins Arg<AnyMemRef, "output buffer", [MemRead]>:$output,
                       Arg<AnyMemRef, "LSE buffer", [MemRead]>:$lse);
  let results = (outs KV_StateType:$result);
  let assemblyFormat = [{
    $output `,` $lse attr-dict `:` type($output) `,` type($lse) `->` type($result)
  }];
  let hasVerifier = 1;
}

def KV_StoreStateOp : KV_Op<"store_state"> {
  let summary = "materialize a state into output (and LSE) buffers";
  let arguments = (ins KV_StateType:$state, AnyMemRef:$output,
                       Optional<AnyMemRef>:$lse);
  let assemblyFormat = [{
    $state `,` $output (`,` $lse^)? attr-dict `:` type($state) `,` type($output)
    (`,` type($lse)^)?
  }];
  let hasVerifier = 1;
}

#endif // KVIR_DIALECT_KV_IR_KVOPS_TD
