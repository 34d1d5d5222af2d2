//===- Reference.h - Double-precision reference of docs/Semantics.md -*- C++ -*-===//
//
// An independent model of kvir's semantics (docs/Semantics.md), written
// from that page alone and evaluated in double precision. It shares
// no code with kv-to-loops or kvir's PoolLayout: every layout's addressing,
// every table form, dequantization, masks, RoPE, merge and append are
// implemented here again, on host tensors.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_TEST_UNIT_REFERENCE_REFERENCE_H
#define KVIR_TEST_UNIT_REFERENCE_REFERENCE_H

#include "../Support/Tensor.h"

#include "mlir/IR/AffineMap.h"

#include <array>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kvir::ref {

using test::DType;
using test::Index;
using test::Tensor;

enum class Layout { NHD, HND, VLLM, PPL0, PPL1, PPL2, PPL3, Llama, Affine };
enum class Storage { Combined, Split, MLA };
enum class Table { CSR, BlockTable, TokenTable, TokenOffset };
enum class Quant { None, Int8Group, FP8E4M3, FP8E5M2 };
enum class Base { E, Two };
enum class RopeStyle { Interleave, RotateHalf };
/// Which pool an element lives in. For MLA caches K is ckv, V is kpe.
enum class Role { K, V, KScale, VScale };

/// A paged KV cache's parameters (what `!kv.paged<...>` states).
struct CacheSpec {
  int64_t pageSize = 16;
  int64_t kvHeads = 1;
  int64_t headDim = 128;
  int64_t headDimV = 128;
  DType dtype = DType::F16;
  Layout layout = Layout::NHD;
  Storage storage = Storage::Combined;
  Table table = Table::CSR;
  Quant quant = Quant::None;
  int64_t quantGroup = 0;
  int64_t layer = 0;
  int64_t peDim = 0;
  /// Element type of the page tables: I32, or I64 (OpenPPL's int64 starts).
  DType tableType = DType::I32;
  /// Affine layouts: (page, kv, slot, head, dim) -> pool indices.
  mlir::AffineMap kMap, vMap;

  /// The type the pools store (dtype, i8, or fp8).
  DType storageType() const;
  bool isMla() const { return storage == Storage::MLA; }
  bool isFp8() const { return quant == Quant::FP8E4M3 || quant == Quant::FP8E5M2; }
  /// Extent of the dim coordinate of `role`'s pool.
  int64_t dimExtent(Role role) const;
};

/// The indices of logical element (page, kv, slot, head, dim) in `role`'s
/// pool, kv being 1 for V and V scales. Token-axis layouts (OpenPPL, Llama)
/// see token `page * page_size + slot`.
Index poolIndex(const CacheSpec &spec, Role role, int64_t page, int64_t slot,
                int64_t head, int64_t dim);
/// The shape of `role`'s pool holding `numPages` pages (`numPages *
/// page_size` tokens for token-axis layouts) of `numLayers` layers. Not for
/// affine layouts, whose pool shape the map's user chooses.
Index poolShape(const CacheSpec &spec, Role role, int64_t numPages,
                int64_t numLayers);
/// Evaluates an affine map at integer dims.
Index evaluateAffineMap(mlir::AffineMap map, const Index &dims);
/// Parses `(d0, ...) -> (...)` into a map owned by a process-wide context.
mlir::AffineMap parseAffineMap(const std::string &text);

/// Pools, tables and scales of a paged cache, as the view op takes them.
struct PagedCache {
  CacheSpec spec;
  /// Combined: {pool}; split: {K, V}; MLA: {ckv, kpe}.
  std::vector<Tensor> pools;
  /// int8_group: one scale pool per pool.
  std::vector<Tensor> scales;
  /// i32 tables in the view op's order (csr: indptr, indices, last_page_len;
  /// block_table: block_table, seq_lens; token_table: cachestarts[B, n],
  /// kv_lens; token_offset: cachestarts[B], kv_lens).
  std::vector<Tensor> tables;
  /// fp8 per-tensor scales (f32).
  float kScale = 1.0f, vScale = 1.0f;

  int64_t numRequests() const;
  int64_t kvLen(int64_t request) const;
  /// (page, slot) of token `token` of `request` through the table. Token
  /// forms yield a token index t, which is page t / page_size, slot
  /// t % page_size.
  std::pair<int64_t, int64_t> locate(int64_t request, int64_t token) const;
  /// The pool tensor holding `role`.
  const Tensor &pool(Role role) const;
  Tensor &pool(Role role);
  /// Element `dim` of `role` at (request, token, head), dequantized.
  double load(Role role, int64_t request, int64_t token, int64_t head,
              int64_t dim) const;
};

