//===- PrefillKernel.cpp - The tensor-core prefill kernel -----------------===//
//
// FlashAttention-2 over paged or ragged KV, one block per (query tile, KV
// head, KV partition), composed of:
//   1. the work (PrefillWork.cpp): thread 0 finds the block's tile
//      (QueryTiles), reads the request's table, and derives the keys the
//      tile's rows can see (causal, window) and the partition's share of
//      them; with a custom mask the block sums the mask blocks of the
//      requests before its own;
//   2. the prologue (here): the query tile (GQA heads packed into rows) and
//      the page-table entries of the first S K/V tiles arrive by cp.async;
//      K/V tiles 0 ... S - 2 of the S-stage ring are issued;
//   3. the mainloop (PrefillMainloop.cpp) over the K/V stream
//      (PrefillKVStream.cpp: addressing, the cp.async pipeline, the
//      conversion of quantized and transposed rings, tile skipping), the
//      scores masked (PrefillMask.cpp) and accumulated on a warp's
//      fragments (WarpAttentionTile);
//   4. the epilogue (PrefillEpilogue.cpp): O / l; 16-bit outputs are staged
//      through the warp's rows of the query tile for 16-byte stores; f32
//      outputs (and partial states) are stored from the fragments (a quad
//      writes a whole 32-byte sector).
//
//===----------------------------------------------------------------------===//
#include "PrefillKernelParts.h"

#include "kvir/Codegen/AttentionTile.h"
#include "kvir/Codegen/IRBuilder.h"
#include "kvir/Codegen/MmaSyncAtom.h"
#include "kvir/Codegen/Rope.h"
#include "kvir/Codegen/Variants.h"
#include "kvir/Codegen/WarpgroupProducts.h"
#include "kvir/Dialect/KV/Utils/PagedAddressing.h"
#include "kvir/Dialect/KV/Utils/Quantization.h"
#include "kvir/Dialect/KVGPU/Transforms/ConfigSelection.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <cmath>

using namespace mlir;
using namespace kvir;
using namespace kvir::codegen;
using namespace kvir::gpu_lowering;
using namespace kvir::gpu_lowering::prefill;

kvgpu::TensorCoreLayoutShape prefill::layoutShape(const PrefillKernelSpec &s) {
  kvgpu::TensorCoreLayoutShape shape;
  shape.config = s.config;
  shape.headDim = s.headDim;
  shape.headDimV = s.headDimV;
  shape.peDim = s.peDim;
  shape.qElement = s.qType.getElementType();
  shape.kvElement = s.kvElementType;
  shape.paged = s.paged;
  if (s.paged)
    shape.pageEntry = kv::getPageEntryType(s.paged, s.kvTypes);
  shape.finalOutElement =
      (s.scheduled ? s.finalOutType : s.outType).getElementType();
  shape.gathers = s.gathers();
  shape.mask = bool(s.maskType);
  shape.skipsTiles = s.skipsTiles();
  return shape;
}

Buffers prefill::buildLayout(const PrefillKernelSpec &s,
                             SharedMemoryLayout &layout) {
  return kvgpu::addTensorCoreBuffers(layoutShape(s), layout);
}

