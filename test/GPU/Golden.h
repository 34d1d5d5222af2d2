//===- Golden.h - Emulated runs compared with recorded bytes ----*- C++ -*-===//
//
// The emulator must give the same bits on every host CPU (docs/Emulator.md).
// A golden record holds what one GPU test's emulated calls did: per runGpu
// call, a digest of every argument before the call, each launch's grid and
// counters, the SHA-256 of every 1 KiB of every output after it and a digest
// of every argument after it. With KVIR_GOLDEN_DIR
// set, a test whose record <dir>/<suite>.<test>.txt exists ('/' written as
// '_') is compared with it call by call, byte for byte; a difference fails
// the test naming the call and the first differing lines. With
// KVIR_GOLDEN_UPDATE=1 as well, the records of the tests run are written
// instead (after an intended change of kernels or inputs).
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_TEST_GPU_GOLDEN_H
#define KVIR_TEST_GPU_GOLDEN_H

#include "GpuHarness.h"

#include <string>
#include <vector>

namespace kvir::test::gpu::golden {

/// Whether KVIR_GOLDEN_DIR is set.
bool enabled();

/// The per-argument lines of the record, taken before a call.
std::vector<std::string> describeArguments(const KernelSource &src);

/// Records (or compares) the call of `src` just made.
void recordCall(const KernelSource &src,
                const std::vector<std::string> &argumentsBefore,
                const std::vector<Tensor> &outputs, const RunResult &result);

} // namespace kvir::test::gpu::golden

#endif // KVIR_TEST_GPU_GOLDEN_H
