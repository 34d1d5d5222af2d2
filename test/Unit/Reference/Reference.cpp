//===- Reference.cpp - Double-precision reference of docs/Semantics.md ===//
//
// Written from docs/Semantics.md only. Every quantity is a double; inputs
// are the exact values of the stored elements, so the only differences from
// a correct f32 kernel are the kernel's own roundings.
//
//===----------------------------------------------------------------------===//
#include "Reference.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/MLIRContext.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <sstream>

using namespace kvir::ref;
using kvir::test::byteSize;
using kvir::test::decode;
using kvir::test::encode;
using kvir::test::encodeFp8Saturating;

static constexpr double kInf = std::numeric_limits<double>::infinity();

[[noreturn]] static void fatal(const std::string &message) {
  std::fprintf(stderr, "reference: %s\n", message.c_str());
  std::abort();
}

//===----------------------------------------------------------------------===//
// Layouts
//===----------------------------------------------------------------------===//

DType CacheSpec::storageType() const {
  switch (quant) {
  case Quant::None:
    return dtype;
  case Quant::Int8Group:
    return DType::I8;
  case Quant::FP8E4M3:
    return DType::F8E4M3;
  case Quant::FP8E5M2:
    return DType::F8E5M2;
  }
  fatal("unknown quant");
}

static bool isValueRole(Role role) {
  return role == Role::V || role == Role::VScale;
}
static bool isScaleRole(Role role) {
  return role == Role::KScale || role == Role::VScale;
}

int64_t CacheSpec::dimExtent(Role role) const {
  if (isMla())
    return isValueRole(role) ? peDim : headDim;
  int64_t d = isValueRole(role) ? headDimV : headDim;
  return isScaleRole(role) ? d / quantGroup : d;
}

Index kvir::ref::evaluateAffineMap(mlir::AffineMap map, const Index &dims) {
  std::function<int64_t(mlir::AffineExpr)> eval =
      [&](mlir::AffineExpr expr) -> int64_t {
    if (auto d = mlir::dyn_cast<mlir::AffineDimExpr>(expr))
      return dims.at(d.getPosition());
    if (auto c = mlir::dyn_cast<mlir::AffineConstantExpr>(expr))
      return c.getValue();
    auto bin = mlir::cast<mlir::AffineBinaryOpExpr>(expr);
    int64_t l = eval(bin.getLHS()), r = eval(bin.getRHS());
    switch (expr.getKind()) {
    case mlir::AffineExprKind::Add:
      return l + r;
    case mlir::AffineExprKind::Mul:
      return l * r;
    case mlir::AffineExprKind::FloorDiv:
      return l >= 0 ? l / r : -((-l + r - 1) / r);
    case mlir::AffineExprKind::CeilDiv:
      return l >= 0 ? (l + r - 1) / r : -((-l) / r);
    case mlir::AffineExprKind::Mod:
      return ((l % r) + r) % r;
    default:
      fatal("unexpected affine expression");
    }
  };
  Index out;
  for (mlir::AffineExpr result : map.getResults())
    out.push_back(eval(result));
  return out;
}

mlir::AffineMap kvir::ref::parseAffineMap(const std::string &text) {
  static mlir::MLIRContext context;
  mlir::Attribute attr =
      mlir::parseAttribute("affine_map<" + text + ">", &context);
  auto mapAttr = mlir::dyn_cast_or_null<mlir::AffineMapAttr>(attr);
  if (!mapAttr)
    fatal("cannot parse affine map " + text);
  return mapAttr.getValue();
}

Index kvir::ref::poolIndex(const CacheSpec &s, Role role, int64_t page,
                           int64_t slot, int64_t head, int64_t dim) {
  int64_t kv = isValueRole(role) ? 1 : 0;
  bool combined = s.storage == Storage::Combined;
  int64_t token = page * s.pageSize + slot;
  int64_t l = s.layer;
  if (s.isMla())
    return {page, slot, dim};
  switch (s.layout) {
  case Layout::NHD:
    if (combined)
      return {page, kv, slot, head, dim};
    return {page, slot, head, dim};
  case Layout::HND:
    if (combined)
      return {page, kv, head, slot, dim};
    return {page, head, slot, dim};
  case Layout::VLLM: {
    if (kv)
      return {page, head, dim, slot};
    // x elements of the storage type fill 16 bytes.
    int64_t x = 16 / static_cast<int64_t>(byteSize(s.storageType()));
    return {page, head, dim / x, slot, dim % x};
  }
  case Layout::PPL0:
    return {token, l, kv, head, dim};
  case Layout::PPL1:
    return {l, token, kv, head, dim};
  case Layout::PPL2:
    return {l, kv, token, head, dim};
  case Layout::PPL3:
    return {l, kv, head, token, dim};
  case Layout::Llama:
    // [max_batch, max_seq, H, D]: a "page" is a batch row of max_seq slots.
    return {page, slot, head, dim};
  case Layout::Affine: {
    mlir::AffineMap map = kv && s.vMap ? s.vMap : s.kMap;
    return evaluateAffineMap(map, {page, kv, slot, head, dim});
  }
  }
  fatal("unknown layout");
}

