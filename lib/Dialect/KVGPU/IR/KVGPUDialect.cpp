//===- KVGPUDialect.cpp - kvgpu dialect and its attributes ----------------===//
#include "kvir/Dialect/KVGPU/IR/KVGPUDialect.h"
#include "kvir/Dialect/KV/IR/KVOps.h"
#include "kvir/Dialect/KV/IR/PoolLayout.h"
#include "kvir/Target/GPU/KernelPipeline.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/CheckedArithmetic.h"

#include <limits>

using namespace mlir;
using namespace kvir::kvgpu;

#include "kvir/Dialect/KVGPU/IR/KVGPUDialect.cpp.inc"
#include "kvir/Dialect/KVGPU/IR/KVGPUEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "kvir/Dialect/KVGPU/IR/KVGPUAttrs.cpp.inc"

void KVGPUDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "kvir/Dialect/KVGPU/IR/KVGPUAttrs.cpp.inc"
      >();
}

/// CUDA's limit on gridDim.y and gridDim.z (partitions go on one of them).
static constexpr int64_t kMaxGridDimYZ = 65535;

//===----------------------------------------------------------------------===//
// DecodeConfigAttr
//===----------------------------------------------------------------------===//

LogicalResult
DecodeConfigAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                         int64_t vector, int64_t threadsX, int64_t threadsZ,
                         int64_t tileTokens, int64_t stages,
                         int64_t maxPartitions) {
  if (vector <= 0 || !llvm::isPowerOf2_64(vector) || vector > 16)
    return emitError() << "decode config vector must be a power of two in "
                       << "[1, 16], got " << vector;
  if (threadsX <= 0 || !llvm::isPowerOf2_64(threadsX) || threadsX > 32)
    return emitError() << "decode config threads_x must be a power of two "
                       << "in [1, 32] (its lanes reduce with xor-shuffles), "
                       << "got " << threadsX;
  if (threadsZ <= 0 || threadsZ > 1024 / threadsX)
    return emitError() << "decode config threads_z must be positive with "
                       << "threads_x x threads_z <= 1024 (one block), got "
                       << threadsZ << " with threads_x " << threadsX;
  if (tileTokens <= 0 || tileTokens % threadsZ || tileTokens > 1024)
    return emitError() << "decode config tile_tokens must be a positive "
                       << "multiple of threads_z (" << threadsZ << ") of at "
                       << "most 1024, got " << tileTokens;
  if (stages < 2 || stages > 8)
    return emitError() << "decode config stages must be in [2, 8] (tile i + 1 "
                       << "loads while tile i is scored), got " << stages;
  if (maxPartitions <= 0 || maxPartitions > kMaxGridDimYZ)
    return emitError() << "decode config max_partitions must be in [1, "
                       << kMaxGridDimYZ << "] (a grid dim), got "
                       << maxPartitions;
  return success();
}

/// The rules a decode config must satisfy for the op it is attached to
/// (over paged KV of type `kv`).
static LogicalResult verifyDecodeConfig(Operation *op, kvir::kv::PagedType kv,
                                        DecodeConfigAttr config) {
  int64_t d = kv.getHeadDim();
  if (d % config.getVector() || config.getVector() * config.getThreadsX() < d)
    return op->emitOpError() << "config with vector " << config.getVector()
                            << " x threads_x " << config.getThreadsX()
                            << " does not cover head_dim " << d
                            << " in whole vectors";
  int64_t bits = kv.getStorageElementType().getIntOrFloatBitWidth();
  // f32 rows past 128 dims take several 16-byte chunks per lane (a warp of
  // lanes covers them); 16-bit and 1-byte rows fit a warp of 16-byte
  // vectors up to head dim 256 / 512, past which the tensor-core decode
  // takes them.
  if (config.getVector() * bits > 128 && !kv.getDtype().isF32())
    return op->emitOpError() << "config vector of " << config.getVector()
                            << " elements exceeds a 16-byte load (only f32 "
                               "KV takes wider lane vectors)";
  return success();
}

//===----------------------------------------------------------------------===//
// PrefillConfigAttr
//===----------------------------------------------------------------------===//

