//===- DecodeLayout.cpp - The batch-decode kernel's shared memory ---------===//
//
// What the decode kernel keeps in shared memory (DecodeKernelParts.h) and
// the checks of a configuration against it: whole warps, 1024 threads and
// 48 KB of static shared memory, RoPE's lane vectors.
//
//===----------------------------------------------------------------------===//
#include "DecodeKernelParts.h"
#include "LoweringContext.h"

#include "kvir/Codegen/PagedTileLoader.h"
#include "kvir/Dialect/KV/Utils/PagedAddressing.h"

using namespace mlir;
using namespace kvir;
using namespace kvir::codegen;
using namespace kvir::gpu_lowering;
using namespace kvir::gpu_lowering::decode;

namespace {

/// Where an argument binds: one named value, or a member of a group.
enum class Binding { single, kvOperand, variantOperand };

/// The kernel's arguments in order, one call of `arg(type, binding,
/// field)` each (`field` for single values).
void listArguments(
    const DecodeKernelSpec &s,
    function_ref<void(Type, Binding, Value DecodeArguments::*)> arg) {
  auto single = [&](Type type, Value DecodeArguments::*field) {
    arg(type, Binding::single, field);
  };
  single(s.qType, &DecodeArguments::q);
  if (s.queryRows())
    single(s.qoIndptrType, &DecodeArguments::qoIndptr);
  for (Type type : s.kvTypes)
    arg(type, Binding::kvOperand, nullptr);
  if (s.positionsType)
    single(s.positionsType, &DecodeArguments::positions);
  if (s.framePositionsType) {
    single(s.frameIndptrType, &DecodeArguments::frameIndptr);
    single(s.framePositionsType, &DecodeArguments::framePositions);
  }
  if (s.gathers())
    single(s.topkType, &DecodeArguments::topk);
  if (s.partitioned)
    single(workItemsType(s.qType.getContext()), &DecodeArguments::workItems);
  single(s.outType, &DecodeArguments::out);
  single(s.lseType, &DecodeArguments::lse);
  if (s.partitioned) {
    single(s.finalOutType, &DecodeArguments::finalOut);
    single(s.finalLseType, &DecodeArguments::finalLse);
  }
  for (Type type : s.variants.types)
    arg(type, Binding::variantOperand, nullptr);
}

/// The buffers, with or without a rotated K tile.
DecodeBuffers addBuffers(const DecodeKernelSpec &s, SharedMemoryLayout &layout,
                         bool rotatedTile) {
  MLIRContext *ctx = s.kv.getContext();
  Type f32 = Float32Type::get(ctx), i32 = IntegerType::get(ctx, 32);
  kvgpu::DecodeConfigAttr c = s.config;
  int64_t padded = c.getThreadsX() * c.getVector(), tile = c.getTileTokens();
  DecodeBuffers buf;
  // As stored: fp8 / int8 codes are dequantized from the tiles in registers.
  Type stored = s.kv.getStorageElementType();
  buf.kTiles = layout.add("k_tiles", {c.getStages(), tile, padded}, stored);
  // Transposed V rows are padded to an odd number of 16-byte chunks: the
  // block's reads of one chunk per dim fall into distinct banks.
  if (s.transposedVChunk())
    buf.vTiles = layout.add(
        "v_tiles",
        {c.getStages(), padded, tile + kvgpu::transposedVPad(s.kv, tile)},
        stored);
  else
    buf.vTiles = layout.add("v_tiles", {c.getStages(), tile, padded}, stored);
  buf.query =
      layout.add("query", {s.group(), padded}, s.qType.getElementType());
  buf.meta = layout.add("meta",
                        {s.framePositionsType     ? kMetaKeyShift + 1
                         : s.gathers()            ? kMetaKvLen + 1
                         : s.queryRows()          ? kMetaRequest + 1
                         : s.needsQueryPosition() ? kMetaPosition + 1
                                                  : 4},
                        i32);
  // Page entries as the table stores them (i32, or OpenPPL's i64); token
  // offsets have none, a placeholder of i32.
  Type entry = kv::getPageEntryType(s.kv, s.kvTypes);
  buf.pageIds =
      layout.add("page_ids",
                 {s.idSlots(), PagedTileLoader::idEntriesPerTile(
                                   s.kv.getPageSize(), tile, s.gathers())},
                 entry ? entry : i32);
  if (s.gathers())
    buf.keyIds = layout.add("key_ids", {s.idSlots(), tile}, i32);
  if (s.skipsTiles())
    buf.liveTiles = layout.add("live_tiles", {c.getStages() + 1}, i32);
  if (c.getThreadsZ() > 1) {
    int64_t slots = c.getThreadsZ() * s.group();
    buf.zMax = layout.add("z_max", {slots}, f32);
    buf.zSum = layout.add("z_sum", {slots}, f32);
    buf.zAcc = layout.add("z_acc", {slots, padded}, f32);
  }
  if (s.decodesTilesInShared()) {
    Type f16 = Float16Type::get(ctx);
    buf.kDecoded = layout.add("k_decoded", {tile, padded}, f16);
    buf.vDecoded = layout.add("v_decoded", {tile, padded}, f16);
  }
  if (s.int8Groups()) {
    Type scale = s.kv.getDtype();
    buf.kScales =
        layout.add("k_scales", {c.getStages(), tile, s.scaleColumns()}, scale);
    buf.vScales =
        layout.add("v_scales", {c.getStages(), tile, s.scaleColumns()}, scale);
  }
  if (s.transposedVChunk())
    buf.vRows = layout.add("v_rows", {tile, padded}, stored);
  if (rotatedTile)
    buf.kRotated = layout.add("k_rotated", {tile, padded}, f32);
  return buf;
}

/// Whether the kernel rotates each K tile once for the group: it would
/// (rotatesTilesInShared) and the f32 tile fits beside the other buffers
/// (else every head rotates its keys in registers).
bool rotatesTilesInSharedMemory(const DecodeKernelSpec &s) {
  if (!s.rotatesTilesInShared())
    return false;
  SharedMemoryLayout layout;
  addBuffers(s, layout, /*rotatedTile=*/false);
  kvgpu::DecodeConfigAttr c = s.config;
  layout.add("k_rotated", {c.getTileTokens(), c.getThreadsX() * c.getVector()},
             Float32Type::get(s.kv.getContext()));
  return layout.getBytes() <= target::TargetInfo::kStaticSharedLimit;
}

} // namespace

