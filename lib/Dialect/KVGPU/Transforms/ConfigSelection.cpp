//===- ConfigSelection.cpp - Per-op, per-chip GPU configurations ----------===//
#include "kvir/Dialect/KVGPU/Transforms/ConfigSelection.h"
#include "kvir/Codegen/TmaCopy.h"
#include "kvir/Codegen/WarpgroupProducts.h"
#include "kvir/Dialect/KV/IR/PoolLayout.h"
#include "kvir/Dialect/KV/Utils/PagedAddressing.h"
#include "kvir/Dialect/KVGPU/Transforms/TensorCoreLayout.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <numeric>

using namespace mlir;
using namespace kvir;
using namespace kvir::kvgpu;

Attribute kvgpu::getConfig(Operation *op) {
  return op->getAttr(KVGPUDialect::getConfigAttrName());
}

static int64_t nextPowerOf2(int64_t v) {
  int64_t p = 1;
  while (p < v)
    p *= 2;
  return p;
}

bool kvgpu::decodeDecodesTilesInShared(kv::PagedType kv, int64_t group) {
  return kv.isQuantized() && group > 1;
}

bool kvgpu::decodeRotatesTilesInShared(bool rope, int64_t group) {
  return rope && group > 1;
}

int64_t kvgpu::transposedVChunk(kv::PagedType kv) {
  // The V map's innermost index is the slot (vLLM's V pool, preset or
  // specialized to affine maps).
  if (kv.isMla())
    return 0;
  AffineMap v = kv::getPoolIndexMap(kv, kv::PoolRole::V);
  if (v.getNumResults() == 0)
    return 0;
  auto inner = dyn_cast<AffineDimExpr>(v.getResults().back());
  if (!inner || inner.getPosition() != 2)
    return 0;
  int64_t tokens = 128 / kv.getStorageElementType().getIntOrFloatBitWidth();
  int64_t page = kv.getPageSize();
  return std::min(tokens, page & -page);
}

int64_t kvgpu::transposedVSector(kv::PagedType kv) {
  int64_t page = kv.getPageSize();
  return std::min<int64_t>(
      page & -page, 256 / kv.getStorageElementType().getIntOrFloatBitWidth());
}

int64_t kvgpu::transposedVPad(kv::PagedType kv, int64_t tileTokens) {
  if (!transposedVChunk(kv))
    return 0;
  // Rows of an even number of 16-byte chunks would put the chunks a warp
  // phase reads (one per dim) into the same banks two by two: one more
  // chunk makes the stride odd.
  int64_t bits = kv.getStorageElementType().getIntOrFloatBitWidth();
  int64_t chunks = tileTokens * bits / 128;
  return chunks % 2 == 0 ? 128 / bits : 0;
}

int64_t kvgpu::decodeScaleColumns(kv::PagedType kv, int64_t paddedDims) {
  if (kv.getQuant() != kv::Quant::int8_group)
    return 0;
  return std::max<int64_t>(1, paddedDims / kv.getQuantGroup());
}

/// The decode kernel's configuration for query `q` over KV `kv` (a
/// kv.paged_view of the same function).
static FailureOr<DecodeConfigAttr>
chooseDecodeConfigOf(Value kv, Value q, kv::RopeAttr rope,
                     const target::TargetInfo &target, std::string &whyNot) {
  auto view = kv.getDefiningOp<kv::PagedViewOp>();
  if (!view) {
    whyNot = "its KV is not a kv.paged_view of the same function";
    return failure();
  }
  return kvgpu::chooseDecodeConfig(
      view, cast<MemRefType>(q.getType()).getDimSize(1), bool(rope), target,
      whyNot);
}

FailureOr<DecodeConfigAttr>
kvgpu::chooseDecodeConfig(kv::DecodeOp op, const target::TargetInfo &target,
                          std::string &whyNot) {
  return chooseDecodeConfigOf(op.getKv(), op.getQ(), op.getRopeAttr(), target,
                              whyNot);
}

bool kvgpu::prefillTakesQueryRows(kv::PrefillOp op) {
  auto paged = dyn_cast<kv::PagedType>(op.getKv().getType());
  return paged && paged.getDtype().isF32();
}

FailureOr<DecodeConfigAttr>
kvgpu::getOrChooseQueryRowsConfig(kv::PrefillOp op,
                                  const target::TargetInfo &target,
                                  std::string &whyNot) {
  if (auto config = dyn_cast_or_null<DecodeConfigAttr>(getConfig(op)))
    return config;
  return chooseDecodeConfigOf(op.getKv(), op.getQ(), op.getRopeAttr(), target,
                              whyNot);
}

