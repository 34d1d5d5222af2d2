//===- PoolLayout.cpp - Where paged KV elements live ----------------------===//
#include "kvir/Dialect/KV/IR/PoolLayout.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace kvir::kv;

ArrayRef<StringRef> kvir::kv::getTableNames(TableForm form) {
  static const StringRef csr[] = {"kv_indptr", "kv_indices",
                                  "kv_last_page_len"};
  static const StringRef blockTable[] = {"block_table", "seq_lens"};
  static const StringRef tokenTable[] = {"cachestarts", "kv_lens"};
  switch (form) {
  case TableForm::csr:
    return csr;
  case TableForm::block_table:
    return blockTable;
  case TableForm::token_table:
  case TableForm::token_offset:
    return tokenTable;
  }
  llvm_unreachable("unknown table form");
}

int64_t kvir::kv::getVllmPackFactor(PagedType type) {
  return 16 / (type.getStorageElementType().getIntOrFloatBitWidth() / 8);
}

static bool isValueRole(PoolRole role) {
  return role == PoolRole::V || role == PoolRole::VScale;
}

static bool isScaleRole(PoolRole role) {
  return role == PoolRole::KScale || role == PoolRole::VScale;
}

/// Extent of the dim axis of a pool in `role`.
static int64_t getDimExtent(PagedType type, PoolRole role) {
  if (type.isMla())
    return isValueRole(role) ? type.getPeDim() : type.getHeadDim();
  int64_t d = isValueRole(role) ? type.getHeadDimV() : type.getHeadDim();
  return isScaleRole(role) ? d / type.getQuantGroup() : d;
}

SmallVector<int64_t> kvir::kv::getExpectedPoolShape(PagedType type,
                                                    PoolRole role) {
  const int64_t dyn = ShapedType::kDynamic;
  int64_t p = type.getPageSize(), h = type.getKvHeads();
  int64_t d = getDimExtent(type, role);
  bool combined = type.getStorage() == Storage::combined;
  if (type.isMla())
    return {dyn, p, d};
  switch (type.getLayout()) {
  case LayoutKind::nhd:
    if (combined)
      return {dyn, 2, p, h, d};
    return {dyn, p, h, d};
  case LayoutKind::hnd:
    if (combined)
      return {dyn, 2, h, p, d};
    return {dyn, h, p, d};
  case LayoutKind::vllm: {
    if (isValueRole(role))
      return {dyn, h, d, p};
    int64_t x = getVllmPackFactor(type);
    return {dyn, h, d / x, p, x};
  }
  case LayoutKind::ppl0:
    return {dyn, dyn, 2, h, d};
  case LayoutKind::ppl1:
    return {dyn, dyn, 2, h, d};
  case LayoutKind::ppl2:
    return {dyn, 2, dyn, h, d};
  case LayoutKind::ppl3:
    return {dyn, 2, h, dyn, d};
  case LayoutKind::llama:
    return {dyn, p, h, d};
  case LayoutKind::affine:
    return {};
  }
  llvm_unreachable("unknown layout");
}

AffineMap kvir::kv::getPoolIndexMap(PagedType type, PoolRole role) {
  MLIRContext *ctx = type.getContext();
  AffineExpr page, kv, slot, head, dim;
  bindDims(ctx, page, kv, slot, head, dim);
  auto map = [&](ArrayRef<AffineExpr> results) {
    return AffineMap::get(kNumLogicalDims, 0, results, ctx);
  };
  bool combined = type.getStorage() == Storage::combined;
  AffineExpr token = page * type.getPageSize() + slot;
  AffineExpr layer = getAffineConstantExpr(type.getLayer(), ctx);
  if (type.isMla())
    return map({page, slot, dim});
  switch (type.getLayout()) {
  case LayoutKind::nhd:
    if (combined)
      return map({page, kv, slot, head, dim});
    return map({page, slot, head, dim});
  case LayoutKind::hnd:
    if (combined)
      return map({page, kv, head, slot, dim});
    return map({page, head, slot, dim});
  case LayoutKind::vllm: {
    if (isValueRole(role))
      return map({page, head, dim, slot});
    int64_t x = getVllmPackFactor(type);
    return map({page, head, dim.floorDiv(x), slot, dim % x});
  }
  case LayoutKind::ppl0:
    return map({token, layer, kv, head, dim});
  case LayoutKind::ppl1:
    return map({layer, token, kv, head, dim});
  case LayoutKind::ppl2:
    return map({layer, kv, token, head, dim});
  case LayoutKind::ppl3:
    return map({layer, kv, head, token, dim});
  case LayoutKind::llama:
    return map({page, slot, head, dim});
  case LayoutKind::affine:
    if (isValueRole(role) && type.getVMap())
      return type.getVMap();
    return type.getKMap();
  }
  llvm_unreachable("unknown layout");
}

