//===- DecodeKernelParts.h - The decode kernel's pieces --------*- C++ -*-===//
//
// What the decode kernel's body (DecodeKernel.cpp) shares with its shared
// memory layout (DecodeLayout.cpp): the buffers and the meta slots.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_LIB_CONVERSION_KVTOGPU_DECODEKERNELPARTS_H
#define KVIR_LIB_CONVERSION_KVTOGPU_DECODEKERNELPARTS_H

#include "DecodeKernel.h"

#include <optional>

namespace kvir::gpu_lowering::decode {

/// Slots of the meta buffer past the token range and table base.
constexpr int64_t kMetaPosition = 4, kMetaRequest = 5, kMetaKvLen = 6;
/// With a frame: the row's request, position and key shift in it.
constexpr int64_t kMetaFrameRequest = 7, kMetaFramePosition = 8,
                  kMetaKeyShift = 9;

/// Indices of the kernel's shared buffers in its layout.
struct DecodeBuffers {
  /// K rows of the tiles in flight, and V rows ([stages, tile, padded]; V
  /// transposed: [stages, padded, tile + pad]), as stored.
  unsigned kTiles = 0, vTiles = 0;
  /// The group's queries [group, padded], as stored.
  unsigned query = 0;
  /// i32: token range start, end, table base of the request, first
  /// visible token (the start is aligned down for transposed V); with RoPE
  /// or query rows, then the query's position (kv_len - 1 for a decode);
  /// with query rows, then the row's request; gathering, then (after an
  /// unused request slot) the request's kv_len; with a frame, then (after
  /// unused slots) the row's request, position and key shift in it.
  unsigned meta = 0;
  /// [idSlots, idEntriesPerTile] table entries of the tiles' pages (one
  /// per token when gathering).
  unsigned pageIds = 0;
  /// gathers(): [idSlots, tile] i32 keys of the tiles' entries.
  std::optional<unsigned> keyIds;
  /// skipsTiles(): [stages + 1] i32, slot n % (stages + 1) holding n + 1
  /// once some key of tile n is visible to some head.
  std::optional<unsigned> liveTiles;
  /// threads_z > 1: the z-lanes' partial states, [tz * group] f32 m and l,
  /// [tz * group, padded] f32 acc.
  std::optional<unsigned> zMax, zSum, zAcc;
  /// decodesTilesInShared(): [tile, padded] f16 K and V rows of the
  /// current tile, decoded.
  std::optional<unsigned> kDecoded, vDecoded;
  /// int8Groups(): [stages, tile, scaleColumns()] K and V scales of the
  /// tiles in flight, in the activation type.
  std::optional<unsigned> kScales, vScales;
  /// transposedVChunk(): [tile, padded] the current tile's V rows.
  std::optional<unsigned> vRows;
  /// rotatesTilesInShared(): [tile, padded] f32 K rows of the current
  /// tile, rotated.
  std::optional<unsigned> kRotated;
};

/// The kernel's shared buffers, added to `layout` in KernelFunc::getShared
/// order (with a rotated K tile where it fits).
DecodeBuffers buildLayout(const DecodeKernelSpec &s,
                          codegen::SharedMemoryLayout &layout);

} // namespace kvir::gpu_lowering::decode

#endif // KVIR_LIB_CONVERSION_KVTOGPU_DECODEKERNELPARTS_H
