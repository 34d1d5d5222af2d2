//===- TensorMap.cpp - cuTensorMapEncodeTiled for the emulator ------------===//
//
// The checks are the requirements the CUDA driver documents for
// cuTensorMapEncodeTiled (driver API "Tensor Map Object Management"), for
// the modes sm_90 has: no interleave or 16/32-byte interleave, swizzles of
// none, 32, 64 and 128 bytes, the data types 0-12.
//
//===----------------------------------------------------------------------===//
#include "kvir/Emulator/TensorMap.h"

#include <cstring>

using namespace kvir::emu;

namespace {

/// The emulator's 128-byte tensor map.
struct Encoded {
  uint32_t magic, dataType, rank, interleave, swizzle, l2Promotion, oobFill;
  uint32_t reserved;
  uint64_t globalAddress;
  uint64_t globalDim[5];
  uint64_t globalStrides[4];
  uint16_t boxDim[5];
  uint8_t elementStrides[5];
};
static_assert(sizeof(Encoded) <= 128, "a CUtensorMap is 128 bytes");
constexpr uint32_t kMagic = 0x4d54564b; // "KVTM"

const uint32_t kElementBytes[] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4};

std::string str(uint64_t v) { return std::to_string(v); }

} // namespace

uint32_t TensorMapFields::elementBytes() const {
  return dataType < std::size(kElementBytes) ? kElementBytes[dataType] : 0;
}

uint64_t TensorMapFields::boxBytes() const {
  uint64_t n = elementBytes();
  for (uint32_t d = 0; d < rank; ++d) {
    uint32_t stride = d == 0 && interleave == 0 ? 1 : elementStrides[d];
    n *= (boxDim[d] + stride - 1) / stride;
  }
  return n;
}

std::string kvir::emu::encodeTensorMap(void *tensorMap,
                                       const TensorMapFields &f) {
  if (reinterpret_cast<uintptr_t>(tensorMap) % 64)
    return "tensorMap address must be aligned to 64 bytes";
  if (f.dataType >= std::size(kElementBytes))
    return "tensorDataType " + str(f.dataType) +
           " is not a CUtensorMapDataType the emulator models (0-12)";
  if (f.interleave > 2)
    return "interleave " + str(f.interleave) +
           " is not a CUtensorMapInterleave";
  if (f.swizzle > TmaSwizzle128B)
    return "swizzle " + str(f.swizzle) +
           " is not a CUtensorMapSwizzle of sm_90 (0-3)";
  if (f.l2Promotion > 3)
    return "l2Promotion " + str(f.l2Promotion) +
           " is not a CUtensorMapL2promotion";
  if (f.oobFill > 1)
    return "oobFill " + str(f.oobFill) + " is not a CUtensorMapFloatOOBfill";
  if (f.rank == 0 || f.rank > 5)
    return "tensorRank must be non-zero and less than or equal to 5, not " +
           str(f.rank);
  if (f.interleave && f.rank < 3)
    return "with interleave, tensorRank must be at least 3";
  uint64_t addressAlign = f.interleave == 2 ? 32 : 16;
  if (f.globalAddress % addressAlign)
    return "globalAddress must be " + str(addressAlign) + "-byte aligned";
  uint32_t e = f.elementBytes();
  for (uint32_t d = 0; d < f.rank; ++d) {
    std::string at = "[" + str(d) + "]";
    if (f.globalDim[d] == 0 || f.globalDim[d] > (uint64_t(1) << 32))
      return "globalDim" + at + " must be non-zero and at most 2^32, not " +
             str(f.globalDim[d]);
    if (f.boxDim[d] == 0 || f.boxDim[d] > 256)
      return "boxDim" + at + " must be non-zero and at most 256, not " +
             str(f.boxDim[d]);
    if (f.elementStrides[d] == 0 || f.elementStrides[d] > 8)
      return "elementStrides" + at + " must be non-zero and at most 8, not " +
             str(f.elementStrides[d]);
    if (d + 1 < f.rank) {
      uint64_t stride = f.globalStrides[d];
      uint64_t strideAlign = f.interleave == 2 ? 32 : 16;
      if (stride % strideAlign || stride >= (uint64_t(1) << 40))
        return "globalStrides" + at + " must be a multiple of " +
               str(strideAlign) + " and less than 2^40, not " + str(stride);
    }
  }
  if (f.interleave == 0) {
    uint64_t inner = uint64_t(f.boxDim[0]) * e;
    if (inner % 16)
      return "boxDim[0] * elementSize (" + str(inner) +
             " bytes) must be a multiple of 16 bytes";
    static const uint32_t spans[] = {0, 32, 64, 128};
    if (f.swizzle && inner > spans[f.swizzle])
      return "the bounding box inner dimension (" + str(inner) +
             " bytes) must be at most the " + str(spans[f.swizzle]) +
             "-byte swizzle";
  }
  if (f.interleave == 2 && f.swizzle != TmaSwizzle32B)
    return "interleave 32B requires swizzle 32B";
  if (f.oobFill == 1 && !(f.dataType >= TmaFloat16 && f.dataType <= TmaTF32Ftz))
    return "oobFill NAN_REQUEST_ZERO_FMA needs a floating-point data type";

  Encoded out{};
  out.magic = kMagic;
  out.dataType = f.dataType;
  out.rank = f.rank;
  out.interleave = f.interleave;
  out.swizzle = f.swizzle;
  out.l2Promotion = f.l2Promotion;
  out.oobFill = f.oobFill;
  out.globalAddress = f.globalAddress;
  for (uint32_t d = 0; d < 5; ++d) {
    out.globalDim[d] = d < f.rank ? f.globalDim[d] : 1;
    out.boxDim[d] = uint16_t(d < f.rank ? f.boxDim[d] : 1);
    out.elementStrides[d] = uint8_t(d < f.rank ? f.elementStrides[d] : 1);
    if (d < 4)
      out.globalStrides[d] = d + 1 < f.rank ? f.globalStrides[d] : 0;
  }
  std::memset(tensorMap, 0, 128);
  std::memcpy(tensorMap, &out, sizeof(out));
  return "";
}

