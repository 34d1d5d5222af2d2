//===- Hooks.cpp - The functions instrumented kernels call ----------------===//
#include "Cluster.h"
#include "Runtime.h"

#include "llvm/Support/MathExtras.h"

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>

using namespace kvir::emu;

void performCopies(GpuThread &t, size_t keep);

extern "C" {

uint32_t __kvemu_sreg(uint32_t which) {
  BlockRun &b = *current.block;
  GpuThread &t = *current.thread;
  uint32_t lane = t.lane;
  switch (which) {
  case kabi::TidX:
    return t.tid[0];
  case kabi::TidY:
    return t.tid[1];
  case kabi::TidZ:
    return t.tid[2];
  case kabi::NtidX:
    return b.block.x;
  case kabi::NtidY:
    return b.block.y;
  case kabi::NtidZ:
    return b.block.z;
  case kabi::CtaidX:
    return b.ctaid.x;
  case kabi::CtaidY:
    return b.ctaid.y;
  case kabi::CtaidZ:
    return b.ctaid.z;
  case kabi::NctaidX:
    return b.grid.x;
  case kabi::NctaidY:
    return b.grid.y;
  case kabi::NctaidZ:
    return b.grid.z;
  case kabi::LaneId:
    return lane;
  case kabi::WarpSize:
    return 32;
  case kabi::WarpId:
    return t.warp;
  case kabi::NWarpId:
    return b.liveLanes.size();
  case kabi::SmId:
    return 0;
  case kabi::NSmId:
    return 1;
  case kabi::LaneMaskLt:
    return (1u << lane) - 1;
  case kabi::LaneMaskLe:
    return lane == 31 ? ~0u : (2u << lane) - 1;
  case kabi::LaneMaskEq:
    return 1u << lane;
  case kabi::LaneMaskGe:
    return ~((1u << lane) - 1);
  case kabi::LaneMaskGt:
    return lane == 31 ? 0u : ~((2u << lane) - 1);
  case kabi::ClusterIdX:
    return b.ctaid.x / b.cluster->dims.x;
  case kabi::ClusterIdY:
    return b.ctaid.y / b.cluster->dims.y;
  case kabi::ClusterIdZ:
    return b.ctaid.z / b.cluster->dims.z;
  case kabi::NClusterIdX:
    return b.grid.x / b.cluster->dims.x;
  case kabi::NClusterIdY:
    return b.grid.y / b.cluster->dims.y;
  case kabi::NClusterIdZ:
    return b.grid.z / b.cluster->dims.z;
  case kabi::ClusterCtaIdX:
    return b.ctaid.x % b.cluster->dims.x;
  case kabi::ClusterCtaIdY:
    return b.ctaid.y % b.cluster->dims.y;
  case kabi::ClusterCtaIdZ:
    return b.ctaid.z % b.cluster->dims.z;
  case kabi::ClusterNCtaIdX:
    return b.cluster->dims.x;
  case kabi::ClusterNCtaIdY:
    return b.cluster->dims.y;
  case kabi::ClusterNCtaIdZ:
    return b.cluster->dims.z;
  case kabi::ClusterCtaRank:
    return b.clusterRank;
  case kabi::ClusterNCtaRank:
    return b.cluster->size();
  case kabi::Clock: {
    // Deterministic and increasing, which is all kernels may rely on.
    static uint32_t ticks = 0;
    return ticks += 1000;
  }
  default:
    fail("unknown special register " + std::to_string(which), 0);
  }
}

static uint64_t collective(Arrival arrival) {
  GpuThread &t = *current.thread;
  t.arrival = arrival;
  t.wait = Wait::Warp;
  t.waitSite = arrival.site;
  yieldToScheduler();
  return t.result;
}

void __kvemu_syncwarp(uint32_t mask, uint32_t site) {
  Arrival a{};
  a.kind = Arrival::SyncWarp;
  a.mask = mask;
  a.site = site;
  collective(a);
}

uint64_t __kvemu_shfl(uint32_t mode, uint32_t mask, uint32_t value, uint32_t b,
                      uint32_t c, uint32_t site) {
  Arrival a{};
  a.kind = Arrival::Shfl;
  a.mask = mask;
  a.site = site;
  a.mode = mode;
  a.value = value;
  a.b = b;
  a.c = c;
  return collective(a);
}

uint32_t __kvemu_vote(uint32_t mode, uint32_t mask, uint32_t pred,
                      uint32_t site) {
  Arrival a{};
  a.kind = Arrival::Vote;
  a.mask = mask;
  a.site = site;
  a.mode = mode;
  a.value = pred != 0;
  return collective(a);
}

void __kvemu_mma(uint32_t m, uint32_t n, uint32_t k, uint32_t types,
                 const uint32_t *aFrag, const uint32_t *bFrag,
                 const uint32_t *cFrag, uint32_t *dFrag, uint32_t site) {
  Arrival a{};
  a.kind = Arrival::Mma;
  a.mask = ~0u; // mma.sync is warp-wide (.aligned).
  a.site = site;
  a.m = m;
  a.n = n;
  a.k = k;
  a.types = types;
  a.a = aFrag;
  a.bFrag = bFrag;
  a.cFrag = cFrag;
  a.out = dFrag;
  collective(a);
}

/// The arrival of a lane at ldmatrix / stmatrix (.m8n8, x`num`): lanes
/// 0..8*num-1 each give the address of one 16-byte row, checked (and, for
/// stmatrix, recorded as written) here; the warp moves the data when all
/// its lanes arrived.
static Arrival matrixRows(Arrival::Kind kind, uint32_t num, uint32_t trans,
                          const void *ptr, uint32_t site) {
  GpuThread &t = *current.thread;
  bool store = kind == Arrival::StMatrix;
  if (t.lane < 8 * num) {
    if (reinterpret_cast<uintptr_t>(ptr) % 16)
      fail(std::string(store ? "stmatrix" : "ldmatrix") +
               " row address is not 16-byte aligned",
           site);
    checkAccess(ptr, 16, store ? kabi::Store : kabi::Load, site);
  }
  Arrival a{};
  a.kind = kind;
  a.mask = ~0u;
  a.site = site;
  a.num = num;
  a.trans = trans;
  a.ptr = ptr;
  return a;
}

void __kvemu_ldmatrix(uint32_t num, uint32_t trans, const void *ptr,
                      uint32_t *out, uint32_t site) {
  Arrival a = matrixRows(Arrival::LdMatrix, num, trans, ptr, site);
  a.out = out;
  collective(a);
}

void __kvemu_stmatrix(uint32_t num, uint32_t trans, void *ptr,
                      const uint32_t *regs, uint32_t site) {
  Arrival a = matrixRows(Arrival::StMatrix, num, trans, ptr, site);
  a.a = regs;
  collective(a);
}

void __kvemu_cp_async(void *dst, const void *src, uint32_t size,
                      uint32_t srcSize, uint32_t site, const void *base,
                      int32_t arg) {
  GpuThread &t = *current.thread;
  if (srcSize > size)
    fail("cp.async source size " + std::to_string(srcSize) +
             " exceeds the copy size " + std::to_string(size),
         site);
  // PTX ISA, cp.async: both addresses are aligned to the copy size (4, 8 or
  // 16 bytes); the destination is checked when the copy lands.
  if (reinterpret_cast<uintptr_t>(dst) % size)
    fail("cp.async destination is not " + std::to_string(size) +
             "-byte aligned",
         site);
  if (srcSize)
    checkAccess(src, srcSize,
                kabi::Load | llvm::Log2_32(size) << kabi::AlignShift, site,
                base, arg);
  t.openCopies.push_back({dst, src, size, srcSize, site});
  markAsyncCopyDestination(*current.block, t, t.openCopies.back());
}

void __kvemu_cp_async_commit() {
  GpuThread &t = *current.thread;
  t.copyGroups.push_back(std::move(t.openCopies));
  t.openCopies.clear();
}

void __kvemu_cp_async_wait(uint32_t n) { performCopies(*current.thread, n); }

void *__kvemu_shared_base() { return current.block->shared; }

void __kvemu_divide(uint32_t fault, uint32_t site) {
  if (fault == 1)
    fail("integer division by zero (PTX leaves the result unspecified)",
         site);
  if (fault == 2)
    fail("signed integer division overflow: the most negative value divided "
         "by -1 (PTX leaves the result unspecified)",
         site);
}

/// CUDA's device-side printf (what gpu.printf lowers to): the arguments come
/// packed in a buffer, each at its natural alignment, integers of at most 32
/// bits as 4 bytes, floating point promoted to double. Printed to stdout.
int32_t kvemu_vprintf(const char *format, const char *args) {
  std::string out;
  size_t offset = 0;
  auto take = [&](size_t bytes) {
    offset = (offset + bytes - 1) / bytes * bytes;
    uint64_t v = 0;
    std::memcpy(&v, args + offset, bytes);
    offset += bytes;
    return v;
  };
  char piece[512];
  for (const char *p = format; *p;) {
    if (*p != '%' || p[1] == '%') {
      out += *p;
      p += *p == '%' ? 2 : 1;
      continue;
    }
    // One conversion: %[flags][width][.precision][length]conversion.
    const char *start = p++;
    while (*p && std::strchr("-+ #0", *p))
      ++p;
    bool starWidth = *p == '*', starPrecision = false;
    while (*p && (std::isdigit(*p) || *p == '*'))
      ++p;
    if (*p == '.') {
      ++p;
      starPrecision = *p == '*';
      while (*p && (std::isdigit(*p) || *p == '*'))
        ++p;
    }
    bool wide = false;
    while (*p && std::strchr("hlLqjzt", *p))
      wide |= *p++ != 'h';
    char conversion = *p ? *p++ : 0;
    std::string spec(start, p);
    int width = starWidth ? int(take(4)) : 0;
    int precision = starPrecision ? int(take(4)) : 0;
    auto emit = [&](auto value) {
      if (starWidth && starPrecision)
        std::snprintf(piece, sizeof(piece), spec.c_str(), width, precision,
                      value);
      else if (starWidth || starPrecision)
        std::snprintf(piece, sizeof(piece), spec.c_str(),
                      starWidth ? width : precision, value);
      else
        std::snprintf(piece, sizeof(piece), spec.c_str(), value);
      out += piece;
    };
    if (std::strchr("fFeEgGaA", conversion)) {
      uint64_t bits = take(8);
      double d;
      std::memcpy(&d, &bits, 8);
      emit(d);
    } else if (conversion == 's' || conversion == 'p') {
      uint64_t bits = take(8);
      const void *ptr = reinterpret_cast<const void *>(bits);
      if (conversion == 's')
        emit(ptr ? static_cast<const char *>(ptr) : "(null)");
      else
        emit(ptr);
    } else if (std::strchr("diouxXc", conversion)) {
      uint64_t bits = take(wide ? 8 : 4);
      if (wide)
        emit(static_cast<long long>(bits));
      else
        emit(static_cast<int>(uint32_t(bits)));
    } else {
      out += spec; // not a conversion printf knows: print it as is
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return int32_t(out.size());
}

/// A failed assertion in a kernel (cf.assert): stops the launch like any
/// other check, with the assertion's own message and position.
void kvemu_assertfail(const char *message, const char *file, uint32_t line,
                      const char *function, uint64_t) {
  fail(std::string("device assertion failed: ") + (message ? message : "") +
           " (" + (file ? file : "?") + ":" + std::to_string(line) + " in " +
           (function ? function : "?") + ")",
       ~0u);
}

} // extern "C"

/// cp.async data lands in shared memory when a wait retires its group: a
/// kernel that reads the destination before waiting sees the old contents
/// (and the race checker sees the write at the wait), as on hardware.
void performCopies(GpuThread &t, size_t keep) {
  while (t.copyGroups.size() > keep) {
    for (const AsyncCopy &c : t.copyGroups.front()) {
      checkAccess(c.dst, c.size, kabi::Store, c.site);
      std::memcpy(c.dst, c.src, c.srcSize);
      std::memset(static_cast<char *>(c.dst) + c.srcSize, 0,
                  c.size - c.srcSize);
    }
    t.copyGroups.erase(t.copyGroups.begin());
  }
}
