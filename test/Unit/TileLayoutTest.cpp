//===- TileLayoutTest.cpp - Tile and fragment layouts against the ISA -----===//
//
// FragmentLayout's m16n8 accumulator against the ISA's table, and
// TileLayout's byte offsets, element by element, for every swizzle:
//  - the hardware modes against the PTX ISA's definition, written here from
//    the ISA and not from TileLayout: the tile is cut into column blocks of
//    the swizzle's span, stored rows first, and within each repeating
//    pattern (256 / 512 / 1024 bytes, the alignment the base needs) the
//    16-byte chunk address bits [4, 4 + log2(span / 16)) are xor-ed with
//    the address bits from 7 up;
//  - xor-chunks against its own rule (chunk c of row r at c ^ (r % s));
//  - every layout a bijection onto [0, size) at element granularity.
//
//===----------------------------------------------------------------------===//
#include "kvir/Codegen/FragmentLayout.h"
#include "kvir/Codegen/TileLayout.h"

#include "gtest/gtest.h"

#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

using namespace kvir::codegen;

namespace {

/// The ISA's swizzle of the byte address `a` (relative to a base aligned to
/// the pattern) for a span of `span` bytes.
int64_t isaSwizzle(int64_t a, int64_t span) {
  int64_t mask = span / 16 - 1;
  return a ^ (((a >> 7) & mask) << 4);
}

/// Where the unswizzled K-major tiling puts element (stage, row, col):
/// column blocks of `span` bytes, rows `span` bytes apart, blocks and then
/// stages one after another.
int64_t blockedAddress(const TileLayout &l, int64_t stage, int64_t row,
                       int64_t col) {
  int64_t eb = l.elementBits / 8, span = swizzleSpanBytes(l.swizzle);
  int64_t spanElements = span / eb;
  return stage * l.rows * l.cols * eb + (col / spanElements) * l.rows * span +
         row * span + (col % spanElements) * eb;
}

TileLayout make(int64_t rows, int64_t cols, int64_t bits, int64_t stages,
                Swizzle swizzle) {
  TileLayout l;
  l.rows = rows;
  l.cols = cols;
  l.elementBits = bits;
  l.stages = stages;
  l.swizzle = swizzle;
  return l;
}

/// Every element at a distinct, element-aligned offset inside the tile.
void expectBijection(const TileLayout &l) {
  std::set<int64_t> seen;
  int64_t eb = l.elementBits / 8;
  for (int64_t s = 0; s < l.stages; ++s)
    for (int64_t r = 0; r < l.rows; ++r)
      for (int64_t c = 0; c < l.cols; ++c) {
        int64_t a = l.byteOffset(s, r, c);
        ASSERT_GE(a, 0);
        ASSERT_LT(a, l.sizeBytes());
        ASSERT_EQ(a % eb, 0);
        ASSERT_TRUE(seen.insert(a).second)
            << stringifySwizzle(l.swizzle).str() << ": (" << s << ", " << r
            << ", " << c << ") shares byte " << a;
      }
}

TEST(TileLayout, HardwareSwizzlesAreTheIsaFormula) {
  int cases = 0;
  for (Swizzle swizzle : {Swizzle::B32, Swizzle::B64, Swizzle::B128})
    for (int64_t bits : {8, 16, 32})
      for (int64_t rows : {8, 16, 64})
        for (int64_t rowBytes : {32, 64, 128, 256, 576})
          for (int64_t stages : {1, 3}) {
            TileLayout l = make(rows, rowBytes * 8 / bits, bits, stages,
                                swizzle);
            int64_t span = swizzleSpanBytes(swizzle);
            if (rowBytes % span != 0) {
              EXPECT_NE(l.whyInvalid(), "");
              continue;
            }
            ASSERT_EQ(l.whyInvalid(), "");
            EXPECT_EQ(l.alignment(), 8 * span);
            EXPECT_EQ(l.sizeBytes() % l.alignment(), 0);
            for (int64_t s = 0; s < stages; ++s)
              for (int64_t r = 0; r < rows; ++r)
                for (int64_t c = 0; c < l.cols; ++c)
                  ASSERT_EQ(l.byteOffset(s, r, c),
                            isaSwizzle(blockedAddress(l, s, r, c), span))
                      << stringifySwizzle(swizzle).str() << " " << bits
                      << "-bit, " << rows << " x " << l.cols << ", stage "
                      << s << " row " << r << " col " << c;
            expectBijection(l);
            ++cases;
          }
  // Valid row widths: 5 for 32B, 4 for 64B, 2 for 128B.
  EXPECT_EQ(cases, (5 + 4 + 2) * 3 * 3 * 2);
}

TEST(TileLayout, Swizzle128BMatchesTheIsaTable) {
  // The ISA's 128-byte pattern for K-major f16 (8 rows of 64 elements):
  // row r keeps chunk c's 8 elements at chunk c ^ r.
  TileLayout l = make(8, 64, 16, 1, Swizzle::B128);
  for (int64_t r = 0; r < 8; ++r)
    for (int64_t c = 0; c < 8; ++c)
      EXPECT_EQ(l.byteOffset(0, r, 8 * c), 128 * r + 16 * (c ^ r));
  // 64B: rows 64 bytes apart, the pattern advancing every second row.
  TileLayout l64 = make(8, 32, 16, 1, Swizzle::B64);
  for (int64_t r = 0; r < 8; ++r)
    for (int64_t c = 0; c < 4; ++c)
      EXPECT_EQ(l64.byteOffset(0, r, 8 * c), 64 * r + 16 * (c ^ (r / 2 % 4)));
  // 32B: every fourth row.
  TileLayout l32 = make(8, 16, 16, 1, Swizzle::B32);
  for (int64_t r = 0; r < 8; ++r)
    for (int64_t c = 0; c < 2; ++c)
      EXPECT_EQ(l32.byteOffset(0, r, 8 * c), 32 * r + 16 * (c ^ (r / 4 % 2)));
}

TEST(TileLayout, XorChunksPermuteWithinTheRow) {
  for (int64_t cols : {16, 32, 64, 80, 96, 128, 192, 256, 576})
    for (int64_t stages : {1, 2}) {
      TileLayout l = make(16, cols, 16, stages, Swizzle::XorChunks);
      ASSERT_EQ(l.whyInvalid(), "");
      int64_t chunks = cols / 8, span = std::min<int64_t>(8, chunks & -chunks);
      EXPECT_EQ(l.xorSpan(), span);
      for (int64_t s = 0; s < stages; ++s)
        for (int64_t r = 0; r < 16; ++r)
          for (int64_t c = 0; c < cols; ++c)
            ASSERT_EQ(l.byteOffset(s, r, c),
                      2 * (s * 16 * cols + r * cols +
                           8 * ((c / 8) ^ (r % span)) + c % 8));
      expectBijection(l);
      EXPECT_EQ(l.alignment(), 16);
    }
}

TEST(TileLayout, NoneIsRowMajor) {
  TileLayout l = make(4, 24, 8, 2, Swizzle::None);
  l.chunkBytes = 8;
  ASSERT_EQ(l.whyInvalid(), "");
  for (int64_t s = 0; s < 2; ++s)
    for (int64_t r = 0; r < 4; ++r)
      for (int64_t c = 0; c < 24; ++c)
        EXPECT_EQ(l.byteOffset(s, r, c), s * 96 + r * 24 + c);
  EXPECT_EQ(l.alignment(), 16);
}

TEST(TileLayout, SaysWhyALayoutCannotHoldItsTile) {
  EXPECT_NE(make(8, 60, 16, 1, Swizzle::XorChunks).whyInvalid().find(
                "not a whole number of 16-byte chunks"),
            std::string::npos);
  EXPECT_NE(make(8, 32, 16, 1, Swizzle::B128).whyInvalid().find(
                "not a whole number of the 128B swizzle's spans"),
            std::string::npos);
  EXPECT_NE(make(12, 64, 16, 1, Swizzle::B128).whyInvalid().find(
                "12 rows are not a whole number of the 128B swizzle's "
                "8-row atoms"),
            std::string::npos);
  TileLayout narrow = make(8, 64, 16, 1, Swizzle::B64);
  narrow.chunkBytes = 8;
  EXPECT_NE(narrow.whyInvalid().find("permute 16-byte chunks"),
            std::string::npos);
  EXPECT_NE(make(0, 64, 16, 1, Swizzle::None).whyInvalid(), "");
  EXPECT_NE(make(8, 64, 12, 1, Swizzle::None).whyInvalid(), "");
}

TEST(TileLayout, SwizzleNamesRoundTrip) {
  for (Swizzle s : {Swizzle::None, Swizzle::XorChunks, Swizzle::B32,
                    Swizzle::B64, Swizzle::B128})
    EXPECT_EQ(symbolizeSwizzle(stringifySwizzle(s)), s);
  EXPECT_EQ(symbolizeSwizzle("256B"), std::nullopt);
  EXPECT_EQ(swizzleAtomBytes(Swizzle::B128), 1024);
  EXPECT_EQ(swizzleAtomBytes(Swizzle::B64), 512);
  EXPECT_EQ(swizzleAtomBytes(Swizzle::B32), 256);
  EXPECT_FALSE(isHardwareSwizzle(Swizzle::XorChunks));
}

} // namespace

