//===- Tiling.h - GPU work decomposition choices ----------------*- C++ -*-===//
#ifndef KVIR_DIALECT_KV_TRANSFORMS_TILING_H
#define KVIR_DIALECT_KV_TRANSFORMS_TILING_H

#include "kvir/Dialect/KV/IR/KVOps.h"

namespace kvir::kv {

/// SMs of the flagship part of `chip` (sm_80 A100: 108, sm_86: 84,
/// sm_89 L40S: 142, sm_90/sm_90a H100 SXM: 132), or 0 if unknown.
int64_t getSmCount(llvm::StringRef chip);

/// The widest head-dim vector (elements, at most 16 bytes) that both the K
/// and V pools of `view` allow: its `kv.vector_width` attribute when
/// kv-specialize-layout set one, else the layout's proven contiguity.
int64_t getViewVectorWidth(PagedViewOp view);

/// The decomposition kv-tile picks for a decode of `qHeads` query heads over
/// `view` on a chip with `smCount` SMs.
DecodeTilingAttr chooseDecodeTiling(PagedViewOp view, int64_t qHeads,
                                    int64_t smCount);

} // namespace kvir::kv

#endif // KVIR_DIALECT_KV_TRANSFORMS_TILING_H