/// Where attention reads K and V from.
class KVSource {
public:
  virtual ~KVSource() = default;
  virtual int64_t numRequests() const = 0;
  virtual int64_t kvLen(int64_t request) const = 0;
  virtual int64_t kvHeads() const = 0;
  virtual int64_t headDim() const = 0;
  virtual int64_t headDimV() const = 0;
  virtual double key(int64_t request, int64_t token, int64_t head,
                     int64_t dim) const = 0;
  virtual double value(int64_t request, int64_t token, int64_t head,
                       int64_t dim) const = 0;
};

class PagedSource : public KVSource {
public:
  explicit PagedSource(const PagedCache &cache) : cache(cache) {}
  int64_t numRequests() const override { return cache.numRequests(); }
  int64_t kvLen(int64_t r) const override { return cache.kvLen(r); }
  int64_t kvHeads() const override { return cache.spec.kvHeads; }
  int64_t headDim() const override { return cache.spec.headDim; }
  int64_t headDimV() const override { return cache.spec.headDimV; }
  double key(int64_t r, int64_t t, int64_t h, int64_t d) const override {
    return cache.load(Role::K, r, t, h, d);
  }
  double value(int64_t r, int64_t t, int64_t h, int64_t d) const override {
    return cache.load(Role::V, r, t, h, d);
  }

private:
  const PagedCache &cache;
};

/// FlashInfer's ragged KV: K[nnz, H, D], V[nnz, H, Dv], kv_indptr[B + 1].
class RaggedSource : public KVSource {
public:
  RaggedSource(const Tensor &k, const Tensor &v, std::vector<int32_t> indptr)
      : k(k), v(v), indptr(std::move(indptr)) {}
  int64_t numRequests() const override { return indptr.size() - 1; }
  int64_t kvLen(int64_t r) const override { return indptr[r + 1] - indptr[r]; }
  int64_t kvHeads() const override { return k.dim(1); }
  int64_t headDim() const override { return k.dim(2); }
  int64_t headDimV() const override { return v.dim(2); }
  double key(int64_t r, int64_t t, int64_t h, int64_t d) const override {
    return k.get({indptr[r] + t, h, d});
  }
  double value(int64_t r, int64_t t, int64_t h, int64_t d) const override {
    return v.get({indptr[r] + t, h, d});
  }

private:
  Tensor k, v;
  std::vector<int32_t> indptr;
};

struct Rope {
  RopeStyle style = RopeStyle::Interleave;
  double theta = 1e4;
  double scale = 1.0;
  /// Rotated dims (0: all); the rest pass unchanged.
  int64_t rotaryDim = 0;
  /// Llama 3.1 frequency scaling when factor > 0.
  double factor = 0.0, lowFreqFactor = 0.0, highFreqFactor = 0.0,
         originalMaxPosition = 0.0;
};

/// Rotates the rotated dims of x[0, D) in place to `position`.
void applyRope(const Rope &rope, std::vector<double> &x, int64_t position);

struct AttentionParams {
  std::optional<double> smScale;
  std::optional<double> softCap;
  std::optional<int64_t> windowLeft;
  std::optional<Rope> rope;
  bool causal = false;
  /// Custom mask: i1 (one byte per bool) or i8 (bit-packed, little bit
  /// order, each request's block starting at a byte boundary).
  const Tensor *mask = nullptr;
  /// Each query row's position (kv.prefill positions(...)); empty:
  /// bottom-right alignment.
  std::vector<int32_t> positions;
  Base base = Base::E;
  /// Variants. Per query head: a sink logit joining each row's softmax
  /// denominator with no value, and an ALiBi slope adding
  /// slope * (j - p) to the scaled logit (empty: none). scoreMod maps the
  /// logit after ALiBi, before the soft cap; maskMod is one more visibility
  /// rule. Their arguments: (score,) request, query head, query position,
  /// key position.
  std::vector<double> sinks, alibiSlopes;
  std::function<double(double, int64_t, int64_t, int64_t, int64_t)> scoreMod;
  std::function<bool(int64_t, int64_t, int64_t, int64_t)> maskMod;
  /// Sparse selection: per query row, the keys it may see (-1 entries are
  /// padding); empty: every key. A key is seen once however often listed.
  std::vector<std::vector<int32_t>> topk;
  /// Whether query row `row` may see key `j` by `topk`.
  bool selects(int64_t row, int64_t j) const;
};

