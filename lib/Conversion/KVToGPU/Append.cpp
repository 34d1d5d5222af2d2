//===- Append.cpp - kv.append to a scatter kernel -------------------------===//
//
// Each thread moves one chunk of one (row, KV head): row i's K or V chunk
// goes to request batch_indices[i], token positions[i], through the page
// table (any form) and the layout's maps. A chunk is as wide as the pool's
// layout proves contiguous (16 bytes for NHD / HND; one element for vLLM's
// V pool, whose head dim is strided). RoPE rotates K in f32 at the row's
// position before the store (Rope, PTX flavor: no libdevice): interleaved
// pairs lie within a chunk; rotate-half pairs (i, i + D/2) are a chunk of
// each half, handled by one thread. MLA caches take ckv as K and kpe as V
// (append_paged_mla_kv_cache). Quantized caches quantize each element in
// f32 after RoPE: fp8 under the per-tensor scales, int8 by groups of
// quant_group dims whose scales the thread computes and stores (a chunk
// holds whole groups).
//
//===----------------------------------------------------------------------===//
#include "Patterns.h"

#include "kvir/Codegen/IRBuilder.h"
#include "kvir/Codegen/LaunchEmitter.h"
#include "kvir/Codegen/Rope.h"
#include "kvir/Dialect/KV/Utils/PagedAddressing.h"
#include "kvir/Dialect/KV/IR/PoolLayout.h"
#include "kvir/Dialect/KV/Utils/Quantization.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <numeric>

using namespace mlir;
using namespace kvir;
using namespace kvir::codegen;
using namespace kvir::gpu_lowering;

namespace {

constexpr int64_t kAppendThreads = 128;

/// The widest power-of-two run of elements (at most `maxElements`) that
/// every row of `type` holds contiguously and aligned to its size, along
/// the innermost dim of extent `width`.
int64_t rowVectorWidth(MemRefType type, int64_t maxElements, int64_t width) {
  auto [strides, offset] = type.getStridesAndOffset();
  if (strides.back() != 1 || ShapedType::isDynamic(offset))
    return 1;
  ArrayRef<int64_t> shape = type.getShape();
  for (int64_t w = maxElements; w > 1; w /= 2) {
    bool ok = width % w == 0 && offset % w == 0;
    for (int64_t i = 0; ok && i + 1 < type.getRank(); ++i) {
      if (!ShapedType::isDynamic(strides[i])) {
        ok = strides[i] % w == 0;
        continue;
      }
      int64_t known = 1;
      for (int64_t size : shape.drop_front(i + 1))
        if (!ShapedType::isDynamic(size))
          known *= size;
      ok = type.getLayout().isIdentity() && known % w == 0;
    }
    if (ok)
      return w;
  }
  return 1;
}

/// Everything an append kernel is specialized on.
struct AppendKernelSpec {
  kv::PagedType kv;
  SmallVector<Type> kvTypes;
  MemRefType kType, vType, indexType, positionType;
  kv::RopeAttr rope;
  /// Elements one thread moves per chunk, and the widths of its loads
  /// (from k / v) and stores (to the pools).
  int64_t kChunk = 1, vChunk = 1, kLoad = 1, vLoad = 1, kStore = 1, vStore = 1;

