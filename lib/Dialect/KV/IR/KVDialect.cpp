//===- KVDialect.cpp - kv dialect, attributes and types -------------------===//
#include "kvir/Dialect/KV/IR/KVDialect.h"
#include "kvir/Dialect/KV/IR/KVOps.h"
#include "kvir/Dialect/KV/IR/KVTypes.h"
#include "kvir/Dialect/KV/IR/PoolLayout.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace kvir::kv;

#include "kvir/Dialect/KV/IR/KVDialect.cpp.inc"
#include "kvir/Dialect/KV/IR/KVEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "kvir/Dialect/KV/IR/KVAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "kvir/Dialect/KV/IR/KVTypes.cpp.inc"

LogicalResult KVDialect::verifyOperationAttribute(Operation *op,
                                                  NamedAttribute attr) {
  // A cascade's shared level (kv-expand-cascade): many query rows of many
  // requests over keys all of them see, a hint for tall query tiles.
  if (attr.getName() == getSharedLevelAttrName()) {
    auto prefill = dyn_cast<PrefillOp>(op);
    if (!prefill || !isa<UnitAttr>(attr.getValue()) || prefill.getCausal())
      return op->emitOpError()
             << "'" << getSharedLevelAttrName()
             << "' must be a unit attribute on a kv.prefill that is not "
                "causal (a cascade's shared level)";
    return success();
  }
  if (attr.getName() != "kv.vector_width")
    return op->emitOpError() << "has unknown kv attribute '"
                             << attr.getName().getValue() << "'";
  auto view = dyn_cast<PagedViewOp>(op);
  auto width = dyn_cast<IntegerAttr>(attr.getValue());
  if (!view || !width)
    return op->emitOpError()
           << "'kv.vector_width' must be an integer on a kv.paged_view";
  int64_t w = width.getInt();
  PagedType type = view.getType();
  int64_t max = 128 / type.getStorageElementType().getIntOrFloatBitWidth();
  if (w <= 0 || !llvm::isPowerOf2_64(w) || w > max ||
      type.getHeadDim() % w || type.getHeadDimV() % w)
    return op->emitOpError()
           << "'kv.vector_width' must be a power of two of at most " << max
           << " elements (16 bytes) dividing the head dims, got " << w;
  return success();
}

void KVDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "kvir/Dialect/KV/IR/KVOps.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "kvir/Dialect/KV/IR/KVTypes.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "kvir/Dialect/KV/IR/KVAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// RopeAttr
//===----------------------------------------------------------------------===//

Attribute RopeAttr::parse(AsmParser &parser, Type) {
  // #kv.rope<style [, key = value]...>: theta, scale, rotary_dim, and
  // Llama 3.1's factor, low_freq_factor, high_freq_factor,
  // original_max_position (all four or none).
  FailureOr<RopeStyle> style;
  if (parser.parseLess() || failed(style = FieldParser<RopeStyle>::parse(parser)))
    return {};
  static const char *const keys[] = {"theta",
                                     "scale",
                                     "rotary_dim",
                                     "factor",
                                     "low_freq_factor",
                                     "high_freq_factor",
                                     "original_max_position"};
  // rotary_dim is an integer: it is kept out of `values` so that any int64
  // the parser accepts reaches the verifier unchanged (a double would round
  // past 2^53 and overflow the conversion back).
  double values[7] = {1e4, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0};
  int64_t rotaryDim = 0;
  bool seen[7] = {};
  while (succeeded(parser.parseOptionalComma())) {
    StringRef key;
    SMLoc loc = parser.getCurrentLocation();
    if (parser.parseKeyword(&key) || parser.parseEqual())
      return {};
    auto *it = llvm::find(keys, key);
    if (it == std::end(keys)) {
      parser.emitError(loc, "unknown rope parameter '")
          << key
          << "', expected theta, scale, rotary_dim, factor, "
             "low_freq_factor, high_freq_factor or original_max_position";
      return {};
    }
    size_t i = it - std::begin(keys);
    if (seen[i]) {
      parser.emitError(loc, "rope parameter '") << key << "' given twice";
      return {};
    }
    seen[i] = true;
    if (i == 2) {
      if (parser.parseInteger(rotaryDim))
        return {};
    } else if (parser.parseFloat(values[i])) {
      return {};
    }
  }
  int llama = int(seen[3]) + seen[4] + seen[5] + seen[6];
  if (llama != 0 && llama != 4) {
    parser.emitError(parser.getCurrentLocation(),
                     "Llama 3.1 rope scaling needs factor, low_freq_factor, "
                     "high_freq_factor and original_max_position together");
    return {};
  }
  // A zero factor means "no Llama 3.1 scaling" in the attribute's storage;
  // written out with the other three it is a bad factor, not an absent one.
  if (llama == 4 && values[3] == 0.0) {
    parser.emitError(parser.getCurrentLocation(),
                     "rope factor (Llama 3.1 scaling) must be at least 1, "
                     "got 0");
    return {};
  }
  if (parser.parseGreater())
    return {};
  return parser.getChecked<RopeAttr>(
      parser.getContext(), *style, APFloat(values[0]), APFloat(values[1]),
      rotaryDim, APFloat(values[3]), APFloat(values[4]),
      APFloat(values[5]), APFloat(values[6]));
}