DecodeBuffers gpu_lowering::decode::buildLayout(const DecodeKernelSpec &s,
                                                SharedMemoryLayout &layout) {
  return addBuffers(s, layout, rotatesTilesInSharedMemory(s));
}

SharedMemoryLayout gpu_lowering::decodeSharedLayout(const DecodeKernelSpec &s) {
  SharedMemoryLayout layout;
  buildLayout(s, layout);
  return layout;
}

std::optional<std::string> gpu_lowering::whyNotDecodeRope(kv::RopeAttr rope,
                                                          int64_t headDim,
                                                          int64_t vector) {
  int64_t rotated = rope.getRotatedDims(headDim);
  if (rope.getStyle() == kv::RopeStyle::interleave) {
    if (vector % 2 == 0 && rotated % vector == 0)
      return std::nullopt;
    return "on-the-fly interleaved RoPE over " + std::to_string(rotated) +
           " rotary dims in " + std::to_string(vector) +
           "-element vectors: the decode kernel needs each lane's vector to "
           "hold whole pairs, all of them rotated or none";
  }
  if ((rotated / 2) % vector == 0)
    return std::nullopt;
  return "on-the-fly rotate-half RoPE over " + std::to_string(rotated) +
         " rotary dims in " + std::to_string(vector) +
         "-element vectors: the decode kernel needs each half (" +
         std::to_string(rotated / 2) + " dims) to be whole vectors";
}

/// Why the decode kernel cannot run with `spec`'s configuration.
std::optional<std::string>
gpu_lowering::whyNotDecodeConfig(const DecodeKernelSpec &s) {
  kvgpu::DecodeConfigAttr c = s.config;
  int64_t threads = c.getThreadsX() * s.group() * c.getThreadsZ();
  // Shuffles use the full membermask: whole warps only.
  if (threads % 32)
    return "a block of " + std::to_string(threads) +
           " threads, not whole warps";
  if (threads > target::TargetInfo::kMaxThreadsPerBlock)
    return "a block of " + std::to_string(threads) + " threads, over 1024";
  int64_t shared = decodeSharedLayout(s).getBytes();
  if (shared > target::TargetInfo::kStaticSharedLimit)
    return std::to_string(shared) +
           " bytes of shared memory, over the 48 KB the decode kernel may "
           "declare";
  return std::nullopt;
}

SmallVector<Type>
gpu_lowering::decodeArgumentTypes(const DecodeKernelSpec &s) {
  SmallVector<Type> types;
  listArguments(s, [&](Type type, Binding, Value DecodeArguments::*) {
    types.push_back(type);
  });
  return types;
}

DecodeArguments decode::bindDecodeArguments(const KernelFunc &kf,
                                            const DecodeKernelSpec &s) {
  DecodeArguments a;
  unsigned index = 0;
  std::optional<unsigned> firstKv;
  listArguments(s, [&](Type, Binding binding, Value DecodeArguments::*field) {
    if (binding == Binding::single)
      a.*field = kf.getArgument(index);
    else if (binding == Binding::kvOperand && !firstKv)
      firstKv = index;
    ++index;
  });
  a.kv = kv::PagedOperands::fromFlattened(
      s.kv, kf.getArguments().slice(*firstKv, s.kvTypes.size()));
  if (!s.partitioned) {
    a.finalOut = a.out;
    a.finalLse = a.lse;
  }
  return a;
}
