//===- Manifest.h - Manifests and C headers from launch plans ---*- C++ -*-===//
//
// What a framework needs to launch kvir's kernels, derived from the typed
// launch plans (#kvgpu.plan) convert-kv-to-gpu records, never from kernel
// names or roles known here: per gpu.binary with PTX, the PTX text, one
// JSON manifest per kernel (its plan, role, launch condition, grid and
// block, shared memory, parameters with dtypes and shape expressions) and a
// C header embedding the PTX with, per plan, its kernel table and one C
// function per computed size (the split-KV partition count) and for the
// workspace bytes.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_TARGET_MANIFEST_MANIFEST_H
#define KVIR_TARGET_MANIFEST_MANIFEST_H

#include "kvir/Dialect/KVGPU/IR/KVGPUDialect.h"
#include "kvir/Dialect/KVGPU/IR/KernelABI.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"

#include <string>

namespace kvir::manifest {

/// The launch plans recorded on `module`.
llvm::SmallVector<kvgpu::LaunchPlanAttr> getLaunchPlans(mlir::ModuleOp module);

/// One parameter of a kernel in kvir's kernel ABI (KernelABI.h), as a
/// launcher passes it.
struct KernelParam {
  enum class Kind {
    pointer, // a plan buffer: its device address
    size,    // a plan size (index) by value
    scalar,  // a plan scalar (f32) by value
    extent   // a buffer's dynamic extent (int64)
  };
  Kind kind;
  std::string name;
  /// The plan argument (null for a size).
  kvgpu::PlanArgAttr arg;
  /// Extents: which, and the plan's expression of its value (null for a
  /// strided view's strides and offset, which only the caller's buffer
  /// knows).
  kvgpu::KernelExtent extent{kvgpu::KernelExtent::Kind::size, 0};
  kvgpu::SizeExprAttr value;
};

/// The parameters of `kernel`, one of `plan`'s, in order: its arguments,
/// then the dynamic extents of its buffers.
llvm::SmallVector<KernelParam> getKernelParams(kvgpu::LaunchPlanAttr plan,
                                               kvgpu::KernelLaunchAttr kernel);

/// Whether `chip`'s kernels wait for the grid launched before them
/// (griddepcontrol.wait first): any launch of them may be a programmatic
/// dependent (CUDA's programmatic stream serialization).
bool waitsForPreviousGrid(llvm::StringRef chip);

/// Whether a host launches `kernel`, one of `plan`'s compiled for `chip`,
/// as a programmatic dependent of the plan's kernel before it: a kernel
/// after the first of its path (a merge after its split kernel), where
/// waitsForPreviousGrid. Its launch then overlaps the previous kernel's
/// last blocks.
bool launchesAsDependent(kvgpu::LaunchPlanAttr plan,
                         kvgpu::KernelLaunchAttr kernel, llvm::StringRef chip);

/// The manifest of `kernel`, one of `plan`'s, whose PTX is `ptxFile`
/// compiled for `chip`.
llvm::json::Value kernelManifest(kvgpu::LaunchPlanAttr plan,
                                 kvgpu::KernelLaunchAttr kernel,
                                 llvm::StringRef ptxFile, llvm::StringRef chip);

/// The C header of a binary named `binary` holding `ptx` for `chip`, with
/// the launch tables and size functions of `plans`.
std::string cHeader(llvm::StringRef binary, llvm::StringRef ptx,
                    llvm::StringRef chip,
                    llvm::ArrayRef<kvgpu::LaunchPlanAttr> plans);

/// Per function of `module` that runs launch plans, its chain of them:
/// `function`, `args` (index, type), `temps` (the buffers it allocates for
/// plan arguments: dtype, shape of constants and {arg, axis} extents),
/// `steps` (each run of a plan in order: `plan`, `op`, `args` binding each
/// input, output and scalar of the plan to {arg}, {temp} or {value}); or
/// `function` and `error` (why a host cannot replay it: launches in a
/// loop, a view of a buffer passed, a host call that is not a plan's).
llvm::SmallVector<llvm::json::Object> describePrograms(mlir::ModuleOp module);

/// Writes `<binary>.ptx`, `<kernel>.json` and `<binary>.h` into `outputDir`
/// for every gpu.binary of `module` that holds PTX, and
/// `<function>.program.json` (describePrograms) per function. Fails with a diagnostic
/// when the module has none.
mlir::LogicalResult writeOutputs(mlir::ModuleOp module,
                                 llvm::StringRef outputDir);

} // namespace kvir::manifest

#endif // KVIR_TARGET_MANIFEST_MANIFEST_H
