//===- KVOps.cpp - kv dialect operation verifiers -------------------------===//
#include "kvir/Dialect/KV/IR/KVOps.h"
#include "kvir/Dialect/KV/IR/PoolLayout.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace kvir::kv;

#define GET_OP_CLASSES
#include "kvir/Dialect/KV/IR/KVOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static bool compatibleDims(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

static std::string shapeString(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::interleave(
      shape, os,
      [&](int64_t d) {
        if (ShapedType::isDynamic(d))
          os << "?";
        else
          os << d;
      },
      "x");
  return s;
}

/// Checks that `value` is a memref of `rank` dims of the given element type
/// (null to skip); `what` names it in messages.
static LogicalResult verifyBuffer(Operation *op, Value value, StringRef what,
                                  unsigned rank, Type elementType) {
  auto type = dyn_cast<MemRefType>(value.getType());
  if (!type)
    return op->emitOpError() << what << " must be a ranked memref, got "
                             << value.getType();
  if (type.getRank() != rank)
    return op->emitOpError() << what << " must have rank " << rank << ", got "
                             << type;
  if (elementType && type.getElementType() != elementType)
    return op->emitOpError() << what << " must have element type "
                             << elementType << ", got " << type;
  return success();
}

static LogicalResult verifyI32Index(Operation *op, Value value, StringRef what,
                                    unsigned rank = 1) {
  return verifyBuffer(op, value, what, rank,
                      IntegerType::get(op->getContext(), 32));
}

/// A page table or offset array: i32, or i64 as OpenPPL's seqstarts,
/// kvstarts and cachestarts are.
static LogicalResult verifyIndexArray(Operation *op, Value value,
                                      StringRef what, unsigned rank = 1) {
  if (failed(verifyBuffer(op, value, what, rank, nullptr)))
    return failure();
  auto type = cast<MemRefType>(value.getType());
  if (!type.getElementType().isSignlessInteger(32) &&
      !type.getElementType().isSignlessInteger(64))
    return op->emitOpError() << what << " must have element type i32 or i64, "
                             << "got " << type;
  return success();
}

/// RoPE on an op over rows of `headDim`: pairs need an even head dim, and
/// rotary_dim cannot pass it.
static LogicalResult verifyRopeFits(Operation *op, RopeAttr rope,
                                    int64_t headDim) {
  if (headDim % 2)
    return op->emitOpError() << "rope needs an even head_dim, got " << headDim;
  if (rope.getRotaryDim() > headDim)
    return op->emitOpError() << "rope rotary_dim " << rope.getRotaryDim()
                             << " exceeds head_dim " << headDim;
  return success();
}

static LogicalResult verifyShape(Operation *op, MemRefType type,
                                 ArrayRef<int64_t> expected, StringRef what,
                                 StringRef because) {
  bool ok = type.getRank() == static_cast<int64_t>(expected.size());
  for (unsigned i = 0; ok && i < expected.size(); ++i)
    ok = compatibleDims(type.getDimSize(i), expected[i]);
  if (!ok)
    return op->emitOpError()
           << what << " has shape " << shapeString(type.getShape())
           << ", expected " << shapeString(expected) << " " << because;
  return success();
}

static unsigned getTableRank(TableForm form, unsigned index) {
  bool twoD = form == TableForm::block_table || form == TableForm::token_table;
  return twoD && index == 0 ? 2 : 1;
}

//===----------------------------------------------------------------------===//
// PagedViewOp
//===----------------------------------------------------------------------===//

int64_t PagedViewOp::getVectorWidth() {
  if (auto attr = (*this)->getAttrOfType<IntegerAttr>("kv.vector_width"))
    return attr.getInt();
  PagedType type = getType();
  int64_t maxElements =
      128 / type.getStorageElementType().getIntOrFloatBitWidth();
  int64_t width = maxElements;
  for (auto [i, pool] : llvm::enumerate(getPools())) {
    auto memref = cast<MemRefType>(pool.getType());
    // A combined pool holds both roles; split and MLA pools one each.
    SmallVector<PoolRole> roles{i == 0 ? PoolRole::K : PoolRole::V};
    if (type.getStorage() == Storage::combined)
      roles.push_back(PoolRole::V);
    for (PoolRole role : roles)
      width = std::min(width,
                       getDimVectorWidth(type, role, memref, maxElements));
  }
  return width;
}

