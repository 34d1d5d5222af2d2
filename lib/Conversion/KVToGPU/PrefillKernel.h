//===- PrefillKernel.h - The tensor-core prefill kernel ---------*- C++ -*-===//
//
// What a prefill kernel is specialized on, its shared memory, and its body
// (PrefillKernel.cpp); Prefill.cpp decides when an op gets one and how it
// is launched.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_LIB_CONVERSION_KVTOGPU_PREFILLKERNEL_H
#define KVIR_LIB_CONVERSION_KVTOGPU_PREFILLKERNEL_H

#include "LoweringContext.h"

#include "kvir/Codegen/KernelFunc.h"
#include "kvir/Codegen/Variants.h"
#include "kvir/Codegen/WarpRoles.h"
#include "kvir/Dialect/KV/IR/KVOps.h"
#include "kvir/Dialect/KVGPU/IR/KVGPUDialect.h"
#include "kvir/Dialect/KVGPU/Transforms/ConfigSelection.h"
#include "kvir/Dialect/KVGPU/Transforms/TensorCoreLayout.h"

#include <optional>

namespace kvir::gpu_lowering {

struct PrefillKernelSpec {
  /// Paged KV (its PagedOperands::flatten() types), or ragged K, V and
  /// kv_indptr when `paged` is null.
  kv::PagedType paged;
  llvm::SmallVector<mlir::Type> kvTypes;
  int64_t kvHeads = 0, headDim = 0, headDimV = 0;
  mlir::Type kvElementType;
  /// q, and its row offsets (null: one query row per request, MLA
  /// decode without rows()).
  mlir::MemRefType qType, qoIndptrType, outType, lseType;
  /// MLA (kv.mla_decode): q is q_nope (headDim wide, the ckv width) and
  /// `qPeType` q_pe (peDim wide); the paged KV's K pool is ckv, its V pool
  /// kpe. A K/V tile is one ckv tile and one kpe tile; the scores add both
  /// parts and the ckv tile is also the value tile (headDimV == headDim).
  int64_t peDim = 0;
  mlir::MemRefType qPeType;
  /// The custom mask (i1 or bit-packed i8), or null.
  mlir::MemRefType maskType;
  /// Each query row's position (i32), or null: bottom-right alignment. The
  /// rows of a tile are then in no order, so every K/V tile of the
  /// request is read and causal / window are masked per row.
  mlir::MemRefType positionsType;
  /// The variants' frame (kv.prefill frame(indptr, positions): a cascade's
  /// requests and concatenated positions), or null.
  mlir::MemRefType frameIndptrType, framePositionsType;
  int64_t qHeads = 0;
  bool causal = false;
  std::optional<int64_t> windowLeft;
  /// On-the-fly RoPE (null without): the block rotates its query tile once
  /// and each K tile after it arrives, in place in shared memory.
  kv::RopeAttr rope;
  double smScale = 1.0;
  std::optional<double> softCap;
  /// The op's variants (sinks, ALiBi, score_mod / mask_mod), their
  /// operands the kernel's last arguments. Sinks join final states only.
  codegen::KernelVariants variants;
  kv::LseBase base = kv::LseBase::two;
  /// Partial states: f32 output and base-2 LSE per KV partition
  /// (blockIdx.z), into [P, nnz, Hq, Dv] and [P, nnz, Hq] workspaces.
  bool partitioned = false;
  /// Split-KV by a work schedule: block x takes work item x of an extra
  /// [items, 4] i32 argument (request, chunk, num_chunks, partial_row;
  /// WorkSchedule.h), or with query rows [items, 5] (and the request's
  /// query tile of scheduledTileRows() rows), block z the z-th q tile of
  /// a row's packed rows (blocksPerScheduledRow). The item's chunk of the
  /// tile's keys gives f32 base-2 partial states in rows partial_row (+ k
  /// * num_chunks for the tile's k-th query row) of out / lse ([rows, Hq,
  /// Dv], [rows, Hq]); an item that is a whole tile writes its final
  /// states to two more arguments of `finalOutType` / `finalLseType`
  /// instead.
  bool scheduled = false;
  mlir::MemRefType finalOutType, finalLseType;
  kvgpu::PrefillConfigAttr config;
  /// int8 groups: scales per cp.async chunk of a scale row
  /// (int8ScaleChunkElements).
  int64_t scaleChunk = 0;

