//===- Harness.h - Random kv test cases, MLIR text and comparisons -*- C++ -*-===//
//
// Builds random batches and paged caches (every token the batch does not own
// is NaN-poisoned, so a kernel that reads outside a request's keys produces
// NaN), writes the MLIR text of test functions (kv.paged_view + the op +
// kv.store_state, every buffer a function argument), runs them through the
// JIT with poisoned outputs, and compares states with the reference.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_TEST_UNIT_HARNESS_HARNESS_H
#define KVIR_TEST_UNIT_HARNESS_HARNESS_H

#include "../Reference/Reference.h"
#include "../Support/Jit.h"
#include "../Support/Random.h"

#include "gtest/gtest.h"

#include <functional>
#include <string>
#include <vector>

namespace kvir::test {

using ref::Base;
using ref::CacheSpec;
using ref::Layout;
using ref::PagedCache;
using ref::Quant;
using ref::Role;
using ref::Storage;
using ref::Table;

//===--- Inputs -----------------------------------------------------------===//

/// `count` lengths in [1, maxLen]; with `special`, one request is empty and
/// one has a single token (at random places).
std::vector<int64_t> randomLengths(Rng &rng, int64_t count, int64_t maxLen,
                                   bool special = true);
/// A tensor of uniform values in [-range, range) rounded to `dtype`.
Tensor randomTensor(Rng &rng, DType dtype, Index shape, double range = 1.0);
/// Prefix sums: {0, l0, l0 + l1, ...}.
std::vector<int32_t> indptrOf(const std::vector<int64_t> &lengths);

struct CacheOptions {
  /// Pages no request uses (poisoned), besides those the batch needs.
  int64_t extraPages = 2;
  /// Layers of OpenPPL pools.
  int64_t numLayers = 2;
  /// Tokens [filledLens[b], kvLen[b]) are left poisoned (appends write them);
  /// empty: every token is filled.
  std::vector<int64_t> filledLens;
  /// Affine layouts: the shape of `role`'s pool for `numPages` pages.
  std::function<Index(Role role, int64_t numPages)> affineShape;
  /// MLA: ckv and kpe as slices of one [pages, P, head_dim + pe_dim] pool.
  bool mlaSharedPool = false;
  /// fp8 per-tensor scales.
  float kScale = 0.0625f, vScale = 0.03125f;
  /// Dequantized values are about uniform in [-valueRange, valueRange).
  double valueRange = 1.0;
};

/// A random paged cache holding `kvLens[b]` tokens per request through
/// `spec`'s table form, with its pages scattered over a pool.
PagedCache makeCache(const CacheSpec &spec, const std::vector<int64_t> &kvLens,
                     Rng &rng, const CacheOptions &options = {});
/// A copy of `cache` with its own pool and scale allocations.
PagedCache cloneCache(const PagedCache &cache);

/// Requests [first, first + count) of `cache` as a cache of their own: same
/// pools, tables sliced (CSR indptr rebased).
PagedCache subCache(const PagedCache &cache, int64_t first, int64_t count);
/// Splits each request's pages of a CSR cache in two at a random page
/// boundary: the first cache holds the leading pages (a request may keep all
/// or none), the second the rest, over the same pools.
std::pair<PagedCache, PagedCache> splitPages(const PagedCache &cache, Rng &rng);

/// A position per query row of requests with `qoLens` rows over `kvLens`
/// keys (kv.prefill positions(...)): uniform in [-1, kv_len + 2], so some
/// rows see no key under causal and some sit past their keys.
std::vector<int32_t> randomRowPositions(Rng &rng,
                                        const std::vector<int64_t> &qoLens,
                                        const std::vector<int64_t> &kvLens);

/// A custom mask over requests' qoLen x kvLen blocks: i1 bytes, or bit-packed
/// i8 (each block from a byte boundary, unused trailing bits random).
Tensor randomMask(Rng &rng, const std::vector<int64_t> &qoLens,
                  const std::vector<int64_t> &kvLens, bool packed,
                  double density = 0.6);

//===--- MLIR text --------------------------------------------------------===//

/// The function under test: every buffer a function argument.
class KernelSource {
public:
  explicit KernelSource(std::string name = "kernel") : name(std::move(name)) {}