FailureOr<DecodeConfigAttr>
kvgpu::chooseDecodeConfig(kv::PagedViewOp view, int64_t qHeads, bool rope,
                          const target::TargetInfo &target,
                          std::string &whyNot) {
  kv::PagedType kv = view.getType();
  int64_t headDim = kv.getHeadDim();
  int64_t vec = view.getVectorWidth();
  // vLLM's V pool is staged transposed (its dims are strided): the vectors
  // are K's.
  int64_t transposedChunk = transposedVChunk(kv);
  if (transposedChunk)
    vec = kv::getDimVectorWidth(
        kv, kv::PoolRole::K, cast<MemRefType>(view.getPools()[0].getType()),
        128 / kv.getStorageElementType().getIntOrFloatBitWidth());
  while (headDim % vec)
    vec /= 2;
  // f32 rows past a warp of 16-byte vectors (head dim 128): each lane takes
  // several chunks (the tensor-core decode takes no f32).
  if (kv.getDtype().isF32() && vec == 4)
    while (headDim / vec > 32 && vec < 16 && headDim % (2 * vec) == 0)
      vec *= 2;
  int64_t threadsX = nextPowerOf2(headDim / vec);
  int64_t group = qHeads / kv.getKvHeads();
  // About 128 threads per block; more tokens in flight when the group is
  // small; whole warps only, since shuffles use the full membermask.
  int64_t threadsZ = std::clamp<int64_t>(128 / (threadsX * group), 1, 8);
  int64_t step = 32 / std::gcd<int64_t>(threadsX * group, 32);
  threadsZ = (threadsZ + step - 1) / step * step;
  // The stage ring takes at most 32 KB (room for several blocks per SM
  // under the 48 KB a kernel may declare): tiles of up to 32 tokens, small
  // enough for three stages.
  // A row's codes and (int8 groups) its scales.
  int64_t rowBytes =
      threadsX * vec * kv.getStorageElementType().getIntOrFloatBitWidth() / 8 +
      decodeScaleColumns(kv, threadsX * vec) *
          kv.getDtype().getIntOrFloatBitWidth() / 8;
  const int64_t ringBytes = 32 * 1024, minStages = 3;
  // Tiles decoded into f16 K and V rows take the same budget.
  int64_t decodedRowBytes =
      decodeDecodesTilesInShared(kv, group) ? 2 * threadsX * vec * 2 : 0;
  // So do the f32 rows of a K tile rotated once for the group.
  if (decodeRotatesTilesInShared(rope, group))
    decodedRowBytes += threadsX * vec * 4;
  // So do the rows of a transposed V tile.
  if (transposedChunk)
    decodedRowBytes += threadsX * vec *
                       kv.getStorageElementType().getIntOrFloatBitWidth() / 8;
  // A transposed V stage's rows may be padded (transposedVPad).
  auto stagePadBytes = [&](int64_t t) {
    return threadsX * vec * transposedVPad(kv, t) *
           kv.getStorageElementType().getIntOrFloatBitWidth() / 8;
  };
  auto ringOf = [&](int64_t t, int64_t stages) {
    return stages * (2 * t * rowBytes + stagePadBytes(t)) +
           t * decodedRowBytes;
  };
  int64_t tile = 32;
  while (tile > 1 && ringOf(tile, minStages) > ringBytes)
    tile /= 2;
  // One-byte KV (fp8, int8) takes 16-element vectors: at most 4 tokens per
  // z-lane keep the dequantized rows in registers near the 16-bit kernels'
  // count.
  if (vec > 8)
    tile = std::min(tile, threadsZ * 64 / vec);
  // Transposed V: tiles of whole chunks, and of whole 32-byte sectors of a
  // page's slots (two 16-byte chunks of f16) where three stages still fit
  // in 40 KB (not at head dim 256: its reads of a sector's halves are then
  // two requests). Where even a tile of whole chunks does not fit three
  // stages (fp8 at head dim 256 with a group), two stages (copies overlap
  // only the conversion of the tile before).
  int64_t leastStages = minStages;
  if (transposedChunk) {
    int64_t sector = transposedVSector(kv);
    tile = std::max(tile, transposedChunk);
    if (tile < sector && ringOf(sector, minStages) <= 40 * 1024)
      tile = sector;
    if (ringOf(tile, minStages) > 40 * 1024)
      leastStages = 2;
  }
  tile = (std::max(tile, threadsZ) + threadsZ - 1) / threadsZ * threadsZ;
  // Little's law for one block per SM (small batches): the stage-1 tiles
  // in flight carry the SM's share of bandwidth x latency.
  int64_t stageBytes = 2 * tile * rowBytes + stagePadBytes(tile);
  int64_t need = int64_t(std::ceil(target.bytesInFlightPerSM()));
  int64_t stages = std::clamp<int64_t>(
      (need + stageBytes - 1) / stageBytes + 1, leastStages,
      std::max(leastStages,
               (ringBytes - tile * decodedRowBytes) / stageBytes));
  stages = std::min<int64_t>(stages, 8);
  FailureOr<DecodeConfigAttr> config = getCheckedQuietly<DecodeConfigAttr>(
      whyNot, view.getContext(), vec, threadsX, threadsZ, tile, stages,
      /*max_partitions=*/int64_t(32));
  if (failed(config))
    whyNot = "no decode configuration fits head_dim " +
             std::to_string(headDim) + " in " + std::to_string(vec) +
             "-element vectors: " + whyNot;
  return config;
}

FailureOr<DecodeConfigAttr>
kvgpu::getOrChooseDecodeConfig(kv::DecodeOp op,
                               const target::TargetInfo &target,
                               std::string &whyNot) {
  if (auto config = dyn_cast_or_null<DecodeConfigAttr>(getConfig(op)))
    return config;
  return chooseDecodeConfig(op, target, whyNot);
}

/// Whether mask_mod hides keys of `op` (whose kernel skips dead tiles unless
/// it gathers).
static bool hasMaskMod(Operation *op) {
  auto variants = dyn_cast<kv::AttentionVariantOpInterface>(op);
  return variants && variants.hasVariants() && !variants.getMaskMod().empty();
}

/// The layout shape of a tensor-core kernel over the paged KV `kv` (its
/// view's operands give the page entries' type; without them, the wider
/// i64) writing states of `stateType`.
static TensorCoreLayoutShape pagedLayoutShape(Value kv, Type qElement,
                                              kv::StateType stateType,
                                              PrefillConfigAttr config) {
  auto paged = cast<kv::PagedType>(kv.getType());
  TensorCoreLayoutShape s;
  s.config = config;
  s.paged = paged;
  s.headDim = paged.getHeadDim();
  s.headDimV = paged.isMla() ? paged.getHeadDim() : paged.getHeadDimV();
  s.peDim = paged.isMla() ? paged.getPeDim() : 0;
  s.qElement = qElement;
  s.kvElement = paged.getDtype();
  s.finalOutElement = stateType.getElementType();
  s.pageEntry = IntegerType::get(kv.getContext(), 64);
  if (auto view = kv.getDefiningOp<kv::PagedViewOp>())
    s.pageEntry = kv::getPageEntryType(
        paged, ValueRange(kv::PagedOperands::fromView(view).flatten())
                   .getTypes());
  return s;
}

/// The direct kernel of `op` with `config`: the largest of the op's
/// kernels (a split kernel writes f32 partial states, staging nothing).
static TensorCoreLayoutShape layoutShape(kv::PrefillOp op,
                                         PrefillConfigAttr config) {
  Type qElement = cast<MemRefType>(op.getQ().getType()).getElementType();
  TensorCoreLayoutShape s;
  if (isa<kv::PagedType>(op.getKv().getType())) {
    s = pagedLayoutShape(op.getKv(), qElement, op.getType(), config);
  } else {
    auto ragged = cast<kv::RaggedType>(op.getKv().getType());
    s.config = config;
    s.headDim = ragged.getHeadDim();
    s.headDimV = ragged.getHeadDimV();
    s.qElement = qElement;
    s.kvElement = ragged.getDtype();
    s.finalOutElement = op.getType().getElementType();
  }
  s.mask = bool(op.getMask());
  s.skipsTiles = hasMaskMod(op);
  return s;
}

/// MLA and the tensor-core decode: paged, with an optional top-k
/// selection (whose kernels gather, never skip tiles).
template <typename OpTy>
static TensorCoreLayoutShape selectingLayoutShape(OpTy op, Value q,
                                                  PrefillConfigAttr config) {
  TensorCoreLayoutShape s = pagedLayoutShape(
      op.getKv(), cast<MemRefType>(q.getType()).getElementType(),
      op.getType(), config);
  s.gathers = bool(op.getTopk());
  s.skipsTiles = hasMaskMod(op) && !s.gathers;
  return s;
}

