//===- TensorCoreLayout.cpp - The tensor-core kernel's shared memory ------===//
#include "kvir/Dialect/KVGPU/Transforms/TensorCoreLayout.h"
#include "kvir/Codegen/PagedTileLoader.h"
#include "kvir/Codegen/Pipeline.h"
#include "kvir/Codegen/SharedSoftmax.h"
#include "kvir/Dialect/KVGPU/Transforms/ConfigSelection.h"

using namespace mlir;
using namespace kvir;
using namespace kvir::kvgpu;

int64_t TensorCoreLayoutShape::transposedVChunk() const {
  return paged ? kvgpu::transposedVChunk(paged) : 0;
}

codegen::Swizzle kvgpu::operandSwizzle(PrefillConfigAttr config) {
  return config.usesWgmma() ? codegen::Swizzle::B128
                            : codegen::Swizzle::XorChunks;
}

/// The alignment of an operand tile's buffer: its swizzle's (a hardware
/// swizzle's 1024-byte pattern starts at its base).
static int64_t operandAlignment(PrefillConfigAttr config) {
  return std::max<int64_t>(16,
                           codegen::swizzleAtomBytes(operandSwizzle(config)));
}

/// The K/V rings and tiles: quantized KV streams codes (and scales)
/// through the stage ring and converts each tile into one K and one V tile
/// of values; so does a transposed V ring (vLLM's V pool) into one V tile.
static void addKVBuffers(const TensorCoreLayoutShape &s,
                         codegen::SharedMemoryLayout &layout,
                         TensorCoreBuffers &buf) {
  PrefillConfigAttr c = s.config;
  int64_t stages = c.getStages(), kvTile = c.getKvTile();
  // Codes converted per tile go to one K / V tile, or with a producer
  // (which converts them) to the ring's stages.
  bool converted = !c.hasProducer();
  int64_t kStages = s.quantized() && converted ? 1 : stages;
  int64_t vStages = s.convertsV() && converted ? 1 : stages;
  int64_t align = operandAlignment(c);
  buf.k = layout.add(s.isMla() ? "ckv_tiles" : "k_tiles",
                     {kStages, kvTile, s.headDim}, s.kvElement, align);
  if (s.isMla())
    buf.kpe =
        layout.add("kpe_tiles", {stages, kvTile, s.peDim}, s.kvElement, align);
  else
    buf.v = layout.add("v_tiles", {vStages, kvTile, s.headDimV}, s.kvElement,
                       align);
  if (s.quantized())
    buf.kCodes = layout.add("k_codes", {stages, kvTile, s.headDim},
                            s.paged.getStorageElementType());
  if (s.transposedVChunk())
    buf.vCodes = layout.add(
        "v_transposed",
        {stages, s.headDimV, kvTile + transposedVPad(s.paged, kvTile)},
        s.paged.getStorageElementType());
  else if (s.quantized())
    buf.vCodes = layout.add("v_codes", {stages, kvTile, s.headDimV},
                            s.paged.getStorageElementType());
  if (s.int8Groups()) {
    int64_t g = s.paged.getQuantGroup();
    buf.kScales = layout.add("k_scales", {stages, kvTile, s.headDim / g},
                             s.kvElement);
    buf.vScales = layout.add("v_scales", {stages, kvTile, s.headDimV / g},
                             s.kvElement);
  }
}

TensorCoreBuffers
kvgpu::addTensorCoreBuffers(const TensorCoreLayoutShape &s,
                            codegen::SharedMemoryLayout &layout) {
  MLIRContext *ctx = s.config.getContext();
  Type i32 = IntegerType::get(ctx, 32), i64 = IntegerType::get(ctx, 64);
  PrefillConfigAttr c = s.config;
  TensorCoreBuffers buf;
  int64_t align = operandAlignment(c);
  buf.q = layout.add("q_tile", {c.getQTile(), s.headDim}, s.qElement, align);
  if (s.isMla())
    buf.qPe =
        layout.add("q_pe_tile", {c.getQTile(), s.peDim}, s.qElement, align);
  addKVBuffers(s, layout, buf);
  // 16-bit outputs are staged for 16-byte stores, in the query tile when it
  // has the output's shape and type.
  if (stagesOutputInShared(s.finalOutElement) &&
      (s.headDimV != s.headDim || s.finalOutElement != s.qElement))
    buf.outStage = layout.add("o_stage", {c.getQTile(), s.headDimV},
                              s.finalOutElement);
  if (c.sharesSoftmax()) {
    buf.sharedP = layout.add(
        "shared_p",
        {c.getQTile(),
         codegen::SharedSoftmax::pColumns(c.getKvTile(), operandSwizzle(c))},
        s.kvElement, align);
    buf.rowStats = layout.add(
        "row_stats", {c.getQTile(), codegen::SharedSoftmax::statsPerRow()},
        Float32Type::get(ctx));
  }
  if (s.paged && s.paged.getTable() != kv::TableForm::token_offset)
    buf.pageIds = layout.add(
        "page_ids",
        {s.idSlots(), codegen::PagedTileLoader::idEntriesPerTile(
                          s.paged.getPageSize(), c.getKvTile(), s.gathers)},
        s.pageEntry);
  if (s.gathers)
    buf.keyIds = layout.add("key_ids", {s.idSlots(), c.getKvTile()}, i32);
  buf.meta = layout.add("meta", {kTensorCoreMetaSlots}, i64);
  if (s.mask)
    buf.maskScratch = layout.add("mask_scratch", {c.getNumThreads()}, i64);
  if (s.skipsTiles)
    buf.liveTiles = layout.add("live_tiles", {s.liveTileSlots()}, i32);
  // The ring's barriers, and with copy = tma one the query tile's copies
  // complete on.
  if (c.hasProducer())
    buf.stageBarriers =
        layout.add("stage_barriers",
                   {codegen::MBarrierPipeline::barrierCount(c.getStages()) +
                    (c.copiesByTma() ? 1 : 0)},
                   i64,
                   /*align=*/8);
  return buf;
}

int64_t kvgpu::tensorCoreSharedBytes(const TensorCoreLayoutShape &shape) {
  codegen::SharedMemoryLayout layout;
  addTensorCoreBuffers(shape, layout);
  return layout.getBytes();
}
