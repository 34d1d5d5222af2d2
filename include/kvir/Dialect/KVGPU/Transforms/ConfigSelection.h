//===- ConfigSelection.h - Per-op, per-chip GPU configurations --*- C++ -*-===//
//
// The one place where kvir decides how an op's work is decomposed on a
// chip: kv-tile attaches what these return, and convert-kv-to-gpu uses them
// for ops that reach it without a configuration.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_DIALECT_KVGPU_TRANSFORMS_CONFIGSELECTION_H
#define KVIR_DIALECT_KVGPU_TRANSFORMS_CONFIGSELECTION_H

#include "kvir/Dialect/KV/IR/KVOps.h"
#include "kvir/Dialect/KVGPU/IR/KVGPUDialect.h"
#include "kvir/Target/GPU/TargetInfo.h"

#include <string>

namespace kvir::kvgpu {

/// The decode configuration for `op` (over a kv.paged_view) on `target`, or
/// failure with the reason in `whyNot`.
mlir::FailureOr<DecodeConfigAttr>
chooseDecodeConfig(kv::DecodeOp op, const target::TargetInfo &target,
                   std::string &whyNot);

/// `op`'s `kvgpu.config` if it is a #kvgpu.decode, else chooseDecodeConfig.
mlir::FailureOr<DecodeConfigAttr>
getOrChooseDecodeConfig(kv::DecodeOp op, const target::TargetInfo &target,
                        std::string &whyNot);

/// The prefill configuration for `op` on `target`, or failure with the
/// reason in `whyNot`.
mlir::FailureOr<PrefillConfigAttr>
choosePrefillConfig(kv::PrefillOp op, const target::TargetInfo &target,
                    std::string &whyNot);

/// `op`'s `kvgpu.config` if it is a #kvgpu.prefill, else choosePrefillConfig.
mlir::FailureOr<PrefillConfigAttr>
getOrChoosePrefillConfig(kv::PrefillOp op, const target::TargetInfo &target,
                         std::string &whyNot);

/// Bytes of the query tile and the K and V stages a prefill kernel with
/// `config` keeps in shared memory (its other buffers are under 1 KB).
int64_t prefillTileBytes(PrefillConfigAttr config, int64_t headDim,
                         int64_t headDimV, int64_t elementBytes);

/// The configuration kv-tile would attach to `op`, or failure (with the
/// reason) when none fits or the op takes none.
mlir::FailureOr<mlir::Attribute>
chooseConfig(mlir::Operation *op, const target::TargetInfo &target,
             std::string &whyNot);

/// `op`'s `kvgpu.config`, or null.
mlir::Attribute getConfig(mlir::Operation *op);

/// Builds `AttrT` if its verifier accepts `args`, else fails and leaves the
/// verifier's message in `whyNot` (no diagnostic reaches the context).
template <typename AttrT, typename... Args>
mlir::FailureOr<AttrT> getCheckedQuietly(std::string &whyNot,
                                         mlir::MLIRContext *ctx,
                                         Args &&...args) {
  mlir::ScopedDiagnosticHandler capture(ctx, [&](mlir::Diagnostic &diag) {
    whyNot = diag.str();
    return mlir::success();
  });
  AttrT attr = AttrT::getChecked(
      [&] { return mlir::emitError(mlir::UnknownLoc::get(ctx)); }, ctx,
      std::forward<Args>(args)...);
  if (!attr)
    return mlir::failure();
  return attr;
}

} // namespace kvir::kvgpu

#endif // KVIR_DIALECT_KVGPU_TRANSFORMS_CONFIGSELECTION_H