bool kvir::kv::isDimInnermost(PagedType type, PoolRole role) {
  AffineMap map = getPoolIndexMap(type, role);
  ArrayRef<AffineExpr> results = map.getResults();
  AffineExpr dim = getAffineDimExpr(4, map.getContext());
  return !results.empty() && results.back() == dim &&
         llvm::none_of(results.drop_back(),
                       [&](AffineExpr e) { return e.isFunctionOfDim(4); });
}

unsigned kvir::kv::getPoolOperandIndex(PagedType type, PoolRole role) {
  if (type.getStorage() == Storage::combined)
    return 0;
  return isValueRole(role) ? 1 : 0;
}

int64_t kvir::kv::getDimVectorWidth(PagedType type, PoolRole role,
                                    MemRefType pool, int64_t maxElements) {
  // Per pool axis: its stride if known exactly, and a number it is known to
  // be a multiple of. An identity layout with dynamic sizes still knows the
  // product of the static sizes inside each axis.
  int64_t rank = pool.getRank();
  SmallVector<int64_t> strides(rank), factors(rank);
  SmallVector<bool> exact(rank);
  if (pool.getLayout().isIdentity()) {
    int64_t running = 1;
    bool known = true;
    for (int64_t i = rank - 1; i >= 0; --i) {
      strides[i] = factors[i] = running;
      exact[i] = known;
      if (pool.isDynamicDim(i))
        known = false;
      else
        running *= pool.getDimSize(i);
    }
  } else {
    auto [s, offset] = pool.getStridesAndOffset();
    if (ShapedType::isDynamic(offset))
      return 1;
    for (int64_t i = 0; i < rank; ++i) {
      exact[i] = !ShapedType::isDynamic(s[i]);
      strides[i] = exact[i] ? s[i] : 1;
      factors[i] = exact[i] ? (s[i] ? std::abs(s[i]) : 1) : 1;
    }
    if (offset % maxElements) // Keep it simple: offsets must be aligned.
      return 1;
  }
  AffineMap map = getPoolIndexMap(type, role);
  SmallVector<bool> dependsOnDim;
  for (AffineExpr result : map.getResults())
    dependsOnDim.push_back(result.isFunctionOfDim(4));
  int64_t width = getDimExtent(type, role);
  int64_t kv = isValueRole(role) ? 1 : 0;
  SmallVector<int64_t> pages{0, 1, 3}, slots{0, 1, type.getPageSize() - 1};
  SmallVector<int64_t> heads{0, type.getKvHeads() - 1};
  // The part of the element offset that moves with the dim.
  auto dimOffset = [&](int64_t page, int64_t slot, int64_t head, int64_t dim) {
    SmallVector<int64_t, 4> idx =
        map.compose(ArrayRef<int64_t>{page, kv, slot, head, dim});
    int64_t off = 0;
    for (int64_t i = 0; i < rank; ++i)
      if (dependsOnDim[i])
        off += idx[i] * strides[i];
    return off;
  };
  for (int64_t w = maxElements; w > 1; w /= 2) {
    if (width % w)
      continue;
    bool ok = true;
    for (int64_t i = 0; ok && i < rank; ++i)
      ok = dependsOnDim[i] ? exact[i] : factors[i] % w == 0;
    for (int64_t page : pages)
      for (int64_t slot : slots)
        for (int64_t head : heads)
          for (int64_t d = 0; ok && d < width; d += w) {
            int64_t base = dimOffset(page, slot, head, d);
            ok = base % w == 0;
            for (int64_t i = 1; ok && i < w; ++i)
              ok = dimOffset(page, slot, head, d + i) == base + i;
          }
    if (ok)
      return w;
  }
  return 1;
}
