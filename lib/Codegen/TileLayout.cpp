//===- TileLayout.cpp - Where a shared-memory tile keeps each element -----===//
#include "kvir/Codegen/TileLayout.h"
#include "kvir/Codegen/IRBuilder.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/ErrorHandling.h"

#include <algorithm>

using namespace mlir;
using namespace kvir::codegen;

llvm::StringRef kvir::codegen::stringifySwizzle(Swizzle swizzle) {
  switch (swizzle) {
  case Swizzle::None:
    return "none";
  case Swizzle::XorChunks:
    return "xor-chunks";
  case Swizzle::B32:
    return "32B";
  case Swizzle::B64:
    return "64B";
  case Swizzle::B128:
    return "128B";
  }
  llvm_unreachable("unknown swizzle");
}

std::optional<Swizzle> kvir::codegen::symbolizeSwizzle(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<Swizzle>>(name)
      .Case("none", Swizzle::None)
      .Case("xor-chunks", Swizzle::XorChunks)
      .Case("32B", Swizzle::B32)
      .Case("64B", Swizzle::B64)
      .Case("128B", Swizzle::B128)
      .Default(std::nullopt);
}

bool kvir::codegen::isHardwareSwizzle(Swizzle swizzle) {
  return swizzleSpanBytes(swizzle) != 0;
}

int64_t kvir::codegen::swizzleSpanBytes(Swizzle swizzle) {
  switch (swizzle) {
  case Swizzle::B32:
    return 32;
  case Swizzle::B64:
    return 64;
  case Swizzle::B128:
    return 128;
  default:
    return 0;
  }
}

int64_t kvir::codegen::swizzleAtomBytes(Swizzle swizzle) {
  return 8 * swizzleSpanBytes(swizzle);
}

static bool isPowerOf2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

std::string TileLayout::whyInvalid() const {
  if (rows <= 0 || cols <= 0 || stages <= 0)
    return "a tile needs rows, columns and stages of at least 1";
  if (elementBits <= 0 || elementBits % 8 != 0 || !isPowerOf2(elementBits))
    return "elements must be whole bytes, a power of two of them";
  if (!isPowerOf2(chunkBytes) || chunkBytes * 8 < elementBits ||
      chunkBytes > 16)
    return "a chunk is a power of two bytes, at least one element and at "
           "most 16";
  if (rowBytes() % chunkBytes != 0)
    return "a row of " + std::to_string(rowBytes()) +
           " bytes is not a whole number of " + std::to_string(chunkBytes) +
           "-byte chunks";
  int64_t span = swizzleSpanBytes(swizzle);
  if (!span)
    return "";
  if (chunkBytes != 16)
    return "the hardware swizzles permute 16-byte chunks";
  if (rowBytes() % span != 0)
    return "a row of " + std::to_string(rowBytes()) +
           " bytes is not a whole number of the " +
           stringifySwizzle(swizzle).str() + " swizzle's spans";
  if (rows % 8 != 0)
    return std::to_string(rows) + " rows are not a whole number of the " +
           stringifySwizzle(swizzle).str() + " swizzle's 8-row atoms";
  return "";
}

int64_t TileLayout::alignment() const {
  return std::max<int64_t>({16, chunkBytes, swizzleAtomBytes(swizzle)});
}

int64_t TileLayout::xorSpan() const {
  if (swizzle != Swizzle::XorChunks)
    return 1;
  // Chunks permute within aligned groups that divide the row: a row of 10
  // or 12 chunks (head dim 80 or 96) swizzles in pairs or fours, never
  // past its end.
  int64_t chunks = chunksPerRow();
  return std::min<int64_t>(8, chunks & -chunks);
}

int64_t TileLayout::byteOffset(int64_t stage, int64_t row, int64_t col) const {
  int64_t elementBytes = elementBits / 8;
  int64_t base = stage * stageBytes();
  int64_t span = swizzleSpanBytes(swizzle);
  if (!span) {
    int64_t chunk = col / chunkElements();
    int64_t physical = chunk ^ (row % xorSpan());
    return base + row * rowBytes() + physical * chunkBytes +
           (col % chunkElements()) * elementBytes;
  }
  // A column block of `span` bytes holds its rows `span` bytes apart; the
  // rows of one 16-byte chunk column repeat their swizzle phase every
  // 128 / span rows (the phase is address bits 7 and up).
  int64_t spanElements = span / elementBytes;
  int64_t block = col / spanElements, inBlock = col % spanElements;
  int64_t chunkElems = 16 / elementBytes;
  int64_t logical = inBlock / chunkElems;
  int64_t phase = (row / (128 / span)) % (span / 16);
  return base + block * rows * span + row * span + (logical ^ phase) * 16 +
         (inBlock % chunkElems) * elementBytes;
}

Value TileLayout::emitPhysicalChunk(ImplicitLocOpBuilder &b, Value row,
                                    Value chunk) const {
  assert(!isHardwareSwizzle(swizzle) && "hardware swizzles split rows");
  int64_t span = xorSpan();
  if (span <= 1)
    return chunk;
  IRBuilder ir{b};
  Value phase = arith::AndIOp::create(b, row, ir.idx(span - 1));
  return arith::XOrIOp::create(b, chunk, phase);
}

Value TileLayout::emitElementOffset(ImplicitLocOpBuilder &b, Value stage,
                                    Value row, Value col) const {
  IRBuilder ir{b};
  int64_t elementBytes = elementBits / 8;
  Value offset;
  int64_t span = swizzleSpanBytes(swizzle);
  if (!span) {
    Value ce = ir.idx(chunkElements());
    Value physical = emitPhysicalChunk(b, row, ir.divU(col, ce));
    offset = ir.add(ir.mul(row, ir.idx(cols)),
                    ir.add(ir.mul(physical, ce), ir.remU(col, ce)));
  } else {
    int64_t spanElements = span / elementBytes, chunkElems = 16 / elementBytes;
    Value inBlock = ir.remU(col, ir.idx(spanElements));
    Value phase = ir.remU(ir.divU(row, ir.idx(128 / span)), ir.idx(span / 16));
    Value physical =
        arith::XOrIOp::create(b, ir.divU(inBlock, ir.idx(chunkElems)), phase);
    Value blockBase = ir.mul(ir.divU(col, ir.idx(spanElements)),
                             ir.idx(rows * spanElements));
    offset = ir.add(ir.add(blockBase, ir.mul(row, ir.idx(spanElements))),
                    ir.add(ir.mul(physical, ir.idx(chunkElems)),
                           ir.remU(inBlock, ir.idx(chunkElems))));
  }
  if (stage)
    offset = ir.add(ir.mul(stage, ir.idx(rows * cols)), offset);
  return offset;
}