LogicalResult PagedViewOp::verify() {
  PagedType type = getType();
  Operation *op = getOperation();
  StringRef storage = stringifyStorage(type.getStorage());
  if (getPools().size() != type.getNumPools())
    return emitOpError() << "storage = " << storage << " takes "
                         << type.getNumPools() << " pool memref(s), got "
                         << getPools().size();
  ArrayRef<StringRef> tableNames = getTableNames(type.getTable());
  if (getTables().size() != tableNames.size()) {
    auto diag = emitOpError() << "table = "
                              << stringifyTableForm(type.getTable())
                              << " takes " << tableNames.size() << " tables (";
    llvm::interleaveComma(tableNames, diag);
    return diag << "), got " << getTables().size();
  }
  for (auto [i, table] : llvm::enumerate(getTables()))
    if (failed(verifyIndexArray(op, table,
                                "table '" + tableNames[i].str() + "'",
                                getTableRank(type.getTable(), i))))
      return failure();

  if (getScales().size() != type.getNumScalePools())
    return emitOpError() << "quant = " << stringifyQuant(type.getQuant())
                         << " takes " << type.getNumScalePools()
                         << " scale pool(s), got " << getScales().size();
  if (static_cast<bool>(getKScale()) != static_cast<bool>(getVScale()))
    return emitOpError() << "fp8_scales takes both k_scale and v_scale, got "
                         << (getKScale() ? "only k_scale" : "only v_scale");
  if (type.isFp8() != static_cast<bool>(getKScale()))
    return emitOpError() << (type.isFp8() ? "fp8 caches need fp8_scales(k, v)"
                                          : "fp8_scales need an fp8 cache");

  static const StringRef poolNames[] = {"K", "V"};
  static const StringRef mlaNames[] = {"ckv", "kpe"};
  Type storageType = type.getStorageElementType();
  for (unsigned i = 0, e = getPools().size(); i < e; ++i) {
    StringRef name = type.isMla() ? mlaNames[i]
                     : e == 1     ? StringRef("pool")
                                  : poolNames[i];
    PoolRole role = i == 0 ? PoolRole::K : PoolRole::V;
    auto memref = dyn_cast<MemRefType>(getPools()[i].getType());
    if (!memref)
      return emitOpError() << name << " must be a ranked memref";
    if (memref.getElementType() != storageType)
      return emitOpError() << name << " has element type "
                           << memref.getElementType() << ", expected "
                           << storageType << " for dtype = " << type.getDtype()
                           << ", quant = " << stringifyQuant(type.getQuant());
    if (!memref.isStrided())
      return emitOpError() << name << " must have a strided layout";
    if (type.getLayout() == LayoutKind::affine) {
      AffineMap map = getPoolIndexMap(type, role);
      if (map.getNumResults() != memref.getRank())
        return emitOpError() << name << " has rank " << memref.getRank()
                             << " but its layout map has "
                             << map.getNumResults() << " results";
      continue;
    }
    std::string because =
        ("for layout = " + stringifyLayoutKind(type.getLayout()) +
         ", storage = " + storage + ", page_size = " +
         Twine(type.getPageSize()) + ", kv_heads = " + Twine(type.getKvHeads()))
            .str();
    if (failed(verifyShape(op, memref, getExpectedPoolShape(type, role), name,
                           because)))
      return failure();
    unsigned layerAxis = type.getLayout() == LayoutKind::ppl0 ? 1 : 0;
    bool ppl = type.getLayout() >= LayoutKind::ppl0 &&
               type.getLayout() <= LayoutKind::ppl3;
    if (ppl && !memref.isDynamicDim(layerAxis) &&
        type.getLayer() >= memref.getDimSize(layerAxis))
      return emitOpError() << "layer " << type.getLayer()
                           << " is out of range for a pool of "
                           << memref.getDimSize(layerAxis) << " layers";
  }
  for (auto [i, scale] : llvm::enumerate(getScales())) {
    PoolRole role = i == 0 ? PoolRole::KScale : PoolRole::VScale;
    auto memref = dyn_cast<MemRefType>(scale.getType());
    if (!memref || memref.getElementType() != type.getDtype())
      return emitOpError() << "scale pool #" << i
                           << " must be a memref of the dtype "
                           << type.getDtype() << ", got " << scale.getType();
    if (type.getLayout() == LayoutKind::affine) {
      if (memref.getRank() != getPoolIndexMap(type, role).getNumResults())
        return emitOpError() << "scale pool #" << i
                             << " rank does not match the layout map";
      continue;
    }
    if (failed(verifyShape(op, memref, getExpectedPoolShape(type, role),
                           "scale pool #" + Twine(i).str(),
                           "(the pool shape with head_dim / quant_group)")))
      return failure();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// RaggedViewOp
//===----------------------------------------------------------------------===//

LogicalResult RaggedViewOp::verify() {
  RaggedType type = getType();
  Operation *op = getOperation();
  if (failed(verifyBuffer(op, getK(), "k", 3, type.getDtype())) ||
      failed(verifyBuffer(op, getV(), "v", 3, type.getDtype())) ||
      failed(verifyIndexArray(op, getKvIndptr(), "kv_indptr")))
    return failure();
  const int64_t dyn = ShapedType::kDynamic;
  if (failed(verifyShape(op, cast<MemRefType>(getK().getType()),
                         {dyn, type.getKvHeads(), type.getHeadDim()}, "k",
                         "[nnz, kv_heads, head_dim]")) ||
      failed(verifyShape(op, cast<MemRefType>(getV().getType()),
                         {dyn, type.getKvHeads(), type.getHeadDimV()}, "v",
                         "[nnz, kv_heads, head_dim_v]")))
    return failure();
  int64_t nnzK = cast<MemRefType>(getK().getType()).getDimSize(0);
  int64_t nnzV = cast<MemRefType>(getV().getType()).getDimSize(0);
  if (!compatibleDims(nnzK, nnzV))
    return emitOpError() << "k has " << nnzK << " rows but v has " << nnzV
                         << "; ragged K and V must have the same nnz";
  return success();
}

//===----------------------------------------------------------------------===//
// Attention ops
//===----------------------------------------------------------------------===//

namespace {
/// The parameters of the KV an attention op reads.
struct KVShape {
  int64_t kvHeads, headDim, headDimV;
  Type dtype;
};
} // namespace

static KVShape getKVShape(Type kvType) {
  if (auto paged = dyn_cast<PagedType>(kvType))
    return {paged.getKvHeads(), paged.getHeadDim(), paged.getHeadDimV(),
            paged.getDtype()};
  auto ragged = cast<RaggedType>(kvType);
  return {ragged.getKvHeads(), ragged.getHeadDim(), ragged.getHeadDimV(),
          ragged.getDtype()};
}

/// Checks q[rows, Hq, D] and the result state against the KV, and the
/// optional attention attributes.
static LogicalResult
verifyAttention(Operation *op, Value q, const KVShape &kv, StateType result,
                std::optional<APFloat> smScale, std::optional<APFloat> softCap,
                std::optional<int64_t> windowLeft, RopeAttr rope) {
  if (failed(verifyBuffer(op, q, "q", 3, kv.dtype)))
    return failure();
  auto qType = cast<MemRefType>(q.getType());
  int64_t qHeads = qType.getDimSize(1);
  if (qType.isDynamicDim(1) || qType.isDynamicDim(2))
    return op->emitOpError() << "q must have static heads and head_dim, got "
                             << qType;
  if (qType.getDimSize(2) != kv.headDim)
    return op->emitOpError() << "q head_dim " << qType.getDimSize(2)
                             << " does not match the KV head_dim "
                             << kv.headDim;
  if (qHeads % kv.kvHeads)
    return op->emitOpError() << "query heads (" << qHeads
                             << ") must be a multiple of kv_heads ("
                             << kv.kvHeads << ")";
  if (result.isPartitioned())
    return op->emitOpError() << "produces a whole state; its result type must "
                             << "not have a partition axis";
  if (result.getHeads() != qHeads)
    return op->emitOpError() << "result has " << result.getHeads()
                             << " heads, expected " << qHeads
                             << " (the query heads)";
  if (result.getHeadDimV() != kv.headDimV)
    return op->emitOpError() << "result head_dim_v " << result.getHeadDimV()
                             << " does not match the KV head_dim_v "
                             << kv.headDimV;
  if (!compatibleDims(result.getRows(), qType.getDimSize(0)))
    return op->emitOpError() << "result has " << result.getRows()
                             << " rows but q has " << qType.getDimSize(0);
  if (smScale && !(smScale->convertToDouble() > 0.0))
    return op->emitOpError() << "sm_scale must be positive, got "
                             << smScale->convertToDouble();
  if (softCap && !(softCap->convertToDouble() > 0.0))
    return op->emitOpError() << "logits_soft_cap must be positive, got "
                             << softCap->convertToDouble();
  if (windowLeft && *windowLeft < 0)
    return op->emitOpError() << "window_left must be non-negative, got "
                             << *windowLeft << " (omit it for no window)";
  if (rope)
    return verifyRopeFits(op, rope, kv.headDim);
  return success();
}

/// An i32 vector of one entry per query row (of q, when ranked).
static LogicalResult verifyPerQueryRow(Operation *op, Value value,
                                       StringRef what, Value q) {
  if (failed(verifyI32Index(op, value, what)))
    return failure();
  auto qType = dyn_cast<MemRefType>(q.getType());
  auto type = cast<MemRefType>(value.getType());
  if (qType && qType.getRank() >= 1 &&
      !compatibleDims(type.getDimSize(0), qType.getDimSize(0)))
    return op->emitOpError() << what << " has " << type.getDimSize(0)
                             << " entries, expected one per query row ("
                             << qType.getDimSize(0) << ")";
  return success();
}

/// A sparse selection: i32 [rows, K], one row of K >= 1 entries per query
/// row (`rows` of q).
static LogicalResult verifyTopk(Operation *op, Value topk, int64_t rows) {
  if (!topk)
    return success();
  if (failed(verifyI32Index(op, topk, "topk", 2)))
    return failure();
  auto type = cast<MemRefType>(topk.getType());
  if (!compatibleDims(type.getDimSize(0), rows))
    return op->emitOpError()
           << "topk has " << type.getDimSize(0)
           << " rows, expected one per query row (" << rows << ")";
  if (type.getDimSize(1) == 0)
    return op->emitOpError() << "topk must list at least one key per row, got "
                             << type;
  return success();
}

LogicalResult DecodeOp::verify() {
  PagedType kv = getKv().getType();
  if (kv.isMla())
    return emitOpError() << "reads a K/V cache; use kv.mla_decode for MLA";
  auto q = dyn_cast<MemRefType>(getQ().getType());
  int64_t rows = q && q.getRank() >= 1 ? q.getDimSize(0) : ShapedType::kDynamic;
  if (failed(verifyTopk(getOperation(), getTopk(), rows)))
    return failure();
  return verifyAttention(getOperation(), getQ(), getKVShape(kv), getType(),
                         getSmScale(), getLogitsSoftCap(), getWindowLeft(),
                         getRopeAttr());
}

LogicalResult PrefillOp::verify() {
  if (auto paged = dyn_cast<PagedType>(getKv().getType()); paged && paged.isMla())
    return emitOpError() << "reads a K/V cache; use kv.mla_decode for MLA";
  Operation *op = getOperation();
  if (failed(verifyIndexArray(op, getQoIndptr(), "qo_indptr")))
    return failure();
  if (Value mask = getMask()) {
    if (failed(verifyBuffer(op, mask, "mask", 1, nullptr)))
      return failure();
    Type elt = cast<MemRefType>(mask.getType()).getElementType();
    if (!elt.isInteger(1) && !elt.isInteger(8))
      return emitOpError() << "mask must be i1 (one byte per bool) or i8 "
                           << "(bit-packed), got " << mask.getType();
  }
  if (Value positions = getPositions())
    if (failed(verifyPerQueryRow(op, positions, "positions", getQ())))
      return failure();
  if (bool(getFrameIndptr()) != bool(getFramePositions()))
    return emitOpError() << "frame needs both its indptr and its positions";
  if (Value framePositions = getFramePositions())
    if (failed(verifyI32Index(op, getFrameIndptr(), "frame indptr")) ||
        failed(
            verifyPerQueryRow(op, framePositions, "frame positions", getQ())))
      return failure();
  return verifyAttention(op, getQ(), getKVShape(getKv().getType()), getType(),
                         getSmScale(), getLogitsSoftCap(), getWindowLeft(),
                         getRopeAttr());
}

LogicalResult MlaDecodeOp::verify() {
  PagedType kv = getKv().getType();
  Operation *op = getOperation();
  if (!kv.isMla())
    return emitOpError() << "needs an MLA cache (storage = mla), got storage = "
                         << stringifyStorage(kv.getStorage());
  if (failed(verifyBuffer(op, getQNope(), "q_nope", 3, kv.getDtype())) ||
      failed(verifyBuffer(op, getQPe(), "q_pe", 3, kv.getDtype())))
    return failure();
  auto nope = cast<MemRefType>(getQNope().getType());
  auto pe = cast<MemRefType>(getQPe().getType());
  if (nope.isDynamicDim(1) || nope.isDynamicDim(2) || pe.isDynamicDim(1) ||
      pe.isDynamicDim(2))
    return emitOpError() << "q_nope and q_pe must have static heads and "
                         << "widths, got " << nope << " and " << pe;
  if (nope.getDimSize(2) != kv.getHeadDim())
    return emitOpError() << "q_nope width " << nope.getDimSize(2)
                         << " does not match the ckv width "
                         << kv.getHeadDim();
  if (pe.getDimSize(2) != kv.getPeDim())
    return emitOpError() << "q_pe width " << pe.getDimSize(2)
                         << " does not match the kpe width " << kv.getPeDim();
  if (nope.getDimSize(1) != pe.getDimSize(1) ||
      !compatibleDims(nope.getDimSize(0), pe.getDimSize(0)))
    return emitOpError() << "q_nope " << nope << " and q_pe " << pe
                         << " must have the same rows and heads";
  StateType result = getType();
  if (result.isPartitioned() || result.getHeads() != nope.getDimSize(1) ||
      result.getHeadDimV() != kv.getHeadDim() ||
      !compatibleDims(result.getRows(), nope.getDimSize(0)))
    return emitOpError() << "result type " << result
                         << " must be a state without partitions of "
                         << shapeString(nope.getShape().take_front())
                         << " rows, " << nope.getDimSize(1)
                         << " heads and head_dim_v " << kv.getHeadDim();
  if (auto scale = getSmScale(); scale && !(scale->convertToDouble() > 0.0))
    return emitOpError() << "sm_scale must be positive, got "
                         << scale->convertToDouble();
  if (Value qo = getQoIndptr()) {
    if (failed(verifyI32Index(op, qo, "qo_indptr")))
      return failure();
  } else if (getCausal()) {
    return emitOpError() << "causal needs rows(qo_indptr): with one query "
                         << "row per request every key is visible";
  }
  return verifyTopk(op, getTopk(), nope.getDimSize(0));
}

/// The levels of a cascade (kv.cascade, kv.cascade_positions): at least
/// one, a qo_indptr (i32) per KV level, no MLA cache.
static LogicalResult verifyCascadeLevels(Operation *op, ValueRange indptrs,
                                         ValueRange kvs) {
  if (kvs.empty())
    return op->emitOpError() << "needs at least one level";
  if (indptrs.size() != kvs.size())
    return op->emitOpError() << "has " << indptrs.size()
                             << " qo_indptr levels but " << kvs.size()
                             << " KV levels";
  for (auto [i, indptr] : llvm::enumerate(indptrs))
    if (failed(verifyI32Index(op, indptr,
                              "qo_indptr of level " + Twine(i).str())))
      return failure();
  for (auto [i, kv] : llvm::enumerate(kvs))
    if (cast<PagedType>(kv.getType()).isMla())
      return op->emitOpError() << "levels must be K/V caches, but level " << i
                               << " is an MLA cache";
  return success();
}

LogicalResult CascadeOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyCascadeLevels(op, getQoIndptrs(), getKvs())))
    return failure();
  auto first = cast<PagedType>(getKvs()[0].getType());
  for (auto [i, kv] : llvm::enumerate(getKvs())) {
    auto type = cast<PagedType>(kv.getType());
    if (type.getKvHeads() != first.getKvHeads() ||
        type.getHeadDim() != first.getHeadDim() ||
        type.getHeadDimV() != first.getHeadDimV() ||
        type.getDtype() != first.getDtype())
      return emitOpError() << "level " << i << " KV " << type
                           << " differs from level 0 in heads, head dims or "
                           << "dtype";
  }
  return verifyAttention(op, getQ(), getKVShape(first), getType(),
                         getSmScale(), getLogitsSoftCap(), getWindowLeft(),
                         getRopeAttr());
}