std::optional<std::string>
gpu_lowering::whyNotPrefillSpec(const PrefillKernelSpec &s,
                                const target::TargetInfo &target) {
  // (Tensor-core decodes and MLA take no transposed V today; prefills take
  // no selection.)
  if (s.gathers() && s.transposedVChunk())
    return std::string("top-k gathers single tokens, and vLLM's transposed V "
                       "pool is read in chunks of consecutive slots");
  // Every dim is whole k steps of the atom (and whole pairs of its n).
  constexpr int64_t k = MmaSyncAtom::kK;
  static_assert(MmaSyncAtom::kK == 2 * MmaSyncAtom::kN);
  if (s.headDim % k || s.headDimV % k || s.peDim % k || s.valueSlice() % k)
    return "head dims " + std::to_string(s.headDim) + " / " +
           std::to_string(s.headDimV) +
           (s.peDim ? " + " + std::to_string(s.peDim) : std::string()) +
           " split over " + std::to_string(s.config.getValueWarps()) +
           " value warps are not whole mma tiles of 16";
  if (s.config.usesWgmma()) {
    if (!target.has(target::MmaAtom::WgmmaM64NK16))
      return "mma = wgmma needs sm_90a, not " + target.chip.str();
    if (std::optional<std::string> why = WarpgroupProducts::whyNot(
            s.qType.getElementType(), s.kvElementType, s.config.getKvTile(),
            s.headDim, s.headDimV, s.valueSlice()))
      return *why;
    if (s.peDim % 64)
      return "a rotary part of " + std::to_string(s.peDim) +
             " dims is not whole 64-element blocks of the 128-byte swizzle";
    if (s.config.getValueWarps() > 1 && s.overlapsProducts())
      return std::string("value warps on wgmma run the serial schedule (the "
                         "warpgroups of the same rows meet at the block's "
                         "barriers)");
  }
  if (s.overlapsProducts()) {
    // V_{i-1} is read while tile i is prepared, and each tile issues both
    // products (the groups a wait counts).
    if (s.convertsV() && !s.config.hasProducer())
      return std::string("schedule = overlap reads V where it landed: this "
                         "V is converted into one tile per K/V tile (a "
                         "producer warpgroup would convert it into the "
                         "ring's stages)");
    if (s.skipsTiles())
      return std::string("schedule = overlap issues every tile's products: "
                         "mask_mod skips tiles");
    if (s.isMla())
      return std::string("MLA's kernel has no overlapped schedule");
  }
  if (s.config.getStages() == 1) {
    // One K and one V buffer: V_i is issued at the wait for K_i, K_{i+1}
    // at the wait for V_i; a tile's keys are scored where they landed.
    if (s.isMla() || s.oneRowPerRequest())
      return std::string("stages = 1 (one K and one V buffer) is a prefill "
                         "schedule; decode and MLA kernels use a ring");
    if (s.convertsV() || s.quantizedKV())
      return std::string("stages = 1 (one K and one V buffer) reads K and V "
                         "where they landed: quantized or transposed KV is "
                         "converted per tile (use a ring, stages >= 2)");
    if (s.rope || s.skipsTiles() || s.gathers())
      return std::string("stages = 1 (one K and one V buffer) runs plain "
                         "tiles: RoPE on keys, mask_mod tile skipping and "
                         "top-k gathers need a ring (stages >= 2)");
  }
  if (s.config.hasProducer()) {
    // Only the producer copies, and only it reads the staged entries.
    if (s.gathers())
      return std::string("roles = producer stages page entries for its own "
                         "threads: top-k keys are read by the consumers' "
                         "masks too");
  }
  if (s.config.copiesByTma()) {
    // (The plans of one-row kernels, decodes', carry no tensor maps.)
    if (s.oneRowPerRequest() || s.isMla())
      return std::string("copy = tma copies a prefill's K/V tiles; decode "
                         "and MLA kernels copy by cp.async");
    std::string why =
        kvgpu::whyNoTmaCopy(s.paged, s.kvTypes, s.headDim, s.headDimV,
                            s.config.getKvTile(), bool(s.rope));
    if (!why.empty())
      return "copy = tma: " + why;
  }
  if (s.rope) {
    std::string why =
        whyNotRotateTiles(s.rope, s.headDim, s.config.getNumThreads());
    // A producer rotates its K tiles with its own threads.
    if (why.empty() && s.config.hasProducer())
      why = whyNotRotateTiles(s.rope, s.headDim, s.copyThreads());
    if (!why.empty())
      return why;
  }
  int64_t shared = prefillSharedLayout(s).getBytes();
  if (shared > target.maxSharedBytesPerBlock)
    return std::to_string(shared) + " bytes of shared memory, over the " +
           std::to_string(target.maxSharedBytesPerBlock) + " a block of " +
           target.chip.str() + " may use";
  return s.roles().whyNot(target);
}

/// The producer warpgroup's registers per thread: its loop addresses the
/// K/V rows (page tables, ragged rows) and issues cp.async, whose unrolled
/// addresses stay live (56 spilled at head dim 128, 64-key tiles), and
/// converts codes; vLLM's transposed V takes more (80 spilled 8-20 bytes).
/// The rest of the file goes to the consumers (216, or 208).
static int64_t producerRegisters(const PrefillKernelSpec &s) {
  return s.transposedVChunk() ? 96 : 80;
}

WarpRoles PrefillKernelSpec::roles() const {
  if (!config.hasProducer())
    return WarpRoles::single("attention", config.getWarps());
  int64_t consumerGroups = config.getWarps() / WgmmaAtom::kWarps;
  int64_t perThread = WarpRoles::kRegisterFile / (32 * WgmmaAtom::kWarps);
  int64_t producer = producerRegisters(*this);
  int64_t consumerRegisters =
      std::min<int64_t>(256, (perThread - producer) / consumerGroups / 8 * 8);
  WarpRoles atLaunch({{"producer", config.getProducerWarps(), 0},
                      {"consumer", config.getWarps(), 0}});
  // One consumer warpgroup has every register it may use from the launch
  // on (256 threads: 256 each): no budgets, which would only cut the
  // producer's.
  if (consumerRegisters <= atLaunch.registersAtLaunch())
    return atLaunch;
  return WarpRoles({{"producer", config.getProducerWarps(), producer},
                    {"consumer", config.getWarps(), consumerRegisters}});
}

