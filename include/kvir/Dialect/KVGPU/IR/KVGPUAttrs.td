//===- KVGPUAttrs.td - kvgpu attributes -------------------*- tablegen -*-===//
#ifndef KVIR_DIALECT_KVGPU_IR_KVGPUATTRS_TD
#define KVIR_DIALECT_KVGPU_IR_KVGPUATTRS_TD

include "kvir/Dialect/KVGPU/IR/KVGPUDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

class KVGPU_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<KVGPU_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

//===----------------------------------------------------------------------===//
// Configurations
//===----------------------------------------------------------------------===//

def KVGPU_DecodeConfigAttr : KVGPU_Attr<"DecodeConfig", "decode"> {
  let summary = "the work decomposition of a GPU decode";
  let description = [{
    One thread block per (request, KV head, KV partition). Threads are
    (`threads_x` along the head dim, each owning `vector` contiguous
    elements, i.e. one 16-byte load; the query heads of the GQA group;
    `threads_z` tokens in flight). K/V tiles of `tile_tokens` tokens are
    staged in shared memory once for the whole group, through a
    `stages`-deep ring: while tile i is scored, tiles i + 1 ... i + stages - 1
    are in flight (cp.async when rows are 16-byte vectors). Split-KV
    launches at most `max_partitions` partitions per (request, KV head);
    how many is the launch plan's rule for the target chip.

    ```mlir
    #kvgpu.decode<vector = 8, threads_x = 16, threads_z = 2,
                  tile_tokens = 16, stages = 3, max_partitions = 32>
    ```
  }];
  let parameters = (ins "int64_t":$vector, "int64_t":$threads_x,
                        "int64_t":$threads_z, "int64_t":$tile_tokens,
                        "int64_t":$stages, "int64_t":$max_partitions);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def KVGPU_MmaAtomKind : I32EnumAttr<"MmaAtomKind",
    "the tensor-core instruction a kernel multiplies with", [
  I32EnumAttrCase<"mma_sync", 0>, // warp-level mma.sync m16n8k16 (sm_80+)
  I32EnumAttrCase<"wgmma", 1>     // warpgroup-level wgmma.mma_async (sm_90a)
]> {
  let cppNamespace = "::kvir::kvgpu";
  let genSpecializedAttr = 0;
}

def KVGPU_TileSchedule : I32EnumAttr<"TileSchedule",
    "how a prefill's products and softmax follow one another", [
  // Each product is waited for at once: S_i, softmax, O += P_i V_i.
  I32EnumAttrCase<"serial", 0>,
  // wgmma: S_i is issued, then O += P_{i-1} V_{i-1}; the softmax of S_i
  // runs while the values accumulate (FlashAttention-3's overlap within a
  // warpgroup).
  I32EnumAttrCase<"overlap", 1>
]> {
  let cppNamespace = "::kvir::kvgpu";
  let genSpecializedAttr = 0;
}

def KVGPU_PrefillRoles : I32EnumAttr<"PrefillRoles",
    "which warps of a prefill copy and which compute", [
  // Every warp copies its share of each K/V tile and computes its rows.
  I32EnumAttrCase<"uniform", 0>,
  // A producer warpgroup copies the K/V tiles; the `warps` consumer warps
  // only compute (FlashAttention-3's warp specialization).
  I32EnumAttrCase<"producer", 1>
]> {
  let cppNamespace = "::kvir::kvgpu";
  let genSpecializedAttr = 0;
}

def KVGPU_TileCopy : I32EnumAttr<"TileCopy",
    "how a prefill's producer brings K/V tiles into shared memory", [
  // Every copying thread moves 16-byte chunks (cp.async), zero-filling rows
  // past the keys.
  I32EnumAttrCase<"cp_async", 0>,
  // One thread issues a TMA copy (cp.async.bulk.tensor) of each tile's
  // box of a tensor map, completing on the stage's mbarrier; the tile that
  // holds the last keys goes by cp.async, so no key past them is read.
  I32EnumAttrCase<"tma", 1>
]> {
  let cppNamespace = "::kvir::kvgpu";
  let genSpecializedAttr = 0;
}

def KVGPU_PrefillConfigAttr : KVGPU_Attr<"PrefillConfig", "prefill"> {
  let summary = "the work decomposition of a tensor-core prefill";
  let description = [{
    FlashAttention-2 on mma.sync m16n8k16, or (`mma = wgmma`, sm_90a) on
    warpgroup-level wgmma.mma_async. One thread block per (query
    tile, KV head, KV partition). A query tile is `q_tile` packed rows of one
    request: row `r` is query row `r / G`, head `r % G` of the KV head's
    group of `G` query heads, so each K/V tile is read once for the group.
    `warps` warps split the rows, each owning whole 16-row mma tiles; none
    splits the keys. K and V tiles of `kv_tile` keys arrive through a
    `stages`-deep cp.async pipeline into swizzled shared memory; ldmatrix
    feeds the mma. With `q_in_registers` each warp keeps its queries' A
    fragments in registers for the whole key loop, else it reloads them
    from shared memory per K tile (fewer registers, for large head dims).
    Split-KV launches at most `max_partitions` partitions of each tile's
    keys; how many is the launch plan's rule for the target chip.
    `value_warps` (default 1) splits the warps further along the value
    dim: warps `w` and `w + warps / value_warps` own the same rows, and
    each accumulates its own `head_dim_v / value_warps` columns of O (for
    wide values, MLA's 512, whose accumulators would not fit one warp's
    registers). The warps of the first slice score each tile and share the
    softmax (P, and each row's rescale factor, max and sums) through
    shared memory, so the scores are computed once.

    `mma` (default `mma_sync`) is the tensor-core instruction. With
    `wgmma`, each warpgroup (4 warps) owns 64 rows: S = Q K^T reads Q and
    the K tile from shared memory (wgmma's SS form), O += P V takes P from
    registers (the RS form); the Q, K and V tiles use the hardware's
    128-byte swizzle. Its warps are whole warpgroups, one 16-row tile each
    (`q_tile = 16 * warps / value_warps`), without Q fragments in
    registers.

    `schedule` (default `serial`) orders the products and the softmax.
    `overlap` (wgmma only) issues S_i = Q K_i^T and then O += P_{i-1} V_{i-1}
    and runs the softmax of S_i while the values accumulate, rescaling O
    when they have; P_{i-1} and V_{i-1} live through tile i (more
    registers: the chooser takes it above head dim 64, where one block
    fills an SM anyway). It needs V read where it landed (not converted
    per tile: quantized or vLLM's transposed V), every tile's products
    issued (no mask_mod tile skipping), and is not MLA's.

    `roles` (default `uniform`) says which warps copy. With `uniform` every
    warp issues its share of each K/V tile's copies and computes its rows.
    With `producer` (wgmma, schedule = overlap) a producer warpgroup of 4
    more warps streams the K/V tiles into the `stages`-deep ring and hands
    each over on an mbarrier; the `warps` consumer warps only compute, their
    warpgroups taking turns to issue their products (named barriers), and
    `setmaxnreg` moves registers from the producer to the consumers. The
    block then has `warps + 4` warps.

    `copy` (default `cp_async`) is how the producer copies: `tma` (roles =
    producer) issues one TMA copy per box of the K and V tensor maps (the
    plan's `tensor_map` arguments) for every whole tile, the stage's
    mbarrier counting their bytes; a tile cut by the end of the keys still
    goes by cp.async, zero-filling the rows past them.

    ```mlir
    #kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, stages = 2,
                   q_in_registers = true, max_partitions = 16>
    #kvgpu.prefill<q_tile = 128, kv_tile = 128, warps = 8, stages = 2,
                   q_in_registers = false, max_partitions = 16, mma = wgmma,
                   schedule = overlap>
    #kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, stages = 3,
                   q_in_registers = false, max_partitions = 16, mma = wgmma,
                   schedule = overlap, roles = producer>
    ```
  }];
  let parameters = (ins "int64_t":$q_tile, "int64_t":$kv_tile,
                        "int64_t":$warps, "int64_t":$stages,
                        "bool":$q_in_registers, "int64_t":$max_partitions,
                        DefaultValuedParameter<"int64_t", "1">:$value_warps,
                        DefaultValuedParameter<"::kvir::kvgpu::MmaAtomKind",
                          "::kvir::kvgpu::MmaAtomKind::mma_sync">:$mma,
                        DefaultValuedParameter<"::kvir::kvgpu::TileSchedule",
                          "::kvir::kvgpu::TileSchedule::serial">:$schedule,
                        DefaultValuedParameter<"::kvir::kvgpu::PrefillRoles",
                          "::kvir::kvgpu::PrefillRoles::uniform">:$roles,
                        DefaultValuedParameter<"::kvir::kvgpu::TileCopy",
                          "::kvir::kvgpu::TileCopy::cp_async">:$copy);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Warps along the rows (each set of them splits the value dim).
    int64_t getRowWarps() const { return getWarps() / getValueWarps(); }
    /// 16-row mma tiles each warp owns.
    int64_t getWarpRowTiles() const {
      return getQTile() / (16 * getRowWarps());
    }
    /// Whether a producer warpgroup copies the K/V tiles (roles =
    /// producer), and its warps (0 without).
    bool hasProducer() const {
      return getRoles() == ::kvir::kvgpu::PrefillRoles::producer;
    }
    int64_t getProducerWarps() const { return hasProducer() ? 4 : 0; }
    /// The block's threads: the computing warps' and the producer's.
    int64_t getNumThreads() const {
      return 32 * (getWarps() + getProducerWarps());
    }
    bool copiesByTma() const {
      return getCopy() == ::kvir::kvgpu::TileCopy::tma;
    }
    bool usesWgmma() const {
      return getMma() == ::kvir::kvgpu::MmaAtomKind::wgmma;
    }
    bool overlapsProducts() const {
      return getSchedule() == ::kvir::kvgpu::TileSchedule::overlap;
    }
    /// Whether the warps of value slice 0 score the tiles and share the
    /// softmax with the other slices through shared memory (value warps).
    bool sharesSoftmax() const { return getValueWarps() > 1; }
    /// The deepest K/V ring the kernel's schedule takes (the verifier's
    /// bound, and the config chooser's).
    static constexpr int64_t kMaxStages = 4;
  }];
}

//===----------------------------------------------------------------------===//
// Size expressions
//===----------------------------------------------------------------------===//

def KVGPU_SizeExprKind : I32EnumAttr<"SizeExprKind", "size expression node", [
  I32EnumAttrCase<"constant", 0>,
  I32EnumAttrCase<"symbol", 1>,
  I32EnumAttrCase<"add", 2>,
  I32EnumAttrCase<"mul", 3>,
  I32EnumAttrCase<"floordiv", 4>,
  I32EnumAttrCase<"ceildiv", 5>,
  I32EnumAttrCase<"min", 6>,
  I32EnumAttrCase<"max", 7>
]> {
  let cppNamespace = "::kvir::kvgpu";
  let genSpecializedAttr = 0;
}

def KVGPU_SizeExprAttr : KVGPU_Attr<"SizeExpr", "size"> {
  let summary = "an integer expression of a launch's run-time sizes";
  let description = [{
    Integers, named sizes (`batch`, `num_partitions`, ...), `+`, `*`,
    `floordiv(a, b)`, `ceildiv(a, b)`, `min(a, b, ...)` and `max(a, b, ...)`
    over signed 64-bit values. Grids, buffer shapes and the split-KV rule of
    a launch plan are such expressions; the host code, the manifests and the
    C header evaluate the same expression.

    ```mlir
    #kvgpu.size<min(32, ceildiv(264, batch * 8))>
    ```
  }];
  let parameters = (ins
    "::kvir::kvgpu::SizeExprKind":$kind,
    "int64_t":$value,
    StringRefParameter<"symbol name", "\"\"">:$symbol,
    OptionalArrayRefParameter<"::kvir::kvgpu::SizeExprAttr">:$operands);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    static SizeExprAttr constant(::mlir::MLIRContext *ctx, int64_t value);
    static SizeExprAttr symbolRef(::mlir::MLIRContext *ctx, ::llvm::StringRef name);
    /// A node over `operands`, folded when they are all constants.
    static SizeExprAttr node(SizeExprKind kind, ::llvm::ArrayRef<SizeExprAttr> operands);
    static SizeExprAttr add(SizeExprAttr a, SizeExprAttr b) { return node(SizeExprKind::add, {a, b}); }
    static SizeExprAttr mul(SizeExprAttr a, SizeExprAttr b) { return node(SizeExprKind::mul, {a, b}); }
    static SizeExprAttr ceilDiv(SizeExprAttr a, SizeExprAttr b) { return node(SizeExprKind::ceildiv, {a, b}); }
    static SizeExprAttr floorDiv(SizeExprAttr a, SizeExprAttr b) { return node(SizeExprKind::floordiv, {a, b}); }
    static SizeExprAttr min(::llvm::ArrayRef<SizeExprAttr> xs) { return node(SizeExprKind::min, xs); }
    static SizeExprAttr max(::llvm::ArrayRef<SizeExprAttr> xs) { return node(SizeExprKind::max, xs); }

    bool isConstant() const { return getKind() == SizeExprKind::constant; }
    /// The value, given the value of each symbol (nullopt: unknown, or a
    /// division by zero).
    std::optional<int64_t> evaluate(
        ::llvm::function_ref<std::optional<int64_t>(::llvm::StringRef)> lookup) const;
    /// Calls `fn` on every symbol the expression reads.
    void walkSymbols(::llvm::function_ref<void(::llvm::StringRef)> fn) const;
    /// The expression as text: `min(32, ceildiv(264, batch * 8))`.
    std::string str() const;
    /// The expression in C over int64_t values, symbols spelled by `name`
    /// (ceildiv/floordiv/min/max as calls of `prefix`ceildiv, ...).
    std::string toC(::llvm::function_ref<std::string(::llvm::StringRef)> name,
                    ::llvm::StringRef prefix) const;
  }];
}

//===----------------------------------------------------------------------===//
// Launch plans
//===----------------------------------------------------------------------===//

def KVGPU_ArgRole : I32EnumAttr<"ArgRole", "what a launch-plan argument is", [
  I32EnumAttrCase<"input", 0>,      // read by the kernels, given by the caller
  I32EnumAttrCase<"output", 1>,     // written by the kernels, given by the caller
  I32EnumAttrCase<"workspace", 2>,  // scratch the caller provides (plan sizes)
  I32EnumAttrCase<"size", 3>,       // an index-typed size passed by value
  I32EnumAttrCase<"schedule", 4>,   // a device buffer the plan's work
                                    // schedule fills before the launches
  I32EnumAttrCase<"host", 5>,       // host memory the work schedule reads;
                                    // no kernel takes it
  I32EnumAttrCase<"scalar", 6>,     // a float given by the caller, passed
                                    // by value (fp8 KV's k_scale, v_scale)
  I32EnumAttrCase<"tensor_map", 7>  // a TMA tensor map (128 bytes in device
                                    // memory) over another argument, which
                                    // the host encodes before the launches
]> {
  let cppNamespace = "::kvir::kvgpu";
  let genSpecializedAttr = 0;
}

def KVGPU_LaunchCondition : I32EnumAttr<"LaunchCondition",
    "when a kernel of a plan is launched", [
  I32EnumAttrCase<"always", 0>,
  I32EnumAttrCase<"unsplit", 1>,  // the plan's partition count is 1
  I32EnumAttrCase<"split", 2>     // the plan's partition count exceeds 1
]> {
  let cppNamespace = "::kvir::kvgpu";
  let genSpecializedAttr = 0;
}

def KVGPU_TensorMapAttr : KVGPU_Attr<"TensorMap", "tensor_map"> {
  let summary = "a TMA tensor map over a launch-plan buffer";
  let description = [{
    The map the host encodes (cuTensorMapEncodeTiled) over the whole of
    buffer argument `source`, a row-major memref: its dims (innermost
    first for the driver) are the buffer's shape, its strides the
    row-major ones, its data type the element type's; `box` is the tile
    one copy moves, outermost dim first as in the memref (at most 256 per
    dim), and `swizzle` the bytes (0, 32, 64 or 128) of the hardware
    swizzle applied in shared memory, which bounds the box's innermost
    bytes. No interleave, unit element strides, 128-byte L2 promotion,
    out-of-bound elements read as zeros.

    ```mlir
    #kvgpu.tensor_map<"k", box = [64, 1, 64], swizzle = 128>
    ```
  }];
  let parameters = (ins StringRefParameter<"source argument">:$source,
                        ArrayRefParameter<"int64_t">:$box,
                        "int64_t":$swizzle);
  let assemblyFormat = [{
    `<` $source `,` `box` `=` `[` $box `]` `,` `swizzle` `=` $swizzle `>`
  }];
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The encoded map's bytes (a CUtensorMap) and their alignment.
    static constexpr int64_t kBytes = 128, kAlignment = 64;
    /// The fixed encoding parameters: CUtensorMapInterleave NONE,
    /// CUtensorMapL2promotion L2_128B, CUtensorMapFloatOOBfill NONE (zeros).
    static constexpr int64_t kInterleave = 0, kL2Promotion = 2, kOobFill = 0;
    /// CUtensorMapSwizzle of `swizzle` (0-3).
    int64_t getSwizzleMode() const;
    /// CUtensorMapDataType of `element` (nullopt: none TMA has).
    static std::optional<int64_t> getDataType(::mlir::Type element);
    /// The bytes one copy of the box moves.
    int64_t getBoxBytes(::mlir::Type element) const;
  }];
}