LogicalResult CascadePositionsOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyCascadeLevels(op, getQoIndptrs(), getKvs())))
    return failure();
  return verifyI32Index(op, getPositions(), "positions");
}

LogicalResult AppendOp::verify() {
  PagedType kv = getKv().getType();
  Operation *op = getOperation();
  if (kv.isMla() && getRopeAttr())
    return emitOpError() << "rope on an MLA append is not supported (kpe "
                         << "arrives rotated, as FlashInfer's "
                         << "append_paged_mla_kv_cache takes it)";
  if (failed(verifyBuffer(op, getK(), "k", 3, kv.getDtype())) ||
      failed(verifyBuffer(op, getV(), "v", 3, kv.getDtype())) ||
      failed(verifyI32Index(op, getBatchIndices(), "batch_indices")) ||
      failed(verifyI32Index(op, getPositions(), "positions")))
    return failure();
  const int64_t dyn = ShapedType::kDynamic;
  // MLA: k is the latent ckv, v the rotary kpe.
  if (failed(verifyShape(op, cast<MemRefType>(getK().getType()),
                         {dyn, kv.getKvHeads(), kv.getHeadDim()}, "k",
                         kv.isMla() ? "[nnz, 1, head_dim] (ckv)"
                                    : "[nnz, kv_heads, head_dim]")) ||
      failed(verifyShape(op, cast<MemRefType>(getV().getType()),
                         {dyn, kv.getKvHeads(),
                          kv.isMla() ? kv.getPeDim() : kv.getHeadDimV()},
                         "v",
                         kv.isMla() ? "[nnz, 1, pe_dim] (kpe)"
                                    : "[nnz, kv_heads, head_dim_v]")))
    return failure();
  // k, v, batch_indices and positions all have one entry per new row.
  std::pair<Value, StringRef> rows[] = {{getK(), "k"},
                                        {getV(), "v"},
                                        {getBatchIndices(), "batch_indices"},
                                        {getPositions(), "positions"}};
  int64_t nnz = dyn;
  StringRef nnzFrom;
  for (auto [value, name] : rows) {
    int64_t size = cast<MemRefType>(value.getType()).getDimSize(0);
    if (ShapedType::isDynamic(size))
      continue;
    if (!ShapedType::isDynamic(nnz) && size != nnz)
      return emitOpError() << name << " has " << size << " rows but "
                           << nnzFrom << " has " << nnz
                           << "; every operand has one entry per new row";
    nnz = size;
    nnzFrom = name;
  }
  if (RopeAttr rope = getRopeAttr())
    return verifyRopeFits(getOperation(), rope, kv.getHeadDim());
  return success();
}