codegen::SharedMemoryLayout
gpu_lowering::prefillSharedLayout(const PrefillKernelSpec &spec) {
  SharedMemoryLayout layout;
  buildLayout(spec, layout);
  return layout;
}

void prefill::listArguments(
    const PrefillKernelSpec &s,
    function_ref<void(Type, ArgumentBinding, Value Arguments::*)> arg) {
  auto single = [&](Type type, Value Arguments::*field) {
    arg(type, ArgumentBinding::single, field);
  };
  MLIRContext *ctx = s.qType.getContext();
  single(s.qType, &Arguments::q);
  if (s.isMla())
    single(s.qPeType, &Arguments::qPe);
  if (!s.oneRowPerRequest())
    single(s.qoIndptrType, &Arguments::qoIndptr);
  for (Type type : s.kvTypes)
    arg(type, ArgumentBinding::kvOperand, nullptr);
  if (s.config.copiesByTma()) {
    single(tensorMapType(ctx), &Arguments::kMap);
    single(tensorMapType(ctx), &Arguments::vMap);
  }
  if (copiesQueryByTma(s))
    single(tensorMapType(ctx), &Arguments::qMap);
  if (s.maskType)
    single(s.maskType, &Arguments::mask);
  if (s.positionsType)
    single(s.positionsType, &Arguments::positions);
  if (s.framePositionsType) {
    single(s.frameIndptrType, &Arguments::frameIndptr);
    single(s.framePositionsType, &Arguments::framePositions);
  }
  if (s.gathers())
    single(s.topkType, &Arguments::topk);
  if (s.scheduled)
    single(workItemsType(ctx, s.oneRowPerRequest() ? 4 : 5),
           &Arguments::workItems);
  single(s.outType, &Arguments::out);
  single(s.lseType, &Arguments::lse);
  if (s.partitioned)
    single(IndexType::get(ctx), &Arguments::numPartitions);
  if (s.scheduled) {
    single(s.finalOutType, &Arguments::finalOut);
    single(s.finalLseType, &Arguments::finalLse);
  }
  for (Type type : s.variants.types)
    arg(type, ArgumentBinding::variantOperand, nullptr);
}

SmallVector<kvgpu::TensorMapAttr, 2>
gpu_lowering::prefillTensorMaps(const PrefillKernelSpec &s, StringRef kSource,
                                StringRef vSource) {
  MLIRContext *ctx = s.qType.getContext();
  SmallVector<kvgpu::TensorMapAttr, 2> maps;
  for (auto [role, source] : {std::pair(kv::PoolRole::K, kSource),
                              std::pair(kv::PoolRole::V, vSource)}) {
    Type buffer = s.paged ? s.kvTypes[kv::getPoolOperandIndex(s.paged, role)]
                          : s.kvTypes[role == kv::PoolRole::K ? 0 : 1];
    auto memref = cast<MemRefType>(buffer);
    maps.push_back(kvgpu::TensorMapAttr::get(
        ctx, source,
        kvgpu::tmaTileBox(s.paged, role, memref.getRank(),
                          memref.getElementTypeBitWidth(),
                          s.config.getKvTile()),
        /*swizzle=*/128));
  }
  return maps;
}

bool gpu_lowering::copiesQueryByTma(const PrefillKernelSpec &s) {
  return s.config.copiesByTma() && s.config.getQTile() % s.rowStride() == 0 &&
         s.qType.getLayout().isIdentity() &&
         !llvm::any_of(s.qType.getShape().drop_front(), ShapedType::isDynamic);
}

kvgpu::TensorMapAttr gpu_lowering::prefillQueryMap(const PrefillKernelSpec &s) {
  int64_t g = s.rowStride();
  // [rows, heads, head dim]: the tile's query rows, the group's heads, one
  // column block.
  return kvgpu::TensorMapAttr::get(
      s.qType.getContext(), "q",
      {s.config.getQTile() / g, g,
       TmaTileCopy::boxColumns(s.qType.getElementTypeBitWidth())},
      /*swizzle=*/128);
}

SmallVector<Type>
gpu_lowering::prefillArgumentTypes(const PrefillKernelSpec &s) {
  SmallVector<Type> types;
  listArguments(s, [&](Type type, ArgumentBinding, Value Arguments::*) {
    types.push_back(type);
  });
  return types;
}

