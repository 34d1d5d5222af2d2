//===- WgmmaAtom.cpp - wgmma.mma_async of one warpgroup -------------------===//
//
// WgmmaAtom.h says what the atom reads and holds. The matrix descriptor
// (PTX ISA, "Matrix Descriptor Format"): bits 0-13 the start address,
// 16-29 the leading dimension byte offset, 32-45 the stride dimension byte
// offset, each >> 4; bits 62-63 the swizzle mode (1: 128 bytes).
//
//===----------------------------------------------------------------------===//
#include "kvir/Codegen/WgmmaAtom.h"
#include "kvir/Codegen/IRBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace kvir::codegen;

namespace {
/// The 128-byte swizzle: rows of 128 bytes, 8 rows a 1024-byte pattern.
constexpr int64_t kSwizzleRowBytes = 128, kPatternBytes = 1024;
constexpr uint64_t kSwizzle128 = 1;

/// The constant fields of a descriptor: leading and stride byte offsets,
/// the swizzle mode.
uint64_t descriptorHigh(int64_t leadingBytes, int64_t strideBytes) {
  return uint64_t(leadingBytes >> 4) << 16 | uint64_t(strideBytes >> 4) << 32 |
         kSwizzle128 << 62;
}

NVVM::WGMMATypes wgmmaType(Type type) {
  return type.isBF16() ? NVVM::WGMMATypes::bf16 : NVVM::WGMMATypes::f16;
}
} // namespace

WgmmaAtom::WgmmaAtom(ImplicitLocOpBuilder &b, Type elementType, int64_t n,
                     Value thread)
    : elementType(elementType), n(n), thread(thread),
      acc(b, layout(),
          arith::RemUIOp::create(b, thread,
                                 arith::ConstantIndexOp::create(b, 32))) {
  assert((elementType.isF16() || elementType.isBF16()) && n >= 8 && n <= 256 &&
         n % 8 == 0 && "wgmma m64nNk16 with f16 / bf16");
}

Type WgmmaAtom::getAccType() const {
  MLIRContext *context = elementType.getContext();
  SmallVector<Type> words(n / 2, Float32Type::get(context));
  return LLVM::LLVMStructType::getLiteral(context, words);
}

Value WgmmaAtom::warpRow0(ImplicitLocOpBuilder &b) const {
  IRBuilder ir{b};
  return ir.mul(ir.divU(thread, ir.idx(32)), ir.idx(16));
}

std::optional<std::string> WgmmaAtom::whyNotOperand(const TileLayout &layout) {
  if (layout.elementBits != 16)
    return std::string("wgmma's f16 / bf16 operands have 16-bit elements");
  if (layout.swizzle != Swizzle::B128)
    return std::string("wgmma operands use the 128-byte hardware swizzle, "
                       "not ") +
           stringifySwizzle(layout.swizzle).str();
  if (std::string why = layout.whyInvalid(); !why.empty())
    return why;
  if (layout.rows % 8)
    return std::string("a wgmma operand's rows come in groups of 8");
  return std::nullopt;
}

Value WgmmaAtom::startField(ImplicitLocOpBuilder &b,
                            const WgmmaOperandTile &tile, Value stage,
                            Value byteOffset) const {
  IRBuilder ir{b};
  Value offset = byteOffset;
  if (stage)
    offset = ir.add(offset, ir.mul(stage, ir.idx(tile.layout.stageBytes())));
  Value address = ir.sharedAddress(tile.memref, offset);
  // The shared-window offset: its low 18 bits (at most 228 KiB of shared
  // memory), in units of 16 bytes.
  Value low = arith::AndIOp::create(
      b, address, arith::ConstantIntOp::create(b, b.getI64Type(), 0x3ffff));
  return arith::ShRUIOp::create(
      b, low, arith::ConstantIntOp::create(b, b.getI64Type(), 4));
}

namespace {
/// A 128-byte swizzle's column block: its elements per row and its bytes.
int64_t blockElements(const TileLayout &l) {
  return kSwizzleRowBytes * 8 / l.elementBits;
}
int64_t blockBytes(const TileLayout &l) { return l.rows * kSwizzleRowBytes; }
} // namespace

Value WgmmaAtom::descriptor(ImplicitLocOpBuilder &b,
                            const WgmmaOperandTile &tile, Value stage,
                            Value byteOffset, int64_t leadingBytes) const {
  Value start = startField(b, tile, stage, byteOffset);
  Value high = arith::ConstantIntOp::create(
      b, b.getI64Type(), int64_t(descriptorHigh(leadingBytes, kPatternBytes)));
  return arith::OrIOp::create(b, high, start);
}

