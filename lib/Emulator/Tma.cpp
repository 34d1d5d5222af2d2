//===- Tma.cpp - Bulk and tensor copies (cp.async.bulk[.tensor]) ----------===//
//
// The copies of sm_90's async proxy, as the PTX ISA defines them (5.5
// "Tensors", 9.7.9.25 "cp.async.bulk", 9.7.9.27 "cp.async.bulk.tensor"):
//  - global -> shared, completing its bytes on an mbarrier (complete_tx):
//    a tile of a tensor map (box of 1-5 dimensions, element strides,
//    out-of-bound elements zero-filled, the shared layout dense with
//    dimension 0 innermost and the map's swizzle applied to the shared
//    address: bits [4, 4+B) ^= bits [7, 7+B) for 32/64/128 bytes, B = 1, 2,
//    3), or a contiguous run of bytes;
//  - shared -> global in bulk async-groups (commit_group / wait_group):
//    the tile's in-bound elements, or a run of bytes.
// A copy is performed at issue. What could tell that apart from the ISA's
// "at some point before completion" is reported: the destination read
// before the mbarrier phase is observed (its writes belong to an async
// agent that only the mbarrier orders, Memory.cpp), a shared source
// written before the bulk group is waited for, generic writes of a source
// not made visible to the async proxy (fence.proxy.async).
//
//===----------------------------------------------------------------------===//
#include "DependentLaunch.h"
#include "HostMemory.h"
#include "Runtime.h"
#include "kvir/Emulator/TensorMap.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include <cstring>

using namespace kvir::emu;