LogicalResult PrefillConfigAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, int64_t qTile, int64_t kvTile,
    int64_t warps, int64_t stages, bool qInRegisters, int64_t maxPartitions,
    int64_t valueWarps, MmaAtomKind mma, TileSchedule schedule,
    PrefillRoles roles, TileCopy copy) {
  if (qTile <= 0 || qTile % 16 || qTile > 256)
    return emitError() << "prefill config q_tile must be a multiple of 16 in "
                       << "[16, 256] (whole m16 mma tiles), got " << qTile;
  if (kvTile <= 0 || kvTile % 16 || kvTile > 128)
    return emitError() << "prefill config kv_tile must be a multiple of 16 in "
                       << "[16, 128] (the k of the P V mma), got " << kvTile;
  if (warps <= 0 || warps > 16)
    return emitError() << "prefill config warps must be in [1, 16], got "
                       << warps;
  if (valueWarps <= 0 || valueWarps > 8 || warps % valueWarps)
    return emitError() << "prefill config value_warps must be in [1, 8] and "
                       << "divide warps (" << warps << "), got " << valueWarps;
  int64_t rowWarps = warps / valueWarps;
  if (qTile % (16 * rowWarps) || qTile / (16 * rowWarps) > 2)
    return emitError() << "prefill config warps must each own one or two "
                       << "16-row mma tiles of the " << qTile
                       << "-row query tile, got " << rowWarps
                       << " warps along the rows";
  if (stages < 1 || stages > kMaxStages)
    return emitError() << "prefill config stages must be in [1, "
                       << kMaxStages << "] (K/V "
                       << "tiles i + 1 ... i + stages - 1 load while tile i "
                       << "is computed; 1: one K and one V buffer), got "
                       << stages;
  // One K and one V buffer: V_i loads while S_i is computed, K_{i+1} while
  // P_i V_i is: the serial mma.sync loop of threads that all copy.
  if (stages == 1 &&
      (mma != MmaAtomKind::mma_sync || schedule != TileSchedule::serial ||
       roles != PrefillRoles::uniform || copy != TileCopy::cp_async ||
       valueWarps != 1))
    return emitError() << "prefill config stages = 1 (one K and one V "
                       << "buffer) needs mma = mma_sync, schedule = serial, "
                       << "roles = uniform, copy = cp_async and value_warps "
                       << "= 1";
  if (maxPartitions <= 0 || maxPartitions > kMaxGridDimYZ)
    return emitError() << "prefill config max_partitions must be in [1, "
                       << kMaxGridDimYZ << "] (a grid dim), got "
                       << maxPartitions;
  if (mma == MmaAtomKind::wgmma) {
    // A warpgroup's wgmma covers 64 rows: 4 warps of one 16-row tile each,
    // the value columns of its slice, Q read from shared memory.
    if (rowWarps % 4 || qTile != 16 * rowWarps)
      return emitError() << "prefill config with mma = wgmma needs whole "
                         << "warpgroups along the rows (warps / value_warps "
                         << "a multiple of 4) owning 64 rows each (q_tile = "
                         << "16 * warps / value_warps), got q_tile " << qTile
                         << ", warps " << warps << ", value_warps "
                         << valueWarps;
    if (qInRegisters)
      return emitError() << "prefill config with mma = wgmma reads Q from "
                         << "shared memory: q_in_registers must be false";
  }
  if (schedule == TileSchedule::overlap && mma != MmaAtomKind::wgmma)
    return emitError() << "prefill config schedule = overlap needs mma = "
                       << "wgmma (mma.sync waits for every product)";
  // The consumers' mainloop is the overlapped one; they hand stages back
  // when their products retire, which only wgmma's waits tell.
  if (roles == PrefillRoles::producer && schedule != TileSchedule::overlap)
    return emitError() << "prefill config roles = producer needs mma = "
                       << "wgmma and schedule = overlap (the consumers' "
                       << "mainloop)";
  if (copy == TileCopy::tma && roles != PrefillRoles::producer)
    return emitError() << "prefill config copy = tma needs roles = producer "
                       << "(one producer thread issues the copies)";
  return success();
}

/// A gpu.launch_func (by name: this dialect does not depend on the GPU
/// dialect's library).
static bool isLaunch(Operation *op) {
  return op->getName().getStringRef() == "gpu.launch_func";
}

LogicalResult KVGPUDialect::verifyOperationAttribute(Operation *op,
                                                     NamedAttribute attr) {
  if (attr.getName() == getConfigAttrName()) {
    if (auto config = dyn_cast<DecodeConfigAttr>(attr.getValue())) {
      if (auto decode = dyn_cast<kvir::kv::DecodeOp>(op))
        return verifyDecodeConfig(op, decode.getKv().getType(), config);
      // A prefill over f32 paged KV runs its query rows on the decode
      // kernel.
      if (auto prefill = dyn_cast<kvir::kv::PrefillOp>(op))
        if (auto paged =
                dyn_cast<kvir::kv::PagedType>(prefill.getKv().getType()))
          if (paged.getDtype().isF32())
            return verifyDecodeConfig(op, paged, config);
      return op->emitOpError() << "has a #kvgpu.decode config, which only "
                               << "kv.decode and kv.prefill over f32 paged "
                                  "KV take";
    }
    if (auto config = dyn_cast<PrefillConfigAttr>(attr.getValue())) {
      // The value columns a warp accumulates start on a whole group of 8
      // swizzled 16-byte chunks, so that its ldmatrix addresses keep their
      // one-xor form.
      int64_t headDimV;
      if (auto prefill = dyn_cast<kvir::kv::PrefillOp>(op))
        headDimV = prefill.getType().getHeadDimV();
      else if (auto mla = dyn_cast<kvir::kv::MlaDecodeOp>(op))
        headDimV = mla.getType().getHeadDimV();
      else if (auto decode = dyn_cast<kvir::kv::DecodeOp>(op))
        headDimV = decode.getType().getHeadDimV();
      else
        return op->emitOpError()
               << "has a #kvgpu.prefill config, which only kv.prefill, "
               << "kv.mla_decode and kv.decode (on tensor cores) take";
      if (config.getValueWarps() > 1 &&
          headDimV % (64 * config.getValueWarps()))
        return op->emitOpError()
               << "#kvgpu.prefill value_warps = " << config.getValueWarps()
               << " must split head_dim_v " << headDimV
               << " into multiples of 64 columns";
      return success();
    }
    return op->emitOpError() << "'" << getConfigAttrName()
                             << "' must be a kvgpu configuration attribute, got "
                             << attr.getValue();
  }
  if (attr.getName() == getLaunchPlansAttrName()) {
    auto plans = dyn_cast<ArrayAttr>(attr.getValue());
    if (!plans || !isa<ModuleOp>(op))
      return op->emitOpError() << "'" << getLaunchPlansAttrName()
                               << "' must be an array of #kvgpu.plan on a "
                                  "module";
    llvm::StringSet<> names;
    for (Attribute a : plans) {
      auto plan = dyn_cast<LaunchPlanAttr>(a);
      if (!plan)
        return op->emitOpError() << "'" << getLaunchPlansAttrName()
                                 << "' holds " << a << ", not a #kvgpu.plan";
      if (!names.insert(plan.getName()).second)
        return op->emitOpError() << "has two launch plans named '"
                                 << plan.getName() << "'";
    }
    return success();
  }
  if (attr.getName() == getGraphMaxBatchAttrName()) {
    auto batch = dyn_cast<IntegerAttr>(attr.getValue());
    if (!isa<ModuleOp>(op) || !batch || batch.getInt() < 1)
      return op->emitOpError() << "'" << getGraphMaxBatchAttrName()
                               << "' must be a positive integer on a module "
                                  "(the fixed grids' most requests), got "
                               << attr.getValue();
    return success();
  }
  if (attr.getName() == getPlanOfLaunchAttrName()) {
    auto name = dyn_cast<StringAttr>(attr.getValue());
    if (!isLaunch(op) || !name)
      return op->emitOpError() << "'" << getPlanOfLaunchAttrName()
                               << "' must be a string (a launch plan's name) "
                                  "on a gpu.launch_func";
    auto module = op->getParentOfType<ModuleOp>();
    auto plans = module ? module->getAttrOfType<ArrayAttr>(
                              getLaunchPlansAttrName())
                        : ArrayAttr();
    bool known = plans && llvm::any_of(plans, [&](Attribute a) {
                   auto plan = dyn_cast<LaunchPlanAttr>(a);
                   return plan && plan.getName() == name.getValue();
                 });
    if (!known)
      return op->emitOpError() << "'" << getPlanOfLaunchAttrName()
                               << "' names no launch plan of the module: "
                               << name;
    return success();
  }
  if (attr.getName() == getPlanCallAttrName()) {
    auto call = dyn_cast<IntegerAttr>(attr.getValue());
    if (!isLaunch(op) || !call || call.getInt() < 0)
      return op->emitOpError() << "'" << getPlanCallAttrName()
                               << "' must be a non-negative integer on a "
                                  "gpu.launch_func (the run of its plan)";
    return success();
  }
  if (attr.getName() == "kvgpu.dynamic_shared_bytes") {
    auto bytes = dyn_cast<IntegerAttr>(attr.getValue());
    if (!bytes || bytes.getInt() < 0)
      return op->emitOpError()
             << "'kvgpu.dynamic_shared_bytes' must be a non-negative integer";
    return success();
  }
  if (attr.getName() == kvir::target::kDynamicSharedAlignmentAttr) {
    auto bytes = dyn_cast<IntegerAttr>(attr.getValue());
    if (!bytes || bytes.getInt() <= 16 || !llvm::isPowerOf2_64(bytes.getInt()))
      return op->emitOpError() << "'" << attr.getName().getValue()
                               << "' must be a power of two over 16 (bytes)";
    return success();
  }
  return op->emitOpError() << "has unknown kvgpu attribute '"
                           << attr.getName().getValue() << "'";
}