  /// Top-k sparse selection (kv.mla_decode, kv.decode on tensor cores):
  /// i32 [rows, K] key lists, or null. A query tile lies within one query
  /// row (its heads); its K/V tiles are entries of that row's list,
  /// gathered (PagedTileLoader's gathering) and masked key by key.
  mlir::MemRefType topkType;

  int64_t group() const { return qHeads / kvHeads; }
  /// Packed rows per query row: packed row r is query row r / rowStride(),
  /// head r % rowStride() of the KV head's group. The group, padded to
  /// whole query tiles where a tile must lie within one query row (top-k
  /// lists of several query rows per request); rows past the group are
  /// padding, neither loaded nor stored.
  int64_t rowStride() const {
    int64_t g = group();
    return gathers() && !oneRowPerRequest()
               ? llvm::alignTo(g, config.getQTile())
               : g;
  }
  bool gathers() const { return bool(topkType); }
  /// A scheduled kernel's query tile: whole query rows, so that the
  /// blocks of a row's heads see the same keys and share the row's
  /// workspace rows (at least one row; one per request without rows).
  int64_t scheduledTileRows() const {
    return oneRowPerRequest()
               ? 1
               : std::max<int64_t>(1, config.getQTile() / rowStride());
  }
  /// The q tiles (blocks) a scheduled item's query row takes: its packed
  /// rows in tiles when they outnumber a tile.
  int64_t blocksPerScheduledRow() const {
    return rowStride() > config.getQTile()
               ? llvm::divideCeil(rowStride(), config.getQTile())
               : 1;
  }
  /// Whether a mask_mod region hides keys (every tile is masked).
  bool hasMaskMod() const {
    kv::AttentionVariantOpInterface v = variants.op;
    return v && !v.getMaskMod().empty();
  }
  /// Whether tiles mask_mod hides from every row are skipped (not when
  /// gathering: the lists chose the keys).
  bool skipsTiles() const { return hasMaskMod() && !gathers(); }
  /// Quantized paged KV: codes staged by cp.async, converted per tile into
  /// one K and one V tile of `kvElementType` that the mma reads.
  bool quantizedKV() const { return paged && paged.isQuantized(); }
  bool int8Groups() const {
    return paged && paged.getQuant() == kv::Quant::int8_group;
  }
  /// vLLM's V pool (its dims strided): slots per chunk of the transposed V
  /// ring (kvgpu::transposedVChunk), 0 otherwise.
  int64_t transposedVChunk() const {
    return paged ? kvgpu::transposedVChunk(paged) : 0;
  }
  /// Whether V arrives in a ring of its own (codes, or transposed rows) and
  /// is converted per tile into one V tile the mma reads.
  bool convertsV() const { return quantizedKV() || transposedVChunk(); }
  bool isRagged() const { return !paged; }
  /// Whether the mainloop overlaps the products with the softmax (the
  /// config's schedule = overlap, whyNotPrefillSpec checks that the kernel
  /// takes it): per K/V tile i, S_i is issued, then O += P_{i-1} V_{i-1},
  /// and the softmax of S_i runs while the values accumulate.
  bool overlapsProducts() const { return config.overlapsProducts(); }
  bool isMla() const { return peDim > 0; }
  bool oneRowPerRequest() const { return !qoIndptrType; }
  /// Whether the kernel has registers to spare for code that keeps more
  /// values live (the leaner copy addresses, the rescale branch): blocks
  /// of at most 8 warps (255 registers a thread), no producer warpgroup
  /// (which setmaxnreg leaves few), query tiles of rows (the tensor-core
  /// decode's GQA tiles run at the budget). Where ptxas spilled them.
  bool hasRegisterHeadroom() const {
    return config.getNumThreads() <= 256 && !config.hasProducer() &&
           !oneRowPerRequest();
  }
  /// The value columns each warp accumulates.
  int64_t valueSlice() const { return headDimV / config.getValueWarps(); }
  /// The kernel's warp roles: one, whose warps each copy, score and
  /// accumulate their rows; or (roles = producer) a producer warpgroup
  /// that copies the K/V tiles and the consumer warps that compute, with
  /// register budgets.
  codegen::WarpRoles roles() const;
  /// The threads that issue the K/V tiles' copies: the producer's, or the
  /// block's.
  int64_t copyThreads() const {
    return config.hasProducer() ? 32 * config.getProducerWarps()
                                : config.getNumThreads();
  }
  /// Whether a final output of element type `outElement` is staged
  /// through shared memory for 16-byte stores (the layout's rule).
  bool stagesFinalOutput(mlir::Type outElement) const {
    return kvgpu::stagesOutputInShared(outElement);
  }
};

/// Fills `spec`'s paged KV from `view`: its operand types, heads, head
/// dims and element type (MLA: one KV head, ckv as V, kpe's width).
void describePagedKV(kv::PagedViewOp view, PrefillKernelSpec &spec);

/// Sets the buffers the direct kernel writes: `outType` / `lseType`, or the
/// state's own buffer types when null; fails (with the reason) when the
/// output's rows are not 16-byte aligned.
mlir::LogicalResult describeStateBuffers(kv::StateType state,
                                         mlir::MemRefType outType,
                                         mlir::MemRefType lseType,
                                         PrefillKernelSpec &spec,
                                         std::string &whyNot);

/// A kernel's symbol: `stem` (with "_split" for partial states) and the
/// hash of everything that changes its code (the op, the spec's buffers,
/// config and role, the chip).
std::string tensorCoreKernelSymbol(llvm::StringRef stem, mlir::Operation *op,
                                   const PrefillKernelSpec &spec,
                                   const target::TargetInfo &target);

/// Why the kernel cannot be built for `spec` (its dims are not whole mma
/// tiles, or its shared memory is over what a block of `target` may use),
/// or nullopt. Configs given by hand reach this unchecked.
std::optional<std::string> whyNotPrefillSpec(const PrefillKernelSpec &spec,
                                             const target::TargetInfo &target);

/// copy = tma: the plan's K and V tensor-map arguments, and the query's.
inline constexpr llvm::StringLiteral kTensorMapNames[2] = {"k_map", "v_map"};
inline constexpr llvm::StringLiteral kQueryMapName = "q_map";

/// copy = tma: whether the query tile comes by TMA too: its packed rows are
/// whole query rows of the group's heads (a box of q_tile / G rows x G
/// heads x 64 columns lands in packed order), over a row-major q.
bool copiesQueryByTma(const PrefillKernelSpec &spec);
/// The map of kQueryMapName over plan argument "q".
kvgpu::TensorMapAttr prefillQueryMap(const PrefillKernelSpec &spec);

/// copy = tma: the maps of kTensorMapNames over the plan arguments
/// `kSource` and `vSource` (ragged K and V, or the pools K and V live in:
/// the same one for combined storage), each box one 128-byte column block
/// of a tile's keys (ragged) or of a page's (paged).
llvm::SmallVector<kvgpu::TensorMapAttr, 2>
prefillTensorMaps(const PrefillKernelSpec &spec, llvm::StringRef kSource,
                  llvm::StringRef vSource);

/// The kernel's shared buffers, in KernelFunc::getShared order.
codegen::SharedMemoryLayout prefillSharedLayout(const PrefillKernelSpec &spec);

/// The kernel's arguments: q, [q_pe], [qo_indptr], the KV operands, [mask],
/// [K and V tensor maps], [positions], [frame indptr, frame positions],
/// [topk], [work_items], out,
/// lse, [num_partitions], [final out, final lse], the variant operands.
llvm::SmallVector<mlir::Type> prefillArgumentTypes(const PrefillKernelSpec &spec);

/// The launch plan's names of the kernel's arguments, in the same order:
/// `inputs` name the op's operands (queries, qo_indptr, KV operands, mask,
/// positions, frame, topk, as the plan declared them), `variants` the
/// variant operands; the rest are the plan's own (work_items, out / lse or
/// partial_out / partial_lse, num_partitions).
llvm::SmallVector<llvm::StringRef>
prefillArgumentNames(const PrefillKernelSpec &spec,
                     llvm::ArrayRef<llvm::StringRef> inputs,
                     llvm::ArrayRef<std::string> variants);

/// Builds the body of a kernel created with the two above. Launched on
/// (QueryTiles slots, KV heads, partitions) blocks of 32 * warps threads;
/// scheduled: (work items, KV heads, query tiles per request).
void buildPrefillBody(const codegen::KernelFunc &kf,
                      const PrefillKernelSpec &spec);

/// Why a buffer cannot be read or written in 16-byte chunks along its
/// innermost dim (that dim must be unit-stride and every other stride a
/// multiple of 16 bytes), or nullopt.
std::optional<std::string> whyNot16ByteRows(llvm::StringRef what,
                                            mlir::MemRefType type);

/// The query rows and keys of a tensor-core op with rows: its qo_indptr,
/// KV view and selection (or null).
struct QueryRowsKV {
  mlir::Value qoIndptr, kv, topk;
};

/// The kernels, launch plan and launches of a tensor-core attention op
/// with query rows (kv.prefill, kv.mla_decode rows()) whose direct kernel
/// is `spec`. Split-KV follows the host's work schedule
/// (kvir_schedule_prefill_work over each request's rows and keys): the
/// direct kernel when no query tile is cut, else the scheduled split
/// kernel and the ragged merge of the cut tiles' rows. With fixed grids
/// (graph-max-batch), without query rows (`rows.qoIndptr` null) or under
/// a config of one partition, the plan-free form: the split kernel over
/// `num_partitions` shares of each tile's keys when the tiles do not fill
/// the chip, and the merge. `addInputs` adds the op's input buffers to the
/// plan (defining the sizes `batch` and `nnz`, the query rows), binds them
/// and returns their names in kernel argument order; `symbol` names a
/// kernel.
mlir::LogicalResult emitTensorCoreLaunches(
    mlir::ImplicitLocOpBuilder &b, LoweringContext &context,
    mlir::Operation *op, const PrefillKernelSpec &spec, mlir::Value out,
    mlir::Value lse, const QueryRowsKV &rows,
    llvm::function_ref<llvm::SmallVector<llvm::StringRef>(
        PlanBuilder &, llvm::StringMap<mlir::Value> &)>
        addInputs,
    llvm::function_ref<std::string(const PrefillKernelSpec &)> symbol);

/// The launches of a tensor-core attention op with one query row per
/// request (kv.mla_decode without rows(), kv.decode on tensor cores):
/// split-KV follows the lengths, as kv.decode's does: the plan's work
/// schedule (kvir_schedule_work over the requests' kv lengths) cuts long
/// requests into chunks of whole K/V tiles (at least 256 keys); the direct
/// kernel runs when no request is cut, else the scheduled split kernel (one
/// block per item and query tile of its request; whole requests written
/// final) and the ragged merge. `queries` are the query buffers, in kernel
/// argument order (the first one's rows are the batch); `topk` the op's
/// selection or null (the schedule then sees its entries per request);
/// with fixed grids (graph-max-batch) the split kernel and the merge
/// always run.
mlir::LogicalResult emitOneRowTensorCoreLaunches(
    mlir::ImplicitLocOpBuilder &b, LoweringContext &context,
    mlir::Operation *op, const PrefillKernelSpec &spec,
    llvm::ArrayRef<std::pair<llvm::StringRef, mlir::Value>> queries,
    kv::PagedOperands kv, mlir::Value topk, mlir::Value out, mlir::Value lse,
    llvm::function_ref<std::string(const PrefillKernelSpec &)> symbol);

} // namespace kvir::gpu_lowering

#endif // KVIR_LIB_CONVERSION_KVTOGPU_PREFILLKERNEL_H
