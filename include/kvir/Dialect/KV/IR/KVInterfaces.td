//===- KVInterfaces.td - kv dialect interfaces ------------*- tablegen -*-===//
#ifndef KVIR_DIALECT_KV_IR_KVINTERFACES_TD
#define KVIR_DIALECT_KV_IR_KVINTERFACES_TD

include "mlir/IR/OpBase.td"

def KV_AttentionVariantOpInterface
    : OpInterface<"AttentionVariantOpInterface"> {
  let cppNamespace = "::kvir::kv";
  let description = [{
    The variants of an attention op (docs/Semantics.md, "Variants"), in the
    order they apply to a logit `s = sm_scale * <q, k>`: ALiBi
    `s += slope_h * (j - p)`, the `score_mod` region, the soft cap; then
    `mask_mod` as one more visibility rule; attention sinks join each row's
    softmax denominator once.

    `score_mod` maps `(s: f32, request, q_head, q_pos, kv_pos: index)` to
    an f32 logit and `mask_mod` maps `(request, q_head, q_pos, kv_pos)` to
    an i1 (true: visible). Both yield with `kv.yield`, may read memory and
    values defined above (memrefs of integers or floats and f32 scalars,
    which the kernels take as parameters, and constants), and write
    nothing.
  }];
  let methods = [
    InterfaceMethod<"The sink logit of each query head (f32), or null.",
                    "::mlir::Value", "getSinks">,
    InterfaceMethod<"The sinks operand, to set or clear.",
                    "::mlir::MutableOperandRange", "getSinksMutable">,
    InterfaceMethod<"The ALiBi slope of each query head (f32), or null.",
                    "::mlir::Value", "getAlibiSlopes">,
    InterfaceMethod<"Whether ALiBi applies with the standard slopes.",
                    "bool", "getAlibi">,
    InterfaceMethod<"The score_mod region (empty without one).",
                    "::mlir::Region &", "getScoreMod">,
    InterfaceMethod<"The mask_mod region (empty without one).",
                    "::mlir::Region &", "getMaskMod">,
  ];
  let extraClassDeclaration = [{
    /// Whether any ALiBi bias applies (standard or given slopes).
    bool hasAlibi() { return getAlibi() || getAlibiSlopes(); }
    /// Whether the op has a variant at all.
    bool hasVariants() {
      return getSinks() || hasAlibi() || !getScoreMod().empty() ||
             !getMaskMod().empty();
    }
  }];
  let verify = [{ return ::kvir::kv::verifyAttentionVariants($_op); }];
}

#endif // KVIR_DIALECT_KV_IR_KVINTERFACES_TD