SmallVector<StringRef>
gpu_lowering::prefillArgumentNames(const PrefillKernelSpec &s,
                                   ArrayRef<StringRef> inputs,
                                   ArrayRef<std::string> variants) {
  // Partial states go to the workspace; a scheduled kernel's final ones to
  // the op's outputs.
  bool partial = s.partitioned || s.scheduled;
  const std::pair<Value Arguments::*, StringRef> own[] = {
      {&Arguments::workItems, "work_items"},
      {&Arguments::out, partial ? "partial_out" : "out"},
      {&Arguments::lse, partial ? "partial_lse" : "lse"},
      {&Arguments::numPartitions, "num_partitions"},
      {&Arguments::finalOut, "out"},
      {&Arguments::finalLse, "lse"},
      {&Arguments::kMap, kTensorMapNames[0]},
      {&Arguments::vMap, kTensorMapNames[1]},
      {&Arguments::qMap, kQueryMapName}};
  SmallVector<StringRef> names;
  size_t nextInput = 0, nextVariant = 0;
  listArguments(s, [&](Type, ArgumentBinding binding, Value Arguments::*field) {
    if (binding == ArgumentBinding::variantOperand) {
      assert(nextVariant < variants.size() && "a name for every variant");
      names.push_back(variants[nextVariant++]);
      return;
    }
    for (auto [ownField, name] : own)
      if (binding == ArgumentBinding::single && field == ownField) {
        names.push_back(name);
        return;
      }
    assert(nextInput < inputs.size() && "a name for every input");
    names.push_back(inputs[nextInput++]);
  });
  assert(nextInput == inputs.size() && nextVariant == variants.size() &&
         "the plan declares every input and variant operand the kernel takes");
  return names;
}

namespace {

using RowsFn = std::function<SmallVector<Value>(ImplicitLocOpBuilder &,
                                                const PackedRow &)>;

/// Steps 2 to 4 of a block that has keys to score.
class PrefillBlock {
public:
  PrefillBlock(const KernelFunc &kf, const PrefillKernelSpec &s,
               const Buffers &buf, const Arguments &a, const Work &w,
               Value thread, Value kvHead, Value part, RowsFn requestRows,
               RowsFn itemRows)
      : kf(kf), s(s), buf(buf), a(a), w(w), thread(thread), kvHead(kvHead),
        part(part), requestRows(std::move(requestRows)),
        itemRows(std::move(itemRows)) {}

  /// Builds the steps at `b`.
  void emit(ImplicitLocOpBuilder &b);

private:
  /// Step 2: the query tile(s) and the page entries of tiles 0 ... S - 1
  /// in one group, waited for; the marks of tiles 0 ... S - 2 (skipping);
  /// RoPE on the query. Returns whether tiles 0 ... S - 2 are live
  /// (skipping; else none).
  SmallVector<Value>
  emitPrologue(ImplicitLocOpBuilder &b, const KVTileStream &stream,
               const TileSkipping *skipping, const StageHandoff *handoff,
               const SharedTile &qTile, const SharedTile *qPeTile,
               std::optional<TileRotation> &rotation);
  /// Thread 0: the query tile by TMA, completing on `handoff`'s query
  /// barrier.
  void copyQueryByTma(ImplicitLocOpBuilder &b, const StageHandoff &handoff,
                      const SharedTile &qTile);
  /// Each fragment row's query head, request, position and key shift as
  /// the variants see them, once.
  RowVariants rowVariants(ImplicitLocOpBuilder &b, const WarpAttentionTile &tile,
                          const VariantEmitter &emitter,
                          ArrayRef<Value> rowPositions);
  /// What the block sets up for its warps: the query tile(s), the K/V
  /// stream, tile skipping, RoPE and the variants' code (null without),
  /// which of the prologue's tiles are live, the custom mask's offset.
  struct Staged {
    const SharedTile &qTile;
    const SharedTile *qPeTile;
    const KVTileStream &stream;
    const TileSkipping *skipping;
    const TileRotation *rotation;
    const VariantEmitter *variantCode;
    ArrayRef<Value> liveAhead;
    Value maskOffset;
    const StageHandoff *handoff;
  };
  /// The warps that compute: each warp's rows through the pipeline's
  /// prologue (roles = uniform), the mainloop and the epilogue (`warp`: its
  /// warp in the role).
  void emitAttentionWarps(ImplicitLocOpBuilder &b, const Staged &staged,
                          Value lane, Value warp);
  /// Step 4: the final (or partial) states of the warp's rows.
  void emitStates(ImplicitLocOpBuilder &b, const WarpAttentionTile &tile,
                  const WarpAttentionTile::State &state,
                  const RowVariants *variants, Value vValueScale,
                  Value warpRow0, Value lane, const SharedTile &qTile);