//===----------------------------------------------------------------------===//
// State ops
//===----------------------------------------------------------------------===//

LogicalResult MergeOp::verify() {
  if (getStates().empty())
    return emitOpError() << "needs at least one state";
  StateType result = getType();
  if (result.isPartitioned())
    return emitOpError() << "merges whole states, got " << result
                         << "; reduce a partition axis with "
                         << "kv.merge_partitions first";
  for (auto [i, state] : llvm::enumerate(getStates())) {
    auto type = cast<StateType>(state.getType());
    if (type.getBase() != result.getBase())
      return emitOpError() << "cannot merge a state of LSE base "
                           << (type.getBase() == LseBase::e ? "e" : "2")
                           << " into one of base "
                           << (result.getBase() == LseBase::e ? "e" : "2")
                           << " (operand #" << i << "); convert it with "
                           << "kv.rebase";
    if (type != result)
      return emitOpError() << "operand #" << i << " has type " << type
                           << ", expected the result type " << result;
  }
  return success();
}

LogicalResult MergePartitionsOp::verify() {
  StateType input = getInput().getType();
  if (!input.isPartitioned())
    return emitOpError() << "input " << input << " has no partition axis";
  if (getType() != input.withoutPartitions())
    return emitOpError() << "result must be " << input.withoutPartitions()
                         << ", got " << getType();
  return success();
}