  /// Chunks per (row, head): K (with rotate_half, one per chunk of the
  /// first half of the rotated dims, then the dims past rotary_dim), then
  /// V.
  int64_t kUnits() const {
    if (!rotatesHalves())
      return kv.getHeadDim() / kChunk;
    return rotatedUnits() + (kv.getHeadDim() - rotatedDims()) / kChunk;
  }
  /// The K units that rotate a pair of chunks (rotate_half).
  int64_t rotatedUnits() const { return rotatedDims() / 2 / kChunk; }
  /// The dims RoPE rotates (rotary_dim; all without RoPE).
  int64_t rotatedDims() const {
    return rope ? rope.getRotatedDims(kv.getHeadDim()) : kv.getHeadDim();
  }
  int64_t vUnits() const { return vWidth() / vChunk; }
  /// The V pool's row: head_dim_v, or MLA's kpe (pe_dim; K is ckv).
  int64_t vWidth() const {
    return kv.isMla() ? kv.getPeDim() : kv.getHeadDimV();
  }
  bool rotatesHalves() const {
    return rope && rope.getStyle() == kv::RopeStyle::rotate_half;
  }
};

AppendKernelSpec describeAppend(kv::AppendOp op) {
  auto view = op.getKv().getDefiningOp<kv::PagedViewOp>();
  AppendKernelSpec s;
  s.kv = view.getType();
  for (Value v : kv::PagedOperands::fromView(view).flatten())
    s.kvTypes.push_back(v.getType());
  s.kType = cast<MemRefType>(op.getK().getType());
  s.vType = cast<MemRefType>(op.getV().getType());
  s.indexType = cast<MemRefType>(op.getBatchIndices().getType());
  s.positionType = cast<MemRefType>(op.getPositions().getType());
  s.rope = op.getRopeAttr();
  // At most 16 bytes per load (activation type) and per store (as
  // stored: 16 fp8 codes).
  int64_t max = 128 / s.kv.getDtype().getIntOrFloatBitWidth();
  int64_t storeMax = 128 / s.kv.getStorageElementType().getIntOrFloatBitWidth();
  // Each pool's proven width bounds its stores; loads may be as wide as
  // the chunk where the input rows allow.
  kv::PagedOperands operands = kv::PagedOperands::fromView(view);
  auto poolWidth = [&](kv::PoolRole role) {
    return kv::getDimVectorWidth(
        s.kv, role, cast<MemRefType>(operands.pool(role).getType()), storeMax);
  };
  // K chunks start at multiples of the chunk, at R / 2 (the upper half of
  // rotate-half pairs) and at R (the dims past rotary_dim): all multiples
  // of kSpan.
  int64_t d = s.kv.getHeadDim(), r = s.rotatedDims();
  int64_t kSpan = std::gcd(d, s.rotatesHalves() ? r / 2 : r);
  s.kStore = poolWidth(kv::PoolRole::K);
  s.vStore = poolWidth(kv::PoolRole::V);
  while (kSpan % s.kStore)
    s.kStore /= 2;
  while (s.vWidth() % s.vStore)
    s.vStore /= 2;
  // Interleaved pairs must not straddle two threads' chunks, nor int8
  // groups (whose scale is their largest magnitude).
  int64_t group = s.kv.getQuant() == kv::Quant::int8_group
                      ? s.kv.getQuantGroup()
                      : 1;
  s.kChunk = std::max<int64_t>({s.kStore, group,
                                s.rope && !s.rotatesHalves() ? 2 : 1});
  s.vChunk = std::max(s.vStore, group);
  s.kLoad = std::min(s.kChunk, rowVectorWidth(s.kType, max, kSpan));
  s.vLoad = std::min(s.vChunk, rowVectorWidth(s.vType, max, s.vWidth()));
  return s;
}

/// Loads `count` elements of `from` at `indices` (the last one advancing)
/// in vectors of `width`.
Value loadChunk(ImplicitLocOpBuilder &b, Value from, SmallVector<Value> indices,
                int64_t count, int64_t width) {
  IRBuilder ir{b};
  Type elt = cast<MemRefType>(from.getType()).getElementType();
  Value chunk = arith::ConstantOp::create(
      b, VectorType::get({count}, elt),
      b.getZeroAttr(VectorType::get({count}, elt)));
  Value last = indices.back();
  for (int64_t i = 0; i < count; i += width) {
    indices.back() = ir.add(last, ir.idx(i));
    auto load =
        vector::LoadOp::create(b, VectorType::get({width}, elt), from, indices);
    load.setAlignment(width * elt.getIntOrFloatBitWidth() / 8);
    chunk = vector::InsertStridedSliceOp::create(b, load, chunk,
                                                 ArrayRef<int64_t>{i},
                                                 ArrayRef<int64_t>{1});
  }
  return chunk;
}

/// int8 codes of `chunk` (whole groups of `role`'s dims [dim0, ...)); each
/// group's scale, max(max|x| / 127, 1e-5) rounded to the activation type,
/// is stored to the scale pool and is the one that quantizes.
Value quantizeInt8Groups(ImplicitLocOpBuilder &b, Value chunk,
                         const kv::PagedOperands &kv, kv::PoolRole role,
                         Value page, Value slot, Value head, Value dim0) {
  IRBuilder ir{b};
  int64_t group = kv.type.getQuantGroup();
  kv::PoolRole scaleRole =
      role == kv::PoolRole::K ? kv::PoolRole::KScale : kv::PoolRole::VScale;
  int64_t count = cast<VectorType>(chunk.getType()).getNumElements();
  assert(count % group == 0 && "append chunks hold whole int8 groups");
  SmallVector<Value> codes;
  for (int64_t first = 0; first < count; first += group) {
    SmallVector<Value> xs;
    Value absMax = ir.f32(0.0);
    for (int64_t j = first; j < first + group; ++j) {
      xs.push_back(
          kv::toF32(b, vector::ExtractOp::create(b, chunk, j).getResult()));
      absMax = arith::MaximumFOp::create(b, absMax, kv::absF32(b, xs.back()));
    }
    Value stored =
        kv::fromF32(b, kv::int8GroupScale(b, absMax), kv.type.getDtype());
    Value groupIndex =
        ir.divU(ir.add(dim0, ir.idx(first)), ir.idx(group));
    memref::StoreOp::create(b, stored, kv.pool(scaleRole),
                            kv::emitPoolIndices(b, kv.type, scaleRole, page,
                                                slot, head, groupIndex));
    Value scale = kv::toF32(b, stored);
    for (Value x : xs)
      codes.push_back(kv::int8Quantize(b, x, scale));
  }
  return vector::FromElementsOp::create(
      b, VectorType::get({count}, b.getI8Type()), codes);
}

/// Stores `chunk` (activation type, or f32) as `role`'s dims [dim0, ...) of
/// token (page, slot), head `head`, in vectors of `width`: fp8 caches take
/// codes of chunk / scale (saturating, round to nearest even), int8 groups
/// codes under their groups' scales (stored too).
void storeChunk(ImplicitLocOpBuilder &b, Value chunk,
                const kv::PagedOperands &kv, kv::PoolRole role, Value page,
                Value slot, Value head, Value dim0, int64_t width) {
  IRBuilder ir{b};
  Value to = kv.pool(role);
  if (kv.type.isFp8()) {
    Value scale = role == kv::PoolRole::K ? kv.kScale : kv.vScale;
    Type code = kv.type.getStorageElementType();
    auto values = cast<VectorType>(chunk.getType());
    SmallVector<Value> codes;
    for (int64_t j = 0; j < values.getNumElements(); ++j) {
      Value x =
          kv::toF32(b, vector::ExtractOp::create(b, chunk, j).getResult());
      codes.push_back(
          kv::f32ToFp8(b, arith::DivFOp::create(b, x, scale), code));
    }
    chunk = vector::FromElementsOp::create(
        b, VectorType::get(values.getShape(), code), codes);
  } else if (kv.type.getQuant() == kv::Quant::int8_group) {
    chunk = quantizeInt8Groups(b, chunk, kv, role, page, slot, head, dim0);
  }
  auto type = cast<VectorType>(chunk.getType());
  for (int64_t i = 0; i < type.getNumElements(); i += width) {
    Value part = vector::ExtractStridedSliceOp::create(
        b, chunk, ArrayRef<int64_t>{i}, ArrayRef<int64_t>{width},
        ArrayRef<int64_t>{1});
    SmallVector<Value> indices = kv::emitPoolIndices(
        b, kv.type, role, page, slot, head, ir.add(dim0, ir.idx(i)));
    vector::StoreOp::create(b, part, to, indices)
        .setAlignment(width * type.getElementTypeBitWidth() / 8);
  }
}

/// Writes K unit `c` of (row, head) of the new rows to token (page, slot):
/// a chunk as it is, or rotated by RoPE at `position` (rotate-half units
/// rotate a chunk with its partner R / 2 dims up; units and chunks past
/// rotary_dim R are copied as they are).
void writeKeyUnit(ImplicitLocOpBuilder &jb, const AppendKernelSpec &s,
                  const kv::PagedOperands &kv, Value k, Value row, Value head,
                  Value c, Value page, Value slot, Value position) {
  IRBuilder x{jb};
  Value dim0 = x.mul(c, x.idx(s.kChunk));
  auto load = [&](ImplicitLocOpBuilder &lb, Value dim) {
    return loadChunk(lb, k, {row, head, dim}, s.kChunk, s.kLoad);
  };
  // Rotated values stay f32 for quantized caches, which quantize
  // them once.
  Type rotatedType =
      s.kv.isQuantized() ? Type(jb.getF32Type()) : Type(s.kv.getDtype());
  if (!s.rope) {
    storeChunk(jb, load(jb, dim0), kv, kv::PoolRole::K, page, slot, head, dim0,
               s.kStore);
  } else if (s.rotatesHalves()) {
    // Units past the rotated ones copy the dims past rotary_dim.
    Value rotates = x.lt(c, x.idx(s.rotatedUnits()));
    scf::IfOp::create(
        jb, rotates,
        [&](OpBuilder &rb, Location rl) {
          ImplicitLocOpBuilder hb(rl, rb);
          IRBuilder y{hb};
          Rope rope(hb, s.rope, s.kv.getHeadDim(), Rope::Flavor::ptx);
          Value dim1 = y.add(dim0, y.idx(s.rotatedDims() / 2));
          auto [lo, hi] = rope.rotateVectors(
              load(hb, dim0), load(hb, dim1),
              rope.frequencies(dim0, s.kChunk), position, rotatedType);
          storeChunk(hb, lo, kv, kv::PoolRole::K, page, slot, head, dim0,
                     s.kStore);
          storeChunk(hb, hi, kv, kv::PoolRole::K, page, slot, head, dim1,
                     s.kStore);
          scf::YieldOp::create(hb);
        },
        [&](OpBuilder &pb, Location pl) {
          ImplicitLocOpBuilder hb(pl, pb);
          IRBuilder y{hb};
          Value from =
              y.add(y.idx(s.rotatedDims()),
                    y.mul(y.sub(c, y.idx(s.rotatedUnits())), y.idx(s.kChunk)));
          storeChunk(hb, load(hb, from), kv, kv::PoolRole::K, page, slot, head,
                     from, s.kStore);
          scf::YieldOp::create(hb);
        });
  } else {
    // Interleaved: elements (2p, 2p + 1) of the chunk are a pair;
    // chunks past rotary_dim are stored as they are.
    Value chunk = load(jb, dim0);
    scf::IfOp::create(
        jb, x.lt(dim0, x.idx(s.rotatedDims())),
        [&](OpBuilder &rb, Location rl) {
          ImplicitLocOpBuilder hb(rl, rb);
          IRBuilder y{hb};
          Rope rope(hb, s.rope, s.kv.getHeadDim(), Rope::Flavor::ptx);
          Value rotated = rope.rotateInterleaved(
              chunk, rope.frequencies(y.divU(dim0, y.idx(2)), s.kChunk / 2),
              position, rotatedType);
          storeChunk(hb, rotated, kv, kv::PoolRole::K, page, slot, head, dim0,
                     s.kStore);
          scf::YieldOp::create(hb);
        },
        [&](OpBuilder &pb, Location pl) {
          ImplicitLocOpBuilder hb(pl, pb);
          storeChunk(hb, chunk, kv, kv::PoolRole::K, page, slot, head, dim0,
                     s.kStore);
          scf::YieldOp::create(hb);
        });
  }
}

void buildAppendBody(const KernelFunc &kf, const AppendKernelSpec &s) {
  ImplicitLocOpBuilder b = kf.getBuilder();
  IRBuilder ir{b};
  Value k = kf.getArgument(0), v = kf.getArgument(1);
  Value batchIndices = kf.getArgument(2), positions = kf.getArgument(3);
  kv::PagedOperands kv = kv::PagedOperands::fromFlattened(
      s.kv, kf.getArguments().slice(4, s.kvTypes.size()));
  int64_t heads = s.kv.getKvHeads();
  int64_t unitsPerRow = s.kUnits() + s.vUnits();
  Value unit = ir.add(ir.mul(gpu::BlockIdOp::create(b, gpu::Dimension::x),
                             ir.idx(kAppendThreads)),
                      gpu::ThreadIdOp::create(b, gpu::Dimension::x));
  Value rows = memref::DimOp::create(b, k, 0);
  Value total = ir.mul(rows, ir.idx(heads * unitsPerRow));
  scf::IfOp::create(b, ir.lt(unit, total), [&](OpBuilder &nb, Location l) {
    ImplicitLocOpBuilder ib(l, nb);
    IRBuilder j{ib};
    Value row = j.divU(unit, j.idx(heads * unitsPerRow));
    Value rest = j.remU(unit, j.idx(heads * unitsPerRow));
    Value head = j.divU(rest, j.idx(unitsPerRow));
    Value c = j.remU(rest, j.idx(unitsPerRow));
    Value req = j.toIndex(memref::LoadOp::create(ib, batchIndices, row));
    Value position = j.toIndex(memref::LoadOp::create(ib, positions, row));
    Value page, slot;
    std::tie(page, slot) = kv::emitLocate(ib, kv, req, position);
    Value isK = j.lt(c, j.idx(s.kUnits()));
    scf::IfOp::create(
        ib, isK,
        [&](OpBuilder &kb, Location kl) {
          ImplicitLocOpBuilder jb(kl, kb);
          writeKeyUnit(jb, s, kv, k, row, head, c, page, slot, position);
          scf::YieldOp::create(jb);
        },
        [&](OpBuilder &vb, Location vl) {
          ImplicitLocOpBuilder jb(vl, vb);
          IRBuilder x{jb};
          Value dim0 = x.mul(x.sub(c, x.idx(s.kUnits())), x.idx(s.vChunk));
          Value chunk = loadChunk(jb, v, {row, head, dim0}, s.vChunk, s.vLoad);
          storeChunk(jb, chunk, kv, kv::PoolRole::V, page, slot, head, dim0,
                     s.vStore);
          scf::YieldOp::create(jb);
        });
    scf::YieldOp::create(ib);
  });
}

std::string appendKernelSymbol(kv::AppendOp op, const AppendKernelSpec &s,
                               const target::TargetInfo &target) {
  std::string stem =
      "append_" + kv::stringifyLayoutKind(s.kv.getLayout()).str() + "_" +
      kv::stringifyStorage(s.kv.getStorage()).str() + "_" +
      kv::stringifyTableForm(s.kv.getTable()).str() + "_p" +
      std::to_string(s.kv.getPageSize()) + "_h" +
      std::to_string(s.kv.getKvHeads()) + "_d" +
      std::to_string(s.kv.getHeadDim()) + "_" + typeName(s.kv.getDtype()) +
      (s.kv.isQuantized() ? "_" + kv::stringifyQuant(s.kv.getQuant()).str()
                          : std::string()) +
      (s.rope ? "_rope" : "");
  KernelIdentity id(stem);
  id.add(op.getOperation()).add(target.chip);
  for (Type t : s.kvTypes)
    id.add(t);
  return id.getSymbol();
}

struct AppendLowering : OpRewritePattern<kv::AppendOp> {
  AppendLowering(MLIRContext *ctx, LoweringContext &context)
      : OpRewritePattern(ctx), context(context) {}

