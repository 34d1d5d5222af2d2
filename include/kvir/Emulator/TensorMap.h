//===- TensorMap.h - TMA tensor maps for the emulator -----------*- C++ -*-===//
//
// The emulator's cuTensorMapEncodeTiled: the same arguments, the same
// checks as the CUDA driver (its documented requirements on every
// parameter), and a 128-byte object of the emulator's own format that
// cp.async.bulk.tensor in an emulated kernel decodes. Host code reaches it as
// cuTensorMapEncodeTiled and as MLIR's mgpuTensorMapEncodeTiledMemref.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_EMULATOR_TENSORMAP_H
#define KVIR_EMULATOR_TENSORMAP_H

#include <cstdint>
#include <string>

namespace kvir::emu {

/// CUtensorMapDataType values (CUDA's cuda.h) and their element bytes.
enum TensorMapDataType : uint32_t {
  TmaUInt8 = 0,
  TmaUInt16,
  TmaUInt32,
  TmaInt32,
  TmaUInt64,
  TmaInt64,
  TmaFloat16,
  TmaFloat32,
  TmaFloat64,
  TmaBFloat16,
  TmaFloat32Ftz,
  TmaTF32,
  TmaTF32Ftz
};
/// CUtensorMapSwizzle: none, 32, 64, 128 bytes.
enum TensorMapSwizzle : uint32_t {
  TmaSwizzleNone = 0,
  TmaSwizzle32B,
  TmaSwizzle64B,
  TmaSwizzle128B
};

/// What a tensor map describes (dimension 0 innermost).
struct TensorMapFields {
  uint32_t dataType = 0, rank = 0;
  uint64_t globalAddress = 0;
  uint64_t globalDim[5] = {}, globalStrides[5] = {}; // strides: rank - 1
  uint32_t boxDim[5] = {}, elementStrides[5] = {};
  uint32_t interleave = 0, swizzle = 0, l2Promotion = 0, oobFill = 0;
  uint32_t elementBytes() const;
  /// Bytes of the box in shared memory (and of a load's complete_tx).
  uint64_t boxBytes() const;
};

/// Encodes `fields` into the 128-byte object at `tensorMap`, or returns the
/// requirement of cuTensorMapEncodeTiled that they break (nothing written).
std::string encodeTensorMap(void *tensorMap, const TensorMapFields &fields);
/// The same from cuTensorMapEncodeTiled's arguments (arrays innermost
/// first; `globalStrides` has rank - 1 entries).
std::string
encodeTensorMapTiled(void *tensorMap, uint32_t dataType, uint32_t rank,
                     const void *globalAddress, const uint64_t *globalDim,
                     const uint64_t *globalStrides, const uint32_t *boxDim,
                     const uint32_t *elementStrides, uint32_t interleave,
                     uint32_t swizzle, uint32_t l2Promotion, uint32_t oobFill);

/// Decodes an object encodeTensorMap wrote; false if `tensorMap` holds none.
bool decodeTensorMap(const void *tensorMap, TensorMapFields &fields);

} // namespace kvir::emu

#endif // KVIR_EMULATOR_TENSORMAP_H