Index kvir::ref::poolShape(const CacheSpec &s, Role role, int64_t numPages,
                           int64_t numLayers) {
  int64_t p = s.pageSize, h = s.kvHeads, d = s.dimExtent(role);
  int64_t t = numPages * p;
  bool combined = s.storage == Storage::Combined;
  if (s.isMla())
    return {numPages, p, d};
  switch (s.layout) {
  case Layout::NHD:
    if (combined)
      return {numPages, 2, p, h, d};
    return {numPages, p, h, d};
  case Layout::HND:
    if (combined)
      return {numPages, 2, h, p, d};
    return {numPages, h, p, d};
  case Layout::VLLM: {
    if (isValueRole(role))
      return {numPages, h, d, p};
    int64_t x = 16 / static_cast<int64_t>(byteSize(s.storageType()));
    return {numPages, h, d / x, p, x};
  }
  case Layout::PPL0:
    return {t, numLayers, 2, h, d};
  case Layout::PPL1:
    return {numLayers, t, 2, h, d};
  case Layout::PPL2:
    return {numLayers, 2, t, h, d};
  case Layout::PPL3:
    return {numLayers, 2, h, t, d};
  case Layout::Llama:
    return {numPages, p, h, d};
  case Layout::Affine:
    fatal("affine pools have user-chosen shapes");
  }
  fatal("unknown layout");
}

//===----------------------------------------------------------------------===//
// Tables
//===----------------------------------------------------------------------===//

static int64_t at(const Tensor &t, int64_t i) { return t.get({i}); }
static int64_t at(const Tensor &t, int64_t i, int64_t j) {
  return t.get({i, j});
}

int64_t PagedCache::numRequests() const {
  if (spec.table == Table::CSR)
    return tables.at(2).dim(0);
  return tables.at(1).dim(0);
}

int64_t PagedCache::kvLen(int64_t b) const {
  if (spec.table != Table::CSR)
    return at(tables[1], b);
  // kv_len = page_size * (n - 1) + last_page_len for n > 0 pages; n == 0 is
  // an empty request.
  int64_t n = at(tables[0], b + 1) - at(tables[0], b);
  if (n <= 0)
    return 0;
  return spec.pageSize * (n - 1) + at(tables[2], b);
}

std::pair<int64_t, int64_t> PagedCache::locate(int64_t b, int64_t t) const {
  int64_t p = spec.pageSize;
  switch (spec.table) {
  case Table::CSR:
    return {at(tables[1], at(tables[0], b) + t / p), t % p};
  case Table::BlockTable:
    return {at(tables[0], b, t / p), t % p};
  case Table::TokenTable: {
    int64_t token = at(tables[0], b, t / p) + t % p;
    return {token / p, token % p};
  }
  case Table::TokenOffset: {
    int64_t token = at(tables[0], b) + t;
    return {token / p, token % p};
  }
  }
  fatal("unknown table form");
}

const Tensor &PagedCache::pool(Role role) const {
  bool second = spec.storage != Storage::Combined && isValueRole(role);
  if (isScaleRole(role))
    return scales.at(second ? 1 : 0);
  return pools.at(second ? 1 : 0);
}

Tensor &PagedCache::pool(Role role) {
  return const_cast<Tensor &>(static_cast<const PagedCache *>(this)->pool(role));
}