  LogicalResult matchAndRewrite(kv::AppendOp op,
                                PatternRewriter &rewriter) const override {
    const target::TargetInfo &target = context.getTarget();
    if (std::optional<std::string> why = whyNoAppendKernel(op))
      return rewriter.notifyMatchFailure(op, *why);
    AppendKernelSpec spec = describeAppend(op);
    std::string name = appendKernelSymbol(op, spec, target);
    gpu::GPUFuncOp kernel =
        context.getOrBuildKernel(name, [&](gpu::GPUModuleOp module) {
          SmallVector<Type> argTypes{spec.kType, spec.vType, spec.indexType,
                                     spec.positionType};
          llvm::append_range(argTypes, spec.kvTypes);
          KernelFunc kf = KernelFunc::create(module, name, argTypes,
                                             {kAppendThreads, 1, 1},
                                             SharedMemoryLayout(), op.getLoc());
          buildAppendBody(kf, spec);
          return kf;
        });

    auto view = op.getKv().getDefiningOp<kv::PagedViewOp>();
    kv::PagedOperands kv = kv::PagedOperands::fromView(view);
    PlanBuilder plan(op.getContext(), "kv.append", name);
    using kvgpu::ArgRole;
    using kvgpu::SizeExprAttr;
    plan.addBuffer("k", ArgRole::input, spec.kType, {}, {"nnz"});
    plan.addBuffer("v", ArgRole::input, spec.vType, {plan.sym("nnz")});
    plan.addBuffer("batch_indices", ArgRole::input, spec.indexType,
                   {plan.sym("nnz")});
    plan.addBuffer("positions", ArgRole::input, spec.positionType,
                   {plan.sym("nnz")});
    // `batch` (the requests of the tables) comes from the tables.
    SmallVector<StringRef> kvNames = addPagedKVArguments(plan, kv);
    SmallVector<StringRef> args{"k", "v", "batch_indices", "positions"};
    llvm::append_range(args, kvNames);
    int64_t unitsPerRow = spec.kv.getKvHeads() * (spec.kUnits() + spec.vUnits());
    plan.addKernel("append", kernel, kvgpu::LaunchCondition::always,
                   {SizeExprAttr::ceilDiv(
                        SizeExprAttr::mul(plan.sym("nnz"),
                                          plan.cst(unitsPerRow)),
                        plan.cst(kAppendThreads)),
                    plan.cst(1), plan.cst(1)},
                   args);
    llvm::StringMap<Value> bindings{{"k", op.getK()},
                                    {"v", op.getV()},
                                    {"batch_indices", op.getBatchIndices()},
                                    {"positions", op.getPositions()}};
    for (auto [n, value] : llvm::zip(kvNames, kv.flatten()))
      bindings[n] = value;
    rewriter.setInsertionPoint(op);
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    if (failed(context.launch(b, plan, bindings, op.getLoc())))
      return failure();
    rewriter.eraseOp(op);
    return success();
  }

