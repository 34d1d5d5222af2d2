//===- AttentionState.h - The math of attention states ----------*- C++ -*-===//
//
// The one implementation of the state algebra of docs/Semantics.md that
// every lowering emits: kv-to-loops (the CPU reference), the decode and
// prefill kernels, the merge kernel. A partial state is (m, l, acc): the
// running max of the logits, the sum of B^(s - m) and the unnormalized
// accumulator; a normalized state (o, lse) is the partial state
// (lse, 1, o). Everything is an online update, a merge or a finalize over
// those, with the -inf guards in one place: an empty key set stays
// (0, -inf), never NaN.
//
// The working base is a choice of the lowering: the loops compute in base e
// with math.exp / math.log; kernels compute in base 2 with PTX's
// ex2.approx / lg2.approx (no libdevice), folding log2(e) into the logit
// scale. States are converted to their type's base only when finalized.
// Values may be f32 scalars or vectors of f32 (per-thread slices of a row,
// or accumulator fragments); scalars broadcast where they meet vectors.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_CODEGEN_ATTENTIONSTATE_H
#define KVIR_CODEGEN_ATTENTIONSTATE_H

#include "kvir/Dialect/KV/IR/KVTypes.h"

#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <optional>

namespace kvir::codegen {

/// (m, l, acc) of a set of keys, in the working base.
struct PartialState {
  mlir::Value m, l, acc;
};

/// A normalized state in its output base.
struct FinalState {
  mlir::Value o, lse;
};

class AttentionState {
public:
  enum class Flavor {
    /// Base e, math.exp / math.log: the CPU reference.
    exactBaseE,
    /// Base 2, ex2.approx.ftz / lg2.approx.ftz: GPU kernels.
    ptxBase2,
  };

  AttentionState(mlir::ImplicitLocOpBuilder &b, Flavor flavor)
      : b(b), flavor(flavor) {}

  kv::LseBase getWorkingBase() const;

  /// B^x and log_B(x) in the working base (element-wise on vectors).
  mlir::Value exp(mlir::Value x);
  mlir::Value log(mlir::Value x);

  /// The factor the raw score sm_scale * <q, k> is multiplied by before
  /// finishLogit: log2(e) for base-2 kernels whose scores go through
  /// neither a soft cap nor a variant that needs natural units (ALiBi,
  /// score_mod: `natural`), so it can be folded into q; else 1.
  double logitPrescale(bool softCap, bool natural = false) const;
  /// The logit in working-base units from a prescaled score: applies the
  /// soft cap c * tanh(s / c) and whatever of log2(e) is left (`natural`
  /// as given to logitPrescale).
  mlir::Value finishLogit(mlir::Value prescaled, std::optional<double> softCap,
                          bool natural = false);

  /// The reference point of weights for a running max: m, or 0 while m is
  /// -inf (then every weight is B^-inf = 0 rather than NaN).
  mlir::Value reference(mlir::Value m);
  /// An online step to a new max: the max, the factor B^(m - ref) that
  /// rescales what was accumulated, and ref = reference(max).
  struct Rescale {
    mlir::Value m, alpha, ref;
  };
  Rescale rescale(mlir::Value m, mlir::Value candidate);
  /// The weight B^(s - ref) of a logit (or state LSE) under a reference.
  mlir::Value weightAt(mlir::Value s, mlir::Value ref);
  /// The weight B^(c s - ref) of the logit c s (c > 0 an f32 scalar): one
  /// fused multiply-add before the exponent instead of a multiply and a
  /// subtraction.
  mlir::Value weightOfScaled(mlir::Value s, mlir::Value c, mlir::Value ref);
  /// The weight B^(s - reference(m)) under max m.
  mlir::Value weight(mlir::Value s, mlir::Value m);
  /// acc * alpha + p * v (alpha, p scalars or like acc; a null alpha keeps
  /// acc as it is).
  mlir::Value accumulate(mlir::Value acc, mlir::Value alpha, mlir::Value p,
                         mlir::Value v);
  /// The online update of `state` with one logit `s` and its value `v`.
  PartialState update(PartialState state, mlir::Value s, mlir::Value v);
  /// The online update of `state` with a tile of logits at once: one
  /// rescale by the tile's max (not one per key), then the weights; the
  /// value of logit j is `value(j)`, asked for once, in order, after the
  /// rescale (so a caller can load it just in time). Logits of -inf add
  /// nothing (their values must be finite).
  PartialState updateTile(PartialState state, llvm::ArrayRef<mlir::Value> logits,
                          llvm::function_ref<mlir::Value(int64_t)> value);
  /// The merge of partial states (two passes: the max, then the weights).
  PartialState merge(llvm::ArrayRef<PartialState> states);
  /// The merge of a partial state (m, l) with an attention sink: a key of
  /// logit `sink` (f32, natural units) and no value. Returns the new m and
  /// l, and in `acc` the factor the accumulator is scaled by.
  PartialState mergeSink(mlir::Value m, mlir::Value l, mlir::Value sink);
  /// `state` merged with a sink of logit `sink`, its accumulator scaled.
  PartialState withSink(PartialState state, mlir::Value sink);
  /// (o, lse) with o = acc / l and lse = m + log(l) in `outBase`;
  /// (0, -inf) when l == 0.
  FinalState finalize(PartialState state, kv::LseBase outBase);
  /// The two halves of finalize, for accumulators kept element by element:
  /// acc / l (0 when l == 0), and m + log(l) in `outBase` (-inf when l == 0).
  mlir::Value normalize(mlir::Value acc, mlir::Value l);
  mlir::Value finalLse(mlir::Value m, mlir::Value l, kv::LseBase outBase);
  /// An LSE in base `from` expressed in base `to` (-inf stays -inf).
  mlir::Value convertLse(mlir::Value lse, kv::LseBase from, kv::LseBase to);
  /// The partial state of a normalized state whose LSE is in `base`.
  PartialState fromNormalized(mlir::Value o, mlir::Value lse,
                              kv::LseBase base);

private:
  /// x * y + z, rounded once.
  mlir::Value fma(mlir::Value x, mlir::Value y, mlir::Value z);

  mlir::ImplicitLocOpBuilder &b;
  Flavor flavor;
};

} // namespace kvir::codegen

#endif // KVIR_CODEGEN_ATTENTIONSTATE_H
