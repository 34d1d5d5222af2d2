//===- CaseDump.h - Write emulated GPU calls out for replay -----*- C++ -*-===//
//
// With KVIR_DUMP_CASES=<dir> set, every runGpu call of the GPU tests writes
// <dir>/<suite>.<test>.<n>/: the kv function's source, each launch the
// emulator ran (kernel, grid, block, shared bytes, parameter bytes; pointers
// as allocation + offset), every allocation the launches referenced with its
// contents at first use, the final contents of the test's tensors, and, per
// compareGpuState, the float64 reference state with its tolerances.
// bench/gpu/replay_cases.py replays such a case on a GPU from the PTX of the
// same source and compares the GPU's outputs with the emulator's and with
// the reference: emulator agreement and numerics on silicon, for every
// kernel family, without per-family host code.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_TEST_GPU_CASEDUMP_H
#define KVIR_TEST_GPU_CASEDUMP_H

#include "Harness/Harness.h"
#include "Reference/Reference.h"

#include <string>

namespace kvir::test::gpu {

/// Whether KVIR_DUMP_CASES is set (then the emulator records launches).
bool caseDumpEnabled();
/// Writes the case of the call just made (the emulator's launch records of
/// `src` compiled for `chip`, with fixed grids for `graphMaxBatch` if > 0).
void dumpCase(const KernelSource &src, const std::string &chip,
              int64_t graphMaxBatch);
/// With KVIR_COLLECT_MODULES=<dir> set (scripts/ptx-gate.sh), writes the
/// source runGpu compiles as <dir>/<digest>.mlir, its first line
/// "// kvir-gate: chip=<chip> graph-max-batch=<n>": the inputs of the PTX
/// gate, which compiles them before and after a change.
void collectModule(const std::string &text, const std::string &chip,
                   int64_t graphMaxBatch);
/// Adds a reference check of `got` to the last case written.
void dumpStateCheck(const StateBuffers &got, const ref::State &expected,
                    double outputTolerance, double lseTolerance);

} // namespace kvir::test::gpu

#endif // KVIR_TEST_GPU_CASEDUMP_H