//===----------------------------------------------------------------------===//
// SizeExprAttr
//===----------------------------------------------------------------------===//

LogicalResult SizeExprAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   SizeExprKind kind, int64_t,
                                   StringRef symbol,
                                   ArrayRef<SizeExprAttr> operands) {
  switch (kind) {
  case SizeExprKind::constant:
    if (!operands.empty() || !symbol.empty())
      return emitError() << "a constant size has no operands or symbol";
    return success();
  case SizeExprKind::symbol:
    if (!operands.empty() || symbol.empty())
      return emitError() << "a symbol size needs a name and no operands";
    return success();
  case SizeExprKind::add:
  case SizeExprKind::mul:
  case SizeExprKind::floordiv:
  case SizeExprKind::ceildiv:
    if (operands.size() != 2)
      return emitError() << stringifySizeExprKind(kind)
                         << " takes 2 operands, got " << operands.size();
    return success();
  case SizeExprKind::min:
  case SizeExprKind::max:
    if (operands.empty())
      return emitError() << stringifySizeExprKind(kind)
                         << " takes at least one operand";
    return success();
  }
  return success();
}

SizeExprAttr SizeExprAttr::constant(MLIRContext *ctx, int64_t value) {
  return get(ctx, SizeExprKind::constant, value, "", {});
}

SizeExprAttr SizeExprAttr::symbolRef(MLIRContext *ctx, StringRef name) {
  return get(ctx, SizeExprKind::symbol, 0, name, {});
}

SizeExprAttr SizeExprAttr::node(SizeExprKind kind,
                                ArrayRef<SizeExprAttr> operands) {
  MLIRContext *ctx = operands.front().getContext();
  SizeExprAttr result = get(ctx, kind, 0, "", operands);
  if (llvm::all_of(operands, [](SizeExprAttr e) { return e.isConstant(); }))
    if (std::optional<int64_t> v = result.evaluate(
            [](StringRef) -> std::optional<int64_t> { return std::nullopt; }))
      return constant(ctx, *v);
  // x * 1, x + 0, min/max of one operand.
  if ((kind == SizeExprKind::min || kind == SizeExprKind::max) &&
      operands.size() == 1)
    return operands.front();
  auto isConst = [](SizeExprAttr e, int64_t v) {
    return e.isConstant() && e.getValue() == v;
  };
  if (kind == SizeExprKind::mul && isConst(operands[0], 1))
    return operands[1];
  if ((kind == SizeExprKind::mul || kind == SizeExprKind::floordiv ||
       kind == SizeExprKind::ceildiv) &&
      isConst(operands[1], 1))
    return operands[0];
  if (kind == SizeExprKind::add && isConst(operands[0], 0))
    return operands[1];
  if (kind == SizeExprKind::add && isConst(operands[1], 0))
    return operands[0];
  return result;
}

