//===- TargetInfo.cpp - What kvir knows about each NVIDIA chip ------------===//
#include "kvir/Target/GPU/TargetInfo.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>

using namespace kvir::target;

static const MmaAtom kAmpereMma[] = {MmaAtom::MmaSyncM16N8K16};
static const MmaAtom kHopperMma[] = {MmaAtom::WgmmaM64NK16,
                                     MmaAtom::MmaSyncM16N8K16};
static const CopyAtom kAmpereCopy[] = {CopyAtom::CpAsync};
static const CopyAtom kHopperCopy[] = {CopyAtom::Tma, CopyAtom::CpAsync};

// Figures from NVIDIA's CUDA C++ Programming Guide ("Technical
// Specifications per Compute Capability") and the parts' data sheets. sm_90
// (without "a") has TMA but not wgmma, which needs the arch-specific target.
static const TargetInfo kTargets[] = {
    // chip, part, SMs, smem/SM, smem/block, reserved, regs/SM, threads/SM,
    // blocks/SM, DRAM B/s, MMA atoms, copy atoms, griddepcontrol
    {"sm_80", "A100 SXM 80GB", 108, 167936, 166912, 1024, 65536, 2048, 32,
     2.039e12, kAmpereMma, kAmpereCopy},
    {"sm_86", "A10 / RTX A6000", 84, 102400, 101376, 1024, 65536, 1536, 16,
     0.768e12, kAmpereMma, kAmpereCopy},
    {"sm_89", "L40S", 142, 102400, 101376, 1024, 65536, 1536, 24, 0.864e12,
     kAmpereMma, kAmpereCopy},
    {"sm_90", "H100 SXM", 132, 233472, 232448, 1024, 65536, 2048, 32, 3.35e12,
     kAmpereMma, kHopperCopy, true},
    {"sm_90a", "H100 SXM", 132, 233472, 232448, 1024, 65536, 2048, 32, 3.35e12,
     kHopperMma, kHopperCopy, true},
};

llvm::StringRef kvir::target::stringifyMmaAtom(MmaAtom atom) {
  switch (atom) {
  case MmaAtom::WgmmaM64NK16:
    return "wgmma.m64nNk16";
  case MmaAtom::MmaSyncM16N8K16:
    return "mma.sync.m16n8k16";
  }
  return "?";
}

llvm::StringRef kvir::target::stringifyCopyAtom(CopyAtom atom) {
  switch (atom) {
  case CopyAtom::Tma:
    return "cp.async.bulk.tensor";
  case CopyAtom::CpAsync:
    return "cp.async";
  }
  return "?";
}

bool TargetInfo::has(MmaAtom atom) const {
  return llvm::is_contained(mmaAtoms, atom);
}

bool TargetInfo::has(CopyAtom atom) const {
  return llvm::is_contained(copyAtoms, atom);
}

std::string TargetInfo::whyNoMmaSyncKernels() const {
  if (has(MmaAtom::MmaSyncM16N8K16) && has(CopyAtom::CpAsync))
    return "";
  return chip.str() + " has no mma.sync / cp.async";
}

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
