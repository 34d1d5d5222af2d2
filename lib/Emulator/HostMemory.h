//===- HostMemory.h - Where GPU shared memory and stacks live --*- C++ -*-===//
//
// Private to lib/Emulator. Shared memory is a reserved window of the host's
// address space holding one arena per CTA of a cluster; GPU threads run on
// fiber stacks with guard pages, whose overflow a SIGSEGV handler reports.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_LIB_EMULATOR_HOSTMEMORY_H
#define KVIR_LIB_EMULATOR_HOSTMEMORY_H

#include <cstddef>
#include <cstdint>

namespace kvir::emu {

/// The shared-memory window (null if it could not be mapped): accesses
/// that land in it but outside every running CTA's arena are shared
/// out-of-bounds accesses.
char *sharedWindowBase();
uint64_t sharedWindowSize();
/// Where the shared memory of the CTA of rank `rank` of a cluster lies:
/// arenas kArenaStride apart, each aligned to it, so that the low 18 bits
/// of a shared address are its offset, as the 32-bit shared addresses of a
/// GPU are (wgmma descriptors encode them, swizzles permute their bits).
constexpr uint64_t kArenaStride = 256 * 1024;
char *clusterArena(uint32_t rank);
/// Whether `bytes` of shared memory per CTA fit the window.
bool fitsSharedWindow(uint64_t bytes);

/// Fiber stacks, kept from one launch to the next: `count` stacks of at
/// least `bytes` (rounded up to pages). Returns false if they cannot be
/// mapped (errno says why).
bool reserveFiberStacks(size_t count, size_t bytes);
size_t fiberStackBytes();
char *fiberStackLo(size_t i);
/// Reports a fiber stack overflow (a fault in a guard page) and exits.
void installStackOverflowHandler();

} // namespace kvir::emu

#endif // KVIR_LIB_EMULATOR_HOSTMEMORY_H