std::optional<int64_t> SizeExprAttr::evaluate(
    function_ref<std::optional<int64_t>(StringRef)> lookup) const {
  switch (getKind()) {
  case SizeExprKind::constant:
    return getValue();
  case SizeExprKind::symbol:
    return lookup(getSymbol());
  default:
    break;
  }
  SmallVector<int64_t> values;
  for (SizeExprAttr operand : getOperands()) {
    std::optional<int64_t> v = operand.evaluate(lookup);
    if (!v)
      return std::nullopt;
    values.push_back(*v);
  }
  switch (getKind()) {
  // A size that overflows int64 (from sizes a caller passed) has no value.
  case SizeExprKind::add:
    return llvm::checkedAdd(values[0], values[1]);
  case SizeExprKind::mul:
    return llvm::checkedMul(values[0], values[1]);
  case SizeExprKind::floordiv:
  case SizeExprKind::ceildiv:
    if (!values[1] || (values[1] == -1 &&
                       values[0] == std::numeric_limits<int64_t>::min()))
      return std::nullopt;
    return getKind() == SizeExprKind::floordiv
               ? llvm::divideFloorSigned(values[0], values[1])
               : llvm::divideCeilSigned(values[0], values[1]);
  case SizeExprKind::min:
    return *llvm::min_element(values);
  case SizeExprKind::max:
    return *llvm::max_element(values);
  default:
    return std::nullopt;
  }
}

void SizeExprAttr::walkSymbols(function_ref<void(StringRef)> fn) const {
  if (getKind() == SizeExprKind::symbol)
    fn(getSymbol());
  for (SizeExprAttr operand : getOperands())
    operand.walkSymbols(fn);
}

/// Binding strength: sums < products < atoms and calls.
static int precedence(SizeExprKind kind) {
  return kind == SizeExprKind::add ? 1 : kind == SizeExprKind::mul ? 2 : 3;
}

static void printExpr(llvm::raw_ostream &os, SizeExprAttr e,
                      function_ref<std::string(StringRef)> name,
                      StringRef prefix, int minPrecedence) {
  SizeExprKind kind = e.getKind();
  bool parens = precedence(kind) < minPrecedence;
  if (parens)
    os << "(";
  switch (kind) {
  case SizeExprKind::constant:
    os << e.getValue();
    break;
  case SizeExprKind::symbol:
    os << (name ? name(e.getSymbol()) : e.getSymbol().str());
    break;
  case SizeExprKind::add:
  case SizeExprKind::mul: {
    int p = precedence(kind);
    printExpr(os, e.getOperands()[0], name, prefix, p);
    SizeExprAttr rhs = e.getOperands()[1];
    // x + -c reads as x - c (and parses back to the same sum).
    if (kind == SizeExprKind::add && rhs.isConstant() && rhs.getValue() < 0 &&
        rhs.getValue() != INT64_MIN) {
      os << " - " << -rhs.getValue();
      break;
    }
    os << (kind == SizeExprKind::add ? " + " : " * ");
    // Operations associate to the left: a right operand of the same
    // strength keeps its parentheses.
    printExpr(os, e.getOperands()[1], name, prefix, p + 1);
    break;
  }
  default: {
    // C has no variadic min / max: nest binary calls there.
    ArrayRef<SizeExprAttr> operands = e.getOperands();
    bool nest = !prefix.empty() && operands.size() > 2;
    os << prefix << stringifySizeExprKind(kind) << "(";
    printExpr(os, operands[0], name, prefix, 0);
    if (nest) {
      os << ", ";
      printExpr(os,
                SizeExprAttr::get(e.getContext(), kind, 0, "",
                                  operands.drop_front()),
                name, prefix, 0);
    } else {
      for (SizeExprAttr operand : operands.drop_front()) {
        os << ", ";
        printExpr(os, operand, name, prefix, 0);
      }
    }
    os << ")";
  }
  }
  if (parens)
    os << ")";
}

std::string SizeExprAttr::str() const {
  std::string s;
  llvm::raw_string_ostream os(s);
  printExpr(os, *this, nullptr, "", 0);
  return s;
}

std::string SizeExprAttr::toC(function_ref<std::string(StringRef)> name,
                              StringRef prefix) const {
  std::string s;
  llvm::raw_string_ostream os(s);
  printExpr(os, *this, name, prefix, 0);
  return s;
}

void SizeExprAttr::print(AsmPrinter &printer) const {
  printer << "<" << str() << ">";
}

namespace {
/// expr := term (('+' | '-') term)*; term := factor ('*' factor)*;
/// factor := integer | name | fn '(' expr (',' expr)* ')' | '(' expr ')'.
struct SizeExprParser {
  AsmParser &parser;

  FailureOr<SizeExprAttr> parseExpr() {
    FailureOr<SizeExprAttr> lhs = parseTerm();
    while (succeeded(lhs)) {
      bool minus = false;
      if (succeeded(parser.parseOptionalMinus()))
        minus = true;
      else if (failed(parser.parseOptionalPlus()))
        break;
      FailureOr<SizeExprAttr> rhs = parseTerm();
      if (failed(rhs))
        return failure();
      // a - b is a + (-1) * b; a - c of a constant folds to a + (-c).
      if (minus)
        rhs = rhs->isConstant()
                  ? SizeExprAttr::constant(parser.getContext(),
                                           -rhs->getValue())
                  : make(SizeExprKind::mul,
                         {SizeExprAttr::constant(parser.getContext(), -1),
                          *rhs});
      lhs = make(SizeExprKind::add, {*lhs, *rhs});
    }
    return lhs;
  }

  FailureOr<SizeExprAttr> parseTerm() {
    FailureOr<SizeExprAttr> lhs = parseFactor();
    while (succeeded(lhs) && succeeded(parser.parseOptionalStar())) {
      FailureOr<SizeExprAttr> rhs = parseFactor();
      if (failed(rhs))
        return failure();
      lhs = make(SizeExprKind::mul, {*lhs, *rhs});
    }
    return lhs;
  }