  const KernelFunc &kf;
  const PrefillKernelSpec &s;
  const Buffers &buf;
  const Arguments &a;
  const Work &w;
  Value thread, kvHead, part;
  RowsFn requestRows, itemRows;
};

SmallVector<Value>
PrefillBlock::emitPrologue(ImplicitLocOpBuilder &b, const KVTileStream &stream,
                           const TileSkipping *skipping,
                           const StageHandoff *handoff, const SharedTile &qTile,
                           const SharedTile *qPeTile,
                           std::optional<TileRotation> &rotation) {
  IRBuilder ir{b};
  int64_t threads = s.config.getNumThreads();
  auto copyQuery = [&](ImplicitLocOpBuilder &cb, const SharedTile &tile,
                       Value source, int64_t width) {
    copyRowsAsync(
        cb, tile, Value(), width, thread, threads,
        [&](ImplicitLocOpBuilder &jb, Value r, Value dim) {
          PackedRow p = unpackRow(jb, s, w, kvHead, r);
          Value row = IRBuilder{jb}.add(w.qoStart, p.queryRow);
          return std::make_pair(source, SmallVector<Value>{row, p.head, dim});
        },
        [&](ImplicitLocOpBuilder &jb, Value r) {
          return unpackRow(jb, s, w, kvHead, r).valid;
        },
        /*dimInnermost=*/true);
  };
  // The query by TMA only where the tile is whole: a box of a tile with
  // fewer rows would read the next request's (a decode-like request's 4
  // packed rows in a 128-row box: 32x the bytes).
  bool queryByTma = copiesQueryByTma(s);
  Value wholeTile =
      queryByTma ? ir.cmp(arith::CmpIPredicate::sle,
                          ir.add(w.firstRow, ir.idx(s.config.getQTile())),
                          w.packedRows)
                 : Value();
  if (!queryByTma)
    copyQuery(b, qTile, a.q, s.headDim);
  else
    emitIf(b,
           arith::XOrIOp::create(b, wholeTile,
                                 arith::ConstantIntOp::create(b, 1, 1)),
           [&](ImplicitLocOpBuilder &cb) {
             copyQuery(cb, qTile, a.q, s.headDim);
           });
  if (qPeTile)
    copyQuery(b, *qPeTile, a.qPe, s.peDim);
  // (A producer stages its tiles' page entries itself.)
  if (handoff)
    handoff->init(b, ir.eq(thread, ir.idx(0)));
  else
    stream.stageFirstIds(b);
  // The query by TMA: thread 0 copies it on its barrier, which the
  // consumers wait for before their first product.
  if (queryByTma)
    emitIf(b, ir.eq(thread, ir.idx(0)), [&](ImplicitLocOpBuilder &ib) {
      emitIfElse(
          ib, wholeTile,
          [&](ImplicitLocOpBuilder &tb) {
            copyQueryByTma(tb, *handoff, qTile);
          },
          [&](ImplicitLocOpBuilder &cb) { handoff->queryArrived(cb); });
    });
  stream.getPipeline().commit(b);
  int64_t tilesAhead = stream.getPipeline().tilesAhead();
  if (skipping)
    for (int64_t n = 0; n < tilesAhead; ++n)
      skipping->mark(b, ir.idx(n));
  stream.getPipeline().drain(b);
  gpu::BarrierOp::create(b);
  SmallVector<Value> liveAhead;
  if (skipping)
    for (int64_t n = 0; n < tilesAhead; ++n)
      liveAhead.push_back(skipping->isLive(b, ir.idx(n)));
  // RoPE: the query rows turn to their positions once, in place.
  if (s.rope) {
    rotation.emplace(b, s.rope, s.headDim, thread, threads);
    rotation->apply(b, qTile, Value(), [&](ImplicitLocOpBuilder &jb, Value r) {
      PackedRow p = unpackRow(jb, s, w, kvHead, r);
      return RopeRowPosition{p.valid, queryPosition(jb, s, w, a, p.queryRow)};
    });
    stream.getPipeline().publish(b);
    gpu::BarrierOp::create(b);
  }
  return liveAhead;
}

void PrefillBlock::copyQueryByTma(ImplicitLocOpBuilder &b,
                                  const StageHandoff &handoff,
                                  const SharedTile &qTile) {
  IRBuilder ir{b};
  TmaTileCopy copy(a.qMap, qTile);
  copy.acquireMap(b);
  handoff.queryExpecting(b,
                         arith::ConstantIntOp::create(b, copy.tileBytes(), 32));
  auto i32Of = [&](Value index) -> Value {
    return arith::IndexCastOp::create(b, b.getI32Type(), index);
  };
  // The tile's first packed row starts a query row (copiesQueryByTma):
  // query row qoStart + firstRow / G, heads kvHead * G ... + G - 1.
  int64_t g = s.rowStride();
  Value row = i32Of(ir.add(w.qoStart, ir.divU(w.firstRow, ir.idx(g))));
  Value head = i32Of(ir.mul(kvHead, ir.idx(g)));
  for (int64_t block = 0; block < copy.numBlocks(); ++block)
    copy.copyBox(b, ir.idx(0), handoff.queryBarrier(b), /*row=*/0, block,
                 {ir.i32(block * copy.boxColumns()), head, row});
}

RowVariants PrefillBlock::rowVariants(ImplicitLocOpBuilder &b,
                                      const WarpAttentionTile &tile,
                                      const VariantEmitter &emitter,
                                      ArrayRef<Value> rowPositions) {
  const FragmentLayout &acc = tile.getMma().accLayout();
  RowVariants variants{emitter, {}, {}, {}, {}};
  for (int64_t t = 0; t < tile.getShape().mTiles; ++t)
    for (int64_t h = 0; h < acc.rowsPerLane; ++h) {
      auto [r, queryRow] = fragmentRow(b, s, w, tile, t, h);
      variants.heads.push_back(packedRowHead(b, s, kvHead, r));
      kv::FrameRow frame =
          frameRow(b, w, a, queryRow,
                   rowPositions.empty() ? queryPosition(b, s, w, a, queryRow)
                                        : rowPositions[acc.rowSlot(t, h)]);
      variants.requests.push_back(frame.request);
      variants.positions.push_back(frame.position);
      variants.keyShifts.push_back(frame.keyShift);
    }
  return variants;
}

void PrefillBlock::emitStates(ImplicitLocOpBuilder &b, const WarpAttentionTile &tile,
                              const WarpAttentionTile::State &state,
                              const RowVariants *variants, Value vValueScale,
                              Value warpRow0, Value lane,
                              const SharedTile &qTile) {
  IRBuilder ir{b};
  std::optional<SharedTile> outStage;
  if (s.stagesFinalOutput(
          (s.scheduled ? s.finalOutType : s.outType).getElementType()))
    outStage = buf.outStage ? SharedTile{kf.getShared(*buf.outStage),
                                         s.config.getQTile(), s.headDimV}
                            : qTile;
  // Sinks join final states only (a partial one's merge adds them).
  auto epilogue = [&](ImplicitLocOpBuilder &eb, kv::LseBase base,
                      const Destination &dest, bool final) {
    SmallVector<Value> sinks;
    if (final && variants && variants->emitter.hasSinks())
      for (Value head : variants->heads)
        sinks.push_back(variants->emitter.sinkLogit(eb, head));
    WarpAttentionTile::Final fin =
        tile.finalize(eb, state, base, vValueScale, sinks);
    emitEpilogue(eb, s, w, tile, fin, warpRow0, kvHead, dest, lane);
  };
  Destination final{s.scheduled ? a.finalOut : a.out,
                    s.scheduled ? a.finalLse : a.lse, requestRows, Value(),
                    outStage ? &*outStage : nullptr};
  if (part) {
    epilogue(b, kv::LseBase::two,
             {a.out, a.lse, requestRows, ir.lt(w.start, w.end)},
             /*final=*/false);
  } else if (!s.scheduled) {
    epilogue(b, s.base, final, /*final=*/true);
  } else {
    // A whole request is final; a chunk of one a partial state.
    auto whole = scf::IfOp::create(b, ir.eq(w.numChunks, ir.idx(1)),
                                   /*withElseRegion=*/true);
    auto wholeB =
        ImplicitLocOpBuilder::atBlockTerminator(b.getLoc(), whole.thenBlock());
    epilogue(wholeB, s.base, final, /*final=*/true);
    auto chunkB =
        ImplicitLocOpBuilder::atBlockTerminator(b.getLoc(), whole.elseBlock());
    epilogue(chunkB, kv::LseBase::two, {a.out, a.lse, itemRows, Value()},
             /*final=*/false);
  }
}

void PrefillBlock::emit(ImplicitLocOpBuilder &b) {
  IRBuilder ir{b};
  kvgpu::PrefillConfigAttr cfg = s.config;
  Value maskOffset;
  if (s.maskType)
    maskOffset = emitMaskOffset(b, s, a, kf.getShared(*buf.maskScratch),
                                thread, w.request);
  Swizzle swizzle = kvgpu::operandSwizzle(cfg);
  SharedTile qTile{kf.getShared(buf.q), cfg.getQTile(), s.headDim, swizzle};
  std::optional<SharedTile> qPeTile;
  if (s.isMla())
    qPeTile =
        SharedTile{kf.getShared(*buf.qPe), cfg.getQTile(), s.peDim, swizzle};
  KVTileStream stream(b, kf, s, buf, a, w, kvHead, thread);
  std::optional<VariantEmitter> variantCode;
  if (s.variants)
    variantCode.emplace(s.variants.bind(kf.getArguments()));
  std::optional<TileSkipping> skipping;
  if (s.skipsTiles())
    skipping.emplace(b, kf, s, buf, a, w, stream, *variantCode, kvHead,
                     thread);
  const TileSkipping *skips = skipping ? &*skipping : nullptr;
  std::optional<StageHandoff> handoff;
  if (cfg.hasProducer())
    handoff.emplace(s, kf.getShared(*buf.stageBarriers), copiesQueryByTma(s));
  const StageHandoff *handoffPtr = handoff ? &*handoff : nullptr;
  std::optional<TileRotation> rotation;
  SmallVector<Value> liveAhead =
      emitPrologue(b, stream, skips, handoffPtr, qTile,
                   qPeTile ? &*qPeTile : nullptr, rotation);

  Value lane = ir.remU(thread, ir.idx(32));
  Value warp = ir.divU(thread, ir.idx(32));
  Staged staged{qTile,
                qPeTile ? &*qPeTile : nullptr,
                stream,
                skips,
                rotation ? &*rotation : nullptr,
                variantCode ? &*variantCode : nullptr,
                liveAhead,
                maskOffset,
                handoffPtr};
  // roles = producer: the producer warpgroup is role 0.
  s.roles().emit(b, warp,
                 [&](ImplicitLocOpBuilder &rb, unsigned role, Value roleWarp) {
                   if (handoff && role == 0)
                     stream.produce(rb, *handoff);
                   else
                     emitAttentionWarps(rb, staged, lane, roleWarp);
                 });
}

void PrefillBlock::emitAttentionWarps(ImplicitLocOpBuilder &b,
                                      const Staged &staged, Value lane,
                                      Value warp) {
  IRBuilder ir{b};
  kvgpu::PrefillConfigAttr cfg = s.config;
  int64_t mTiles = cfg.getWarpRowTiles();
  const KVTileStream &stream = staged.stream;
  // Warp w owns rows of row warp w % rowWarps and the value columns of
  // slice w / rowWarps.
  int64_t rowWarps = cfg.getRowWarps();
  Value warpRow0 = ir.mul(ir.remU(warp, ir.idx(rowWarps)),
                          ir.idx(MmaSyncAtom::layout().tileRows(mTiles)));
  Value valueOffset;
  if (cfg.getValueWarps() > 1)
    valueOffset =
        ir.mul(ir.divU(warp, ir.idx(rowWarps)), ir.idx(s.valueSlice()));
  MmaSyncAtom mma(b, s.kvElementType, lane);
  // wgmma: the warp's warpgroup issues the products for its 64 rows and
  // its value slice (the fragments are still mma.sync's: per warp, the
  // same registers). Row warps are whole warpgroups.
  std::optional<WarpgroupProducts> warpgroup;
  if (cfg.usesWgmma()) {
    Value warps = ir.idx(WgmmaAtom::kWarps);
    Value rowWarp =
        cfg.getValueWarps() > 1 ? ir.remU(warp, ir.idx(rowWarps)) : warp;
    Value warpgroupRow0 =
        ir.mul(ir.divU(rowWarp, warps), ir.idx(WgmmaAtom::kM));
    Value threadInWarpgroup =
        ir.add(ir.mul(ir.remU(warp, warps), ir.idx(32)), lane);
    warpgroup.emplace(b, s.kvElementType, cfg.getKvTile(), s.valueSlice(),
                      warpgroupRow0, threadInWarpgroup);
  }
  // Skipping O's rescale where no row's max moved pays with wide value
  // slices (64+ multiplies a tile and warp), in kernels with registers to
  // spare for the branch (below 128 value columns ptxas fits two blocks
  // at 128 registers, and the branch spilled there).
  bool skipRescale = s.hasRegisterHeadroom() && s.valueSlice() >= 128;
  WarpAttentionTile tile(
      mma, {mTiles, cfg.getKvTile(), s.headDim, s.valueSlice(), skipRescale},
      warpRow0, valueOffset, warpgroup ? &*warpgroup : nullptr);
  SmallVector<Value> qFrags;
  if (cfg.getQInRegisters())
    qFrags = tile.loadQuery(b, staged.qTile);
  SmallVector<Value> rowPositions = loadRowPositions(b, s, w, a, tile);
  std::optional<RowVariants> variants;
  if (s.variants)
    variants.emplace(rowVariants(b, tile, *staged.variantCode, rowPositions));
  // fp8: scores are dot products with values 1 / fp8HalfScale of the
  // codes' (the stream's conversion), read k_scale of theirs; outputs
  // v_scale.
  Value kValueScale, vValueScale;
  if (s.paged && s.paged.isFp8()) {
    Value half = ir.f32(kv::fp8HalfScale(s.paged.getStorageElementType()));
    kValueScale = ir.mul(a.paged.kScale, half);
    vValueScale = ir.mul(a.paged.vScale, half);
  }
  // The pipeline's prologue: K/V tiles 0 ... S - 2 (a producer's own).
  if (!staged.handoff)
    stream.issuePrologue(b, staged.liveAhead);

  const RowVariants *rowVars = variants ? &*variants : nullptr;
  MainloopInputs in{staged.qTile, staged.qPeTile,
                    qFrags,       rowPositions,
                    rowVars,      staged.handoff ? nullptr : staged.rotation,
                    kValueScale,  staged.maskOffset};
  std::optional<SharedSoftmax> sharedSoftmax;
  if (cfg.sharesSoftmax()) {
    Swizzle operands = kvgpu::operandSwizzle(cfg);
    sharedSoftmax.emplace(
        SharedTile{kf.getShared(*buf.sharedP), cfg.getQTile(),
                   SharedSoftmax::pColumns(cfg.getKvTile(), operands),
                   operands},
        kf.getShared(*buf.rowStats));
    in.sharedSoftmax = &*sharedSoftmax;
    in.scoresTiles = ir.lt(warp, ir.idx(rowWarps));
  }
  if (staged.handoff) {
    in.handoff = staged.handoff;
    in.consumerGroup = ir.divU(warp, ir.idx(WgmmaAtom::kWarps));
    if (copiesQueryByTma(s))
      staged.handoff->waitQuery(b);
  }
  WarpAttentionTile::State state = emitMainloop(
      b, s, w, a, stream, staged.skipping, tile, in, staged.liveAhead);
  // Warps of other value slices may still read the query tile that stages
  // the output.
  if (cfg.getValueWarps() > 1)
    gpu::BarrierOp::create(b);
  emitStates(b, tile, state, rowVars, vValueScale, warpRow0, lane,
             staged.qTile);
}

} // namespace