Value WgmmaAtom::descriptorRows(ImplicitLocOpBuilder &b,
                                const WgmmaOperandTile &tile, Value stage,
                                Value row0, int64_t k0) const {
  IRBuilder ir{b};
  const TileLayout &l = tile.layout;
  // Column block k0 / 64, then rows 128 bytes apart, then k0 within the
  // row: the start stays in the pattern's first row (row0 % 8 == 0).
  Value offset = ir.add(ir.mul(row0, ir.idx(kSwizzleRowBytes)),
                        ir.idx(k0 / blockElements(l) * blockBytes(l) +
                               k0 % blockElements(l) * l.elementBits / 8));
  // K-major with a swizzle: the leading byte offset is not used (one
  // wgmma's K lies within a 128-byte row); 16 as CUTLASS sets it.
  return descriptor(b, tile, stage, offset, 16);
}

Value WgmmaAtom::descriptorCols(ImplicitLocOpBuilder &b,
                                const WgmmaOperandTile &tile, Value stage,
                                Value k0, Value n0) const {
  IRBuilder ir{b};
  const TileLayout &l = tile.layout;
  Value offset = ir.add(
      ir.mul(k0, ir.idx(kSwizzleRowBytes)),
      ir.mul(ir.divU(n0, ir.idx(blockElements(l))), ir.idx(blockBytes(l))));
  // MN-major: the column blocks blockBytes apart (leading), 8 rows of K a
  // pattern (stride).
  return descriptor(b, tile, stage, offset, blockBytes(l));
}

Value WgmmaAtom::zeroAcc(ImplicitLocOpBuilder &b) const {
  return LLVM::ZeroOp::create(b, getAccType());
}

Value WgmmaAtom::mma(ImplicitLocOpBuilder &b, Value descA, Value descB,
                     Value accIn, bool bColumns, bool accumulate) const {
  MLIRContext *context = b.getContext();
  NVVM::WGMMATypes type = wgmmaType(elementType);
  return NVVM::WgmmaMmaAsyncOp::create(
      b, getAccType(), accIn, descA, descB,
      NVVM::MMAShapeAttr::get(context, kM, n, kK), type, type,
      NVVM::WGMMATypes::f32,
      accumulate ? NVVM::WGMMAScaleOut::one : NVVM::WGMMAScaleOut::zero,
      NVVM::WGMMAScaleIn::one, NVVM::WGMMAScaleIn::one,
      // A K-major; B K-major ("col") or MN-major ("row", transposed).
      NVVM::MMALayout::row,
      bColumns ? NVVM::MMALayout::row : NVVM::MMALayout::col,
      /*satfinite=*/nullptr);
}

Value WgmmaAtom::mmaRegisters(ImplicitLocOpBuilder &b, Value aRegs, Value descB,
                              Value accIn, bool bColumns,
                              bool accumulate) const {
  // Outputs $0 .. $W-1 (D), tied inputs $W .. $2W-1 (C), then A's four
  // registers, B's descriptor and scale-d.
  int64_t words = n / 2;
  SmallVector<Value> operands;
  std::string d, constraints, tied;
  for (int64_t i = 0; i < words; ++i) {
    operands.push_back(
        LLVM::ExtractValueOp::create(b, accIn, ArrayRef<int64_t>{i}));
    d += (i ? ", $" : "$") + std::to_string(i);
    constraints += "=f,";
    tied += std::to_string(i) + ",";
  }
  std::string a;
  for (int64_t r = 0; r < 4; ++r) {
    operands.push_back(
        vector::ExtractOp::create(b, aRegs, ArrayRef<int64_t>{r}));
    a += (r ? ", $" : "$") + std::to_string(2 * words + r);
  }
  operands.push_back(descB);
  operands.push_back(arith::ConstantIntOp::create(b, accumulate, 32));
  std::string type = elementType.isBF16() ? "bf16" : "f16";
  std::string text = "{\n.reg .pred p;\nsetp.ne.b32 p, $" +
                     std::to_string(2 * words + 5) +
                     ", 0;\nwgmma.mma_async.sync.aligned.m64n" +
                     std::to_string(n) + "k16.f32." + type + "." + type + " {" +
                     d + "}, {" + a + "}, $" + std::to_string(2 * words + 4) +
                     ", p, 1, 1, " + (bColumns ? "1" : "0") + ";\n}\n";
  auto asmOp = LLVM::InlineAsmOp::create(
      b, getAccType(), operands, text, constraints + tied + "r,r,r,r,l,r",
      /*has_side_effects=*/true, /*is_align_stack=*/false,
      LLVM::tailcallkind::TailCallKind::None,
      LLVM::AsmDialectAttr::get(b.getContext(), LLVM::AsmDialect::AD_ATT),
      /*operand_attrs=*/ArrayAttr());
  return asmOp.getRes();
}