  FailureOr<SizeExprAttr> parseFactor() {
    MLIRContext *ctx = parser.getContext();
    int64_t value;
    OptionalParseResult integer = parser.parseOptionalInteger(value);
    if (integer.has_value()) {
      if (failed(*integer))
        return failure();
      return SizeExprAttr::constant(ctx, value);
    }
    if (succeeded(parser.parseOptionalLParen())) {
      FailureOr<SizeExprAttr> inner = parseExpr();
      if (failed(inner) || parser.parseRParen())
        return failure();
      return inner;
    }
    SMLoc loc = parser.getCurrentLocation();
    StringRef word;
    if (failed(parser.parseOptionalKeyword(&word))) {
      parser.emitError(loc, "expected an integer, a size name, '(' or one of "
                            "min, max, ceildiv, floordiv");
      return failure();
    }
    std::optional<SizeExprKind> fn = symbolizeSizeExprKind(word);
    bool isCall = fn && *fn != SizeExprKind::constant &&
                  *fn != SizeExprKind::symbol && *fn != SizeExprKind::add &&
                  *fn != SizeExprKind::mul;
    if (!isCall || failed(parser.parseOptionalLParen()))
      return SizeExprAttr::symbolRef(ctx, word);
    SmallVector<SizeExprAttr> operands;
    do {
      FailureOr<SizeExprAttr> operand = parseExpr();
      if (failed(operand))
        return failure();
      operands.push_back(*operand);
    } while (succeeded(parser.parseOptionalComma()));
    if (parser.parseRParen())
      return failure();
    if ((*fn == SizeExprKind::ceildiv || *fn == SizeExprKind::floordiv) &&
        operands.size() != 2) {
      parser.emitError(loc) << word << " takes 2 operands, got "
                            << operands.size();
      return failure();
    }
    return make(*fn, operands);
  }

  SizeExprAttr make(SizeExprKind kind, ArrayRef<SizeExprAttr> operands) {
    return SizeExprAttr::get(parser.getContext(), kind, 0, "", operands);
  }
};
} // namespace

Attribute SizeExprAttr::parse(AsmParser &parser, Type) {
  if (parser.parseLess())
    return {};
  FailureOr<SizeExprAttr> expr = SizeExprParser{parser}.parseExpr();
  if (failed(expr) || parser.parseGreater())
    return {};
  return *expr;
}

//===----------------------------------------------------------------------===//
// Launch plans
//===----------------------------------------------------------------------===//

//===----------------------------------------------------------------------===//
// TensorMapAttr
//===----------------------------------------------------------------------===//

LogicalResult
TensorMapAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      StringRef source, ArrayRef<int64_t> box,
                      int64_t swizzle) {
  if (source.empty())
    return emitError() << "a tensor map needs a source argument";
  if (box.empty() || box.size() > 5)
    return emitError() << "tensor map over '" << source
                       << "' needs a box of 1 to 5 dims, got " << box.size();
  for (int64_t dim : box)
    if (dim < 1 || dim > 256)
      return emitError() << "tensor map over '" << source
                         << "' box dims must be in [1, 256], got " << dim;
  if (swizzle != 0 && swizzle != 32 && swizzle != 64 && swizzle != 128)
    return emitError() << "tensor map over '" << source
                       << "' swizzle must be 0, 32, 64 or 128 bytes, got "
                       << swizzle;
  return success();
}

int64_t TensorMapAttr::getSwizzleMode() const {
  return getSwizzle() ? llvm::Log2_64(getSwizzle()) - 4 : 0;
}

std::optional<int64_t> TensorMapAttr::getDataType(Type element) {
  // CUtensorMapDataType: UINT8 0, UINT16 1, UINT32 2, INT32 3, UINT64 4,
  // INT64 5, FLOAT16 6, FLOAT32 7, FLOAT64 8, BFLOAT16 9.
  if (element.isF16())
    return 6;
  if (element.isBF16())
    return 9;
  if (element.isF32())
    return 7;
  if (element.isF64())
    return 8;
  if (element.isInteger(8) || isa<Float8E4M3FNType, Float8E5M2Type>(element))
    return 0; // bytes: TMA moves them as they are
  if (element.isInteger(16))
    return 1;
  if (element.isInteger(32))
    return 3;
  if (element.isInteger(64))
    return 5;
  return std::nullopt;
}

int64_t TensorMapAttr::getBoxBytes(Type element) const {
  int64_t bytes = element.getIntOrFloatBitWidth() / 8;
  for (int64_t dim : getBox())
    bytes *= dim;
  return bytes;
}

