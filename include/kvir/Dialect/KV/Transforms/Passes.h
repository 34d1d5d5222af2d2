//===- Passes.h - kv dialect transformation passes --------------*- C++ -*-===//
#ifndef KVIR_DIALECT_KV_TRANSFORMS_PASSES_H
#define KVIR_DIALECT_KV_TRANSFORMS_PASSES_H

#include "kvir/Dialect/KV/IR/KVOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Pass/Pass.h"

namespace kvir::kv {

#define GEN_PASS_DECL
#include "kvir/Dialect/KV/Transforms/Passes.h.inc"

/// Patterns rewriting kv.cascade into per-level kv.prefill and kv.merge.
void populateExpandCascadePatterns(mlir::RewritePatternSet &patterns);
/// kv-canonicalize-variants' patterns.
void populateCanonicalizeVariantsPatterns(mlir::RewritePatternSet &patterns);

#define GEN_PASS_REGISTRATION
#include "kvir/Dialect/KV/Transforms/Passes.h.inc"

} // namespace kvir::kv

#endif // KVIR_DIALECT_KV_TRANSFORMS_PASSES_H