void RopeAttr::print(AsmPrinter &printer) const {
  printer << "<" << stringifyRopeStyle(getStyle()) << ", theta = ";
  printer.printFloat(getTheta());
  printer << ", scale = ";
  printer.printFloat(getScale());
  if (getRotaryDim())
    printer << ", rotary_dim = " << getRotaryDim();
  if (hasLlama31Scaling()) {
    printer << ", factor = ";
    printer.printFloat(getFactor());
    printer << ", low_freq_factor = ";
    printer.printFloat(getLowFreqFactor());
    printer << ", high_freq_factor = ";
    printer.printFloat(getHighFreqFactor());
    printer << ", original_max_position = ";
    printer.printFloat(getOriginalMaxPosition());
  }
  printer << ">";
}

LogicalResult RopeAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               RopeStyle, APFloat theta, APFloat scale,
                               int64_t rotaryDim, APFloat factor,
                               APFloat lowFreqFactor, APFloat highFreqFactor,
                               APFloat originalMaxPosition) {
  if (!(theta.convertToDouble() > 1.0))
    return emitError() << "rope theta must be greater than 1, got "
                       << theta.convertToDouble();
  if (!(scale.convertToDouble() > 0.0))
    return emitError() << "rope scale must be positive, got "
                       << scale.convertToDouble();
  if (rotaryDim < 0 || rotaryDim % 2)
    return emitError() << "rope rotary_dim must be a positive even number "
                          "of dims (or omitted: the whole head dim), got "
                       << rotaryDim;
  if (factor.isZero())
    return success();
  double f = factor.convertToDouble(), lo = lowFreqFactor.convertToDouble(),
         hi = highFreqFactor.convertToDouble(),
         orig = originalMaxPosition.convertToDouble();
  if (!(f >= 1.0))
    return emitError() << "rope factor (Llama 3.1 scaling) must be at least "
                          "1, got "
                       << f;
  if (!(lo > 0.0) || !(hi > lo))
    return emitError() << "rope needs 0 < low_freq_factor < high_freq_factor, "
                          "got "
                       << lo << " and " << hi;
  if (!(orig > 0.0))
    return emitError() << "rope original_max_position must be positive, got "
                       << orig;
  return success();
}

//===----------------------------------------------------------------------===//
// PagedType
//===----------------------------------------------------------------------===//

static bool isActivationType(Type t) { return t.isF16() || t.isBF16() || t.isF32(); }

Type PagedType::getStorageElementType() const {
  MLIRContext *ctx = getContext();
  switch (getQuant()) {
  case Quant::none:
    return getDtype();
  case Quant::int8_group:
    return IntegerType::get(ctx, 8);
  case Quant::fp8_e4m3:
    return Float8E4M3FNType::get(ctx);
  case Quant::fp8_e5m2:
    return Float8E5M2Type::get(ctx);
  }
  llvm_unreachable("unknown quantization");
}