  LoweringContext &context;
};

} // namespace

std::optional<std::string> gpu_lowering::whyNoAppendKernel(kv::AppendOp op) {
  auto view = op.getKv().getDefiningOp<kv::PagedViewOp>();
  if (!view)
    return std::string("its KV is not a kv.paged_view of the same function");
  kv::PagedType kv = view.getType();
  kv::RopeAttr rope = op.getRopeAttr();
  int64_t d = kv.getHeadDim(), r = rope ? rope.getRotatedDims(d) : d;
  if (kv.getQuant() == kv::Quant::int8_group && rope &&
      rope.getStyle() == kv::RopeStyle::rotate_half &&
      (r / 2) % kv.getQuantGroup())
    return "int8 groups of " + std::to_string(kv.getQuantGroup()) +
           " dims are wider than the half of " +
           (r == d ? "head_dim " : "rotary_dim ") + std::to_string(r) +
           " that rotate-half RoPE pairs with the other: the append kernel "
           "quantizes each half's groups on their own";
  if (rope && r < d) {
    // Chunks must not straddle R / 2 (rotate-half) or R, where rotation
    // starts or stops.
    AppendKernelSpec s = describeAppend(op);
    bool fits = s.rotatesHalves()
                    ? (r / 2) % s.kChunk == 0 && (d - r) % s.kChunk == 0
                    : r % s.kChunk == 0;
    if (!fits)
      return "rope rotary_dim " + std::to_string(r) +
             " splits the append kernel's chunks of " +
             std::to_string(s.kChunk) + " dims" +
             (kv.getQuant() == kv::Quant::int8_group
                  ? " (int8 groups of " + std::to_string(kv.getQuantGroup()) +
                        " are quantized whole)"
                  : std::string());
  }
  Type dtype = kv.getDtype();
  if (!dtype.isF16() && !dtype.isBF16() && !dtype.isF32())
    return "KV of type " + typeName(dtype) + " has no append kernel";
  for (Value in : {op.getK(), op.getV()}) {
    auto type = cast<MemRefType>(in.getType());
    if (type.getStridesAndOffset().first.back() != 1)
      return "input " + typeName(type) + " has a non-unit innermost stride";
  }
  return std::nullopt;
}

void gpu_lowering::populateAppendPatterns(RewritePatternSet &patterns,
                                          LoweringContext &context) {
  patterns.add<AppendLowering>(patterns.getContext(), context);
}