static TensorCoreLayoutShape layoutShape(kv::MlaDecodeOp op,
                                         PrefillConfigAttr config) {
  return selectingLayoutShape(op, op.getQNope(), config);
}

static TensorCoreLayoutShape layoutShape(kv::DecodeOp op,
                                         PrefillConfigAttr config) {
  return selectingLayoutShape(op, op.getQ(), config);
}

int64_t kvgpu::prefillSharedBytes(PrefillConfigAttr config,
                                  kv::PrefillOp op) {
  return tensorCoreSharedBytes(layoutShape(op, config));
}

int64_t kvgpu::mlaSharedBytes(PrefillConfigAttr config, kv::MlaDecodeOp op) {
  return tensorCoreSharedBytes(layoutShape(op, config));
}

/// The ring depth of a tensor-core config (2 ... kMaxStages), by Little's
/// law as the decode's: the tiles in flight while one is computed
/// (stages - 1) carry the SM's share of bandwidth x latency, for one block
/// per SM (small batches, where a deep ring matters). A stage is added only
/// where the kernel still fits the chip's shared memory per block and as
/// many blocks stay resident. `bytesOf` sizes a config by the kernel's own
/// layout; what a stage costs is the difference it makes.
static FailureOr<PrefillConfigAttr>
withRingDepth(FailureOr<PrefillConfigAttr> config,
              const target::TargetInfo &target,
              function_ref<int64_t(PrefillConfigAttr)> bytesOf) {
  if (failed(config))
    return config;
  auto withStages = [&](int64_t stages) {
    PrefillConfigAttr c = *config;
    return PrefillConfigAttr::get(
        c.getContext(), c.getQTile(), c.getKvTile(), c.getWarps(), stages,
        c.getQInRegisters(), c.getMaxPartitions(), c.getValueWarps(),
        c.getMma(), c.getSchedule(), c.getRoles(), c.getCopy());
  };
  int64_t threads = config->getNumThreads();
  double need = target.bytesInFlightPerSM();
  PrefillConfigAttr chosen = *config;
  int64_t bytes = bytesOf(chosen);
  while (chosen.getStages() < PrefillConfigAttr::kMaxStages) {
    PrefillConfigAttr deeper = withStages(chosen.getStages() + 1);
    int64_t deeperBytes = bytesOf(deeper);
    int64_t stageBytes = deeperBytes - bytes;
    if (double((chosen.getStages() - 1) * stageBytes) >= need ||
        deeperBytes > target.maxSharedBytesPerBlock ||
        target.residentBlocks(threads, 0, deeperBytes) <
            target.residentBlocks(threads, 0, bytes))
      break;
    chosen = deeper;
    bytes = deeperBytes;
  }
  return chosen;
}

/// The first of `candidates` configurations (`build(0)`, `build(1)`, ...;
/// one the verifier refuses ends the search with its reason) whose kernel
/// fits the chip's shared memory per block, deepened by withRingDepth; or
/// failure: "no <what> fits ... bytes of shared memory".
static FailureOr<PrefillConfigAttr>
firstFitting(int64_t candidates,
             function_ref<FailureOr<PrefillConfigAttr>(int64_t)> build,
             function_ref<int64_t(PrefillConfigAttr)> bytesOf,
             const target::TargetInfo &target, StringRef what,
             std::string &whyNot) {
  for (int64_t i = 0; i < candidates; ++i) {
    FailureOr<PrefillConfigAttr> config = build(i);
    if (failed(config))
      return config;
    if (bytesOf(*config) <= target.maxSharedBytesPerBlock)
      return withRingDepth(config, target, bytesOf);
  }
  whyNot = "no " + what.str() + " fits " +
           std::to_string(target.maxSharedBytesPerBlock) +
           " bytes of shared memory";
  return failure();
}

/// The head dims of `op`'s keys and values.
static std::pair<int64_t, int64_t> prefillHeadDims(kv::PrefillOp op) {
  Type kvType = op.getKv().getType();
  if (auto paged = dyn_cast<kv::PagedType>(kvType))
    return {paged.getHeadDim(), paged.getHeadDimV()};
  auto ragged = cast<kv::RaggedType>(kvType);
  return {ragged.getHeadDim(), ragged.getHeadDimV()};
}

/// Whether `op` is a cascade's shared level that takes one 256-row query
/// tile (kv.shared_level, head dims up to 128): every request sharing its
/// keys in one tile, so that they are read once.
static bool takesTallTile(kv::PrefillOp op) {
  auto [headDim, headDimV] = prefillHeadDims(op);
  return std::max(headDim, headDimV) <= 128 &&
         op->hasAttr(kv::KVDialect::getSharedLevelAttrName());
}

std::string kvgpu::whyNoWgmmaPrefill(kv::PrefillOp op,
                                     const target::TargetInfo &target) {
  if (!target.has(target::MmaAtom::WgmmaM64NK16))
    return target.chip.str() + " has no wgmma";
  auto [headDim, headDimV] = prefillHeadDims(op);
  TensorCoreLayoutShape shape = layoutShape(op, PrefillConfigAttr());
  if (std::optional<std::string> why = codegen::WarpgroupProducts::whyNot(
          shape.qElement, shape.kvElement, /*kvTile=*/64, headDim, headDimV,
          /*valueSlice=*/headDimV))
    return *why;
  return "";
}

std::string kvgpu::whyNoProducerPrefill(kv::PrefillOp op) {
  auto [headDim, headDimV] = prefillHeadDims(op);
  int64_t widest = std::max(headDim, headDimV);
  if (takesTallTile(op))
    return "a cascade's shared level reads its keys once for 256 rows, four "
           "warpgroups of 128 registers a thread: none left for a producer";
  if (widest <= 64)
    return "up to head dim 64 the serial kernel keeps two blocks per SM";
  if (hasMaskMod(op))
    return "mask_mod skips tiles, and the consumers' overlapped loop issues "
           "every tile's products";
  if (widest > 128)
    return "above head dim 128 the consumers' accumulators do not fit the "
           "registers a producer leaves them";
  return "";
}