std::string kvir::emu::encodeTensorMapTiled(
    void *tensorMap, uint32_t dataType, uint32_t rank,
    const void *globalAddress, const uint64_t *globalDim,
    const uint64_t *globalStrides, const uint32_t *boxDim,
    const uint32_t *elementStrides, uint32_t interleave, uint32_t swizzle,
    uint32_t l2Promotion, uint32_t oobFill) {
  TensorMapFields f;
  f.dataType = dataType;
  f.rank = rank;
  f.globalAddress = reinterpret_cast<uint64_t>(globalAddress);
  for (uint32_t d = 0; d < rank && d < 5; ++d) {
    f.globalDim[d] = globalDim[d];
    f.boxDim[d] = boxDim[d];
    f.elementStrides[d] = elementStrides[d];
    if (d + 1 < rank)
      f.globalStrides[d] = globalStrides[d];
  }
  f.interleave = interleave;
  f.swizzle = swizzle;
  f.l2Promotion = l2Promotion;
  f.oobFill = oobFill;
  return encodeTensorMap(tensorMap, f);
}

bool kvir::emu::decodeTensorMap(const void *tensorMap, TensorMapFields &f) {
  Encoded in;
  std::memcpy(&in, tensorMap, sizeof(in));
  if (in.magic != kMagic)
    return false;
  f = TensorMapFields();
  f.dataType = in.dataType;
  f.rank = in.rank;
  f.interleave = in.interleave;
  f.swizzle = in.swizzle;
  f.l2Promotion = in.l2Promotion;
  f.oobFill = in.oobFill;
  f.globalAddress = in.globalAddress;
  for (uint32_t d = 0; d < 5; ++d) {
    f.globalDim[d] = in.globalDim[d];
    f.boxDim[d] = in.boxDim[d];
    f.elementStrides[d] = in.elementStrides[d];
    if (d < 4)
      f.globalStrides[d] = in.globalStrides[d];
  }
  return true;
}