namespace {

/// The shared offset of [ptr, ptr + bytes), which must lie in the block's
/// shared memory and be `align`-byte aligned.
uint64_t sharedRange(const void *ptr, uint64_t bytes, uint64_t align,
                     const std::string &what, uint32_t site) {
  BlockRun &b = *current.block;
  uint64_t addr = reinterpret_cast<uint64_t>(ptr);
  uint64_t arena = reinterpret_cast<uint64_t>(b.shared);
  if (addr < arena || addr + bytes > arena + b.sharedBytes)
    fail(what + ": shared bytes [" + std::to_string(int64_t(addr - arena)) +
             ", " + std::to_string(int64_t(addr - arena + bytes)) +
             ") are outside the block's " + std::to_string(b.sharedBytes) +
             " bytes of shared memory",
         site);
  if (addr % align)
    fail(what + ": the shared address " + std::to_string(addr - arena) +
             " is not " + std::to_string(align) + "-byte aligned",
         site);
  return addr - arena;
}

/// Checks that global [addr, addr + bytes) lies in one live allocation;
/// the copy reads it, or writes it.
void globalRange(uint64_t addr, uint64_t bytes, bool write,
                 const std::string &what, uint32_t site) {
  if (!allocations().find(addr, bytes))
    fail(what + ": global bytes [0x" + llvm::utohexstr(addr) + ", +" +
             std::to_string(bytes) + ") are not in one allocation: " +
             allocations().describeMiss(addr, bytes),
         site);
  noteGlobalAccess(*current.thread, addr, bytes, write, site);
}

/// The span of a CUtensorMapSwizzle: 0 (none), 32, 64 or 128 bytes.
uint32_t swizzleSpan(uint32_t swizzle) { return swizzle ? 16u << swizzle : 0; }

/// A tile copy's geometry: per dimension the elements in shared memory
/// and the element stride.
struct Tile {
  TensorMapFields map;
  uint32_t count[5] = {1, 1, 1, 1, 1}, stride[5] = {1, 1, 1, 1, 1};
  uint64_t elements = 1;
};

Tile tileOf(const void *tensorMap, uint32_t rank, const std::string &what,
            uint32_t site) {
  Tile tile;
  if (reinterpret_cast<uintptr_t>(tensorMap) % 64)
    fail(what + ": the tensor map address is not 64-byte aligned", site);
  // The emulator's maps are in global memory, written through the generic
  // proxy (the host's copy, or the kernel); the copy reads them through the
  // tensormap proxy, which only the reading thread's acquire orders after
  // those writes (PTX ISA 9.7.13.4, membar/fence: proxy fences).
  if (!llvm::is_contained(current.thread->acquiredTensorMaps,
                          reinterpret_cast<uint64_t>(tensorMap)))
    fail(what + ": the tensor map at 0x" +
             llvm::utohexstr(reinterpret_cast<uint64_t>(tensorMap)) +
             " is in global memory and this thread has not acquired it for "
             "the tensormap proxy (fence.proxy.tensormap::generic.acquire) "
             "since the launch",
         site);
  if (!decodeTensorMap(tensorMap, tile.map))
    fail(what + ": the tensor map operand does not hold a tensor map that "
                "cuTensorMapEncodeTiled encoded",
         site);
  const TensorMapFields &m = tile.map;
  if (m.rank != rank)
    fail(what + " with " + std::to_string(rank) +
             " coordinates on a tensor map of rank " + std::to_string(m.rank),
         site);
  if (m.interleave)
    fail(what + ": interleaved tensor maps are not modeled", site);
  if (m.swizzle && m.boxDim[0] * m.elementBytes() != swizzleSpan(m.swizzle))
    fail(what + ": a box row of " +
             std::to_string(m.boxDim[0] * m.elementBytes()) +
             " bytes narrower than its " +
             std::to_string(swizzleSpan(m.swizzle)) +
             "-byte swizzle: how the hardware lays it out is not documented, "
             "and the emulator does not guess",
         site);
  for (uint32_t d = 0; d < rank; ++d) {
    tile.stride[d] = d == 0 ? 1 : m.elementStrides[d];
    tile.count[d] = (m.boxDim[d] + tile.stride[d] - 1) / tile.stride[d];
    tile.elements *= tile.count[d];
  }
  return tile;
}

/// Calls `visit(index in shared memory, in bounds, global address)` for
/// every element of the tile at `coords`.
template <typename Visit>
void forEachElement(const Tile &tile, const int32_t *coords, Visit visit) {
  const TensorMapFields &m = tile.map;
  uint32_t e = m.elementBytes();
  for (uint64_t linear = 0; linear < tile.elements; ++linear) {
    uint64_t rest = linear, addr = m.globalAddress;
    bool inBounds = true;
    for (uint32_t d = 0; d < m.rank; ++d) {
      uint64_t i = rest % tile.count[d];
      rest /= tile.count[d];
      int64_t c = int64_t(coords[d]) + int64_t(i) * tile.stride[d];
      if (c < 0 || uint64_t(c) >= m.globalDim[d])
        inBounds = false;
      else
        addr += uint64_t(c) * (d == 0 ? e : m.globalStrides[d - 1]);
    }
    visit(linear, inBounds, addr);
  }
}

/// Generic writes of shared [offset, offset + bytes) must be visible to the
/// async proxy and ordered before `issuer`: the source of a bulk store.
void checkSource(BlockRun &b, GpuThread &issuer, uint64_t offset,
                 uint64_t bytes, const std::string &what, uint32_t site) {
  for (uint64_t i = offset; i < offset + bytes; ++i) {
    std::string unfenced = unfencedGenericWrite(b, i, what);
    if (!unfenced.empty())
      fail(unfenced, site);
  }
  recordAsyncRead(b, issuer, offset, bytes, site);
}

/// The global side of a bulk copy of `size` bytes: size and address
/// multiples of 16, the bytes in one allocation.
void bulkGlobalAddress(const void *ptr, uint32_t size, bool write,
                       const std::string &what, uint32_t site) {
  if (size % 16)
    fail(what + " of " + std::to_string(size) +
             " bytes: the size must be a multiple of 16",
         site);
  uint64_t addr = reinterpret_cast<uint64_t>(ptr);
  if (addr % 16)
    fail(what + ": the global address is not 16-byte aligned", site);
  globalRange(addr, size, write, what, site);
}

} // namespace