double PagedCache::load(Role role, int64_t b, int64_t t, int64_t head,
                        int64_t dim) const {
  auto [page, slot] = locate(b, t);
  double raw = pool(role).get(poolIndex(spec, role, page, slot, head, dim));
  switch (spec.quant) {
  case Quant::None:
    return raw;
  case Quant::Int8Group: {
    Role scaleRole = role == Role::K ? Role::KScale : Role::VScale;
    double scale = pool(scaleRole).get(
        poolIndex(spec, scaleRole, page, slot, head, dim / spec.quantGroup));
    return raw * scale;
  }
  case Quant::FP8E4M3:
  case Quant::FP8E5M2:
    // An MLA cache is one latent tensor (ckv and kpe): it has one scale,
    // k_scale, as vLLM's MLA fp8 cache.
    return raw * (role == Role::K || spec.isMla() ? static_cast<double>(kScale)
                                                  : static_cast<double>(vScale));
  }
  fatal("unknown quant");
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

/// The dims RoPE rotates of a head dim `headDim`.
static int64_t rotatedDims(const Rope &rope, int64_t headDim) {
  return rope.rotaryDim ? rope.rotaryDim : headDim;
}

/// The dims rotated together as pair i, and its angle at `position`.
static void ropePair(const Rope &rope, int64_t headDim, int64_t i,
                     int64_t position, int64_t &a, int64_t &b, double &angle) {
  int64_t r = rotatedDims(rope, headDim);
  if (rope.style == RopeStyle::Interleave) {
    a = 2 * i;
    b = 2 * i + 1;
  } else {
    a = i;
    b = i + r / 2;
  }
  double freq = std::pow(rope.theta, -2.0 * static_cast<double>(i) /
                                         static_cast<double>(r));
  if (rope.factor > 0.0) {
    // Meta's apply_scaling (Llama 3.1), as written there.
    double wavelen = 2.0 * M_PI / freq;
    double lowWavelen = rope.originalMaxPosition / rope.lowFreqFactor;
    double highWavelen = rope.originalMaxPosition / rope.highFreqFactor;
    if (wavelen > lowWavelen) {
      freq /= rope.factor;
    } else if (wavelen >= highWavelen) {
      double smooth =
          (rope.originalMaxPosition / wavelen - rope.lowFreqFactor) /
          (rope.highFreqFactor - rope.lowFreqFactor);
      freq = (1.0 - smooth) * freq / rope.factor + smooth * freq;
    }
  }
  angle = static_cast<double>(position) * rope.scale * freq;
}

void kvir::ref::applyRope(const Rope &rope, std::vector<double> &x,
                          int64_t position) {
  int64_t d = rotatedDims(rope, x.size());
  for (int64_t i = 0; i < d / 2; ++i) {
    int64_t a, b;
    double angle;
    ropePair(rope, d, i, position, a, b, angle);
    double c = std::cos(angle), s = std::sin(angle);
    double xa = x[a], xb = x[b];
    x[a] = xa * c - xb * s;
    x[b] = xb * c + xa * s;
  }
}

State::State(int64_t rows, int64_t heads, int64_t headDimV, Base base)
    : rows(rows), heads(heads), headDimV(headDimV), base(base),
      o(rows * heads * headDimV, 0.0), lse(rows * heads, -kInf) {}

void kvir::ref::stateFromLogits(const std::vector<double> &logits,
                                const std::vector<std::vector<double>> &values,
                                Base base, double *o, double &lse,
                                std::optional<double> sink) {
  size_t dv = values.empty() ? 0 : values.front().size();
  if (logits.empty() && !sink) {
    lse = -kInf;
    return; // o stays 0
  }
  double m = sink ? *sink : -kInf;
  for (double s : logits)
    m = std::max(m, s);
  double sum = sink ? std::exp(*sink - m) : 0.0;
  for (double s : logits)
    sum += std::exp(s - m);
  for (size_t d = 0; d < dv; ++d) {
    double acc = 0.0;
    for (size_t j = 0; j < logits.size(); ++j)
      acc += std::exp(logits[j] - m) * values[j][d];
    o[d] = acc / sum;
  }
  double lseE = m + std::log(sum);
  lse = base == Base::Two ? lseE / std::log(2.0) : lseE;
}

namespace {
/// The custom mask's bits, request by request.
class MaskReader {
public:
  explicit MaskReader(const Tensor *mask) : mask(mask) {}
  bool bit(int64_t i, int64_t j, int64_t kvLen) const {
    if (!mask)
      return true;
    int64_t k = i * kvLen + j;
    if (mask->dtype() == DType::I1)
      return mask->getBits({offset + k}) != 0;
    uint64_t byte = mask->getBits({offset + k / 8});
    return (byte >> (k % 8)) & 1;
  }
  /// Moves past a request's qoLen x kvLen block.
  void next(int64_t qoLen, int64_t kvLen) {
    int64_t bits = qoLen * kvLen;
    offset += mask && mask->dtype() == DType::I8 ? (bits + 7) / 8 : bits;
  }

private:
  const Tensor *mask;
  int64_t offset = 0;
};
} // namespace

bool AttentionParams::selects(int64_t row, int64_t j) const {
  if (topk.empty())
    return true;
  const std::vector<int32_t> &listed = topk.at(row);
  return std::find(listed.begin(), listed.end(), j) != listed.end();
}

State kvir::ref::attention(const Tensor &q, const std::vector<int32_t> &qoIndptr,
                           const KVSource &kv, const AttentionParams &params) {
  int64_t rows = q.dim(0), qHeads = q.dim(1);
  int64_t d = kv.headDim(), dv = kv.headDimV();
  if (q.dim(2) != d || qHeads % kv.kvHeads())
    fatal("q does not match the KV");
  int64_t group = qHeads / kv.kvHeads();
  State state(rows, qHeads, dv, params.base);
  double smScale = params.smScale.value_or(1.0 / std::sqrt(double(d)));
  bool decode = qoIndptr.empty();
  int64_t numRequests = decode ? rows : int64_t(qoIndptr.size()) - 1;
  if (numRequests != kv.numRequests())
    fatal("q and KV disagree on the number of requests");
  MaskReader mask(params.mask);

  for (int64_t b = 0; b < numRequests; ++b) {
    int64_t qoStart = decode ? b : qoIndptr[b];
    int64_t qoLen = decode ? 1 : qoIndptr[b + 1] - qoStart;
    int64_t kvLen = kv.kvLen(b);
    for (int64_t kvHead = 0; kvHead < kv.kvHeads(); ++kvHead) {
      // This request's keys (rotated to their positions) and values.
      std::vector<std::vector<double>> keys(kvLen, std::vector<double>(d));
      std::vector<std::vector<double>> values(kvLen, std::vector<double>(dv));
      for (int64_t j = 0; j < kvLen; ++j) {
        for (int64_t x = 0; x < d; ++x)
          keys[j][x] = kv.key(b, j, kvHead, x);
        for (int64_t x = 0; x < dv; ++x)
          values[j][x] = kv.value(b, j, kvHead, x);
        if (params.rope)
          applyRope(*params.rope, keys[j], j);
      }
      for (int64_t i = 0; i < qoLen; ++i) {
        int64_t row = qoStart + i;
        // Bottom-right alignment, unless positions are given.
        int64_t pos = params.positions.empty() ? kvLen - qoLen + i
                                               : params.positions.at(row);
        for (int64_t h = kvHead * group; h < (kvHead + 1) * group; ++h) {
          std::vector<double> qv(d);
          for (int64_t x = 0; x < d; ++x)
            qv[x] = q.get({row, h, x});
          if (params.rope)
            applyRope(*params.rope, qv, pos);
          std::vector<double> logits;
          std::vector<std::vector<double>> visibleValues;
          for (int64_t j = 0; j < kvLen; ++j) {
            if (params.causal && j > pos)
              continue;
            if (params.windowLeft && j < pos - *params.windowLeft)
              continue;
            if (!mask.bit(i, j, kvLen))
              continue;
            if (params.maskMod && !params.maskMod(b, h, pos, j))
              continue;
            if (!params.selects(row, j))
              continue;
            double dot = 0.0;
            for (int64_t x = 0; x < d; ++x)
              dot += qv[x] * keys[j][x];
            double s = smScale * dot;
            if (!params.alibiSlopes.empty())
              s += params.alibiSlopes.at(h) * double(j - pos);
            if (params.scoreMod)
              s = params.scoreMod(s, b, h, pos, j);
            if (params.softCap)
              s = *params.softCap * std::tanh(s / *params.softCap);
            logits.push_back(s);
            visibleValues.push_back(values[j]);
          }
          std::optional<double> sink;
          if (!params.sinks.empty())
            sink = params.sinks.at(h);
          stateFromLogits(logits, visibleValues, params.base,
                          &state.out(row, h, 0), state.lseAt(row, h), sink);
        }
      }
    }
    mask.next(qoLen, kvLen);
  }
  return state;
}

State kvir::ref::mlaDecode(const Tensor &qNope, const Tensor &qPe,
                           const PagedCache &kv, std::optional<double> smScale,
                           Base base, const std::vector<int32_t> &qoIndptr,
                           bool causal, const AttentionParams &variants) {
  const CacheSpec &s = kv.spec;
  int64_t rows = qNope.dim(0), heads = qNope.dim(1);
  int64_t dc = s.headDim, dp = s.peDim;
  double scale = smScale.value_or(1.0 / std::sqrt(double(dc + dp)));
  State state(rows, heads, dc, base);
  std::vector<int32_t> indptr = qoIndptr;
  if (indptr.empty())
    for (int64_t b = 0; b <= rows; ++b)
      indptr.push_back(b);
  if (int64_t(indptr.size()) != kv.numRequests() + 1 || indptr.back() != rows)
    fatal("MLA: qo_indptr does not match the requests and rows");
  for (int64_t b = 0; b < kv.numRequests(); ++b) {
    int64_t kvLen = kv.kvLen(b);
    std::vector<std::vector<double>> ckv(kvLen, std::vector<double>(dc));
    std::vector<std::vector<double>> kpe(kvLen, std::vector<double>(dp));
    for (int64_t j = 0; j < kvLen; ++j) {
      for (int64_t x = 0; x < dc; ++x)
        ckv[j][x] = kv.load(Role::K, b, j, 0, x);
      for (int64_t x = 0; x < dp; ++x)
        kpe[j][x] = kv.load(Role::V, b, j, 0, x);
    }
    int64_t qoLen = indptr[b + 1] - indptr[b];
    for (int64_t i = 0; i < qoLen; ++i) {
      int64_t row = indptr[b] + i;
      int64_t visible = causal ? std::clamp<int64_t>(kvLen - qoLen + i + 1, 0,
                                                     kvLen)
                               : kvLen;
      int64_t pos = kvLen - qoLen + i;
      for (int64_t h = 0; h < heads; ++h) {
        std::vector<double> logits;
        std::vector<std::vector<double>> values;
        for (int64_t j = 0; j < visible; ++j) {
          if (variants.maskMod && !variants.maskMod(b, h, pos, j))
            continue;
          if (!variants.selects(row, j))
            continue;
          double dot = 0.0;
          for (int64_t x = 0; x < dc; ++x)
            dot += qNope.get({row, h, x}) * ckv[j][x];
          for (int64_t x = 0; x < dp; ++x)
            dot += qPe.get({row, h, x}) * kpe[j][x];
          double s = scale * dot;
          if (!variants.alibiSlopes.empty())
            s += variants.alibiSlopes.at(h) * double(j - pos);
          if (variants.scoreMod)
            s = variants.scoreMod(s, b, h, pos, j);
          logits.push_back(s);
          values.push_back(ckv[j]);
        }
        std::optional<double> sink;
        if (!variants.sinks.empty())
          sink = variants.sinks.at(h);
        stateFromLogits(logits, values, base, &state.out(row, h, 0),
                        state.lseAt(row, h), sink);
      }
    }
  }
  return state;
}

namespace {
/// The keys of a cascade's last-level request r: its level-0 request's keys,
/// then its level-1 request's, ... (each row of r belongs to one request of
/// every level).
class ConcatenatedLevels : public KVSource {
public:
  ConcatenatedLevels(const std::vector<std::vector<int32_t>> &qoIndptrs,
                     const std::vector<const KVSource *> &levels)
      : levels(levels) {
    const std::vector<int32_t> &last = qoIndptrs.back();
    pieces.resize(last.size() - 1);
    for (size_t r = 0; r + 1 < last.size(); ++r) {
      int32_t begin = last[r], end = last[r + 1];
      for (size_t l = 0; l < levels.size(); ++l) {
        // The level-l request holding rows [begin, end); a request without
        // rows takes request 0 (its keys are never read).
        const std::vector<int32_t> &indptr = qoIndptrs[l];
        int64_t b = 0;
        if (end > begin) {
          while (b + 1 < int64_t(indptr.size()) && indptr[b + 1] <= begin)
            ++b;
          if (b + 1 >= int64_t(indptr.size()) || end > indptr[b + 1])
            fatal("a cascade's last-level request is not within one request "
                  "of every level");
        }
        pieces[r].push_back({l, b, levels[l]->kvLen(b)});
      }
    }
  }
  int64_t numRequests() const override { return pieces.size(); }
  int64_t kvLen(int64_t r) const override {
    int64_t n = 0;
    for (const Piece &p : pieces[r])
      n += p.len;
    return n;
  }
  int64_t kvHeads() const override { return levels[0]->kvHeads(); }
  int64_t headDim() const override { return levels[0]->headDim(); }
  int64_t headDimV() const override { return levels[0]->headDimV(); }
  double key(int64_t r, int64_t t, int64_t h, int64_t d) const override {
    auto [p, local] = locate(r, t);
    return levels[p->level]->key(p->request, local, h, d);
  }
  double value(int64_t r, int64_t t, int64_t h, int64_t d) const override {
    auto [p, local] = locate(r, t);
    return levels[p->level]->value(p->request, local, h, d);
  }

private:
  struct Piece {
    size_t level;
    int64_t request, len;
  };
  std::pair<const Piece *, int64_t> locate(int64_t r, int64_t t) const {
    for (const Piece &p : pieces[r]) {
      if (t < p.len)
        return {&p, t};
      t -= p.len;
    }
    fatal("cascade key index past the concatenation");
  }
  const std::vector<const KVSource *> &levels;
  std::vector<std::vector<Piece>> pieces;
};
} // namespace

State kvir::ref::cascade(const Tensor &q,
                         const std::vector<std::vector<int32_t>> &qoIndptrs,
                         const std::vector<const KVSource *> &levels,
                         const AttentionParams &params) {
  ConcatenatedLevels keys(qoIndptrs, levels);
  return attention(q, qoIndptrs.back(), keys, params);
}

//===----------------------------------------------------------------------===//
// States
//===----------------------------------------------------------------------===//

static double lnOf(Base base) { return base == Base::Two ? std::log(2.0) : 1.0; }

State kvir::ref::merge(const std::vector<State> &states) {
  State acc = states.at(0);
  double ln = lnOf(acc.base);
  for (size_t k = 1; k < states.size(); ++k) {
    const State &next = states[k];
    if (next.rows != acc.rows || next.heads != acc.heads ||
        next.headDimV != acc.headDimV || next.base != acc.base)
      fatal("merging states of different shapes or bases");
    for (int64_t r = 0; r < acc.rows; ++r)
      for (int64_t h = 0; h < acc.heads; ++h) {
        double la = acc.lseAt(r, h), lb = next.lseAt(r, h);
        double m = std::max(la, lb);
        if (m == -kInf) {
          acc.lseAt(r, h) = -kInf;
          for (int64_t d = 0; d < acc.headDimV; ++d)
            acc.out(r, h, d) = 0.0;
          continue;
        }
        // w = B^(l - m) = e^((l - m) ln B)
        double wa = std::exp((la - m) * ln), wb = std::exp((lb - m) * ln);
        for (int64_t d = 0; d < acc.headDimV; ++d)
          acc.out(r, h, d) =
              (wa * acc.out(r, h, d) + wb * next.out(r, h, d)) / (wa + wb);
        acc.lseAt(r, h) = m + std::log(wa + wb) / ln;
      }
  }
  return acc;
}

State kvir::ref::rebase(const State &state, Base to) {
  State out = state;
  out.base = to;
  double factor = lnOf(state.base) / lnOf(to);
  for (int64_t r = 0; r < state.rows; ++r)
    for (int64_t h = 0; h < state.heads; ++h) {
      double l = state.lseAt(r, h);
      if (l == kInf) {
        out.lseAt(r, h) = -kInf;
        for (int64_t d = 0; d < state.headDimV; ++d)
          out.out(r, h, d) = 0.0;
        continue;
      }
      out.lseAt(r, h) = l * factor;
    }
  return out;
}

//===----------------------------------------------------------------------===//
// Append
//===----------------------------------------------------------------------===//

namespace {
/// One row to write: exact values and, per value, a bound on the error of
/// an f32 evaluation of it.
struct RowValues {
  std::vector<double> x, err;
};
} // namespace

/// The exact row of k (rotated) or v, with f32 error bounds.
static RowValues rowValues(const AppendInput &in, bool isKey, int64_t i,
                           int64_t head) {
  const Tensor &src = isKey ? in.k : in.v;
  int64_t width = src.dim(2);
  RowValues row;
  row.x.resize(width);
  row.err.assign(width, 0.0);
  for (int64_t d = 0; d < width; ++d)
    row.x[d] = src.get({i, head, d});
  if (!isKey || !in.rope)
    return row;
  std::vector<double> orig = row.x;
  applyRope(*in.rope, row.x, in.positions[i]);
  // An f32 evaluation of the angle pos * scale * theta^(-2i/D) is off by at
  // most about pos * scale * 2^-22 radians (the rounding of the exponent
  // -2i/D log2(theta) is amplified by exp2, but the frequency shrinks
  // faster), and cos/sin and the rotation add a few ulp. The bound takes
  // twice that.
  double posScale = std::fabs(in.positions[i] * in.rope->scale);
  for (int64_t p = 0; p < rotatedDims(*in.rope, width) / 2; ++p) {
    int64_t a, b;
    double angle;
    ropePair(*in.rope, width, p, in.positions[i], a, b, angle);
    double bound = (std::fabs(orig[a]) + std::fabs(orig[b])) *
                   (posScale + 1.0) * std::ldexp(1.0, -21);
    row.err[a] = row.err[b] = bound;
  }
  return row;
}

/// A bound on |f32(x / y) - x / y| for an f32 evaluation of x / y where x
/// is known within `xErr` (y exact): none when the quotient of exact
/// operands is an f32 value (the f32 division is then exact), else half an
/// f32 ulp plus the propagated error, taken twice.
static double quotientError(double x, double y, double xErr) {
  double q = x / y;
  if (xErr == 0.0 && static_cast<double>(static_cast<float>(q)) == q)
    return 0.0;
  return xErr / std::fabs(y) + std::fabs(q) * std::ldexp(1.0, -23);
}

static double clampInt8(double q) { return std::fmin(std::fmax(q, -127.0), 127.0); }

namespace {
/// What one element written by append may hold: a value in [lo, hi], the
/// encodings of the values within the error bound of the exact one.
struct Expectation {
  const Tensor *after;
  int64_t offset;
  double exact, lo, hi;
  std::string what;
};

/// Writes (or checks) rows of an append. With `after` null it writes the
/// exact rounding into `cache`; otherwise it records what each written
/// element of `after` may be.
class AppendModel {
public:
  AppendModel(const PagedCache &cache, const AppendInput &in)
      : cache(cache), in(in) {}

  /// Computes, for row i, head h and `role`, the accepted encodings.
  void addRow(int64_t i, int64_t head, bool isKey, const PagedCache *after,
              PagedCache *writeTo);

  /// Keyed by allocation (views of one pool, such as MLA's ckv and kpe
  /// slices of a 576-wide pool, share it) and element offset.
  std::map<std::pair<const void *, int64_t>, Expectation> expectations;

private:
  const PagedCache &cache;
  const AppendInput &in;
};
} // namespace

void AppendModel::addRow(int64_t i, int64_t head, bool isKey,
                         const PagedCache *after, PagedCache *writeTo) {
  const CacheSpec &s = cache.spec;
  Role role = isKey ? Role::K : Role::V;
  int64_t b = in.batchIndices[i], pos = in.positions[i];
  std::pair<int64_t, int64_t> loc = cache.locate(b, pos);
  int64_t page = loc.first, slot = loc.second;
  RowValues row = rowValues(in, isKey, i, head);
  int64_t width = row.x.size();
  DType stored = s.storageType();
  auto describe = [&](const char *pool, int64_t dim) {
    std::ostringstream os;
    os << pool << " of append row " << i << " (request " << b << ", token "
       << pos << ", head " << head << ", dim " << dim << ")";
    return os.str();
  };
  // `values` are the (decoded) roundings of the exact value and of the ends
  // of its error interval.
  auto expect = [&](Role r, int64_t dim, std::vector<double> values,
                    const char *pool) {
    const Tensor &t = after->pool(r);
    int64_t off = t.linearize(poolIndex(s, r, page, slot, head, dim));
    double lo = *std::min_element(values.begin(), values.end());
    double hi = *std::max_element(values.begin(), values.end());
    expectations[{t.data(), off}] = {&t, off, values[0], lo, hi,
                                     describe(pool, dim)};
  };
  auto rounded = [](DType type, double x) { return decode(type, encode(type, x)); };
  const char *poolName = isKey ? "K" : "V";

  switch (s.quant) {
  case Quant::None:
    for (int64_t d = 0; d < width; ++d) {
      double x = row.x[d], e = row.err[d];
      if (writeTo) {
        writeTo->pool(role).set(poolIndex(s, role, page, slot, head, d), x);
        continue;
      }
      expect(role, d,
             {rounded(stored, x), rounded(stored, x - e), rounded(stored, x + e)},
             poolName);
    }
    return;
  case Quant::FP8E4M3:
  case Quant::FP8E5M2: {
    bool e4m3 = s.quant == Quant::FP8E4M3;
    double scale = isKey ? cache.kScale : cache.vScale;
    for (int64_t d = 0; d < width; ++d) {
      double q = row.x[d] / scale;
      if (writeTo) {
        writeTo->pool(role).setBits(poolIndex(s, role, page, slot, head, d),
                                    encodeFp8Saturating(q, e4m3));
        continue;
      }
      // The f32 division adds half an ulp of the quotient.
      double e = quotientError(row.x[d], scale, row.err[d]);
      expect(role, d,
             {rounded(stored, q), rounded(stored, q - e), rounded(stored, q + e)},
             poolName);
    }
    return;
  }
  case Quant::Int8Group: {
    Role scaleRole = isKey ? Role::KScale : Role::VScale;
    int64_t g = s.quantGroup;
    for (int64_t first = 0; first < width; first += g) {
      double amax = 0.0, amaxErr = 0.0;
      for (int64_t d = first; d < first + g; ++d) {
        amax = std::max(amax, std::fabs(row.x[d]));
        amaxErr = std::max(amaxErr, row.err[d]);
      }
      auto scaleOf = [&](double a) {
        return std::max(std::max(a, 0.0) / 127.0, 1e-5);
      };
      double exactScale = decode(s.dtype, encode(s.dtype, scaleOf(amax)));
      Index scaleIndex = poolIndex(s, scaleRole, page, slot, head, first / g);
      double usedScale = exactScale;
      if (writeTo) {
        writeTo->pool(scaleRole).set(scaleIndex, exactScale);
      } else {
        double e = quotientError(amax, 127.0, amaxErr) * 127.0;
        std::vector<double> accepted = {
            rounded(s.dtype, scaleOf(amax)), rounded(s.dtype, scaleOf(amax - e)),
            rounded(s.dtype, scaleOf(amax + e)),
            // 1e-5 as the f32 constant a kernel uses.
            rounded(s.dtype, std::max(amax / 127.0,
                                      double(static_cast<float>(1e-5))))};
        expect(scaleRole, first / g, accepted,
               isKey ? "K scale" : "V scale");
        // Quantization uses the scale the kernel stored (whatever its
        // rounding): q * scale must invert what was written.
        usedScale = after->pool(scaleRole).get(scaleIndex);
      }
      for (int64_t d = first; d < first + g; ++d) {
        double q = row.x[d] / usedScale;
        Index index = poolIndex(s, role, page, slot, head, d);
        if (writeTo) {
          writeTo->pool(role).set(index, clampInt8(std::nearbyint(q)));
          continue;
        }
        double e = quotientError(row.x[d], usedScale, row.err[d]);
        expect(role, d,
               {clampInt8(std::nearbyint(q)), clampInt8(std::nearbyint(q - e)),
                clampInt8(std::nearbyint(q + e))},
               poolName);
      }
    }
    return;
  }
  }
}

void kvir::ref::append(PagedCache &cache, const AppendInput &input) {
  AppendModel model(cache, input);
  int64_t nnz = input.k.dim(0);
  for (int64_t i = 0; i < nnz; ++i)
    for (int64_t h = 0; h < cache.spec.kvHeads; ++h) {
      model.addRow(i, h, /*isKey=*/true, nullptr, &cache);
      model.addRow(i, h, /*isKey=*/false, nullptr, &cache);
    }
}

std::vector<std::string> kvir::ref::checkAppend(const PagedCache &before,
                                                const PagedCache &after,
                                                const AppendInput &input,
                                                size_t maxReports) {
  AppendModel model(before, input);
  int64_t nnz = input.k.dim(0);
  for (int64_t i = 0; i < nnz; ++i)
    for (int64_t h = 0; h < before.spec.kvHeads; ++h) {
      model.addRow(i, h, /*isKey=*/true, &after, nullptr);
      model.addRow(i, h, /*isKey=*/false, &after, nullptr);
    }

  std::vector<std::string> reports;
  auto report = [&](const std::string &message) {
    if (reports.size() < maxReports)
      reports.push_back(message);
  };
  // Written elements.
  for (auto &[key, e] : model.expectations) {
    uint64_t got = e.after->rawBits(e.offset);
    double value = decode(e.after->dtype(), got);
    if (value >= e.lo && value <= e.hi) // never NaN
      continue;
    std::ostringstream os;
    os.precision(9);
    os << e.what << ": got " << value << " (bits 0x" << std::hex << got
       << std::dec << "), expected " << e.exact;
    if (e.lo != e.hi)
      os << " (or within [" << e.lo << ", " << e.hi << "])";
    report(os.str());
  }
  // Everything else is untouched.
  auto checkUnchanged = [&](const Tensor &was, const Tensor &now,
                            const char *name) {
    for (int64_t off = 0; off < was.allocationElements(); ++off) {
      if (model.expectations.count({now.data(), off}))
        continue;
      if (was.rawBits(off) != now.rawBits(off)) {
        std::ostringstream os;
        os << name << " element " << off
           << " changed but the append does not write it: 0x" << std::hex
           << was.rawBits(off) << " -> 0x" << now.rawBits(off);
        report(os.str());
      }
    }
  };
  for (size_t p = 0; p < before.pools.size(); ++p)
    checkUnchanged(before.pools[p], after.pools[p], p ? "pool #1" : "pool #0");
  for (size_t p = 0; p < before.scales.size(); ++p)
    checkUnchanged(before.scales[p], after.scales[p],
                   p ? "scale pool #1" : "scale pool #0");
  return reports;
}