namespace {

// The PTX ISA's m16n8 f32 accumulator ("Matrix Fragments for mma.m16n8k16
// with floating point type"): groupID = lane >> 2, threadID_in_group =
// lane % 4; c_i is at row groupID (i < 2) or groupID + 8, column
// threadID_in_group * 2 + (i & 1).
TEST(FragmentLayout, MmaM16N8IsTheIsaTable) {
  FragmentLayout l = FragmentLayout::mmaM16N8();
  std::set<std::pair<int64_t, int64_t>> covered;
  for (int64_t lane = 0; lane < 32; ++lane)
    for (int64_t i = 0; i < 4; ++i) {
      int64_t h = i / 2, j = i % 2;
      int64_t row = (lane >> 2) + (i < 2 ? 0 : 8);
      int64_t col = (lane % 4) * 2 + (i & 1);
      EXPECT_EQ(l.row(lane, 0, h), row);
      EXPECT_EQ(l.col(lane, 0, j), col);
      EXPECT_TRUE(covered.insert({row, col}).second);
      // Atom (t, n) of a warp tile: shifted by whole atoms.
      EXPECT_EQ(l.row(lane, 3, h), 48 + row);
      EXPECT_EQ(l.col(lane, 5, j), 40 + col);
    }
  EXPECT_EQ(covered.size(), 16u * 8u);
  // A row's elements are on 4 consecutive lanes: a quad's xor-shuffles.
  EXPECT_EQ(l.lanesPerRow, 4);
  EXPECT_EQ(l.rowSlots(3), 6);
  EXPECT_EQ(l.rowSlot(2, 1), 5);
  EXPECT_EQ(l.tileRows(3), 48);
}

} // namespace

