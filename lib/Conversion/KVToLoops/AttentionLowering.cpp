//===- AttentionLowering.cpp - decode / prefill / MLA as loop nests -------===//
//
// One loop nest serves every attention op: requests, their query rows, query
// heads, then the visible keys of the row with an online softmax (running
// max m, running sum l, unnormalized accumulator) in f32. A row that sees no
// key gets the empty state (0, -inf), never NaN.
//
//===----------------------------------------------------------------------===//
#include "LoweringUtils.h"

#include "kvir/Codegen/AttentionState.h"
#include "kvir/Codegen/Rope.h"
#include "kvir/Codegen/Variants.h"
#include "kvir/Dialect/KV/Utils/Visibility.h"

#include <cmath>

using namespace mlir;
using namespace kvir::kv;
using namespace kvir::kv::loops;
using kvir::codegen::AttentionState;
using kvir::codegen::Rope;
using kvir::codegen::VariantEmitter;

namespace {
/// Part of the key dot product: q[row, head, :width] against the `role` pool.
struct KeySegment {
  Value q;
  PoolRole role;
  int64_t width;
};

struct AttentionSpec {
  KVAccess kv;
  SmallVector<KeySegment, 2> segments;
  PoolRole valueRole = PoolRole::V;
  int64_t headDimV = 0;
  int64_t qHeads = 0;
  int64_t groupSize = 1;
  Value qoIndptr; // Null: one query row per request.
  Value mask;     // i1 (bool bytes) or i8 (bit-packed), or null.
  Value positions; // i32 per query row, or null: bottom-right alignment.
  Value topk;      // i32 [rows, K]: each row's selected keys, or null.
  /// The variants' frame (kv.prefill frame(...)), or null.
  Value frameIndptr, framePositions;
  bool causal = false;
  double smScale = 1.0;
  std::optional<double> softCap;
  std::optional<int64_t> windowLeft;
  RopeAttr rope;
  StateType resultType;
  /// The op's sinks, ALiBi and regions.
  AttentionVariantOpInterface variants;
};
} // namespace

static Value maxIndex(ImplicitLocOpBuilder &b, Value x, Value y) {
  return arith::MaxSIOp::create(b, x, y);
}

namespace {

/// The query row and KV position a (row, head) of the nest sees.
struct RowHead {
  Value req, kvLen, i, row, pos, lo, hi, maskOffset, head, kvHead;
  /// The variants see the row and its keys in their frame.
  FrameRow frame;
  Value frameKey(ImplicitLocOpBuilder &b, Value j) const {
    return frame.keyShift ? arith::AddIOp::create(b, j, frame.keyShift) : j;
  }
};

/// The loop nest of one attention op: requests, their query rows, query
/// heads, keys.
class AttentionNest {
public:
  explicit AttentionNest(const AttentionSpec &spec);
  StateBuffers emit(ImplicitLocOpBuilder &b);

private:
  /// Request `req`'s rows; returns the mask offset of the next request.
  Value emitRequest(ImplicitLocOpBuilder &b, Value req, Value maskOffset);
  void emitHead(ImplicitLocOpBuilder &b, RowHead &at);
  /// The query row in f32 into `qRow`, rotated to its position with RoPE.
  void loadQueryRow(ImplicitLocOpBuilder &b, const RowHead &at);
  /// q . k_j over the segments (k rotated to j with RoPE).
  Value keyDot(ImplicitLocOpBuilder &b, const RowHead &at, Value j);
  /// The online softmax's step for key j: (m, l) and acc updated where the
  /// key is visible.
  SmallVector<Value> keyStep(ImplicitLocOpBuilder &b, const RowHead &at,
                             Value j, ValueRange state);
  SmallVector<Value> update(ImplicitLocOpBuilder &b, const RowHead &at,
                            Value j, Value m, Value l);
  /// Every visible key's step: [lo, hi), or the row's selected keys.
  SmallVector<Value> scanKeys(ImplicitLocOpBuilder &b, const RowHead &at);
  /// O / l and the LSE of (row, head), a sink joining once.
  void writeState(ImplicitLocOpBuilder &b, const RowHead &at, Value m,
                  Value l);

