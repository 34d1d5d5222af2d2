//===- Launcher.h - Typed C launchers from launch plans ---------*- C++ -*-===//
//
// The C header's typed launchers: per plan, a plan struct, a host-side
// `<name>_plan(...)` (the plan's sizes, work schedule and workspace layout)
// and `<name>_launch(driver, kernels, stream, plan, buffers..., workspace)`
// calling the CUDA driver through a function table (kvir_cuda_t) that
// kvir_cuda_load fills from libcuda.so.1 at run time: the header's user
// needs no CUDA headers or libraries to build.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_LIB_TARGET_MANIFEST_LAUNCHER_H
#define KVIR_LIB_TARGET_MANIFEST_LAUNCHER_H

#include "kvir/Dialect/KVGPU/IR/KVGPUDialect.h"

#include <string>

namespace kvir::manifest {

/// kvir_cuda_t and kvir_cuda_load (once per translation unit).
std::string cudaDriverTable();

/// The typed launcher `name` of `plan`, whose helpers (sizes, schedule) are
/// named `<helpers>_...`, whose PTX is the array `ptx` compiled for `chip`
/// (kernels after the first of a path launch as programmatic dependents
/// where launchesAsDependent says so). `hasSchedule`: the
/// header has `<helpers>_schedule`. The strides of a strided view, which
/// only the caller's buffer knows, are parameters of `_launch` after the
/// buffers (`<arg>_stride<axis>`, in elements). A plan a launcher cannot
/// serve (a schedule reading more than the batch size) gets a comment
/// saying so.
std::string typedLauncher(kvgpu::LaunchPlanAttr plan, llvm::StringRef name,
                          llvm::StringRef helpers, llvm::StringRef ptx,
                          llvm::StringRef chip, bool hasSchedule);

} // namespace kvir::manifest

#endif // KVIR_LIB_TARGET_MANIFEST_LAUNCHER_H