def KVGPU_PlanArgAttr : KVGPU_Attr<"PlanArg", "arg"> {
  let summary = "a named buffer or size of a launch plan";
  let description = [{
    `type` is the memref type the kernels take (or `index` for a size);
    `shape` gives every dim as a size expression (static dims as constants),
    empty for sizes. Workspace buffers are allocated by the caller with
    exactly this shape (and only when a kernel that takes them launches).
    A `tensor_map` argument is a `memref<16xi64>` (the 128 bytes of a
    CUtensorMap, 64-byte aligned) whose `map` says what the host encodes
    into it before the launches.

    ```mlir
    #kvgpu.arg<"q", input, memref<?x32x128xf16>,
               shape = [#kvgpu.size<batch>, #kvgpu.size<32>, #kvgpu.size<128>]>
    #kvgpu.arg<"k_map", tensor_map, memref<16xi64>,
               shape = [#kvgpu.size<16>],
               map = #kvgpu.tensor_map<"k", box = [64, 1, 64], swizzle = 128>>
    ```
  }];
  let parameters = (ins StringRefParameter<"name">:$name,
                        EnumParameter<KVGPU_ArgRole>:$role,
                        "::mlir::Type":$type,
                        OptionalArrayRefParameter<"::kvir::kvgpu::SizeExprAttr">:$shape,
                        OptionalParameter<"::kvir::kvgpu::TensorMapAttr">:$map);
  let assemblyFormat = [{
    `<` $name `,` $role `,` $type (`,` `shape` `=` `[` $shape^ `]`)?
    (`,` `map` `=` $map^)? `>`
  }];
  let builders = [
    AttrBuilder<(ins "::llvm::StringRef":$name, "ArgRole":$role,
                     "::mlir::Type":$type,
                     "::llvm::ArrayRef<SizeExprAttr>":$shape), [{
      return $_get($_ctxt, name, role, type, shape, TensorMapAttr());
    }]>
  ];
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Bytes of a buffer with this shape, given the plan's sizes.
    std::optional<int64_t> evaluateBytes(
        ::llvm::function_ref<std::optional<int64_t>(::llvm::StringRef)> lookup) const;
  }];
}