  const AttentionSpec &spec;
  Value zero, one, rows, qRow, acc, dimV;
  StateBuffers result;
  VariantEmitter variants;
};

AttentionNest::AttentionNest(const AttentionSpec &spec)
    : spec(spec), variants(spec.variants, IRMapping(),
                           AttentionState::Flavor::exactBaseE) {}

StateBuffers AttentionNest::emit(ImplicitLocOpBuilder &b) {
  zero = indexConst(b, 0);
  one = indexConst(b, 1);
  Value q0 = spec.segments.front().q;
  rows = memref::DimOp::create(b, q0, 0);
  result = allocState(b, spec.resultType, rows);
  int64_t qWidth = 0;
  for (const KeySegment &seg : spec.segments)
    qWidth += seg.width;
  // Scratch for the (rotated) query row and the accumulator, reused by every
  // (row, head): allocas inside the loops would grow the stack per iteration.
  qRow = memref::AllocOp::create(b, MemRefType::get({qWidth}, b.getF32Type()),
                                 ValueRange{});
  acc = memref::AllocOp::create(
      b, MemRefType::get({spec.headDimV}, b.getF32Type()), ValueRange{});
  Value numRequests =
      spec.qoIndptr
          ? arith::SubIOp::create(b, memref::DimOp::create(b, spec.qoIndptr, 0),
                                  one)
          : rows;
  forLoop(b, zero, numRequests, ValueRange{zero},
          [&](ImplicitLocOpBuilder &b, Value req, ValueRange carried) {
            return SmallVector<Value>{emitRequest(b, req, carried[0])};
          });
  memref::DeallocOp::create(b, qRow);
  memref::DeallocOp::create(b, acc);
  return result;
}

Value AttentionNest::emitRequest(ImplicitLocOpBuilder &b, Value req,
                                 Value maskOffset) {
  Value kvLen = spec.kv.kvLen(b, req);
  Value qoStart = req, qoEnd = arith::AddIOp::create(b, req, one);
  if (spec.qoIndptr) {
    qoStart = loadIndex(b, spec.qoIndptr, req);
    qoEnd = loadIndex(b, spec.qoIndptr, ValueRange{qoEnd});
  }
  Value qoLen = arith::SubIOp::create(b, qoEnd, qoStart);
  forLoop(b, zero, qoLen, [&](ImplicitLocOpBuilder &b, Value i) {
    RowHead at;
    at.req = req;
    at.kvLen = kvLen;
    at.i = i;
    at.maskOffset = maskOffset;
    at.row = arith::AddIOp::create(b, qoStart, i);
    at.pos = spec.positions ? loadIndex(b, spec.positions, at.row)
                            : emitQueryPosition(b, kvLen, qoLen, i);
    std::tie(at.lo, at.hi) =
        emitVisibleKeyRange(b, at.pos, kvLen, spec.causal, spec.windowLeft);
    at.frame = FrameRow{req, at.pos, Value()};
    if (spec.framePositions)
      at.frame = emitFrameRow(b, spec.frameIndptr, spec.framePositions,
                              at.row, at.pos);
    forLoop(b, zero, indexConst(b, spec.qHeads),
            [&](ImplicitLocOpBuilder &b, Value head) {
              at.head = head;
              emitHead(b, at);
            });
  });
  if (!spec.mask)
    return maskOffset;
  return arith::AddIOp::create(b, maskOffset,
                               emitMaskBlockSize(b, spec.mask, qoLen, kvLen));
}

void AttentionNest::loadQueryRow(ImplicitLocOpBuilder &b, const RowHead &at) {
  int64_t offset = 0;
  for (const KeySegment &seg : spec.segments) {
    Value base = indexConst(b, offset);
    forLoop(b, zero, indexConst(b, seg.width),
            [&](ImplicitLocOpBuilder &b, Value d) {
              Value v = toF32(b, memref::LoadOp::create(
                                     b, seg.q, ValueRange{at.row, at.head, d}));
              memref::StoreOp::create(
                  b, v, qRow, ValueRange{arith::AddIOp::create(b, base, d)});
            });
    offset += seg.width;
  }
  if (!spec.rope)
    return;
  int64_t headDim = spec.segments.front().width;
  forLoop(b, zero, indexConst(b, spec.rope.getRotatedDims(headDim) / 2),
          [&](ImplicitLocOpBuilder &b, Value pair) {
            Rope r(b, spec.rope, headDim, Rope::Flavor::exact);
            auto [da, db] = r.pairDims(pair);
            auto [c, s] = r.cosSin(pair, at.pos);
            auto [ra, rb] = r.rotate(memref::LoadOp::create(b, qRow, da),
                                     memref::LoadOp::create(b, qRow, db), c, s);
            memref::StoreOp::create(b, ra, qRow, da);
            memref::StoreOp::create(b, rb, qRow, db);
          });
}

void AttentionNest::emitHead(ImplicitLocOpBuilder &b, RowHead &at) {
  at.kvHead = arith::DivUIOp::create(b, at.head, indexConst(b, spec.groupSize));
  // Gather the query row in f32, rotated to p_i when RoPE is on.
  loadQueryRow(b, at);
  dimV = indexConst(b, spec.headDimV);
  forLoop(b, zero, dimV, [&](ImplicitLocOpBuilder &b, Value d) {
    memref::StoreOp::create(b, f32Const(b, 0.0), acc, d);
  });
  SmallVector<Value> ml = scanKeys(b, at);
  writeState(b, at, ml[0], ml[1]);
}

Value AttentionNest::keyDot(ImplicitLocOpBuilder &b, const RowHead &at,
                            Value j) {
  Value dot = f32Const(b, 0.0);
  int64_t segOffset = 0;
  for (const KeySegment &seg : spec.segments) {
    Value base = indexConst(b, segOffset);
    // q . k over dims [from, width) of the segment, unrotated.
    auto plainDot = [&](Value from, Value dot) {
      return forLoop(b, from, indexConst(b, seg.width), ValueRange{dot},
                     [&](ImplicitLocOpBuilder &b, Value d,
                         ValueRange sum) -> SmallVector<Value> {
                       Value k =
                           spec.kv.load(b, seg.role, at.req, j, at.kvHead, d);
                       Value qv = memref::LoadOp::create(
                           b, qRow,
                           ValueRange{arith::AddIOp::create(b, base, d)});
                       return {arith::AddFOp::create(
                           b, sum[0], arith::MulFOp::create(b, qv, k))};
                     })[0];
    };
    if (spec.rope) {
      int64_t rotated = spec.rope.getRotatedDims(seg.width);
      dot = forLoop(
          b, zero, indexConst(b, rotated / 2), ValueRange{dot},
          [&](ImplicitLocOpBuilder &b, Value pair,
              ValueRange sum) -> SmallVector<Value> {
            Rope r(b, spec.rope, seg.width, Rope::Flavor::exact);
            auto [da, db] = r.pairDims(pair);
            auto [c, s] = r.cosSin(pair, j);
            auto [ra, rb] =
                r.rotate(spec.kv.load(b, seg.role, at.req, j, at.kvHead, da),
                         spec.kv.load(b, seg.role, at.req, j, at.kvHead, db),
                         c, s);
            Value qa = memref::LoadOp::create(b, qRow, da);
            Value qb = memref::LoadOp::create(b, qRow, db);
            Value t = arith::AddFOp::create(b, arith::MulFOp::create(b, qa, ra),
                                            arith::MulFOp::create(b, qb, rb));
            return {arith::AddFOp::create(b, sum[0], t)};
          })[0];
      // Dims past rotary_dim pass unrotated.
      if (rotated < seg.width)
        dot = plainDot(indexConst(b, rotated), dot);
    } else {
      dot = plainDot(zero, dot);
    }
    segOffset += seg.width;
  }
  return dot;
}

SmallVector<Value> AttentionNest::update(ImplicitLocOpBuilder &b,
                                         const RowHead &at, Value j, Value m,
                                         Value l) {
  Value dot = keyDot(b, at, j);
  AttentionState state(b, AttentionState::Flavor::exactBaseE);
  Value s = arith::MulFOp::create(b, dot, f32Const(b, spec.smScale));
  if (variants.modifiesScores())
    s = variants.modifyScore(b, s, at.frame.request, at.head,
                             at.frame.position, at.frameKey(b, j));
  s = state.finishLogit(s, spec.softCap);
  AttentionState::Rescale r = state.rescale(m, s);
  Value mNew = r.m, alpha = r.alpha;
  Value p = state.weightAt(s, r.ref);
  Value lNew =
      arith::AddFOp::create(b, arith::MulFOp::create(b, l, alpha), p);
  forLoop(b, zero, dimV, [&](ImplicitLocOpBuilder &b, Value d) {
    Value v = spec.kv.load(b, spec.valueRole, at.req, j, at.kvHead, d);
    Value a = memref::LoadOp::create(b, acc, d);
    AttentionState inner(b, AttentionState::Flavor::exactBaseE);
    memref::StoreOp::create(b, inner.accumulate(a, alpha, p, v), acc, d);
  });
  return {mNew, lNew};
}

SmallVector<Value> AttentionNest::keyStep(ImplicitLocOpBuilder &b,
                                          const RowHead &at, Value j,
                                          ValueRange state) {
  Value m = state[0], l = state[1];
  Value visible =
      spec.mask ? emitMaskBit(b, spec.mask, at.maskOffset, at.i, j, at.kvLen)
                : Value();
  if (Value modded = variants.visible(b, at.frame.request, at.head,
                                      at.frame.position, at.frameKey(b, j)))
    visible = visible ? arith::AndIOp::create(b, visible, modded) : modded;
  if (!visible)
    return update(b, at, j, m, l);
  auto ifOp = scf::IfOp::create(
      b, visible,
      [&](OpBuilder &nested, Location loc) {
        ImplicitLocOpBuilder ib(loc, nested);
        scf::YieldOp::create(ib, update(ib, at, j, m, l));
      },
      [&](OpBuilder &nested, Location loc) {
        scf::YieldOp::create(nested, loc, ValueRange{m, l});
      });
  return SmallVector<Value>(ifOp.getResults());
}

SmallVector<Value> AttentionNest::scanKeys(ImplicitLocOpBuilder &b,
                                           const RowHead &at) {
  SmallVector<Value> init{f32Const(b, -INFINITY), f32Const(b, 0.0)};
  auto step = [&](ImplicitLocOpBuilder &b, Value j, ValueRange state) {
    return keyStep(b, at, j, state);
  };
  if (!spec.topk)
    return forLoop(b, at.lo, maxIndex(b, at.lo, at.hi), init, step);
  // The row's selected keys, in list order: -1 (padding) and keys
  // outside [lo, hi) are skipped before anything reads them.
  Value selected = memref::DimOp::create(b, spec.topk, 1);
  return forLoop(
      b, zero, selected, init,
      [&](ImplicitLocOpBuilder &b, Value e,
          ValueRange state) -> SmallVector<Value> {
        Value j = loadIndex(b, spec.topk, ValueRange{at.row, e});
        Value inRange = arith::AndIOp::create(
            b, arith::CmpIOp::create(b, arith::CmpIPredicate::sge, j, at.lo),
            arith::CmpIOp::create(b, arith::CmpIPredicate::slt, j, at.hi));
        auto ifOp = scf::IfOp::create(
            b, inRange,
            [&](OpBuilder &nested, Location loc) {
              ImplicitLocOpBuilder ib(loc, nested);
              scf::YieldOp::create(ib, step(ib, j, state));
            },
            [&](OpBuilder &nested, Location loc) {
              scf::YieldOp::create(nested, loc, state);
            });
        return SmallVector<Value>(ifOp.getResults());
      });
}

void AttentionNest::writeState(ImplicitLocOpBuilder &b, const RowHead &at,
                               Value m, Value l) {
  AttentionState state(b, AttentionState::Flavor::exactBaseE);
  // A sink joins the denominator once, after every key.
  Value alpha;
  if (Value sink = variants.sinkLogit(b, at.head)) {
    kvir::codegen::PartialState merged = state.mergeSink(m, l, sink);
    m = merged.m;
    l = merged.l;
    alpha = merged.acc;
  }
  Type outElt = spec.resultType.getElementType();
  forLoop(b, zero, dimV, [&](ImplicitLocOpBuilder &b, Value d) {
    AttentionState inner(b, AttentionState::Flavor::exactBaseE);
    Value a = memref::LoadOp::create(b, acc, d);
    if (alpha)
      a = arith::MulFOp::create(b, a, alpha);
    Value o = inner.normalize(a, l);
    memref::StoreOp::create(b, fromF32(b, o, outElt), result.output,
                            ValueRange{at.row, at.head, d});
  });
  Value lse = state.finalLse(m, l, spec.resultType.getBase());
  memref::StoreOp::create(b, lse, result.lse, ValueRange{at.row, at.head});
}

} // namespace

