//===- ManifestParts.h - What the manifest writers share --------*- C++ -*-===//
//
// What the JSON manifests (Manifest.cpp) and the C header (CHeader.cpp)
// both read off a launch plan.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_LIB_TARGET_MANIFEST_MANIFESTPARTS_H
#define KVIR_LIB_TARGET_MANIFEST_MANIFESTPARTS_H

#include "kvir/Dialect/KVGPU/IR/KVGPUDialect.h"

namespace kvir::manifest {

/// The bytes of the workspace arguments `kernels` take, as an expression.
kvgpu::SizeExprAttr
workspaceBytes(kvgpu::LaunchPlanAttr plan,
               llvm::ArrayRef<kvgpu::KernelLaunchAttr> kernels);

/// The kernels of `plan` launched when `when` holds (with those launched
/// always), in launch order.
llvm::SmallVector<kvgpu::KernelLaunchAttr>
kernelsWhen(kvgpu::LaunchPlanAttr plan, kvgpu::LaunchCondition when);

} // namespace kvir::manifest

#endif // KVIR_LIB_TARGET_MANIFEST_MANIFESTPARTS_H