def KVGPU_SizeDefAttr : KVGPU_Attr<"SizeDef", "size_def"> {
  let summary = "a run-time size of a launch plan";
  let description = [{
    Either a dim of an argument (`#kvgpu.size_def<"batch" from "q"[0]>`) or
    an expression of sizes defined before it
    (`#kvgpu.size_def<"num_partitions" = #kvgpu.size<...>>`).
  }];
  let parameters = (ins StringRefParameter<"name">:$name,
                        StringRefParameter<"argument", "\"\"">:$arg,
                        DefaultValuedParameter<"int64_t", "-1">:$axis,
                        OptionalParameter<"::kvir::kvgpu::SizeExprAttr">:$value);
  let assemblyFormat = [{
    `<` $name (`from` $arg^ `[` $axis `]`)? (`=` $value^)? `>`
  }];
  let genVerifyDecl = 1;
}

def KVGPU_KernelLaunchAttr : KVGPU_Attr<"KernelLaunch", "kernel"> {
  let summary = "one kernel of a launch plan";
  let description = [{
    `role` names the kernel's part for manifests (`direct`, `split`,
    `merge`, ...); `when` says which of the plan's paths launches it; `args`
    are plan argument and size names in the kernel's parameter order. Grid
    dims are size expressions, block dims constants; a launch with an empty
    grid is skipped.
  }];
  let parameters = (ins StringRefParameter<"role">:$role,
                        "::mlir::SymbolRefAttr":$kernel,
                        EnumParameter<KVGPU_LaunchCondition>:$when,
                        ArrayRefParameter<"::kvir::kvgpu::SizeExprAttr">:$grid,
                        ArrayRefParameter<"int64_t">:$block,
                        "int64_t":$static_shared_bytes,
                        "int64_t":$dynamic_shared_bytes,
                        "::mlir::ArrayAttr":$args);
  let assemblyFormat = [{
    `<` $role `,` $kernel `,` $when `,` `grid` `=` `[` $grid `]` `,`
    `block` `=` `[` $block `]` `,` `shared` `=` $static_shared_bytes `,`
    `dynamic_shared` `=` $dynamic_shared_bytes `,` `args` `=` $args `>`
  }];
  let genVerifyDecl = 1;
}