std::string
kvgpu::whyNoSingleBufferedPrefill(kv::PrefillOp op,
                                  const target::TargetInfo &target) {
  if (target.has(target::MmaAtom::WgmmaM64NK16))
    return target.chip.str() + " has wgmma, whose kernels keep a ring";
  auto [headDim, headDimV] = prefillHeadDims(op);
  int64_t widest = std::max(headDim, headDimV);
  if (widest <= 64)
    return "up to head dim 64 the ring's kernel keeps two blocks per SM";
  if (widest > 128)
    return "above head dim 128 the 64-row tiles reload Q per K tile";
  if (takesTallTile(op))
    return "a cascade's shared level takes 256-row tiles";
  if (op.getRopeAttr())
    return "RoPE rotates K tiles in a ring stage";
  TensorCoreLayoutShape shape = layoutShape(op, PrefillConfigAttr());
  if (shape.skipsTiles)
    return "mask_mod skips tiles, which the single-buffered loop does not";
  if (shape.convertsV() || shape.kvElement != shape.qElement ||
      shape.kvElement.getIntOrFloatBitWidth() != 16)
    return "its K/V tiles are converted, not scored where they landed";
  return "";
}

/// `t` as MLIR prints it.
static std::string printed(Type t) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << t;
  return text;
}

namespace {
/// A 128-byte swizzle row of elements of `bits`: a box's innermost dim.
int64_t tmaBlockElements(int64_t bits) { return 128 * 8 / bits; }

/// The pool axes of `role`'s slot and head dim when every pool axis is one
/// logical coordinate (page, kv, slot, head, dim) and the head dim is the
/// innermost; nullopt otherwise.
std::optional<int64_t> tmaSlotAxis(kv::PagedType paged, kv::PoolRole role) {
  AffineMap map = kv::getPoolIndexMap(paged, role);
  std::optional<int64_t> slot;
  for (auto [axis, result] : llvm::enumerate(map.getResults())) {
    auto d = dyn_cast<AffineDimExpr>(result);
    if (!d)
      return std::nullopt;
    if (d.getPosition() == 2)
      slot = axis;
    if ((d.getPosition() == 4) != (axis + 1 == map.getNumResults()))
      return std::nullopt;
  }
  return slot;
}
} // namespace

std::string kvgpu::whyNoTmaCopy(kv::PagedType paged, TypeRange kvBuffers,
                                int64_t headDim, int64_t headDimV,
                                int64_t kvTile, bool rotatesKeys) {
  if (rotatesKeys)
    return "RoPE rotates each K tile after it lands: the producer copies it "
           "by cp.async, rotates it, then hands it over";
  SmallVector<MemRefType> pools;
  if (!paged) {
    for (Type t : kvBuffers.take_front(2))
      pools.push_back(cast<MemRefType>(t));
  } else {
    if (paged.isQuantized() || paged.isMla())
      return "the producer converts quantized codes; MLA reads one pool";
    if (paged.getTable() == kv::TableForm::token_offset)
      return std::string("a token_offset table has no pages to copy as "
                         "boxes");
    for (kv::PoolRole role : {kv::PoolRole::K, kv::PoolRole::V}) {
      if (!tmaSlotAxis(paged, role))
        return "the " + kv::stringifyLayoutKind(paged.getLayout()).str() +
               " layout's pages are not boxes (the head dim innermost, the "
               "slots one axis)";
      pools.push_back(
          cast<MemRefType>(kvBuffers[kv::getPoolOperandIndex(paged, role)]));
    }
    int64_t page = paged.getPageSize();
    if (page % 8 || kvTile % page)
      return "pages of " + std::to_string(page) +
             " tokens are not whole boxes of a " + std::to_string(kvTile) +
             "-key tile in the 128-byte swizzle (a multiple of 8 that "
             "divides the tile)";
  }
  // The K and V tiles the boxes fill (16-bit elements: checked below).
  for (int64_t width : {headDim, headDimV}) {
    codegen::TileLayout layout{kvTile, width, 16};
    layout.swizzle = codegen::Swizzle::B128;
    if (std::optional<std::string> why = codegen::TmaTileCopy::whyNot(layout))
      return "head dims " + std::to_string(headDim) + " / " +
             std::to_string(headDimV) + ": " + *why;
  }
  for (MemRefType type : pools) {
    Type element = type.getElementType();
    if (!element.isF16() && !element.isBF16())
      return "TMA copies f16/bf16 K/V tiles into the wgmma layout, not " +
             printed(element);
    if (!type.getLayout().isIdentity() ||
        llvm::any_of(type.getShape().drop_front(), ShapedType::isDynamic))
      return "a tensor map spans a row-major buffer with static inner dims, "
             "not " +
             printed(type);
  }
  return "";
}

int64_t kvgpu::tmaBoxRows(kv::PagedType paged, int64_t kvTile) {
  return paged ? paged.getPageSize() : kvTile;
}

SmallVector<int64_t> kvgpu::tmaTileBox(kv::PagedType paged, kv::PoolRole role,
                                       int64_t rank, int64_t elementBits,
                                       int64_t kvTile) {
  SmallVector<int64_t> box(rank, 1);
  box.back() = tmaBlockElements(elementBits);
  box[paged ? *tmaSlotAxis(paged, role) : 0] = tmaBoxRows(paged, kvTile);
  return box;
}

std::string kvgpu::whyNoTmaPrefill(kv::PrefillOp op, int64_t kvTile) {
  auto [headDim, headDimV] = prefillHeadDims(op);
  if (auto ragged = op.getKv().getDefiningOp<kv::RaggedViewOp>())
    return whyNoTmaCopy(kv::PagedType(), ragged->getOperandTypes(), headDim,
                        headDimV, kvTile, bool(op.getRopeAttr()));
  auto view = op.getKv().getDefiningOp<kv::PagedViewOp>();
  if (!view)
    return "the K/V is not a view of buffers";
  return whyNoTmaCopy(view.getType(), view->getOperandTypes(), headDim,
                      headDimV, kvTile, bool(op.getRopeAttr()));
}