void kvir::emu::checkAsyncSourceWrite(BlockRun &b, uint64_t offset,
                                      uint64_t bytes, const std::string &what,
                                      uint32_t site) {
  for (const BlockRun::AsyncRead &r : b.asyncReads)
    if (offset < r.offset + r.bytes && r.offset < offset + bytes)
      fail(what + " shared offset " +
               std::to_string(std::max(offset, r.offset)) +
               ", which the bulk store at " + describeSite(r.site) +
               " still reads (before its cp.async.bulk.wait_group.read)",
           site);
}

extern "C" {

void __kvemu_fence_proxy_tensormap(const void *tensorMap, uint32_t site) {
  uint64_t addr = reinterpret_cast<uint64_t>(tensorMap);
  // The ISA leaves an address outside .global undefined.
  globalRange(addr, 128, /*write=*/false,
              "fence.proxy.tensormap::generic.acquire", site);
  std::vector<uint64_t> &acquired = current.thread->acquiredTensorMaps;
  if (!llvm::is_contained(acquired, addr))
    acquired.push_back(addr);
}

void __kvemu_tma_load(const void *tensorMap, void *dst, const void *mbar,
                      const int32_t *coords, uint32_t rank, uint32_t enabled,
                      uint32_t site) {
  if (!enabled)
    return;
  BlockRun &b = *current.block;
  GpuThread &t = *current.thread;
  const std::string what = "cp.async.bulk.tensor (global to shared)";
  Tile tile = tileOf(tensorMap, rank, what, site);
  const TensorMapFields &m = tile.map;
  if (m.oobFill)
    fail(what + ": OOB-NaN fill is not modeled (its bit pattern is not "
                "documented)",
         site);
  uint32_t e = m.elementBytes();
  uint64_t bytes = tile.elements * e;
  // PTX asks 16-byte alignment of the box; the CUDA programming guide
  // 128 bytes for the shared-memory address of a tensor copy.
  uint64_t dstOffset = sharedRange(dst, bytes, 128, what, site);
  uint32_t barrier = mbarrierAt(mbar, what, site);
  std::vector<uint8_t> box(bytes, 0);
  llvm::DenseSet<uint64_t> sectors;
  forEachElement(tile, coords, [&](uint64_t i, bool in, uint64_t addr) {
    if (!in)
      return;
    globalRange(addr, e, /*write=*/false, what, site);
    std::memcpy(&box[i * e], reinterpret_cast<const void *>(addr), e);
    b.stats->tmaBytesLoaded += e;
    b.work.globalBytes += e;
    for (uint64_t s = addr / 32; s <= (addr + e - 1) / 32; ++s)
      sectors.insert(s);
  });
  b.stats->tmaSectorsLoaded += sectors.size();
  uint32_t agent = asyncAgent(b, barrier);
  for (uint64_t chunk = 0; chunk < bytes; chunk += 16) {
    uint64_t at = swizzleOffset(dstOffset + chunk, swizzleSpan(m.swizzle));
    recordAsyncWrite(b, t, agent, at, 16, site);
    std::memcpy(b.shared + at, &box[chunk], 16);
  }
  b.stats->tmaCopies++;
  mbarrierCompleteTx(b, barrier, bytes, agent, what, site);
}

void __kvemu_tma_store(const void *tensorMap, const void *src,
                       const int32_t *coords, uint32_t rank, uint32_t enabled,
                       uint32_t site) {
  if (!enabled)
    return;
  BlockRun &b = *current.block;
  GpuThread &t = *current.thread;
  const std::string what = "cp.async.bulk.tensor (shared to global)";
  Tile tile = tileOf(tensorMap, rank, what, site);
  const TensorMapFields &m = tile.map;
  for (uint32_t d = 0; d < rank; ++d)
    if (coords[d] < 0)
      fail(what + ": coordinate " + std::to_string(d) + " is " +
               std::to_string(coords[d]) +
               " (a store's box may not start before the tensor)",
           site);
  uint32_t e = m.elementBytes();
  uint64_t bytes = tile.elements * e;
  uint64_t srcOffset = sharedRange(src, bytes, 128, what, site);
  std::vector<uint8_t> box(bytes);
  std::vector<uint64_t> chunks;
  for (uint64_t chunk = 0; chunk < bytes; chunk += 16) {
    uint64_t at = swizzleOffset(srcOffset + chunk, swizzleSpan(m.swizzle));
    checkSource(b, t, at, 16, what, site);
    std::memcpy(&box[chunk], b.shared + at, 16);
    chunks.push_back(at);
  }
  // The source stays protected until the bulk group's wait, as ranges.
  llvm::sort(chunks);
  for (uint64_t at : chunks) {
    BlockRun::AsyncRead *last =
        b.asyncReads.empty() ? nullptr : &b.asyncReads.back();
    if (last && last->thread == t.linear && last->site == site &&
        last->group == t.bulkOpen && last->offset + last->bytes == at)
      last->bytes += 16;
    else
      b.asyncReads.push_back({at, 16, t.linear, t.bulkOpen, site});
  }
  forEachElement(tile, coords, [&](uint64_t i, bool in, uint64_t addr) {
    if (!in) // out-of-bound elements are not written
      return;
    globalRange(addr, e, /*write=*/true, what, site);
    std::memcpy(reinterpret_cast<void *>(addr), &box[i * e], e);
    b.stats->tmaBytesStored += e;
    b.work.globalBytes += e;
  });
  b.stats->tmaCopies++;
}

void __kvemu_bulk_load(void *dst, const void *src, uint32_t size,
                       const void *mbar, uint32_t site) {
  BlockRun &b = *current.block;
  GpuThread &t = *current.thread;
  const std::string what = "cp.async.bulk (global to shared)";
  bulkGlobalAddress(src, size, /*write=*/false, what, site);
  uint64_t dstOffset = sharedRange(dst, size, 16, what, site);
  uint32_t barrier = mbarrierAt(mbar, what, site);
  uint32_t agent = asyncAgent(b, barrier);
  recordAsyncWrite(b, t, agent, dstOffset, size, site);
  std::memcpy(b.shared + dstOffset, src, size);
  b.stats->tmaBytesLoaded += size;
  b.work.globalBytes += size;
  b.stats->tmaCopies++;
  mbarrierCompleteTx(b, barrier, size, agent, what, site);
}

void __kvemu_bulk_store(void *dst, const void *src, uint32_t size,
                        uint32_t site) {
  BlockRun &b = *current.block;
  GpuThread &t = *current.thread;
  const std::string what = "cp.async.bulk (shared to global)";
  bulkGlobalAddress(dst, size, /*write=*/true, what, site);
  uint64_t srcOffset = sharedRange(src, size, 16, what, site);
  checkSource(b, t, srcOffset, size, what, site);
  std::memcpy(dst, b.shared + srcOffset, size);
  b.asyncReads.push_back({srcOffset, size, t.linear, t.bulkOpen, site});
  b.stats->tmaBytesStored += size;
  b.work.globalBytes += size;
  b.stats->tmaCopies++;
}

void __kvemu_bulk_commit() { current.thread->bulkOpen++; }

/// cp.async.bulk.wait_group[.read] N: the thread's bulk groups but the
/// newest N are complete (their sources read, with .read; their writes
/// done and visible, without). The copies were performed at issue: what
/// retires is the protection of their sources.
void __kvemu_bulk_wait(uint32_t n, uint32_t) {
  BlockRun &b = *current.block;
  GpuThread &t = *current.thread;
  uint32_t done = t.bulkOpen > n ? t.bulkOpen - n : 0;
  llvm::erase_if(b.asyncReads, [&](const BlockRun::AsyncRead &r) {
    return r.thread == t.linear && r.group < done;
  });
}

} // extern "C"