def KVGPU_WorkScheduleAttr : KVGPU_Attr<"WorkSchedule", "work_schedule"> {
  let summary = "a host-side split-KV work list a launch plan runs first";
  let description = [{
    Before the launches, the host runs `kvir_schedule_work` (kvir's runtime
    library, include/kvir/Runtime/WorkSchedule.h) on the `lengths` argument
    (role `host`: each request's kv_len), filling the `items` argument
    ([max items, 4] i32: request, chunk, chunk count, partial row) and
    `merge_indptr` ([batch + 1] i32), both role `schedule`. The number of
    items becomes size `count`; the plan's `split` kernels launch when it
    exceeds size `batch` (some request was cut), its `unsplit` ones
    otherwise. The other parameters are the schedule's: chunks are
    multiples of `granule` tokens and at least `min_chunk`, one KV head
    gets at most max(batch, `target_items`) items, a caller without lengths
    cuts each request into size `uniform_chunks` pieces, and a window of
    `window_left` (-1: none) limits the keys a request sees. With
    `max_batch` (a size; omitted: none) the grids are fixed for that many
    requests (CUDA graphs): `merge_indptr` has max_batch + 1 entries, those
    past the batch padded empty (`kvir_schedule_pad_batch`).

    With `qo_indptr` (a `host` argument: the requests' query row offsets,
    batch + 1 i32) the schedule is a prefill's
    (`kvir_schedule_prefill_work`): items ([max items, 5] i32: the four
    above and the query tile) are query tiles of `tile_rows` rows times
    chunks of the keys they see (under `causal` and the window), the chunk
    size the one whose items end soonest on the chip's `target_items`
    slots (the items it runs at once); `merge_indptr` has a row
    per query row (nnz + 1 entries: a cut tile's rows hold their chunks'
    partial states there); the schedule also defines size `tiles`, the
    number of query tiles (the split kernels launch when the count exceeds
    it), and size `workspace_rows`, the partial-state rows the cut tiles
    take (merge_indptr[nnz]). With `workspace_limit` (a size; omitted:
    none) the schedule takes at most that many partial-state rows, so that
    a workspace of that size, fixed before the batch is known, always
    holds them (CUDA graphs: the grids and buffers of a captured graph are
    those of its capture). A prefill schedule has no `uniform_chunks` and
    no `max_batch`.

    ```mlir
    #kvgpu.work_schedule<lengths = "kv_lengths", items = "work_items",
      merge_indptr = "merge_indptr", count = "num_work", batch = "batch",
      uniform_chunks = "num_partitions", target_items = 132, granule = 16,
      min_chunk = 256, window_left = -1>
    #kvgpu.work_schedule<lengths = "kv_lengths", items = "work_items",
      merge_indptr = "merge_indptr", count = "num_work", batch = "batch",
      target_items = 792, granule = 64, min_chunk = 256, window_left = -1,
      qo_indptr = "qo_indptr_host", tiles = "num_query_tiles",
      workspace_rows = "partial_rows", tile_rows = 32, causal = true>
    #kvgpu.work_schedule<lengths = "kv_lengths", items = "work_items",
      merge_indptr = "merge_indptr", count = "num_work", batch = "batch",
      target_items = 16, granule = 64, min_chunk = 256, window_left = -1,
      qo_indptr = "qo_indptr_host", tiles = "num_query_tiles",
      workspace_rows = "partial_rows", tile_rows = 32, causal = true,
      workspace_limit = "max_partial_rows">
    ```
  }];
  let parameters = (ins StringRefParameter<"host lengths argument">:$lengths,
                        StringRefParameter<"work list argument">:$items,
                        StringRefParameter<"merge row offsets argument">:$merge_indptr,
                        StringRefParameter<"size it defines">:$count,
                        StringRefParameter<"batch size">:$batch,
                        StringRefParameter<"plan-free chunk count size", "\"\"">:$uniform_chunks,
                        "int64_t":$target_items,
                        "int64_t":$granule,
                        "int64_t":$min_chunk,
                        "int64_t":$window_left,
                        StringRefParameter<"fixed-grid batch size", "\"\"">:$max_batch,
                        StringRefParameter<"host query row offsets argument", "\"\"">:$qo_indptr,
                        StringRefParameter<"query tile count size it defines", "\"\"">:$tiles,
                        StringRefParameter<"partial-state row count size it defines", "\"\"">:$workspace_rows,
                        DefaultValuedParameter<"int64_t", "0">:$tile_rows,
                        DefaultValuedParameter<"bool", "false">:$causal,
                        StringRefParameter<"partial-state row bound size", "\"\"">:$workspace_limit);
  let extraClassDeclaration = [{
    /// Whether this is a prefill's schedule (kvir_schedule_prefill_work).
    bool isPrefill() const { return !getQoIndptr().empty(); }
    /// The int32 fields of one work item.
    int64_t getItemFields() const { return isPrefill() ? 5 : 4; }
    /// The size the item count is compared with: the split kernels launch
    /// when it is exceeded (some request or tile was cut).
    ::llvm::StringRef getUnsplitCount() const {
      return isPrefill() ? getTiles() : getBatch();
    }
  }];
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def KVGPU_PagedTablesAttr : KVGPU_Attr<"PagedTables", "paged_tables"> {
  let summary = "the page tables of a plan's paged KV, for run-time checks";
  let description = [{
    The table form (`csr`, `block_table`, `token_table`, `token_offset`)
    of the plan's paged KV, whose tables are the plan arguments of that
    form's names (`kv_indptr`, `kv_indices`, `kv_last_page_len`;
    `block_table`, `seq_lens`; `cachestarts`, `kv_lens`), its page size,
    and the pool's capacity in tokens as a size expression (absent when the
    pool's layout has no single page or token axis). The C header derives
    a table check from it (`<plan>_validate`, calling libKVIRRuntime).

    ```mlir
    #kvgpu.paged_tables<table = "csr", page_size = 16,
                        pool_tokens = <num_pages * 16>>
    ```
  }];
  let parameters = (ins StringRefParameter<"table form">:$table,
                        "int64_t":$page_size,
                        OptionalParameter<"::kvir::kvgpu::SizeExprAttr">:$pool_tokens);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def KVGPU_LaunchPlanAttr : KVGPU_Attr<"LaunchPlan", "plan"> {
  let summary = "how to launch the kernels of one lowered kv op";
  let description = [{
    `op` is the kv op the plan implements and `name` a stem unique in the
    module. `args` are the buffers and sizes callers provide (workspace
    included); `sizes` the run-time sizes, read from argument dims or
    computed; `partitions`, if set, names the size that selects between the
    `unsplit` and `split` kernels (split-KV) unless a `schedule` (a
    #kvgpu.work_schedule) decides; `config`, if set, is the
    #kvgpu configuration the kernels were built with. The kernels launch in
    order.
  }];
  let parameters = (ins StringRefParameter<"op">:$op,
                        StringRefParameter<"name">:$name,
                        ArrayRefParameter<"::kvir::kvgpu::PlanArgAttr">:$args,
                        OptionalArrayRefParameter<"::kvir::kvgpu::SizeDefAttr">:$sizes,
                        StringRefParameter<"partition count size", "\"\"">:$partitions,
                        OptionalParameter<"::kvir::kvgpu::WorkScheduleAttr">:$schedule,
                        OptionalParameter<"::kvir::kvgpu::PagedTablesAttr">:$tables,
                        OptionalParameter<"::mlir::Attribute">:$config,
                        ArrayRefParameter<"::kvir::kvgpu::KernelLaunchAttr">:$kernels);
  let assemblyFormat = [{
    `<` $op `,` $name `,` `args` `=` `[` $args `]` `,`
    (`sizes` `=` `[` $sizes^ `]` `,`)?
    (`partitions` `=` $partitions^ `,`)?
    (`schedule` `=` $schedule^ `,`)?
    (`tables` `=` $tables^ `,`)?
    (`config` `=` $config^ `,`)?
    `kernels` `=` `[` $kernels `]` `>`
  }];
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    PlanArgAttr lookupArg(::llvm::StringRef name) const;
    SizeDefAttr lookupSize(::llvm::StringRef name) const;
    /// Evaluates every size, given the argument dims (`dim(arg, axis)`);
    /// nullopt for sizes that cannot be evaluated.
    ::llvm::StringMap<int64_t> evaluateSizes(
        ::llvm::function_ref<std::optional<int64_t>(::llvm::StringRef, int64_t)> dim) const;
  }];
}

#endif // KVIR_DIALECT_KVGPU_IR_KVGPUATTRS_TD