namespace {

struct Probe {
  int64_t swizzle = 0, rows = 0, cols = 0, boxCols = 0, offset = 0;
  std::vector<int64_t> values;
};

/// The probes recorded on an H100 (test/Unit/data/tma-swizzle-h100.txt).
std::vector<Probe> readProbes() {
  std::ifstream in(KVIR_UNIT_DATA_DIR "/tma-swizzle-h100.txt");
  std::vector<Probe> probes;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#')
      continue;
    Probe p;
    std::istringstream s(line.substr(line.find(':') + 1));
    if (std::sscanf(line.c_str(),
                    "probe swizzle=%" SCNd64 " rows=%" SCNd64 " cols=%" SCNd64
                    " box_cols=%" SCNd64 " offset=%" SCNd64,
                    &p.swizzle, &p.rows, &p.cols, &p.boxCols,
                    &p.offset) != 5)
      continue;
    for (int64_t v; s >> v;)
      p.values.push_back(v);
    probes.push_back(p);
  }
  return probes;
}

Swizzle swizzleOfBytes(int64_t bytes) {
  switch (bytes) {
  case 32:
    return Swizzle::B32;
  case 64:
    return Swizzle::B64;
  case 128:
    return Swizzle::B128;
  default:
    return Swizzle::None;
  }
}

// Silicon: where an H100's TMA (cp.async.bulk.tensor with a tensor map of
// each swizzle mode, boxes of the swizzle's span placed one after another)
// put each element of a u16 matrix. TileLayout must say the same for tiles
// at the atom's alignment; past it, the hardware's pattern follows the
// absolute address bits (why a layout asks for its alignment, and what the
// emulator models).
TEST(TileLayout, IsWhereAnH100sTmaPutsEachElement) {
  std::vector<Probe> probes = readProbes();
  ASSERT_EQ(probes.size(), 8u) << "test/Unit/data/tma-swizzle-h100.txt";
  int aligned = 0, offset = 0;
  for (const Probe &p : probes) {
    ASSERT_EQ(int64_t(p.values.size()), p.rows * p.cols);
    TileLayout l = make(p.rows, p.cols, 16, 1, swizzleOfBytes(p.swizzle));
    ASSERT_EQ(l.whyInvalid(), "");
    for (int64_t r = 0; r < p.rows; ++r)
      for (int64_t c = 0; c < p.cols; ++c) {
        int64_t at;
        if (p.offset == 0) {
          at = l.byteOffset(0, r, c);
        } else {
          int64_t span = swizzleSpanBytes(l.swizzle);
          at = isaSwizzle(p.offset + blockedAddress(l, 0, r, c), span) -
               p.offset;
        }
        ASSERT_EQ(p.values[at / 2], r * p.cols + c)
            << "swizzle " << p.swizzle << " offset " << p.offset << " ("
            << r << ", " << c << ")";
      }
    ++(p.offset ? offset : aligned);
  }
  EXPECT_EQ(aligned, 5);
  EXPECT_EQ(offset, 3);
}

} // namespace