/// The wgmma configuration of `op` (whyNoWgmmaPrefill is ""):
/// FlashAttention-3's 128 rows (two warpgroups) against 128-key tiles at
/// head dim 128; 64-key tiles where V arrives in a ring of its own and is
/// converted per tile (quantized, vLLM's transposed V: its registers
/// spilled at 128) and up to head dim 64 (108-111 registers instead of
/// 181-189: two blocks per SM, as the mma.sync kernel has there); 48-key
/// tiles above head dim 128 (the 64 x 256 O accumulator alone takes 128
/// registers a thread; 64 spilled); smaller tiles where the chip's shared
/// memory per block is short. The softmax overlaps the products (schedule
/// = overlap) above head dim 64, where one block fills an SM anyway (P and
/// V of the tile before live through the next: 155-158 registers at head
/// dim 64, which would cost the second block), unless V is converted per
/// tile (unless a producer converts it) or mask_mod skips tiles.
/// Overlapped kernels up to head dim 128 are warp-specialized (roles =
/// producer: a producer warpgroup copies, converts quantized or transposed
/// tiles into the ring's stages, the two consumer warpgroups take turns at
/// the tensor cores) on 64-key tiles:
/// the consumers' 216 registers (the producer keeps 80) hold those, the
/// 128-key tile's 251 would spill; with RoPE the producer rotates each K
/// tile before handing it over. Their ring starts at three stages: the
/// consumers release a stage only once the values of its tile retired, late in
/// the next tile's iteration, so with two the producer would start each tile's
/// copies just before the consumers wait for them (with three it copies
/// tile n while n - 1 lands and n - 2 is computed). Their producer copies
/// by TMA where whyNoTmaPrefill allows (one thread issues a whole tile's
/// boxes, the others are free; the 16-byte cp.async chunks took every
/// producer thread ~2 instructions each).
static FailureOr<PrefillConfigAttr>
chooseWgmmaPrefillConfig(kv::PrefillOp op, const target::TargetInfo &target,
                         std::string &whyNot) {
  auto [headDim, headDimV] = prefillHeadDims(op);
  bool convertsV = layoutShape(op, PrefillConfigAttr()).convertsV();
  int64_t widest = std::max(headDim, headDimV);
  auto bytesOf = [&](PrefillConfigAttr c) { return prefillSharedBytes(c, op); };
  // A cascade's shared level up to head dim 128: the mma.sync kernel's
  // 256-row tile as four warpgroups, each scoring its 64 rows (serial: 512
  // threads leave 128 registers each; 111-118 at head dim 64 / 128 on
  // 32-key tiles, 100-117 at head dim 64 on 64-key tiles, 128 at head dim
  // 128 on 64-key ones).
  if (takesTallTile(op))
    return firstFitting(
        1,
        [&](int64_t) {
          return getCheckedQuietly<PrefillConfigAttr>(
              whyNot, op.getContext(), /*qTile=*/int64_t(256),
              /*kvTile=*/int64_t(widest <= 64 ? 64 : 32),
              /*warps=*/int64_t(16), /*stages=*/int64_t(2),
              /*q_in_registers=*/false, /*max_partitions=*/int64_t(16),
              /*value_warps=*/int64_t(1), MmaAtomKind::wgmma,
              TileSchedule::serial, PrefillRoles::uniform, TileCopy::cp_async);
        },
        bytesOf, target, "wgmma configuration of a cascade's shared level",
        whyNot);
  bool overlaps = widest > 64 && !hasMaskMod(op);
  PrefillRoles roles = whyNoProducerPrefill(op).empty() ? PrefillRoles::producer
                                                        : PrefillRoles::uniform;
  // V converted per tile overlaps only where the producer converts it into
  // the ring's stages.
  TileSchedule schedule =
      overlaps && (!convertsV || roles == PrefillRoles::producer)
          ? TileSchedule::overlap
          : TileSchedule::serial;
  int64_t kvTile =
      widest > 128                                                   ? 48
      : convertsV || widest <= 64 || roles == PrefillRoles::producer ? 64
                                                                     : 128;
  auto build = [&](int64_t qTile, int64_t keys) {
    TileCopy copy =
        roles == PrefillRoles::producer && whyNoTmaPrefill(op, keys).empty()
            ? TileCopy::tma
            : TileCopy::cp_async;
    return getCheckedQuietly<PrefillConfigAttr>(
        whyNot, op.getContext(), qTile, keys, /*warps=*/qTile / 16,
        /*stages=*/int64_t(roles == PrefillRoles::producer ? 3 : 2),
        /*q_in_registers=*/false,
        /*max_partitions=*/int64_t(16), /*value_warps=*/int64_t(1),
        MmaAtomKind::wgmma, schedule, roles, copy);
  };
  // Fewer keys, then fewer rows, where shared memory is short.
  const std::pair<int64_t, int64_t> tiles[] = {
      {128, kvTile},
      {128, std::min<int64_t>(kvTile, 64)},
      {64, std::min<int64_t>(kvTile, 64)},
      {64, 32}};
  return firstFitting(
      std::size(tiles),
      [&](int64_t i) { return build(tiles[i].first, tiles[i].second); },
      bytesOf, target, "wgmma configuration", whyNot);
}