static FailureOr<StateBuffers> emitAttention(ImplicitLocOpBuilder &b,
                                             const AttentionSpec &spec) {
  return AttentionNest(spec).emit(b);
}

static int64_t getQueryHeads(Value q) {
  return cast<MemRefType>(q.getType()).getDimSize(1);
}

template <typename OpTy>
static void setCommonAttrs(AttentionSpec &spec, OpTy op, int64_t headDim) {
  spec.smScale = op.getSmScale() ? op.getSmScale()->convertToDouble()
                                 : 1.0 / std::sqrt(static_cast<double>(headDim));
  if (auto cap = op.getLogitsSoftCap())
    spec.softCap = cap->convertToDouble();
  spec.windowLeft = op.getWindowLeft();
  spec.rope = op.getRopeAttr();
  spec.resultType = op.getType();
  spec.variants = op;
}

/// The spec of attention op `op` over `kv`, with its KV access resolved.
static FailureOr<AttentionSpec> specOver(Operation *op, Value kv) {
  FailureOr<KVAccess> access = KVAccess::get(op, kv);
  if (failed(access))
    return failure();
  AttentionSpec spec;
  spec.kv = *access;
  return spec;
}

FailureOr<StateBuffers> loops::lowerDecode(ImplicitLocOpBuilder &b,
                                           DecodeOp op) {
  FailureOr<AttentionSpec> specOr = specOver(op, op.getKv());
  if (failed(specOr))
    return failure();
  AttentionSpec &spec = *specOr;
  PagedType type = op.getKv().getType();
  spec.segments.push_back({op.getQ(), PoolRole::K, type.getHeadDim()});
  spec.headDimV = type.getHeadDimV();
  spec.qHeads = getQueryHeads(op.getQ());
  spec.groupSize = spec.qHeads / type.getKvHeads();
  spec.topk = op.getTopk();
  setCommonAttrs(spec, op, type.getHeadDim());
  return emitAttention(b, spec);
}