LogicalResult RebaseOp::verify() {
  StateType input = getInput().getType();
  if (getType() != input.withBase(getType().getBase()))
    return emitOpError() << "may change only the LSE base; " << input
                         << " cannot become " << getType();
  return success();
}

LogicalResult EmptyStateOp::verify() {
  StateType type = getType();
  unsigned dynamic = ShapedType::isDynamic(type.getRows()) +
                     ShapedType::isDynamic(type.getPartitions());
  if (getDynamicSizes().size() != dynamic)
    return emitOpError() << type << " has " << dynamic
                         << " dynamic size(s), got " << getDynamicSizes().size()
                         << " size operand(s)";
  return success();
}

/// Checks output/LSE buffers against a state type.
static LogicalResult verifyStateBuffers(Operation *op, StateType state,
                                        Value output, Value lse) {
  auto outType = dyn_cast<MemRefType>(output.getType());
  if (!outType || outType.getElementType() != state.getElementType())
    return op->emitOpError() << "output buffer must be a memref of "
                             << state.getElementType() << ", got "
                             << output.getType();
  if (failed(verifyShape(op, outType, state.getOutputShape(), "output buffer",
                         "([partitions,] rows, heads, head_dim_v)")))
    return failure();
  if (!lse)
    return success();
  auto lseType = dyn_cast<MemRefType>(lse.getType());
  if (!lseType || !lseType.getElementType().isF32())
    return op->emitOpError() << "lse buffer must be a memref of f32, got "
                             << lse.getType();
  return verifyShape(op, lseType, state.getLseShape(), "lse buffer",
                     "([partitions,] rows, heads)");
}

LogicalResult LoadStateOp::verify() {
  return verifyStateBuffers(getOperation(), getType(), getOutput(), getLse());
}

LogicalResult StoreStateOp::verify() {
  return verifyStateBuffers(getOperation(), getState().getType(), getOutput(),
                            getLse());
}