/// Checks `map` against its source buffer `source` (a row-major memref).
static LogicalResult
verifyTensorMapSource(function_ref<InFlightDiagnostic()> emitError,
                      StringRef planName, StringRef argName, TensorMapAttr map,
                      PlanArgAttr source) {
  auto fail = [&]() {
    return emitError() << "plan '" << planName << "': tensor map '" << argName
                       << "' ";
  };
  if (!source)
    return fail() << "reads unknown argument '" << map.getSource() << "'";
  auto type = dyn_cast<MemRefType>(source.getType());
  if (!type || source.getRole() != ArgRole::input)
    return fail() << "must read an input buffer, not '" << map.getSource()
                  << "'";
  if (!type.getLayout().isIdentity())
    return fail() << "reads '" << map.getSource()
                  << "', which is not row-major (" << type
                  << "): the map's strides are the row-major ones";
  if (int64_t(map.getBox().size()) != type.getRank())
    return fail() << "has a rank-" << map.getBox().size() << " box over rank-"
                  << type.getRank() << " '" << map.getSource() << "'";
  std::optional<int64_t> dataType =
      TensorMapAttr::getDataType(type.getElementType());
  if (!dataType)
    return fail() << "reads " << type.getElementType()
                  << " elements, which TMA does not move";
  int64_t elementBytes = type.getElementTypeBitWidth() / 8;
  int64_t innerBytes = map.getBox().back() * elementBytes;
  if (innerBytes % 16)
    return fail() << "has a box whose innermost dim is " << innerBytes
                  << " bytes; TMA needs a multiple of 16";
  if (map.getSwizzle() && innerBytes > map.getSwizzle())
    return fail() << "has a box whose innermost dim is " << innerBytes
                  << " bytes, more than its " << map.getSwizzle()
                  << "-byte swizzle";
  for (auto [i, dim] : llvm::enumerate(type.getShape()))
    if (!ShapedType::isDynamic(dim) && map.getBox()[i] > dim)
      return fail() << "has a box dim " << i << " of " << map.getBox()[i]
                    << ", larger than '" << map.getSource() << "''s " << dim;
  // The driver takes strides that are multiples of 16 bytes.
  int64_t stride = elementBytes;
  for (int64_t i = type.getRank() - 1; i > 0; --i) {
    if (ShapedType::isDynamic(type.getDimSize(i)))
      return fail() << "reads '" << map.getSource()
                    << "', whose inner dims must be static";
    stride *= type.getDimSize(i);
    if (stride % 16)
      return fail() << "reads '" << map.getSource() << "', whose dim " << i - 1
                    << " stride (" << stride
                    << " bytes) is not a multiple of 16";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// PlanArgAttr
//===----------------------------------------------------------------------===//

LogicalResult PlanArgAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                  StringRef name, ArgRole role, Type type,
                                  ArrayRef<SizeExprAttr> shape,
                                  TensorMapAttr map) {
  if (name.empty())
    return emitError() << "a launch-plan argument needs a name";
  if ((role == ArgRole::tensor_map) != bool(map))
    return emitError() << "argument '" << name << "' "
                       << (map ? "has a tensor map but is not a tensor_map "
                                 "argument"
                               : "is a tensor_map argument without a map");
  if (map) {
    auto memref = dyn_cast<MemRefType>(type);
    if (!memref || memref.getShape() != ArrayRef<int64_t>{16} ||
        !memref.getElementType().isInteger(64) ||
        !memref.getLayout().isIdentity())
      return emitError() << "tensor_map argument '" << name
                         << "' must be a memref<16xi64> (a CUtensorMap's 128 "
                            "bytes), got "
                         << type;
  }
  if (role == ArgRole::size) {
    if (!type.isIndex() || !shape.empty())
      return emitError() << "size argument '" << name
                         << "' must be an index with no shape";
    return success();
  }
  if (role == ArgRole::scalar) {
    if (!isa<FloatType>(type) || !shape.empty())
      return emitError() << "scalar argument '" << name
                         << "' must be a float with no shape, got " << type;
    return success();
  }
  auto memref = dyn_cast<MemRefType>(type);
  if (!memref)
    return emitError() << "buffer argument '" << name
                       << "' must be a memref, got " << type;
  if (int64_t(shape.size()) != memref.getRank())
    return emitError() << "argument '" << name << "' has " << shape.size()
                       << " shape expressions for a rank-" << memref.getRank()
                       << " memref";
  for (auto [i, dim] : llvm::enumerate(shape))
    if (!memref.isDynamicDim(i) &&
        (!dim.isConstant() || dim.getValue() != memref.getDimSize(i)))
      return emitError() << "argument '" << name << "' dim " << i << " is "
                         << memref.getDimSize(i) << " in its type but "
                         << dim.str() << " in its shape";
  return success();
}

std::optional<int64_t> PlanArgAttr::evaluateBytes(
    function_ref<std::optional<int64_t>(StringRef)> lookup) const {
  auto memref = dyn_cast<MemRefType>(getType());
  if (!memref)
    return std::nullopt;
  int64_t bits = memref.getElementTypeBitWidth();
  int64_t elements = 1;
  for (SizeExprAttr dim : getShape()) {
    std::optional<int64_t> v = dim.evaluate(lookup);
    if (!v)
      return std::nullopt;
    std::optional<int64_t> product = llvm::checkedMul(elements, *v);
    if (!product || *product < 0)
      return std::nullopt;
    elements = *product;
  }
  std::optional<int64_t> totalBits = llvm::checkedMul(elements, bits);
  if (!totalBits || *totalBits > std::numeric_limits<int64_t>::max() - 7)
    return std::nullopt;
  return (*totalBits + 7) / 8;
}

LogicalResult SizeDefAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                  StringRef name, StringRef arg, int64_t axis,
                                  SizeExprAttr value) {
  if (name.empty())
    return emitError() << "a launch-plan size needs a name";
  if (arg.empty() == !value)
    return emitError() << "size '" << name
                       << "' must be either a dim of an argument or an "
                          "expression";
  if (!arg.empty() && axis < 0)
    return emitError() << "size '" << name << "' reads a negative axis "
                       << axis << " of '" << arg << "'";
  return success();
}