FailureOr<PrefillConfigAttr>
kvgpu::choosePrefillConfig(kv::PrefillOp op, const target::TargetInfo &target,
                           std::string &whyNot, MmaChoice choice) {
  if (choice == MmaChoice::automatic && whyNoWgmmaPrefill(op, target).empty())
    if (FailureOr<PrefillConfigAttr> config =
            chooseWgmmaPrefillConfig(op, target, whyNot);
        succeeded(config))
      return config;
  Type kvType = op.getKv().getType();
  int64_t headDim, headDimV;
  if (auto paged = dyn_cast<kv::PagedType>(kvType)) {
    headDim = paged.getHeadDim();
    headDimV = paged.getHeadDimV();
  } else {
    headDim = cast<kv::RaggedType>(kvType).getHeadDim();
    headDimV = cast<kv::RaggedType>(kvType).getHeadDimV();
  }
  if (headDim % 16 || headDimV % 16) {
    whyNot = "no prefill configuration: head dims " + std::to_string(headDim) +
             " and " + std::to_string(headDimV) +
             " must be multiples of 16 (the k and n of mma m16n8k16)";
    return failure();
  }
  // Value dims over 256: warps split the value columns in slices of 128 (a
  // 16-row tile's accumulators of 512 columns would take 256 registers per
  // lane), as MLA's kernel does.
  int64_t valueWarps = headDimV > 256 ? headDimV / 128 : 1;
  auto bytesOf = [&](PrefillConfigAttr c) { return prefillSharedBytes(c, op); };
  if (std::max(headDim, headDimV) > 1024 ||
      (valueWarps > 1 && headDimV % 128)) {
    whyNot = "no prefill configuration for head dims " +
             std::to_string(headDim) + " / " + std::to_string(headDimV) +
             ": over 256, the value dim must be a multiple of 128 (warps "
             "split it in slices of 128) and both at most 1024";
    return failure();
  }
  if (valueWarps > 1) {
    // 32-row tiles of 16-key tiles: 2 x valueWarps warps, Q reloaded.
    int64_t qTile = 32, kvTile = 16;
    FailureOr<PrefillConfigAttr> config;
    for (; qTile >= 16; qTile /= 2) {
      config = getCheckedQuietly<PrefillConfigAttr>(
          whyNot, op.getContext(), qTile, kvTile, valueWarps * (qTile / 16),
          int64_t(2), /*q_in_registers=*/false, int64_t(16), valueWarps,
          MmaAtomKind::mma_sync, TileSchedule::serial, PrefillRoles::uniform,
          TileCopy::cp_async);
      if (failed(config) ||
          prefillSharedBytes(*config, op) <= target.maxSharedBytesPerBlock)
        break;
    }
    return withRingDepth(config, target, bytesOf);
  }
  // FlashAttention-2's Ampere/Ada shape where it applies: one K and one V
  // buffer (48 KB at D = 128 instead of the ring's 98 KB) keeps two blocks
  // per SM, 4 warps of 32 rows with Q reloaded per K tile (244 registers,
  // no spills; 64-key tiles spill the masked path's row bounds).
  if (whyNoSingleBufferedPrefill(op, target).empty()) {
    FailureOr<PrefillConfigAttr> config = getCheckedQuietly<PrefillConfigAttr>(
        whyNot, op.getContext(), /*q_tile=*/int64_t(128),
        /*kv_tile=*/int64_t(32), /*warps=*/int64_t(4), /*stages=*/int64_t(1),
        /*q_in_registers=*/false, /*max_partitions=*/int64_t(16),
        /*value_warps=*/int64_t(1), MmaAtomKind::mma_sync, TileSchedule::serial,
        PrefillRoles::uniform, TileCopy::cp_async);
    if (failed(config) || bytesOf(*config) <= target.maxSharedBytesPerBlock)
      return config;
  }
  // FlashInfer's shapes: 128 query rows against 64 keys up to D = 128, one
  // 16-row mma tile per warp so that S, O and Q's fragments stay in
  // registers; D = 256 halves both tiles and reloads Q per K tile.
  bool wide = std::max(headDim, headDimV) > 128;
  // A cascade's shared level holds the rows of every request sharing its
  // keys: one 256-row tile (16 warps, queries reloaded per K tile, 32-key
  // tiles: 128 registers at 512 threads, no spills) reads them once for
  // 256 packed rows instead of twice.
  bool tall = takesTallTile(op);
  int64_t qTile = tall ? 256 : wide ? 64 : 128;
  int64_t kvTile = tall || wide ? 32 : 64;
  auto build = [&](int64_t q) {
    return getCheckedQuietly<PrefillConfigAttr>(
        whyNot, op.getContext(), q, kvTile, /*warps=*/q / 16,
        /*stages=*/int64_t(2),
        /*q_in_registers=*/!wide && !tall, /*max_partitions=*/int64_t(16),
        /*value_warps=*/int64_t(1), MmaAtomKind::mma_sync, TileSchedule::serial,
        PrefillRoles::uniform, TileCopy::cp_async);
  };
  FailureOr<PrefillConfigAttr> config = build(qTile);
  // Smaller query tiles where the chip's shared memory per block is short;
  // then 16-key tiles (head dim 256 over vLLM's transposed V ring on
  // sm_86).
  auto tooLarge = [&] {
    return prefillSharedBytes(*config, op) > target.maxSharedBytesPerBlock;
  };
  while (succeeded(config) && qTile > 16 && tooLarge())
    config = build(qTile /= 2);
  if (succeeded(config) && kvTile > 16 && tooLarge()) {
    kvTile = 16;
    qTile = tall ? 256 : wide ? 64 : 128;
    config = build(qTile);
    while (succeeded(config) && qTile > 16 && tooLarge())
      config = build(qTile /= 2);
  }
  return withRingDepth(config, target, bytesOf);
}

FailureOr<PrefillConfigAttr>
kvgpu::getOrChoosePrefillConfig(kv::PrefillOp op,
                                const target::TargetInfo &target,
                                std::string &whyNot) {
  if (auto config = dyn_cast_or_null<PrefillConfigAttr>(getConfig(op)))
    return config;
  return choosePrefillConfig(op, target, whyNot);
}

bool kvgpu::decodeNeedsTensorCores(kv::DecodeOp op,
                                   const target::TargetInfo &target) {
  auto paged = cast<kv::PagedType>(op.getKv().getType());
  if (paged.getHeadDim() != paged.getHeadDimV())
    return true;
  std::string whyNot;
  FailureOr<DecodeConfigAttr> config = chooseDecodeConfig(op, target, whyNot);
  if (failed(config))
    return true;
  // A GQA group so large that the decode block would pass 1024 threads.
  int64_t qHeads = cast<MemRefType>(op.getQ().getType()).getDimSize(1);
  int64_t group = qHeads / paged.getKvHeads();
  return config->getThreadsX() * group * config->getThreadsZ() >
         target::TargetInfo::kMaxThreadsPerBlock;
}

bool kvgpu::decodePrefersTensorCores(kv::DecodeOp op,
                                     const target::TargetInfo &target) {
  auto paged = cast<kv::PagedType>(op.getKv().getType());
  int64_t qHeads = cast<MemRefType>(op.getQ().getType()).getDimSize(1);
  Type dtype = paged.getDtype();
  if (qHeads / paged.getKvHeads() < kTensorCoreDecodeMinGroup ||
      !target.whyNoMmaSyncKernels().empty() || paged.isQuantized() ||
      !(dtype.isF16() || dtype.isBF16()))
    return false;
  // RoPE: the tensor-core kernel rotates q and K into the KV type before
  // the mma; the decode kernel rotates keys in f32 (the LSE keeps f32's
  // precision), so it keeps the ops it can take.
  if (op.getRopeAttr())
    return false;
  // Attention variants (sinks, ALiBi, regions) and top-k selections run on
  // the decode kernel.
  if (cast<kv::AttentionVariantOpInterface>(op.getOperation()).hasVariants() ||
      op.getTopk())
    return false;
  // The tensor-core kernel multiplies P (the softmax weights) by V in the
  // KV type, which a state of that type absorbs; a wider state (f32, or
  // f16 over bf16 KV) gets the decode kernel's f32 P.
  if (op.getType().getElementType() != dtype)
    return false;
  std::string whyNot;
  return succeeded(chooseTensorCoreDecodeConfig(op, target, whyNot));
}

/// The warpgroups splitting a wgmma decode's `headDimV` value columns:
/// one wgmma's N (256) each; at most two (a 64 x 256 f32 O slice takes 128
/// registers a thread, and four warpgroups leave 128 in all).
static int64_t wgmmaDecodeValueWarpgroups(int64_t headDimV) {
  return llvm::divideCeil(headDimV, 256);
}