/// An attention state o[rows, heads, Dv], lse[rows, heads] (in its base).
struct State {
  int64_t rows = 0, heads = 0, headDimV = 0;
  Base base = Base::E;
  std::vector<double> o, lse;

  State() = default;
  State(int64_t rows, int64_t heads, int64_t headDimV, Base base);
  double &out(int64_t r, int64_t h, int64_t d) {
    return o[(r * heads + h) * headDimV + d];
  }
  double out(int64_t r, int64_t h, int64_t d) const {
    return o[(r * heads + h) * headDimV + d];
  }
  double &lseAt(int64_t r, int64_t h) { return lse[r * heads + h]; }
  double lseAt(int64_t r, int64_t h) const { return lse[r * heads + h]; }
};

/// The state of one (row, head) from its visible logits and values:
/// lse = log_B(sum exp(s)), o = softmax(s) . v; (0, -inf) when empty.
/// With a `sink` logit, e^sink joins the denominator (and the LSE) with no
/// value: an empty key set then has o = 0, lse = sink.
void stateFromLogits(const std::vector<double> &logits,
                     const std::vector<std::vector<double>> &values, Base base,
                     double *o, double &lse,
                     std::optional<double> sink = std::nullopt);

/// Decode (qoIndptr empty: one query row per request at kv_len - 1) or
/// prefill (rows qoIndptr[b] .. qoIndptr[b+1] of request b).
State attention(const Tensor &q, const std::vector<int32_t> &qoIndptr,
                const KVSource &kv, const AttentionParams &params);
/// Decode convenience: one row per request.
inline State decode(const Tensor &q, const KVSource &kv,
                    const AttentionParams &params) {
  return attention(q, {}, kv, params);
}

/// MLA decode: s = sm_scale (<q_nope, ckv> + <q_pe, kpe>), o = sum p ckv;
/// sm_scale defaults to 1 / sqrt(head_dim + pe_dim). One row per request, or
/// request b owning rows qoIndptr[b] .. qoIndptr[b + 1] at positions
/// kv_len - qo_len + i, `causal` hiding the keys after a row's position.
/// `variants` adds its sinks, ALiBi slopes, scoreMod, maskMod and topk (its
/// other fields are ignored).
State mlaDecode(const Tensor &qNope, const Tensor &qPe, const PagedCache &kv,
                std::optional<double> smScale, Base base,
                const std::vector<int32_t> &qoIndptr = {}, bool causal = false,
                const AttentionParams &variants = AttentionParams());

/// Cascade, computed as what it means: plain attention of each last-level
/// request over the concatenation of its levels' keys (level 0 first), so
/// causal is bottom-right aligned on the concatenation and only ever hides
/// keys of the last level, and the window and RoPE see positions in the
/// concatenation. Not computed level by level and merged (kvir's lowering
/// does that), so the two are independent.
State cascade(const Tensor &q, const std::vector<std::vector<int32_t>> &qoIndptrs,
              const std::vector<const KVSource *> &levels,
              const AttentionParams &params);

/// docs/Semantics.md's pairwise merge, folded left over `states` (same shape and
/// base).
State merge(const std::vector<State> &states);
/// Changes the LSE base; +inf (FlashMLA's empty set) becomes (0, -inf).
State rebase(const State &state, Base to);

/// kv.append's inputs: row i of k[nnz, Hkv, D], v[nnz, Hkv, Dv] goes to
/// request batchIndices[i] at token positions[i].
struct AppendInput {
  Tensor k, v;
  std::vector<int32_t> batchIndices, positions;
  std::optional<Rope> rope;
};

/// Appends into `cache` in double precision, rounding once to the stored
/// type (int8 groups: scale = max(max|x| / 127, 1e-5) rounded to the dtype,
/// q = clamp(round_half_even(x / stored_scale), -127, 127); fp8: round to
/// nearest even, saturating, of x / scale).
void append(PagedCache &cache, const AppendInput &input);

/// Checks a cache written by a kernel's append (`after`) against `before`
/// plus the append: every element the append does not write is bitwise
/// unchanged, every written element is the correctly rounded encoding of the
/// exact value -- or, where the exact value lies within an f32 evaluation's
/// error bound of a rounding boundary, the encoding of a value within that
/// bound. Returns descriptions of the first `maxReports` mismatches.
std::vector<std::string> checkAppend(const PagedCache &before,
                                     const PagedCache &after,
                                     const AppendInput &input,
                                     size_t maxReports = 10);

} // namespace kvir::ref

#endif // KVIR_TEST_UNIT_REFERENCE_REFERENCE_H