FailureOr<StateBuffers> loops::lowerPrefill(ImplicitLocOpBuilder &b,
                                            PrefillOp op) {
  FailureOr<AttentionSpec> specOr = specOver(op, op.getKv());
  if (failed(specOr))
    return failure();
  AttentionSpec &spec = *specOr;
  int64_t kvHeads, headDim, headDimV;
  if (auto paged = dyn_cast<PagedType>(op.getKv().getType())) {
    kvHeads = paged.getKvHeads();
    headDim = paged.getHeadDim();
    headDimV = paged.getHeadDimV();
  } else {
    auto ragged = cast<RaggedType>(op.getKv().getType());
    kvHeads = ragged.getKvHeads();
    headDim = ragged.getHeadDim();
    headDimV = ragged.getHeadDimV();
  }
  spec.segments.push_back({op.getQ(), PoolRole::K, headDim});
  spec.headDimV = headDimV;
  spec.qHeads = getQueryHeads(op.getQ());
  spec.groupSize = spec.qHeads / kvHeads;
  spec.qoIndptr = op.getQoIndptr();
  spec.mask = op.getMask();
  spec.positions = op.getPositions();
  spec.frameIndptr = op.getFrameIndptr();
  spec.framePositions = op.getFramePositions();
  spec.causal = op.getCausal();
  setCommonAttrs(spec, op, headDim);
  return emitAttention(b, spec);
}