Value WgmmaAtom::accumulatorToA(ImplicitLocOpBuilder &b, Value accIn,
                                int64_t j) const {
  Type f32 = b.getF32Type();
  auto pair = VectorType::get({2}, f32);
  auto packed = VectorType::get({2}, elementType);
  auto word = VectorType::get({1}, b.getI32Type());
  SmallVector<Value> regs;
  for (int64_t r = 0; r < 4; ++r) {
    Value lo = LLVM::ExtractValueOp::create(b, accIn,
                                            ArrayRef<int64_t>{8 * j + 2 * r});
    Value hi = LLVM::ExtractValueOp::create(
        b, accIn, ArrayRef<int64_t>{8 * j + 2 * r + 1});
    Value v = vector::FromElementsOp::create(b, pair, ValueRange{lo, hi});
    Value rounded = arith::TruncFOp::create(b, packed, v);
    Value bits = vector::BitCastOp::create(b, word, rounded);
    regs.push_back(vector::ExtractOp::create(b, bits, ArrayRef<int64_t>{0}));
  }
  return vector::FromElementsOp::create(b, VectorType::get({4}, b.getI32Type()),
                                        regs);
}

Value WgmmaAtom::fragmentsToAccumulator(ImplicitLocOpBuilder &b,
                                        ArrayRef<Value> fragments) const {
  FragmentLayout l = layout();
  assert(int64_t(fragments.size()) == n / l.atomCols &&
         "one fragment per n-tile");
  Value accOut = LLVM::UndefOp::create(b, getAccType());
  for (auto [t, fragment] : llvm::enumerate(fragments))
    for (int64_t h = 0; h < l.rowsPerLane; ++h)
      for (int64_t j = 0; j < l.colsPerLane; ++j) {
        Value x =
            vector::ExtractOp::create(b, fragment, ArrayRef<int64_t>{h, j});
        accOut = LLVM::InsertValueOp::create(
            b, accOut, x, ArrayRef<int64_t>{accIndex(t, h, j)});
      }
  return accOut;
}

SmallVector<Value> WgmmaAtom::accumulatorToFragments(ImplicitLocOpBuilder &b,
                                                     Value accIn) const {
  FragmentLayout l = layout();
  auto type = VectorType::get({l.rowsPerLane, l.colsPerLane}, b.getF32Type());
  SmallVector<Value> fragments;
  for (int64_t t = 0; t < n / l.atomCols; ++t) {
    SmallVector<Value> elements;
    for (int64_t h = 0; h < l.rowsPerLane; ++h)
      for (int64_t j = 0; j < l.colsPerLane; ++j)
        elements.push_back(LLVM::ExtractValueOp::create(
            b, accIn, ArrayRef<int64_t>{accIndex(t, h, j)}));
    fragments.push_back(vector::FromElementsOp::create(b, type, elements));
  }
  return fragments;
}

Value WgmmaAtom::fragmentToA(ImplicitLocOpBuilder &b, Value fragment) {
  auto type = cast<VectorType>(fragment.getType());
  Value bits = vector::BitCastOp::create(
      b, VectorType::get({type.getDimSize(0), 1}, b.getI32Type()), fragment);
  return vector::ShapeCastOp::create(b, VectorType::get({4}, b.getI32Type()),
                                     bits);
}

void WgmmaAtom::fence(ImplicitLocOpBuilder &b) const {
  NVVM::WgmmaFenceAlignedOp::create(b);
}

void WgmmaAtom::commit(ImplicitLocOpBuilder &b) const {
  NVVM::WgmmaGroupSyncAlignedOp::create(b);
}

void WgmmaAtom::wait(ImplicitLocOpBuilder &b, int64_t pending) const {
  NVVM::WgmmaWaitGroupSyncOp::create(b, b.getI64IntegerAttr(pending));
}