std::string kvgpu::whyNoWgmmaDecode(kv::DecodeOp op,
                                    const target::TargetInfo &target) {
  if (!target.has(target::MmaAtom::WgmmaM64NK16))
    return target.chip.str() + " has no wgmma";
  auto paged = cast<kv::PagedType>(op.getKv().getType());
  int64_t headDimV = paged.getHeadDimV();
  int64_t valueWarpgroups = wgmmaDecodeValueWarpgroups(headDimV);
  if (valueWarpgroups > 2)
    return "a value dim of " + std::to_string(headDimV) +
           " takes more than two warpgroups of 256 columns, whose f32 "
           "accumulators pass the register file";
  TensorCoreLayoutShape shape = layoutShape(op, PrefillConfigAttr());
  if (std::optional<std::string> why = codegen::WarpgroupProducts::whyNot(
          shape.qElement, shape.kvElement, /*kvTile=*/64, paged.getHeadDim(),
          headDimV, /*valueSlice=*/headDimV / valueWarpgroups))
    return *why;
  return "";
}

/// The wgmma configuration of `op` (whyNoWgmmaDecode is ""). A decode's
/// tile holds the GQA group's heads of one request, which wgmma pads to
/// its 64 rows (8 live rows at group 8), as FlashAttention-3's packed GQA
/// and FlashInfer's Hopper kernels do: the decode stays memory-bound (64
/// rows x 4 flops per K/V element pair is 64 flops a byte of 16-bit K/V,
/// a fifth of an H100's 295), and the padding rows cost registers, not
/// bytes. Value dims over 256 split over two warpgroups sharing one
/// softmax (as MLA's); 64-key tiles up to head dim 128, 32 past it.
static FailureOr<PrefillConfigAttr>
chooseWgmmaDecodeConfig(kv::DecodeOp op, const target::TargetInfo &target,
                        std::string &whyNot) {
  auto paged = cast<kv::PagedType>(op.getKv().getType());
  int64_t widest = std::max(paged.getHeadDim(), paged.getHeadDimV());
  int64_t valueWarpgroups = wgmmaDecodeValueWarpgroups(paged.getHeadDimV());
  auto bytesOf = [&](PrefillConfigAttr c) {
    return tensorCoreSharedBytes(layoutShape(op, c));
  };
  const int64_t kvTiles[] = {widest <= 128 ? 64 : 32, 16};
  return firstFitting(
      std::size(kvTiles),
      [&](int64_t i) {
        return getCheckedQuietly<PrefillConfigAttr>(
            whyNot, op.getContext(), /*qTile=*/codegen::WgmmaAtom::kM,
            kvTiles[i], /*warps=*/4 * valueWarpgroups, /*stages=*/int64_t(2),
            /*q_in_registers=*/false, /*max_partitions=*/int64_t(32),
            valueWarpgroups, MmaAtomKind::wgmma, TileSchedule::serial,
            PrefillRoles::uniform, TileCopy::cp_async);
      },
      bytesOf, target, "wgmma decode configuration", whyNot);
}

FailureOr<PrefillConfigAttr>
kvgpu::chooseTensorCoreDecodeConfig(kv::DecodeOp op,
                                    const target::TargetInfo &target,
                                    std::string &whyNot, MmaChoice choice) {
  auto paged = cast<kv::PagedType>(op.getKv().getType());
  auto view = op.getKv().getDefiningOp<kv::PagedViewOp>();
  if (!view || view.getVectorWidth() *
                       paged.getStorageElementType().getIntOrFloatBitWidth() <
                   128) {
    whyNot = "the head dim of the pool layout is not contiguous in 16-byte "
             "chunks (the tensor-core kernel copies K/V rows with 16-byte "
             "cp.async)";
    return failure();
  }
  int64_t headDim = paged.getHeadDim(), headDimV = paged.getHeadDimV();
  if (headDim % 16 || headDimV % 16 || std::max(headDim, headDimV) > 1024 ||
      (headDimV > 256 && headDimV % 128)) {
    whyNot = "no tensor-core decode configuration for head dims " +
             std::to_string(headDim) + " / " + std::to_string(headDimV) +
             " (multiples of 16, at most 1024; value dims over 256 "
             "multiples of 128)";
    return failure();
  }
  if (choice == MmaChoice::automatic && whyNoWgmmaDecode(op, target).empty()) {
    std::string whyNotWgmma;
    if (FailureOr<PrefillConfigAttr> config =
            chooseWgmmaDecodeConfig(op, target, whyNotWgmma);
        succeeded(config))
      return config;
  }
  // A query tile holds the GQA group's heads of one request (up to 64);
  // the warps of each 16 rows split the value columns in slices of at most
  // 128 (64 accumulator registers per lane); Q is reloaded per K tile.
  int64_t qHeads = cast<MemRefType>(op.getQ().getType()).getDimSize(1);
  int64_t group = qHeads / paged.getKvHeads();
  int64_t qTile = std::min<int64_t>(64, llvm::alignTo(group, 16));
  int64_t valueWarps = llvm::divideCeil(headDimV, 128);
  if (headDimV % (64 * valueWarps))
    valueWarps = 1;
  int64_t kvTile = std::max(headDim, headDimV) > 256 ? 16 : 32;
  FailureOr<PrefillConfigAttr> config;
  for (; qTile >= 16; qTile /= 2) {
    config = getCheckedQuietly<PrefillConfigAttr>(
        whyNot, op.getContext(), qTile, kvTile, valueWarps * (qTile / 16),
        int64_t(2), /*q_in_registers=*/false, /*max_partitions=*/int64_t(32),
        valueWarps, MmaAtomKind::mma_sync, TileSchedule::serial,
        PrefillRoles::uniform, TileCopy::cp_async);
    if (failed(config))
      return config;
    if (tensorCoreSharedBytes(layoutShape(op, *config)) <=
        target.maxSharedBytesPerBlock)
      break;
  }
  return withRingDepth(config, target, [&](PrefillConfigAttr c) {
    return tensorCoreSharedBytes(layoutShape(op, c));
  });
}

/// The rows of `op`'s query tiles: all heads of a request (and, with
/// rows(), its query rows) up to 64, FlashMLA's block.
static int64_t mlaTileRows(kv::MlaDecodeOp op) {
  int64_t heads = cast<MemRefType>(op.getQNope().getType()).getDimSize(1);
  // A top-k tile gathers one query row's keys: it holds that row's heads,
  // the fewest tiles per row (each reads the row's keys), as even as whole
  // 16-row m-tiles make them (the last is padded: 80 heads, two tiles of
  // 48 rows).
  int64_t tilesPerRow = llvm::divideCeil(heads, 64);
  int64_t rows = op.getQoIndptr() && !op.getTopk()
                     ? 64
                     : llvm::alignTo(llvm::divideCeil(heads, tilesPerRow), 16);
  return std::min<int64_t>(64, rows);
}