LogicalResult
KernelLaunchAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                         StringRef role, SymbolRefAttr kernel,
                         LaunchCondition, ArrayRef<SizeExprAttr> grid,
                         ArrayRef<int64_t> block, int64_t staticShared,
                         int64_t dynamicShared, ArrayAttr args) {
  if (role.empty())
    return emitError() << "a plan kernel needs a role";
  if (grid.size() != 3 || block.size() != 3)
    return emitError() << "kernel " << kernel
                       << " needs 3 grid and 3 block dims";
  int64_t threads = 1;
  for (int64_t b : block) {
    if (b <= 0)
      return emitError() << "kernel " << kernel
                         << " has a non-positive block dim";
    // Checked per dim: the product of unchecked dims can overflow.
    if (b > 1024 || (threads *= b) > 1024)
      return emitError() << "kernel " << kernel << " has a block of "
                         << block[0] << " x " << block[1] << " x " << block[2]
                         << " threads, more than 1024";
  }
  if (staticShared < 0 || dynamicShared < 0)
    return emitError() << "kernel " << kernel
                       << " has negative shared memory";
  for (Attribute a : args)
    if (!isa<StringAttr>(a))
      return emitError() << "kernel " << kernel
                         << " args must be argument or size names";
  return success();
}

LogicalResult
WorkScheduleAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                         StringRef lengths, StringRef items,
                         StringRef mergeIndptr, StringRef count,
                         StringRef batch, StringRef uniformChunks,
                         int64_t targetItems, int64_t granule,
                         int64_t minChunk, int64_t windowLeft,
                         StringRef maxBatch, StringRef qoIndptr,
                         StringRef tiles, StringRef workspaceRows,
                         int64_t tileRows, bool causal,
                         StringRef workspaceLimit) {
  for (StringRef name : {lengths, items, mergeIndptr, count, batch})
    if (name.empty())
      return emitError() << "a work schedule names every argument and size";
  if (targetItems < 0 || granule < 1 || minChunk < 0 || windowLeft < -1)
    return emitError() << "work schedule needs target_items >= 0, granule "
                          ">= 1, min_chunk >= 0 and window_left >= -1, got "
                       << targetItems << ", " << granule << ", " << minChunk
                       << ", " << windowLeft;
  if (qoIndptr.empty()) {
    if (uniformChunks.empty())
      return emitError() << "a work schedule names every argument and size";
    if (!tiles.empty() || !workspaceRows.empty() || tileRows != 0 ||
        causal || !workspaceLimit.empty())
      return emitError() << "work schedule: tiles, workspace_rows, tile_rows, "
                            "causal and workspace_limit are a prefill "
                            "schedule's (one with qo_indptr)";
    return success();
  }
  if (tiles.empty() || workspaceRows.empty() || tileRows < 1)
    return emitError() << "prefill work schedule needs tiles and "
                          "workspace_rows (size names) and tile_rows >= 1, "
                          "got '"
                       << tiles << "', '" << workspaceRows << "' and "
                       << tileRows;
  if (!uniformChunks.empty() || !maxBatch.empty())
    return emitError() << "prefill work schedule takes no uniform_chunks or "
                          "max_batch (it always has the lengths and sizes "
                          "its grids per call)";
  return success();
}

LogicalResult
PagedTablesAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        StringRef table, int64_t pageSize,
                        SizeExprAttr poolTokens) {
  if (!kvir::kv::symbolizeTableForm(table))
    return emitError() << "paged tables form must be csr, block_table, "
                          "token_table or token_offset, got '"
                       << table << "'";
  if (pageSize < 1)
    return emitError() << "paged tables page_size must be >= 1, got "
                       << pageSize;
  return success();
}

