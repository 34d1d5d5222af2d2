//===- Variants.h - An attention op's variants in a lowering ----*- C++ -*-===//
//
// The one implementation of the variants of docs/Semantics.md ("Variants")
// that every lowering of an attention op emits where it has one logit in
// hand: ALiBi and the score_mod region on the natural score
// s = sm_scale * <q, k> (before the soft cap), mask_mod as one more
// visibility rule, and the sink logit a row's final state is merged with
// (AttentionState::mergeSink).
//
// The regions are cloned at each use with their block arguments bound to
// the lowering's coordinates. Values they use from above, the sinks and
// the ALiBi slopes are looked up in `operands`: a kernel maps them to its
// parameters (getVariantOperands gives the list, constants excepted, which
// are cloned); the loops, in the op's own function, map nothing.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_CODEGEN_VARIANTS_H
#define KVIR_CODEGEN_VARIANTS_H

#include "kvir/Codegen/AttentionState.h"
#include "kvir/Dialect/KV/IR/KVOps.h"

#include "mlir/IR/IRMapping.h"

namespace kvir::codegen {

/// The values a kernel running `op`'s variants takes as parameters, in a
/// fixed order: the sinks, the ALiBi slopes, then what the regions use
/// from above (constants excepted).
llvm::SmallVector<mlir::Value> getVariantOperands(mlir::Operation *op);

class VariantEmitter {
public:
  /// `op`'s variants; `operands` maps getVariantOperands(op) to the values
  /// the lowering has for them (empty where they are visible). Slopes are
  /// computed with `flavor`'s exp2.
  VariantEmitter(kv::AttentionVariantOpInterface op, mlir::IRMapping operands,
                 AttentionState::Flavor flavor);

  /// Whether the score goes through ALiBi or score_mod: then lowerings
  /// keep it in natural units until AttentionState::finishLogit.
  bool modifiesScores() const;
  bool hasMask() const { return maskMod && !maskMod->empty(); }
  /// Whether mask_mod reads its q_head argument (if not, the heads of a
  /// query row see the same keys).
  bool maskReadsHead() const {
    return hasMask() && !maskMod->front().getArgument(1).use_empty();
  }
  bool hasSinks() const { return bool(sinks); }

  /// ALiBi then score_mod on the natural f32 score `s` of query head
  /// `qHead` at `qPos` against key `kvPos` of `request` (indices).
  mlir::Value modifyScore(mlir::ImplicitLocOpBuilder &b, mlir::Value s,
                          mlir::Value request, mlir::Value qHead,
                          mlir::Value qPos, mlir::Value kvPos) const;
  /// mask_mod's i1 (true: visible); null without a mask_mod.
  mlir::Value visible(mlir::ImplicitLocOpBuilder &b, mlir::Value request,
                      mlir::Value qHead, mlir::Value qPos,
                      mlir::Value kvPos) const;
  /// The sink logit of `qHead` (f32, natural units); null without sinks.
  mlir::Value sinkLogit(mlir::ImplicitLocOpBuilder &b, mlir::Value qHead) const;
  /// The ALiBi slope of `qHead` (f32); null without ALiBi.
  mlir::Value alibiSlope(mlir::ImplicitLocOpBuilder &b,
                         mlir::Value qHead) const;

private:
  /// Clones `region`'s block at `b` with its arguments bound to `args`;
  /// returns the yielded value.
  mlir::Value inlineRegion(mlir::ImplicitLocOpBuilder &b, mlir::Region &region,
                           mlir::ValueRange args) const;

  mlir::IRMapping operands;
  AttentionState::Flavor flavor;
  mlir::Value sinks, slopes;
  bool standardAlibi = false;
  int64_t heads = 0;
  mlir::Region *scoreMod = nullptr, *maskMod = nullptr;
};

/// The variants a kernel of an attention op is built with: the op (null
/// when it has none) and the types of its variant operands
/// (getVariantOperands), the kernel's last parameters.
struct KernelVariants {
  kv::AttentionVariantOpInterface op;
  llvm::SmallVector<mlir::Type> types;

  /// `op`'s variants (empty when it has none).
  static KernelVariants of(mlir::Operation *op);
  explicit operator bool() const { return bool(op); }
  /// The emitter inside a kernel built with them: the variant operands
  /// are the last of `kernelArguments`.
  VariantEmitter bind(mlir::ValueRange kernelArguments) const;
};

} // namespace kvir::codegen

#endif // KVIR_CODEGEN_VARIANTS_H
