//===- HostMemory.cpp - Where GPU shared memory and stacks live -----------===//
//
// HostMemory.h says what lives where.
//
//===----------------------------------------------------------------------===//
#include "HostMemory.h"

#include "llvm/Support/MathExtras.h"

#include <csignal>
#include <cstdio>
#include <sys/mman.h>
#include <unistd.h>

using namespace kvir::emu;

static constexpr uint64_t kSharedWindow = 64ull << 20;
static constexpr uint64_t kSharedArenaOffset = 16ull << 20;

char *kvir::emu::sharedWindowBase() {
  // Aligned to 256 KiB, so that the low 18 bits of a shared pointer are its
  // offset in the block's shared memory, as the 32-bit shared addresses of
  // a GPU are: wgmma descriptors encode them (bits 4-17), and swizzles
  // permute address bits.
  static char *base = [] {
    constexpr uint64_t align = 256 * 1024;
    void *p = mmap(nullptr, kSharedWindow + align, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
      return static_cast<char *>(nullptr);
    return reinterpret_cast<char *>(
        llvm::alignTo(reinterpret_cast<uint64_t>(p), align));
  }();
  return base;
}
uint64_t kvir::emu::sharedWindowSize() { return kSharedWindow; }

namespace {
/// Fiber stacks, kept from one launch to the next: one mapping in which
/// every stack has an inaccessible guard region below it (stacks grow down),
/// so that a kernel that overflows its stack faults instead of silently
/// overwriting its neighbour's. The fault is reported by a SIGSEGV handler.
struct StackPool {
  /// mprotect works in pages, whose size is the host's (4 KiB on x86-64,
  /// 4, 16 or 64 KiB on AArch64): stacks and guards are whole pages.
  static size_t pageBytes() {
    static const size_t bytes = size_t(sysconf(_SC_PAGESIZE));
    return bytes;
  }
  static size_t guardBytes() { return llvm::alignTo(64 * 1024, pageBytes()); }
  char *base = nullptr;
  size_t count = 0, stackBytes = 0, mapped = 0;

  size_t stride() const { return guardBytes() + stackBytes; }
  char *stackLo(size_t i) const { return base + i * stride() + guardBytes(); }

  bool reserve(size_t n, size_t bytes) {
    bytes = llvm::alignTo(bytes, pageBytes());
    if (base && n <= count && bytes == stackBytes)
      return true;
    if (base)
      munmap(base, mapped);
    count = n;
    stackBytes = bytes;
    mapped = n * stride();
    void *p = mmap(nullptr, mapped, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    base = p == MAP_FAILED ? nullptr : static_cast<char *>(p);
    for (size_t i = 0; base && i < n; ++i)
      if (mprotect(stackLo(i), stackBytes, PROT_READ | PROT_WRITE) != 0) {
        munmap(base, mapped);
        base = nullptr;
      }
    return base != nullptr;
  }

  /// The thread whose guard region holds `addr`, or -1.
  long guardOwner(uintptr_t addr) const {
    if (!base || addr < uintptr_t(base) || addr >= uintptr_t(base) + mapped)
      return -1;
    size_t offset = addr - uintptr_t(base);
    return offset % stride() < guardBytes() ? long(offset / stride()) : -1;
  }
};
StackPool stackPool;
struct sigaction previousSegv;

/// Async-signal-safe enough for a last message: write(2) and _exit.
void onSegv(int sig, siginfo_t *info, void *context) {
  long thread = stackPool.guardOwner(uintptr_t(info->si_addr));
  if (thread >= 0) {
    char msg[256];
    int n = snprintf(msg, sizeof(msg),
                     "kvir-emu: GPU thread %ld (linear id in its block) "
                     "overflowed its %zu-byte fiber stack (raise it with "
                     "kvir-runner --emu-stack-bytes or "
                     "EmulatorOptions::stackBytes)\n",
                     thread, stackPool.stackBytes);
    if (n > 0)
      (void)!write(2, msg, size_t(n));
    _exit(1);
  }
  // Not ours: let the previous handler (or the default action) have it.
  sigaction(SIGSEGV, &previousSegv, nullptr);
  raise(sig);
}

void installSegvHandler() {
  static bool installed = [] {
    static char altStack[64 * 1024];
    stack_t ss{};
    ss.ss_sp = altStack;
    ss.ss_size = sizeof(altStack);
    sigaltstack(&ss, nullptr);
    struct sigaction sa {};
    sa.sa_sigaction = onSegv;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &previousSegv);
    return true;
  }();
  (void)installed;
}
} // namespace

char *kvir::emu::clusterArena(uint32_t rank) {
  return sharedWindowBase() + kSharedArenaOffset + rank * kArenaStride;
}

bool kvir::emu::fitsSharedWindow(uint64_t bytes) {
  return bytes <= kArenaStride;
}

bool kvir::emu::reserveFiberStacks(size_t count, size_t bytes) {
  return stackPool.reserve(count, bytes);
}
size_t kvir::emu::fiberStackBytes() { return stackPool.stackBytes; }
char *kvir::emu::fiberStackLo(size_t i) { return stackPool.stackLo(i); }
void kvir::emu::installStackOverflowHandler() { installSegvHandler(); }
