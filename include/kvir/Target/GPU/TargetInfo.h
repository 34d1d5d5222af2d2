//===- TargetInfo.h - What kvir knows about each NVIDIA chip ----*- C++ -*-===//
//
// One record per supported chip: the numbers every stage that sizes work
// needs (SM count for split-KV, shared memory and registers for configs and
// occupancy, DRAM bandwidth for the bench's time estimates) and the atoms
// kernels can be built from there: its MMA atoms and copy atoms, each list
// in order of preference. Every pass and tool that takes a `chip` option
// resolves it here, once, with the same diagnostic; every lowering asks the
// same queries of it.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_TARGET_GPU_TARGETINFO_H
#define KVIR_TARGET_GPU_TARGETINFO_H

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace kvir::target {

/// The MMA instructions kernels are composed from.
enum class MmaAtom : uint8_t {
  /// wgmma.mma_async m64nNk16 (sm_90a).
  WgmmaM64NK16,
  /// mma.sync m16n8k16 with ldmatrix (sm_80+).
  MmaSyncM16N8K16,
};
/// The instructions that copy tiles from global to shared memory.
enum class CopyAtom : uint8_t {
  /// cp.async.bulk.tensor with a tensor map (sm_90).
  Tma,
  /// cp.async of 4, 8 or 16 bytes (sm_80+).
  CpAsync,
};
llvm::StringRef stringifyMmaAtom(MmaAtom atom);
llvm::StringRef stringifyCopyAtom(CopyAtom atom);

struct TargetInfo {
  /// The chip as nvvm-attach-target and ptxas spell it: "sm_90a".
  llvm::StringRef chip;
  /// The part whose numbers these are: "H100 SXM".
  llvm::StringRef part;
  int64_t smCount;
  /// Shared memory an SM can give its resident blocks, and the most one
  /// block may use (dynamic shared memory above 48 KB is opt-in).
  int64_t sharedBytesPerSM;
  int64_t maxSharedBytesPerBlock;
  /// Shared memory the driver reserves per resident block.
  int64_t reservedSharedBytesPerBlock;
  int64_t registersPerSM;
  int64_t maxThreadsPerSM;
  int64_t maxBlocksPerSM;
  /// Peak DRAM bandwidth of the part, bytes per second.
  double dramBytesPerSecond;
  /// The chip's MMA and copy atoms, most preferred first.
  llvm::ArrayRef<MmaAtom> mmaAtoms;
  llvm::ArrayRef<CopyAtom> copyAtoms;
  /// griddepcontrol (sm_90+; PTX ISA 7.8): a grid launched as a
  /// programmatic dependent of the one before it may start while that one
  /// runs and waits for it with griddepcontrol.wait.
  bool hasGridDependencyControl = false;

  bool has(MmaAtom atom) const;
  bool has(CopyAtom atom) const;
  /// Why the tensor-core kernels of today (mma.sync m16n8k16 fed by
  /// cp.async: prefill, MLA, the tensor-core decode) cannot run on this
  /// chip ("sm_75 has no mma.sync / cp.async"), or "" if they can.
  std::string whyNoMmaSyncKernels() const;

  /// The most static shared memory a kernel may declare.
  static constexpr int64_t kStaticSharedLimit = 48 * 1024;
  static constexpr int64_t kMaxThreadsPerBlock = 1024;
  static constexpr int64_t kMaxRegistersPerThread = 255;

  /// PTX features nvvm-attach-target is given: PTX ISA 8.3, the first
  /// with fence.proxy.tensormap (a TMA kernel acquires the tensor maps the
  /// host copied into global memory); 8.0 was the first with sm_90a.
  /// CUDA 12.3+ ptxas and drivers (545+) take it for every supported chip.
  static llvm::StringRef ptxFeatures() { return "+ptx83"; }

  /// The record of `chip` (exact spelling), or null.
  static const TargetInfo *lookup(llvm::StringRef chip);
  /// The record of `chip`, or an error naming it and the supported chips.
  static const TargetInfo *
  get(llvm::StringRef chip, llvm::function_ref<mlir::InFlightDiagnostic()> emitError);
  static llvm::ArrayRef<TargetInfo> all();
  /// "sm_80, sm_86, sm_89, sm_90 or sm_90a".
  static std::string supportedChips();

  /// Blocks of `threads` threads using `registers` registers per thread and
  /// `sharedBytes` of shared memory that fit on one SM at once (the CUDA
  /// occupancy calculator's model: registers allocated per warp in units of
  /// 256, shared memory in units of 128 bytes plus the per-block reserve).
  int64_t residentBlocks(int64_t threads, int64_t registers,
                         int64_t sharedBytes) const;
  /// The latency of a DRAM load under load that kernels plan to hide
  /// (about 600 ns on A100 and H100 under a streaming load).
  static constexpr double kLoadedDramLatencySeconds = 600e-9;
  /// Little's law: the bytes an SM must keep in flight to stream its share
  /// of the DRAM bandwidth, share x latency.
  double bytesInFlightPerSM() const {
    return dramBytesPerSecond / double(smCount) * kLoadedDramLatencySeconds;
  }
  /// Resident warps over the SM's maximum for such a kernel.
  double occupancy(int64_t threads, int64_t registers,
                   int64_t sharedBytes) const;
};

} // namespace kvir::target

#endif // KVIR_TARGET_GPU_TARGETINFO_H