void gpu_lowering::buildPrefillBody(const KernelFunc &kf,
                                    const PrefillKernelSpec &s) {
  ImplicitLocOpBuilder b = kf.getBuilder();
  SharedMemoryLayout layout;
  Buffers buf = buildLayout(s, layout);
  Arguments a = bindArguments(kf, s);

  Value thread = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value kvHead = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  Value part = s.partitioned
                   ? gpu::BlockIdOp::create(b, gpu::Dimension::z).getResult()
                   : Value();
  Work w = emitBlockWork(b, s, a, kf.getShared(buf.meta), thread);

  // A row's state goes to (query row, head) of the outputs, behind the
  // partition for partial states of a partition; a scheduled item's
  // partial state to its workspace row.
  RowsFn requestRows = [&w, part](ImplicitLocOpBuilder &ib,
                                  const PackedRow &p) {
    SmallVector<Value> idx{IRBuilder{ib}.add(w.qoStart, p.queryRow), p.head};
    if (part)
      idx.insert(idx.begin(), part);
    return idx;
  };
  RowsFn itemRows = [&w, &s](ImplicitLocOpBuilder &ib, const PackedRow &p) {
    if (s.oneRowPerRequest())
      return SmallVector<Value>{w.partialRow, p.head};
    // The tile's k-th query row keeps its chunks' states num_chunks rows
    // after the (k - 1)-th's.
    IRBuilder ir{ib};
    Value k = ir.sub(p.queryRow, ir.divU(w.firstRow, ir.idx(s.rowStride())));
    return SmallVector<Value>{ir.add(w.partialRow, ir.mul(k, w.numChunks)),
                              p.head};
  };
  Value work = w.valid;
  if (part || s.scheduled) {
    // An empty partition only tells the merge so: an LSE of -inf per row.
    // (A scheduled item that is a whole request writes its final state.)
    IRBuilder ir{b};
    Value empty = ir.cmp(arith::CmpIPredicate::sge, w.start, w.end);
    if (s.scheduled)
      empty = arith::AndIOp::create(
          b, empty, ir.cmp(arith::CmpIPredicate::sgt, w.numChunks, ir.idx(1)));
    Destination partial{a.out, a.lse, part ? requestRows : itemRows,
                        /*writeOutput=*/Value()};
    emitIf(b, arith::AndIOp::create(b, w.valid, empty),
           [&](ImplicitLocOpBuilder &ib) {
             emitEmptyPartition(ib, s, w, kvHead, partial, thread);
           });
    work = arith::AndIOp::create(
        b, w.valid,
        arith::XOrIOp::create(b, empty, arith::ConstantIntOp::create(b, 1, 1)));
  }
  PrefillBlock block(kf, s, buf, a, w, thread, kvHead, part, requestRows,
                     itemRows);
  emitIf(b, work, [&](ImplicitLocOpBuilder &ib) { block.emit(ib); });
}