FailureOr<StateBuffers> loops::lowerMlaDecode(ImplicitLocOpBuilder &b,
                                              MlaDecodeOp op) {
  FailureOr<AttentionSpec> specOr = specOver(op, op.getKv());
  if (failed(specOr))
    return failure();
  AttentionSpec &spec = *specOr;
  PagedType type = op.getKv().getType();
  // MLA: ckv (the K role) is both the no-PE key part and the value.
  spec.segments.push_back({op.getQNope(), PoolRole::K, type.getHeadDim()});
  spec.segments.push_back({op.getQPe(), PoolRole::V, type.getPeDim()});
  spec.valueRole = PoolRole::K;
  spec.headDimV = type.getHeadDim();
  spec.qHeads = getQueryHeads(op.getQNope());
  spec.groupSize = spec.qHeads;
  spec.qoIndptr = op.getQoIndptr();
  spec.causal = op.getCausal();
  spec.topk = op.getTopk();
  spec.smScale =
      op.getSmScale()
          ? op.getSmScale()->convertToDouble()
          : 1.0 / std::sqrt(static_cast<double>(type.getHeadDim() +
                                                type.getPeDim()));
  spec.resultType = op.getType();
  spec.variants = op;
  return emitAttention(b, spec);
}

LogicalResult loops::lowerCascadePositions(ImplicitLocOpBuilder &b,
                                           CascadePositionsOp op) {
  SmallVector<PagedOperands> levels;
  for (Value kv : op.getKvs()) {
    auto view = kv.getDefiningOp<PagedViewOp>();
    if (!view)
      return op.emitOpError()
             << "kv-to-loops needs its KV operands to be defined by "
             << "kv.paged_view in the same function";
    levels.push_back(PagedOperands::fromView(view));
  }
  SmallVector<Value> indptrs(op.getQoIndptrs());
  Value rows = memref::DimOp::create(b, op.getPositions(), 0);
  forLoop(b, indexConst(b, 0), rows, [&](ImplicitLocOpBuilder &b, Value row) {
    Value position = emitCascadeRowPosition(b, row, indptrs, levels);
    memref::StoreOp::create(
        b, arith::IndexCastOp::create(b, b.getI32Type(), position),
        op.getPositions(), ValueRange{row});
  });
  return success();
}