  /// Adds a memref argument bound to `t`; `dynamic[i]` marks `?` dims (empty:
  /// dim 0 only). Returns its SSA name.
  std::string addMemref(const std::string &hint, const Tensor &t,
                        std::vector<bool> dynamic = {},
                        bool stridedLayout = false, bool staticStrides = false);
  std::string addF32(const std::string &hint, float value);
  /// The MLIR type of an argument added earlier.
  const std::string &typeOf(const std::string &ssa) const;
  /// Declares `!alias = text` at module level; returns `!alias`.
  std::string addAlias(const std::string &alias, const std::string &text);
  void addLine(const std::string &line) { body += "    " + line + "\n"; }

  std::string text() const;
  const std::string &getName() const { return name; }
  const std::vector<KernelArg> &args() const { return arguments; }
  /// (SSA name, MLIR type) of each argument, in order.
  const std::vector<std::pair<std::string, std::string>> &argTypes() const {
    return types;
  }

private:
  std::string name, aliases, body;
  std::vector<std::string> params;
  std::vector<std::pair<std::string, std::string>> types;
  std::vector<KernelArg> arguments;
};

/// The IR of an attention op's variants beyond what ref::AttentionParams
/// holds (its sinks and ALiBi slopes): whether ALiBi takes the standard
/// slopes (the `alibi` attribute) or params.alibiSlopes as a memref, and
/// the score_mod / mask_mod regions as text, from `^bb0(...)` to
/// `kv.yield`, where `$name` stands for the SSA name of capture `name`.
struct VariantSource {
  bool standardAlibi = false;
  std::string scoreMod, maskMod;
  std::vector<std::pair<std::string, Tensor>> captures;
};
/// The `!kv.paged<...>` type of a cache.
std::string pagedTypeText(const CacheSpec &spec);
/// `!kv.state<?xHxDvxT, base = B[, partitions = ?]>`.
std::string stateTypeText(int64_t heads, int64_t headDimV, DType dtype,
                          Base base, bool partitioned = false);
/// Adds the cache's buffers as arguments and a kv.paged_view; returns the
/// view's SSA name. The paged type's alias is `typeAlias`. MLA slices of
/// one pool have a strided layout: dynamic strides, or the pool's own when
/// `staticSliceStrides` (as a kernel for FlashMLA's 576-wide pool has).
std::string emitPagedView(KernelSource &src, const PagedCache &cache,
                          const std::string &name, std::string &typeAlias,
                          bool staticSliceStrides = false);
/// Adds ragged K [nnz, Hkv, D], V [nnz, Hkv, Dv] and `kvIndptr` (of
/// `spec`'s table type, as OpenPPL's int64 kvstarts) as arguments and a
/// kv.ragged_view of `spec`'s heads, dims and dtype; returns the view's SSA
/// name and sets `typeAlias`.
std::string emitRaggedView(KernelSource &src, const CacheSpec &spec,
                           const Tensor &k, const Tensor &v,
                           const std::vector<int32_t> &kvIndptr,
                           std::string &typeAlias);
/// Rows and keys per request of each level of a cascade.
struct CascadeShape {
  std::vector<std::vector<int64_t>> qoLens, kvLens;
};
/// A random cascade: level 0 one request over every row with `prefixLen`
/// keys; with 3 levels, a middle level of two groups (the first half of the
/// last level's requests over `middleLen` keys, the rest over none); the
/// last level `requests` requests of 1-4 rows (request 1: no rows, no keys)
/// over up to `maxLastLen` keys (at least their rows when causal).
CascadeShape randomCascadeShape(Rng &rng, int64_t levels, int64_t requests,
                                bool causal, int64_t prefixLen,
                                int64_t middleLen, int64_t maxLastLen);
/// A cascade's levels over one pool: level l's requests hold `kvLens[l]`
/// tokens, each level with its own table.
std::vector<PagedCache>
makeCascadeCaches(const CacheSpec &spec,
                  const std::vector<std::vector<int64_t>> &kvLens, Rng &rng);
/// Adds the levels' views and qo_indptrs (level l groups the rows into
/// requests of `qoLens[l]` rows) and `%s = kv.cascade` of q (argument
/// `qName`) with `params`'s attributes; returns the qo_indptrs.
std::vector<std::vector<int32_t>>
emitCascade(KernelSource &src, const std::string &qName,
            const std::vector<PagedCache> &levels,
            const std::vector<std::vector<int64_t>> &qoLens,
            const ref::AttentionParams &params, const std::string &stateType,
            const VariantSource &variants = {});
/// Adds `input`'s k, v, batch_indices and positions as arguments and
/// `kv.append` of them into the view `kv` of type `kvType` (with
/// `input.rope`, if any).
void emitAppend(KernelSource &src, const ref::AppendInput &input,
                const std::string &kv, const std::string &kvType);
/// A random sparse selection of `k` entries per query row: about half to
/// all of min(k, kv_len) distinct keys of the row's request (`rowKvLens`),
/// the rest -1, in random order.
std::vector<std::vector<int32_t>>
randomTopk(Rng &rng, const std::vector<int64_t> &rowKvLens, int64_t k);
/// The [rows, k] i32 tensor of a selection.
Tensor topkTensor(const std::vector<std::vector<int32_t>> &rows);
/// An f32 vector of `values` (a per-head table).
Tensor f32Vector(const std::vector<double> &values);
/// `heads` values uniform in [lo, hi) (sinks, slopes).
std::vector<double> randomPerHead(Rng &rng, int64_t heads, double lo,
                                  double hi);
/// The ALiBi paper's slopes for `heads` query heads, computed as its
/// reference code does (powers of 2^(-8 / n), the extra heads of a count
/// that is not a power of two interleaved from the next power).
std::vector<double> alibiPaperSlopes(int64_t heads);
/// Two regions and what they mean, for tests that want every variant at
/// once: score_mod s + 0.02 j, and a mask_mod hiding every third key.
void addKeyBiasScoreMod(ref::AttentionParams &params, VariantSource &source);
void addEveryThirdKeyHidden(ref::AttentionParams &params,
                            VariantSource &source);
/// Regions that read the row's request: a score_mod adding a per-request
/// bias (a table of `requests` entries) and a mask_mod keeping key j of row
/// p of request b iff (b + p + j) % 4 != 0, and their reference meaning.
void addRequestRegions(Rng &rng, ref::AttentionParams &params,
                       VariantSource &source, int64_t requests);
/// Gemma's soft cap `cap` and sliding window `windowLeft` written as
/// regions, and the reference's own statement of them.
void addSoftCapWindowRegions(ref::AttentionParams &params,
                             VariantSource &source, double cap,
                             int64_t windowLeft);
/// Adds the selection, sinks, slopes and captures as arguments; returns the
/// op's variant clauses (`topk(...) sinks(...) alibi_slopes(...) score_mod
/// {...} mask_mod {...}`, each when present) with a leading space, or "".
std::string emitVariants(KernelSource &src, const ref::AttentionParams &params,
                         const VariantSource &variants);
/// The attribute dictionary of an attention op (`{...}` or empty), with
/// `alibi` when `standardAlibi`.
std::string attentionAttrs(const ref::AttentionParams &params,
                           bool withCausal = true, bool standardAlibi = false);
/// `attrs` (an attribute dictionary or "") with `kvgpu.config = config`
/// added; `config` "" leaves them as they are.
std::string withConfig(std::string attrs, const std::string &config);
/// Random LSE base, and sm_scale, soft cap and a window of at most
/// `maxWindow` keys, each with probability 0.3 (the sweeps' attributes).
void randomizeAttention(Rng &rng, ref::AttentionParams &params,
                        int64_t maxWindow);
/// The params as the kernel sees them: sm_scale and the soft cap are f32
/// attributes, sinks and slopes f32 memrefs, so the reference uses their
/// f32 roundings.
ref::AttentionParams asKernelSees(ref::AttentionParams params);
/// The rope attribute text.
/// Llama 3.1's RoPE with FlashInfer's apply_llama31_rope defaults (theta
/// 5e5, factor 8, frequency factors 1 and 4, original context 8192) on the
/// first `rotaryDim` dims (0: all).
ref::Rope llama31Rope(ref::RopeStyle style, int64_t rotaryDim);
/// A random RoPE for a head dim of `headDim` (the sweeps'): either style,
/// rotary dims a multiple of 32 (what every kernel's lane vectors and
/// 16-byte chunks take; all of them when that is the head dim), Llama 3.1's
/// scaling a third of the time.
ref::Rope randomRope(Rng &rng, int64_t headDim);
std::string ropeAttrText(const ref::Rope &rope);

//===--- Running and comparing ---------------------------------------------===//

/// Output buffers of a state: o[[P,] rows, H, Dv] and lse[[P,] rows, H].
struct StateBuffers {
  Tensor o, lse;
};
StateBuffers makeStateBuffers(int64_t rows, int64_t heads, int64_t headDimV,
                              DType dtype, int64_t partitions = 0);
/// Adds o and lse as arguments and a kv.store_state of `state`.
void emitStore(KernelSource &src, const std::string &state,
               const std::string &stateType, const StateBuffers &buffers);

/// Poisons `outputs` (NaN), compiles (or reuses) the kernel and calls it.
::testing::AssertionResult runKernel(const KernelSource &src,
                                     const std::vector<Tensor> &outputs);

/// Relative error bound of outputs of `dtype` (f32 1e-5, f16 2e-3, bf16
/// 1.6e-2), measured per (row, head) as max_d |o - ref| / max(max_d |ref|,
/// 1e-4).
double outputTolerance(DType dtype);
/// Whether an LSE matches: f32 states |l - ref| <= 1e-5 * max(1, |ref|);
/// f16/bf16 states |l - ref| <= 1e-3. An empty reference (-inf) needs
/// exactly -inf.
bool lseMatches(double got, double ref, DType outputType);

/// Compares a kernel's state buffers (rows x heads x Dv; `partition` picks a
/// slice of partitioned buffers) with the reference: NaN never passes, empty
/// rows must be exactly (0, -inf).
::testing::AssertionResult compareState(const StateBuffers &got,
                                        const ref::State &expected,
                                        DType outputType,
                                        int64_t partition = -1);

/// Passes `result` through, printing its message when KVIR_UNIT_VERBOSE is
/// set (a passing comparison reports its largest relative error).
::testing::AssertionResult check(::testing::AssertionResult result);

/// Writes a reference state into (partitioned) buffers, rounding o to the
/// buffer type.
void storeState(const ref::State &state, StateBuffers &buffers,
                int64_t partition = -1);

/// A short description of a spec, for failure messages.
std::string describe(const CacheSpec &spec);

/// A cache's storage by name, as the benches' --kv option takes it: "f16"
/// (no quantization), "fp8_e4m3", "fp8_e5m2", "int8_g8" or "int8_g16"
/// (int8 groups of 8 / 16); nullopt for anything else.
struct CacheQuant {
  Quant quant = Quant::None;
  int64_t group = 0;
};
std::optional<CacheQuant> parseCacheQuant(const std::string &name);

} // namespace kvir::test

#endif // KVIR_TEST_UNIT_HARNESS_HARNESS_H