LogicalResult
LaunchPlanAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                       StringRef op, StringRef name, ArrayRef<PlanArgAttr> args,
                       ArrayRef<SizeDefAttr> sizes, StringRef partitions,
                       WorkScheduleAttr schedule, PagedTablesAttr tables,
                       Attribute config, ArrayRef<KernelLaunchAttr> kernels) {
  if (op.empty() || name.empty())
    return emitError() << "a launch plan needs an op and a name";
  if (config && !isa<DecodeConfigAttr, PrefillConfigAttr>(config))
    return emitError() << "plan '" << name
                       << "' config must be a kvgpu configuration, got "
                       << config;
  llvm::StringMap<PlanArgAttr> argByName;
  for (PlanArgAttr arg : args)
    if (!argByName.insert({arg.getName(), arg}).second)
      return emitError() << "plan '" << name << "' has two arguments named '"
                         << arg.getName() << "'";
  llvm::StringSet<> defined;
  for (PlanArgAttr arg : args)
    if (arg.getRole() == ArgRole::size)
      defined.insert(arg.getName());
  auto checkSymbols = [&](SizeExprAttr e, StringRef what) -> LogicalResult {
    std::string missing;
    e.walkSymbols([&](StringRef s) {
      if (!defined.contains(s) && missing.empty())
        missing = s.str();
    });
    if (!missing.empty())
      return emitError() << "plan '" << name << "': " << what
                         << " reads size '" << missing
                         << "' before it is defined";
    return success();
  };
  for (SizeDefAttr size : sizes) {
    if (defined.contains(size.getName()) ||
        argByName.count(size.getName()))
      return emitError() << "plan '" << name << "' defines '"
                         << size.getName() << "' twice";
    if (!size.getArg().empty()) {
      auto it = argByName.find(size.getArg());
      if (it == argByName.end())
        return emitError() << "plan '" << name << "': size '"
                           << size.getName() << "' reads unknown argument '"
                           << size.getArg() << "'";
      auto memref = dyn_cast<MemRefType>(it->second.getType());
      if (!memref || size.getAxis() >= memref.getRank())
        return emitError() << "plan '" << name << "': size '"
                           << size.getName() << "' reads axis "
                           << size.getAxis() << " of '" << size.getArg()
                           << "', which has no such axis";
    } else if (failed(checkSymbols(size.getValue(),
                                   "size '" + size.getName().str() + "'"))) {
      return failure();
    }
    defined.insert(size.getName());
  }
  // Workspaces are sized last: they may read what a schedule defines.
  auto checkShape = [&](PlanArgAttr arg) -> LogicalResult {
    for (SizeExprAttr dim : arg.getShape())
      if (failed(checkSymbols(dim, "argument '" + arg.getName().str() + "'")))
        return failure();
    return success();
  };
  for (PlanArgAttr arg : args)
    if (arg.getRole() != ArgRole::workspace && failed(checkShape(arg)))
      return failure();
  for (PlanArgAttr arg : args)
    if (TensorMapAttr map = arg.getMap())
      if (failed(verifyTensorMapSource(emitError, name, arg.getName(), map,
                                       argByName.lookup(map.getSource()))))
        return failure();
  if (tables) {
    // The verifier of the attribute has checked the form's spelling.
    auto form = *kvir::kv::symbolizeTableForm(tables.getTable());
    for (StringRef table : kvir::kv::getTableNames(form)) {
      auto it = argByName.find(table);
      if (it == argByName.end() || it->second.getRole() != ArgRole::input)
        return emitError() << "plan '" << name << "': its " << tables.getTable()
                           << " tables need an input argument '" << table
                           << "'";
    }
    if (tables.getPoolTokens() &&
        failed(checkSymbols(tables.getPoolTokens(), "its pool capacity")))
      return failure();
  }
  if (!partitions.empty() && !defined.contains(partitions))
    return emitError() << "plan '" << name << "': partitions names '"
                       << partitions << "', which is not a size";
  if (schedule) {
    SmallVector<StringRef> scheduleSizes{schedule.getBatch()};
    if (!schedule.isPrefill())
      scheduleSizes.push_back(schedule.getUniformChunks());
    if (!schedule.getMaxBatch().empty())
      scheduleSizes.push_back(schedule.getMaxBatch());
    if (!schedule.getWorkspaceLimit().empty())
      scheduleSizes.push_back(schedule.getWorkspaceLimit());
    for (StringRef size : scheduleSizes)
      if (!defined.contains(size))
        return emitError() << "plan '" << name << "': its schedule reads '"
                           << size << "', which is not a size";
    int64_t fields = schedule.getItemFields();
    auto checkBuffer = [&](StringRef arg, ArgRole role,
                           int64_t rank) -> LogicalResult {
      auto it = argByName.find(arg);
      auto type = it == argByName.end()
                      ? MemRefType()
                      : dyn_cast<MemRefType>(it->second.getType());
      if (!type || it->second.getRole() != role || type.getRank() != rank ||
          !type.getElementType().isInteger(32) ||
          (rank == 2 && type.getDimSize(1) != fields))
        return emitError() << "plan '" << name << "': schedule argument '"
                           << arg << "' must be a " << stringifyArgRole(role)
                           << " argument of type "
                           << (rank == 1 ? std::string("memref<?xi32>")
                                         : "memref<?x" +
                                               std::to_string(fields) +
                                               "xi32>");
      return success();
    };
    if (failed(checkBuffer(schedule.getLengths(), ArgRole::host, 1)) ||
        failed(checkBuffer(schedule.getItems(), ArgRole::schedule, 2)) ||
        failed(checkBuffer(schedule.getMergeIndptr(), ArgRole::schedule, 1)) ||
        (schedule.isPrefill() &&
         failed(checkBuffer(schedule.getQoIndptr(), ArgRole::host, 1))))
      return failure();
    // Only the launches read the schedule's sizes: they are known last.
    SmallVector<StringRef> results{schedule.getCount()};
    if (schedule.isPrefill())
      results.append({schedule.getTiles(), schedule.getWorkspaceRows()});
    for (StringRef size : results) {
      if (defined.contains(size) || argByName.count(size))
        return emitError() << "plan '" << name << "' defines '" << size
                           << "' twice";
      defined.insert(size);
    }
  }
  for (PlanArgAttr arg : args)
    if (arg.getRole() == ArgRole::workspace && failed(checkShape(arg)))
      return failure();
  for (KernelLaunchAttr kernel : kernels) {
    if (kernel.getWhen() != LaunchCondition::always && partitions.empty() &&
        !schedule)
      return emitError() << "plan '" << name << "': kernel "
                         << kernel.getKernel()
                         << " is conditional but the plan has no partition "
                            "count or schedule";
    for (SizeExprAttr dim : kernel.getGrid())
      if (failed(checkSymbols(dim, "the grid of a kernel")))
        return failure();
    for (Attribute a : kernel.getArgs()) {
      StringRef argName = cast<StringAttr>(a).getValue();
      if (!argByName.count(argName) && !defined.contains(argName))
        return emitError() << "plan '" << name << "': kernel "
                           << kernel.getKernel() << " takes '" << argName
                           << "', which is neither an argument nor a size";
    }
  }
  return success();
}

PlanArgAttr LaunchPlanAttr::lookupArg(StringRef name) const {
  for (PlanArgAttr arg : getArgs())
    if (arg.getName() == name)
      return arg;
  return {};
}

SizeDefAttr LaunchPlanAttr::lookupSize(StringRef name) const {
  for (SizeDefAttr size : getSizes())
    if (size.getName() == name)
      return size;
  return {};
}

llvm::StringMap<int64_t> LaunchPlanAttr::evaluateSizes(
    function_ref<std::optional<int64_t>(StringRef, int64_t)> dim) const {
  llvm::StringMap<int64_t> values;
  auto lookup = [&](StringRef s) -> std::optional<int64_t> {
    auto it = values.find(s);
    if (it == values.end())
      return std::nullopt;
    return it->second;
  };
  for (SizeDefAttr size : getSizes()) {
    std::optional<int64_t> v = size.getArg().empty()
                                   ? size.getValue().evaluate(lookup)
                                   : dim(size.getArg(), size.getAxis());
    if (v)
      values[size.getName()] = *v;
  }
  return values;
}
