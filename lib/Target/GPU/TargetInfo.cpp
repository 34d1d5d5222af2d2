//===- TargetInfo.cpp - What kvir knows about each NVIDIA chip ------------===//
#include "kvir/Target/GPU/TargetInfo.h"

#include <algorithm>

using namespace kvir::target;

// Figures from NVIDIA's CUDA C++ Programming Guide ("Technical
// Specifications per Compute Capability") and the parts' data sheets.
static const TargetInfo kTargets[] = {
    // chip, part, SMs, smem/SM, smem/block, reserved, regs/SM, threads/SM,
    // blocks/SM, DRAM B/s, mma.sync, cp.async, wgmma
    {"sm_80", "A100 SXM 80GB", 108, 167936, 166912, 1024, 65536, 2048, 32,
     2.039e12, true, true, false},
    {"sm_86", "A10 / RTX A6000", 84, 102400, 101376, 1024, 65536, 1536, 16,
     0.768e12, true, true, false},
    {"sm_89", "L40S", 142, 102400, 101376, 1024, 65536, 1536, 24, 0.864e12,
     true, true, false},
    {"sm_90", "H100 SXM", 132, 233472, 232448, 1024, 65536, 2048, 32,
     3.35e12, true, true, false},
    {"sm_90a", "H100 SXM", 132, 233472, 232448, 1024, 65536, 2048, 32,
     3.35e12, true, true, true},
};

llvm::ArrayRef<TargetInfo> TargetInfo::all() { return kTargets; }

const TargetInfo *TargetInfo::lookup(llvm::StringRef chip) {
  for (const TargetInfo &t : kTargets)
    if (t.chip == chip)
      return &t;
  return nullptr;
}

std::string TargetInfo::supportedChips() {
  std::string s;
  llvm::ArrayRef<TargetInfo> targets = all();
  for (size_t i = 0; i < targets.size(); ++i) {
    if (i)
      s += i + 1 == targets.size() ? " or " : ", ";
    s += targets[i].chip.str();
  }
  return s;
}

const TargetInfo *
TargetInfo::get(llvm::StringRef chip,
                llvm::function_ref<mlir::InFlightDiagnostic()> emitError) {
  if (const TargetInfo *t = lookup(chip))
    return t;
  emitError() << "unknown chip '" << chip << "', expected "
              << supportedChips();
  return nullptr;
}

int64_t TargetInfo::residentBlocks(int64_t threads, int64_t registers,
                                   int64_t sharedBytes) const {
  int64_t warps = (threads + 31) / 32;
  if (warps <= 0)
    return 0;
  int64_t regsPerWarp = (registers * 32 + 255) / 256 * 256;
  int64_t byRegs =
      regsPerWarp ? (registersPerSM / regsPerWarp) / warps : maxBlocksPerSM;
  int64_t perBlock =
      (sharedBytes + reservedSharedBytesPerBlock + 127) / 128 * 128;
  int64_t bySmem = sharedBytesPerSM / perBlock;
  int64_t byThreads = maxThreadsPerSM / (warps * 32);
  return std::max<int64_t>(
      0, std::min({byRegs, bySmem, byThreads, maxBlocksPerSM}));
}

double TargetInfo::occupancy(int64_t threads, int64_t registers,
                             int64_t sharedBytes) const {
  int64_t warps = (threads + 31) / 32;
  return double(residentBlocks(threads, registers, sharedBytes) * warps) /
         double(maxThreadsPerSM / 32);
}
