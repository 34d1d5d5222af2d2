//===- TmaCopyTest.cpp - The TMA copy atom's tiles ------------------------===//
//
// Which shared tiles TMA boxes fill (128-byte swizzle, rows of whole
// 128-byte blocks, at most 256 rows), the box's columns per element width
// and a tile's bytes. The copies themselves run in the emulator against
// the float64 reference (test/GPU: the ProducerTma prefill cases) and as
// PTX under ptxas (test/Conversion/KVToGPU/prefill-tma.mlir and the sm_90a
// prefill matrix).
//
//===----------------------------------------------------------------------===//
#include "kvir/Codegen/TmaCopy.h"

#include <gtest/gtest.h>

using namespace kvir::codegen;

namespace {

TileLayout tile(int64_t rows, int64_t cols, int64_t bits, Swizzle swizzle) {
  TileLayout l{rows, cols, bits};
  l.swizzle = swizzle;
  return l;
}

TEST(TmaTileCopy, FillsHardwareSwizzledTiles) {
  EXPECT_EQ(TmaTileCopy::whyNot(tile(64, 128, 16, Swizzle::B128)),
            std::nullopt);
  EXPECT_EQ(TmaTileCopy::whyNot(tile(128, 64, 16, Swizzle::B128)),
            std::nullopt);
  EXPECT_EQ(TmaTileCopy::whyNot(tile(64, 128, 16, Swizzle::XorChunks)),
            "TMA boxes fill tiles with the 128-byte hardware swizzle, not "
            "xor-chunks");
  EXPECT_EQ(TmaTileCopy::whyNot(tile(64, 96, 16, Swizzle::B128)),
            "a 192-byte row is not whole 128-byte column blocks");
  EXPECT_EQ(TmaTileCopy::whyNot(tile(512, 64, 16, Swizzle::B128)),
            "a box has at most 256 rows, not 512");
}

TEST(TmaTileCopy, BoxColumnsAndBytes) {
  // One 128-byte swizzle row: 64 f16 / bf16, 128 bytes, 32 floats.
  EXPECT_EQ(TmaTileCopy::boxColumns(16), 64);
  EXPECT_EQ(TmaTileCopy::boxColumns(8), 128);
  EXPECT_EQ(TmaTileCopy::boxColumns(32), 32);
  // A 64 x 128 bf16 K tile: two boxes of 8 KB.
  EXPECT_EQ(tile(64, 128, 16, Swizzle::B128).stageBytes(), 16384);
}

} // namespace