unsigned PagedType::getNumPools() const {
  return getStorage() == Storage::combined ? 1 : 2;
}

unsigned PagedType::getNumTables() const {
  return getTable() == TableForm::csr ? 3 : 2;
}

unsigned PagedType::getNumScalePools() const {
  return getQuant() == Quant::int8_group ? getNumPools() : 0;
}

static LogicalResult verifyLayoutMap(function_ref<InFlightDiagnostic()> emitError,
                                     AffineMap map, StringRef name) {
  if (map.getNumDims() != kNumLogicalDims || map.getNumSymbols() != 0)
    return emitError() << name << " must map the 5 logical dims (page, kv, "
                       << "slot, head, dim) with no symbols, got "
                       << AffineMapAttr::get(map);
  // Pool indices are computed from the map: a division or modulo by zero
  // or by a negative number has no index.
  std::optional<int64_t> badDivisor;
  for (AffineExpr result : map.getResults())
    result.walk([&](AffineExpr e) {
      auto bin = dyn_cast<AffineBinaryOpExpr>(e);
      if (!bin || bin.getKind() == AffineExprKind::Add ||
          bin.getKind() == AffineExprKind::Mul)
        return;
      auto divisor = dyn_cast<AffineConstantExpr>(bin.getRHS());
      if (divisor && divisor.getValue() <= 0 && !badDivisor)
        badDivisor = divisor.getValue();
    });
  if (badDivisor)
    return emitError() << name << " divides by " << *badDivisor
                       << " (floordiv, ceildiv and mod need a positive "
                          "divisor), in "
                       << AffineMapAttr::get(map);
  return success();
}