std::string kvgpu::whyNoWgmmaMla(kv::MlaDecodeOp op,
                                 const target::TargetInfo &target) {
  if (!target.has(target::MmaAtom::WgmmaM64NK16))
    return target.chip.str() + " has no wgmma";
  kv::PagedType kv = op.getKv().getType();
  if (int64_t rows = mlaTileRows(op); rows < codegen::WgmmaAtom::kM)
    return "a query tile of " + std::to_string(rows) +
           " rows (the request's heads) would leave most of wgmma's 64 "
           "rows padding";
  Type qType = cast<MemRefType>(op.getQNope().getType()).getElementType();
  if (std::optional<std::string> why = codegen::WarpgroupProducts::whyNot(
          qType, kv.getDtype(), /*kvTile=*/64, kv.getHeadDim(), kv.getHeadDim(),
          /*valueSlice=*/kv.getHeadDim() / 2))
    return *why;
  if (kv.getPeDim() % 64)
    return "a kpe width of " + std::to_string(kv.getPeDim()) +
           " is not whole 64-element blocks of the 128-byte swizzle";
  return "";
}

/// The wgmma configuration of `op` (whyNoWgmmaMla is ""): FlashMLA's
/// block of 64 rows, the 512 value columns split over two warpgroups (each
/// O slice, 64 x 256 f32, takes 128 registers a thread) that share one
/// softmax, against 32-key tiles: the scoring warpgroup holds its O slice
/// through the scores, and at 250-255 registers 48-key tiles spilled 16-56
/// bytes, 64-key ones 44-128.
static FailureOr<PrefillConfigAttr>
chooseWgmmaMlaConfig(kv::MlaDecodeOp op, const target::TargetInfo &target,
                     std::string &whyNot) {
  return firstFitting(
      1,
      [&](int64_t) {
        return getCheckedQuietly<PrefillConfigAttr>(
            whyNot, op.getContext(), /*qTile=*/codegen::WgmmaAtom::kM,
            /*kvTile=*/int64_t(32), /*warps=*/int64_t(8),
            /*stages=*/int64_t(2), /*q_in_registers=*/false,
            /*max_partitions=*/int64_t(64), /*value_warps=*/int64_t(2),
            MmaAtomKind::wgmma, TileSchedule::serial, PrefillRoles::uniform,
            TileCopy::cp_async);
      },
      [&](PrefillConfigAttr c) { return mlaSharedBytes(c, op); }, target,
      "wgmma MLA configuration", whyNot);
}

FailureOr<PrefillConfigAttr>
kvgpu::chooseMlaConfig(kv::MlaDecodeOp op, const target::TargetInfo &target,
                       std::string &whyNot, MmaChoice choice) {
  kv::PagedType kv = op.getKv().getType();
  int64_t headDim = kv.getHeadDim(), peDim = kv.getPeDim();
  if (headDim % 256 || peDim % 16) {
    whyNot = "no MLA configuration: the ckv width " + std::to_string(headDim) +
             " must be a multiple of 256 and the kpe width " +
             std::to_string(peDim) +
             " of 16 (four warps split ckv's value columns, each a multiple "
             "of 64)";
    return failure();
  }
  // All heads share the latent KV, so a query tile packs heads (and, with
  // rows(), query rows): up to 64 rows, FlashMLA's block (the O of 64 rows
  // x 512 f32 columns fills half a register file). The warps of each 16
  // rows split the value columns (a 16-row tile's 512 would take 256
  // registers per lane) and each computes the rows' scores: two warps of
  // 256 columns for 64-row tiles (8 warps, no spills), four of 128 for
  // smaller tiles. On sm_90a a 64-row tile runs on wgmma.
  if (choice == MmaChoice::automatic && whyNoWgmmaMla(op, target).empty()) {
    std::string whyNotWgmma;
    if (FailureOr<PrefillConfigAttr> config =
            chooseWgmmaMlaConfig(op, target, whyNotWgmma);
        succeeded(config))
      return config;
  }
  int64_t qTile = mlaTileRows(op), kvTile = 32;
  auto build = [&] {
    int64_t valueWarps = qTile == 64 ? 2 : 4;
    return getCheckedQuietly<PrefillConfigAttr>(
        whyNot, op.getContext(), qTile, kvTile, valueWarps * (qTile / 16),
        /*stages=*/int64_t(2), /*q_in_registers=*/false,
        /*max_partitions=*/int64_t(64), valueWarps, MmaAtomKind::mma_sync,
        TileSchedule::serial, PrefillRoles::uniform, TileCopy::cp_async);
  };
  FailureOr<PrefillConfigAttr> config = build();
  // Shorter K/V tiles, then fewer rows, where shared memory is short.
  while (succeeded(config) &&
         mlaSharedBytes(*config, op) > target.maxSharedBytesPerBlock &&
         (kvTile > 16 || qTile > 16)) {
    if (kvTile > 16)
      kvTile /= 2;
    else
      qTile /= 2;
    config = build();
  }
  return withRingDepth(config, target, [&](PrefillConfigAttr c) {
    return mlaSharedBytes(c, op);
  });
}

FailureOr<PrefillConfigAttr>
kvgpu::getOrChooseMlaConfig(kv::MlaDecodeOp op,
                            const target::TargetInfo &target,
                            std::string &whyNot) {
  if (auto config = dyn_cast_or_null<PrefillConfigAttr>(getConfig(op)))
    return config;
  return chooseMlaConfig(op, target, whyNot);
}

FailureOr<Attribute> kvgpu::chooseConfig(Operation *op,
                                         const target::TargetInfo &target,
                                         std::string &whyNot,
                                         MmaChoice choice) {
  if (auto decode = dyn_cast<kv::DecodeOp>(op)) {
    if (decodeNeedsTensorCores(decode, target) ||
        decodePrefersTensorCores(decode, target))
      return FailureOr<Attribute>(
          chooseTensorCoreDecodeConfig(decode, target, whyNot, choice));
    return FailureOr<Attribute>(chooseDecodeConfig(decode, target, whyNot));
  }
  if (auto prefill = dyn_cast<kv::PrefillOp>(op)) {
    if (prefillTakesQueryRows(prefill))
      return FailureOr<Attribute>(
          getOrChooseQueryRowsConfig(prefill, target, whyNot));
    return FailureOr<Attribute>(
        choosePrefillConfig(prefill, target, whyNot, choice));
  }
  if (auto mla = dyn_cast<kv::MlaDecodeOp>(op))
    return FailureOr<Attribute>(chooseMlaConfig(mla, target, whyNot, choice));
  whyNot = op->getName().getStringRef().str() + " takes no configuration";
  return failure();
}