LogicalResult PagedType::verify(function_ref<InFlightDiagnostic()> emitError,
                                int64_t pageSize, int64_t kvHeads,
                                int64_t headDim, int64_t headDimV, Type dtype,
                                LayoutKind layout, Storage storage,
                                TableForm table, Quant quant,
                                int64_t quantGroup, int64_t layer,
                                int64_t peDim, AffineMap kMap, AffineMap vMap) {
  if (pageSize <= 0)
    return emitError() << "page_size must be positive, got " << pageSize;
  if (kvHeads <= 0)
    return emitError() << "kv_heads must be positive, got " << kvHeads;
  if (headDim <= 0 || headDimV <= 0)
    return emitError() << "head_dim and head_dim_v must be positive, got "
                       << headDim << " and " << headDimV;
  if (headDim > kMaxHeadDim || headDimV > kMaxHeadDim || peDim > kMaxHeadDim)
    return emitError() << "head dims are at most " << kMaxHeadDim
                       << " (the widest any model uses is 576), got "
                       << std::max({headDim, headDimV, peDim});
  if (pageSize > kMaxPageSize || kvHeads > kMaxHeads)
    return emitError() << "page_size is at most " << kMaxPageSize
                       << " and kv_heads at most " << kMaxHeads << ", got "
                       << pageSize << " and " << kvHeads;
  if (!isActivationType(dtype))
    return emitError() << "dtype must be f16, bf16 or f32, got " << dtype;
  if (storage == Storage::combined && headDim != headDimV)
    return emitError() << "combined storage needs head_dim == head_dim_v, got "
                       << headDim << " and " << headDimV
                       << "; use storage = split";
  if (storage == Storage::mla) {
    if (kvHeads != 1)
      return emitError() << "an MLA cache has one latent head, got kv_heads = "
                         << kvHeads;
    if (peDim <= 0)
      return emitError() << "an MLA cache needs pe_dim > 0 (the kpe width)";
    if (headDim != headDimV)
      return emitError() << "an MLA cache reads ckv as V: head_dim_v must "
                         << "equal head_dim, got " << headDimV << " and "
                         << headDim;
    if (layout != LayoutKind::nhd)
      return emitError() << "an MLA cache is token-major: layout must be nhd, "
                         << "got " << stringifyLayoutKind(layout);
    if (quant == Quant::int8_group)
      return emitError() << "int8_group quantization of MLA caches is not "
                         << "supported";
  } else if (peDim != 0) {
    return emitError() << "pe_dim is only meaningful with storage = mla";
  }
  if (quant == Quant::int8_group) {
    if (quantGroup <= 0 || headDim % quantGroup || headDimV % quantGroup)
      return emitError() << "int8_group needs a quant_group that divides "
                         << "head_dim " << headDim << " and head_dim_v "
                         << headDimV << ", got " << quantGroup;
    if (layout == LayoutKind::vllm)
      return emitError() << "int8_group quantization is not supported with "
                         << "the vllm layout";
  } else if (quantGroup != 0) {
    return emitError() << "quant_group is only meaningful with quant = "
                       << "int8_group";
  }
  bool ppl = layout == LayoutKind::ppl0 || layout == LayoutKind::ppl1 ||
             layout == LayoutKind::ppl2 || layout == LayoutKind::ppl3;
  if (ppl && storage != Storage::combined)
    return emitError() << "OpenPPL layout " << stringifyLayoutKind(layout)
                       << " keeps K and V in one pool: storage must be "
                       << "combined";
  if (ppl && layer < 0)
    return emitError() << "layer must be non-negative, got " << layer;
  if (!ppl && layer != 0)
    return emitError() << "layer is only meaningful with the OpenPPL layouts";
  if ((layout == LayoutKind::vllm || layout == LayoutKind::llama) &&
      storage != Storage::split)
    return emitError() << "layout " << stringifyLayoutKind(layout)
                       << " needs storage = split";
  if (layout == LayoutKind::vllm) {
    unsigned bits = quant == Quant::none ? dtype.getIntOrFloatBitWidth() : 8;
    int64_t pack = 128 / bits;
    if (headDim % pack)
      return emitError() << "the vllm K layout packs " << pack
                         << " elements per 16 bytes; head_dim " << headDim
                         << " is not a multiple";
  }
  if (layout == LayoutKind::affine) {
    if (!kMap)
      return emitError() << "layout = affine needs k_map";
    if (failed(verifyLayoutMap(emitError, kMap, "k_map")) ||
        (vMap && failed(verifyLayoutMap(emitError, vMap, "v_map"))))
      return failure();
    if (vMap && storage == Storage::combined)
      return emitError() << "combined storage reads K and V through k_map; "
                         << "v_map needs storage = split";
  } else if (kMap || vMap) {
    return emitError() << "k_map and v_map need layout = affine";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// RaggedType
//===----------------------------------------------------------------------===//

LogicalResult RaggedType::verify(function_ref<InFlightDiagnostic()> emitError,
                                 int64_t kvHeads, int64_t headDim,
                                 int64_t headDimV, Type dtype) {
  if (kvHeads <= 0 || headDim <= 0 || headDimV <= 0)
    return emitError() << "kv_heads, head_dim and head_dim_v must be positive";
  if (headDim > kMaxHeadDim || headDimV > kMaxHeadDim || kvHeads > kMaxHeads)
    return emitError() << "head dims are at most " << kMaxHeadDim
                       << " and kv_heads at most " << kMaxHeads << ", got "
                       << headDim << ", " << headDimV << " and " << kvHeads;
  if (!isActivationType(dtype))
    return emitError() << "dtype must be f16, bf16 or f32, got " << dtype;
  return success();
}

//===----------------------------------------------------------------------===//
// StateType
//===----------------------------------------------------------------------===//

// !kv.state<RxHxDxT, base = (e|2) [, partitions = (N|?)]>
Type StateType::parse(AsmParser &parser) {
  SmallVector<int64_t> dims;
  Type elementType;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLess() ||
      parser.parseDimensionList(dims, /*allowDynamic=*/true,
                                /*withTrailingX=*/true) ||
      parser.parseType(elementType))
    return {};
  if (dims.size() != 3) {
    parser.emitError(loc, "a state has shape rows x heads x head_dim_v, got ")
        << dims.size() << " dims";
    return {};
  }
  if (parser.parseComma() || parser.parseKeyword("base") || parser.parseEqual())
    return {};
  LseBase base;
  SMLoc baseLoc = parser.getCurrentLocation();
  if (succeeded(parser.parseOptionalKeyword("e"))) {
    base = LseBase::e;
  } else {
    // Parse the integer optionally so that a keyword (say `base = ten`) gets
    // this one diagnostic rather than a generic one followed by this.
    int64_t value = 0;
    OptionalParseResult parsed = parser.parseOptionalInteger(value);
    if (parsed.has_value() && failed(*parsed))
      return {};
    if (!parsed.has_value() || value != 2) {
      parser.emitError(baseLoc, "LSE base must be 'e' or '2'");
      return {};
    }
    base = LseBase::two;
  }
  int64_t partitions = 0;
  if (succeeded(parser.parseOptionalComma())) {
    if (parser.parseKeyword("partitions") || parser.parseEqual())
      return {};
    SMLoc partitionsLoc = parser.getCurrentLocation();
    if (succeeded(parser.parseOptionalQuestion())) {
      partitions = ShapedType::kDynamic;
    } else {
      if (parser.parseInteger(partitions))
        return {};
      // 0 is the internal encoding of "no partition axis"; spelled out it
      // would silently drop the axis, so only positive counts are accepted.
      if (partitions <= 0) {
        parser.emitError(partitionsLoc,
                         "partitions must be positive or '?', got ")
            << partitions << " (omit it for a state without a partition axis)";
        return {};
      }
    }
  }
  if (parser.parseGreater())
    return {};
  return parser.getChecked<StateType>(parser.getContext(), dims[0], dims[1],
                                      dims[2], elementType, base, partitions);
}

static void printDim(AsmPrinter &printer, int64_t dim) {
  if (ShapedType::isDynamic(dim))
    printer << "?";
  else
    printer << dim;
}

void StateType::print(AsmPrinter &printer) const {
  printer << "<";
  printDim(printer, getRows());
  printer << "x" << getHeads() << "x" << getHeadDimV() << "x"
          << getElementType() << ", base = "
          << (getBase() == LseBase::e ? "e" : "2");
  if (isPartitioned()) {
    printer << ", partitions = ";
    printDim(printer, getPartitions());
  }
  printer << ">";
}

LogicalResult StateType::verify(function_ref<InFlightDiagnostic()> emitError,
                                int64_t rows, int64_t heads, int64_t headDimV,
                                Type elementType, LseBase, int64_t partitions) {
  if (!ShapedType::isDynamic(rows) && rows < 0)
    return emitError() << "state rows must be non-negative, got " << rows;
  if (ShapedType::isDynamic(heads) || heads <= 0 ||
      ShapedType::isDynamic(headDimV) || headDimV <= 0)
    return emitError() << "state heads and head_dim_v must be static and "
                       << "positive";
  if (!isActivationType(elementType))
    return emitError() << "state output type must be f16, bf16 or f32, got "
                       << elementType;
  if (!ShapedType::isDynamic(partitions) && partitions < 0)
    return emitError() << "partitions must be positive, got " << partitions;
  return success();
}

StateType StateType::withBase(LseBase base) const {
  return StateType::get(getContext(), getRows(), getHeads(), getHeadDimV(),
                        getElementType(), base, getPartitions());
}

StateType StateType::withoutPartitions() const {
  return StateType::get(getContext(), getRows(), getHeads(), getHeadDimV(),
                        getElementType(), getBase(), 0);
}

SmallVector<int64_t> StateType::getOutputShape() const {
  SmallVector<int64_t> shape = getLseShape();
  shape.push_back(getHeadDimV());
  return shape;
}

SmallVector<int64_t> StateType::getLseShape() const {
  SmallVector<int64_t> shape;
  if (isPartitioned())
    shape.push_back(getPartitions());
  shape.push_back(getRows());
  shape.push_back(getHeads());
  return shape;
}
