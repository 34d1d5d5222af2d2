//===- CudaApi.cpp - The CUDA-runtime wrapper API, emulated ---------------===//
//
// gpu-to-llvm lowers host-side gpu ops to calls of MLIR's CUDA runtime
// wrappers (mlir/lib/ExecutionEngine/CudaRuntimeWrappers.cpp). These are the
// same functions with the same signatures, backed by host memory and the
// emulator; getRuntimeSymbols() hands them to an ExecutionEngine.
//
//===----------------------------------------------------------------------===//
#include "DependentLaunch.h"
#include "Runtime.h"
#include "kvir/Emulator/TensorMap.h"
#include "kvir/Runtime/TableCheck.h"
#include "kvir/Runtime/WorkSchedule.h"

#include "mlir/ExecutionEngine/CRunnerUtils.h"
#include "HostMath.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <malloc.h>

using namespace kvir::emu;

std::vector<std::unique_ptr<CompiledModule>> &compiledModules();

Emulator &Emulator::get() {
  static Emulator emulator;
  return emulator;
}

void Emulator::registerAllocation(const void *ptr, uint64_t bytes,
                                  llvm::StringRef what) {
  if (!ptr)
    return;
  allocations().add(reinterpret_cast<uint64_t>(ptr), bytes, what.str());
}

void Emulator::unregisterAllocation(const void *ptr) {
  allocations().remove(reinterpret_cast<uint64_t>(ptr));
}

bool Emulator::canCheckDependentLaunch() const {
  return previousGridRecorded();
}

llvm::LogicalResult Emulator::launch(llvm::StringRef kernel, Dim3 grid,
                                     Dim3 block, uint32_t dynamicSharedBytes,
                                     void **params,
                                     const LaunchAttributes &attributes) {
  for (auto &module : compiledModules()) {
    auto it = module->kernels.find(kernel.str());
    if (it == module->kernels.end())
      continue;
    KernelHandle handle{module.get(), kernel.str(), it->second};
    if (opts.recordLaunches)
      recordLaunch(module->kernelParamBytes[kernel.str()], kernel, grid, block,
                   dynamicSharedBytes, params);
    LaunchStats s;
    llvm::LogicalResult result =
        runLaunch(handle, grid, block, dynamicSharedBytes, params, s, reports,
                  opts.stackBytes, attributes);
    stats.push_back(std::move(s));
    return result;
  }
  reports.push_back("kvir-emu: no compiled kernel named '" + kernel.str() +
                    "'");
  return llvm::failure();
}

std::optional<std::vector<uint32_t>>
Emulator::getKernelParamBytes(llvm::StringRef kernel) const {
  for (auto &module : compiledModules()) {
    auto it = module->kernelParamBytes.find(kernel.str());
    if (it != module->kernelParamBytes.end())
      return it->second;
  }
  return std::nullopt;
}

void Emulator::recordLaunch(const std::vector<uint32_t> &paramBytes,
                            llvm::StringRef kernel, Dim3 grid, Dim3 block,
                            uint32_t dynamicSharedBytes, void **params) {
  LaunchRecord record{kernel.str(), grid, block, dynamicSharedBytes, {}};
  for (size_t i = 0; i < paramBytes.size(); ++i) {
    LaunchRecord::Param param;
    const auto *bytes = static_cast<const uint8_t *>(params[i]);
    param.bytes.assign(bytes, bytes + paramBytes[i]);
    if (paramBytes[i] == 8) {
      uint64_t value;
      std::memcpy(&value, bytes, 8);
      if (const auto *alloc = allocations().find(value, 1)) {
        param.allocation = alloc->first;
        param.offset = value - alloc->first;
        if (!recordedAllocations.count(alloc->first)) {
          const auto *data = reinterpret_cast<const uint8_t *>(alloc->first);
          recordedAllocations[alloc->first] = {
              alloc->second.what,
              std::vector<uint8_t>(data, data + alloc->second.bytes)};
        }
      }
    }
    record.params.push_back(std::move(param));
  }
  records.push_back(std::move(record));
}

std::string LaunchStats::toJson() const {
  auto maxBlock = [&](uint64_t BlockWork::*field) {
    uint64_t m = 0;
    for (const BlockWork &w : blocks)
      m = std::max(m, w.*field);
    return m;
  };
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "{\"kernel\": \"" << kernel << "\", \"grid\": [" << grid.x << ", "
     << grid.y << ", " << grid.z << "], \"block\": [" << block.x << ", "
     << block.y << ", " << block.z
     << "], \"static_shared_bytes\": " << staticSharedBytes
     << ", \"dynamic_shared_bytes\": " << dynamicSharedBytes
     << ", \"global_bytes_loaded\": " << globalBytesLoaded
     << ", \"global_bytes_stored\": " << globalBytesStored
     << ", \"global_requests\": " << globalRequests
     << ", \"global_sectors\": " << globalSectors
     << ", \"global_useful_bytes\": " << globalUsefulBytes
     << ", \"sector_efficiency\": " << llvm::format("%.4f", sectorEfficiency())
     << ", \"shared_bytes_loaded\": " << sharedBytesLoaded
     << ", \"shared_bytes_stored\": " << sharedBytesStored
     << ", \"shared_requests\": " << sharedRequests
     << ", \"bank_conflicts\": " << bankConflicts
     << ", \"barriers\": " << barriers << ", \"mma_ops\": " << mmaOps
     << ", \"tensor_core_macs\": " << tensorCoreMacs
     << ", \"shuffles\": " << shuffles
     << ", \"fiber_switches\": " << fiberSwitches
     << ", \"max_block_mma_ops\": " << maxBlock(&BlockWork::mmaOps);
  // The sm_90 counters appear where a kernel used sm_90 instructions.
  if (wgmmaOps || namedBarriers || mbarrierPhases || mbarrierWaits ||
      tmaCopies) {
    os << ", \"wgmma_ops\": " << wgmmaOps
       << ", \"max_block_wgmma_ops\": " << maxBlock(&BlockWork::wgmmaOps)
       << ", \"wgmma_shapes\": {";
    bool first = true;
    for (const auto &[shape, count] : wgmmaShapes) {
      os << (first ? "" : ", ") << "\"" << shape << "\": " << count;
      first = false;
    }
    os << "}, \"named_barriers\": " << namedBarriers
       << ", \"mbarrier_phases\": " << mbarrierPhases
       << ", \"mbarrier_waits\": " << mbarrierWaits
       << ", \"mbarrier_spins\": " << mbarrierSpins
       << ", \"tma_copies\": " << tmaCopies
       << ", \"tma_bytes_loaded\": " << tmaBytesLoaded
       << ", \"tma_bytes_stored\": " << tmaBytesStored;
  }
  if (cluster.count() > 1 || clusterBarriers)
    os << ", \"cluster\": [" << cluster.x << ", " << cluster.y << ", "
       << cluster.z << "], \"cluster_barriers\": " << clusterBarriers;
  os << ", \"max_block_global_bytes\": " << maxBlock(&BlockWork::globalBytes)
     << ", \"seconds\": " << llvm::format("%.6f", seconds) << "}";
  return s;
}

namespace {
struct EmulatedFunction {
  CompiledModule *module;
  std::string name;
};

void finishLaunch(llvm::LogicalResult result) {
  Emulator &emu = Emulator::get();
  if (llvm::succeeded(result) || !emu.options().exitOnError)
    return;
  // What the program printed before the launch must not be lost by _Exit.
  llvm::outs().flush();
  std::fflush(stdout);
  for (const std::string &r : emu.getReports())
    llvm::errs() << r << "\n";
  llvm::errs() << "kvir-emu: the launch failed its checks\n";
  llvm::errs().flush();
  std::_Exit(1);
}
} // namespace

extern "C" {

// Tracking allocators the host code's memref.alloc resolves to.
void *kvemu_malloc(size_t bytes) {
  void *p = std::malloc(bytes);
  Emulator::get().registerAllocation(p, bytes, "host allocation");
  return p;
}
void *kvemu_aligned_alloc(size_t alignment, size_t bytes) {
  void *p = ::memalign(alignment, bytes);
  Emulator::get().registerAllocation(p, bytes, "host allocation");
  return p;
}
void *kvemu_calloc(size_t n, size_t size) {
  void *p = std::calloc(n, size);
  Emulator::get().registerAllocation(p, n * size, "host allocation");
  return p;
}
void kvemu_register_global(void *p, uint64_t bytes) {
  Emulator::get().registerAllocation(p, bytes, "host global");
}
void kvemu_free(void *p) {
  Emulator::get().unregisterAllocation(p);
  std::free(p);
}

void *mgpuModuleLoad(void *data, size_t size) {
  llvm::StringRef blob(static_cast<const char *>(data), size);
  blob = blob.take_while([](char c) { return c != 0; });
  unsigned index;
  if (!blob.consume_front("kvemu:") || blob.getAsInteger(10, index) ||
      index >= compiledModules().size()) {
    llvm::errs() << "kvir-emu: mgpuModuleLoad got a binary the emulator did "
                    "not compile; run the module through kvir-runner\n";
    std::_Exit(1);
  }
  return compiledModules()[index].get();
}

void *mgpuModuleLoadJIT(void *data, int) { return mgpuModuleLoad(data, 64); }

void mgpuModuleUnload(void *) {}

void *mgpuModuleGetFunction(void *module, const char *name) {
  auto *m = static_cast<CompiledModule *>(module);
  auto it = m->kernels.find(name);
  if (it == m->kernels.end()) {
    llvm::errs() << "kvir-emu: module '" << m->name << "' has no kernel '"
                 << name << "'\n";
    std::_Exit(1);
  }
  std::unique_ptr<KernelHandle> &handle = m->handles[name];
  if (!handle)
    handle.reset(new KernelHandle{m, name, it->second});
  return handle.get();
}

static void launchFromHostCode(void *function, Dim3 grid, Dim3 block,
                               int32_t smem, void **params,
                               LaunchAttributes attributes) {
  auto *kernel = static_cast<KernelHandle *>(function);
  Emulator &emu = Emulator::get();
  if (emu.options().launchWaitingKernelsAsDependents &&
      kernel->module->usesGridDependencyControl &&
      emu.canCheckDependentLaunch())
    attributes.programmaticDependent = true;
  LaunchStats s;
  std::vector<std::string> reports;
  if (emu.options().recordLaunches)
    emu.recordLaunch(kernel->module->kernelParamBytes[kernel->name],
                     kernel->name, grid, block, uint32_t(smem), params);
  llvm::LogicalResult result =
      runLaunch(*kernel, grid, block, smem, params, s, reports,
                emu.options().stackBytes, attributes);
  for (std::string &r : reports)
    emu.addReport(std::move(r));
  emu.addStats(std::move(s));
  finishLaunch(result);
}

void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, void *, void **params,
                      void **, size_t) {
  launchFromHostCode(
      function, {uint32_t(gridX), uint32_t(gridY), uint32_t(gridZ)},
      {uint32_t(blockX), uint32_t(blockY), uint32_t(blockZ)}, smem, params, {});
}

/// gpu.launch_func with `clusters in (...)`.
void mgpuLaunchClusterKernel(void *function, intptr_t clusterX,
                             intptr_t clusterY, intptr_t clusterZ,
                             intptr_t gridX, intptr_t gridY, intptr_t gridZ,
                             intptr_t blockX, intptr_t blockY, intptr_t blockZ,
                             int32_t smem, void *, void **params, void **,
                             size_t) {
  LaunchAttributes attributes;
  attributes.cluster = {uint32_t(clusterX), uint32_t(clusterY),
                        uint32_t(clusterZ)};
  launchFromHostCode(function,
                     {uint32_t(gridX), uint32_t(gridY), uint32_t(gridZ)},
                     {uint32_t(blockX), uint32_t(blockY), uint32_t(blockZ)},
                     smem, params, attributes);
}

void *mgpuStreamCreate() { return reinterpret_cast<void *>(1); }
void mgpuStreamDestroy(void *) {}
void mgpuStreamSynchronize(void *) {}
void mgpuStreamWaitEvent(void *, void *) {}
void *mgpuEventCreate() { return reinterpret_cast<void *>(1); }
void mgpuEventDestroy(void *) {}
void mgpuEventSynchronize(void *) {}
void mgpuEventRecord(void *, void *) {}
void mgpuSetDefaultDevice(int32_t) {}

void *mgpuMemAlloc(uint64_t bytes, void *, bool) {
  // cudaMalloc returns 256-byte aligned memory; coalescing counters depend on
  // where a buffer starts relative to 32-byte sectors and 128-byte lines.
  void *p = ::memalign(256, bytes ? bytes : 1);
  Emulator::get().registerAllocation(p, bytes, "gpu.alloc");
  return p;
}

void mgpuMemFree(void *p, void *) {
  Emulator::get().unregisterAllocation(p);
  std::free(p);
}

void mgpuMemcpy(void *dst, void *src, size_t bytes, void *) {
  std::memcpy(dst, src, bytes);
}

void mgpuMemset32(void *dst, unsigned value, size_t count, void *) {
  auto *p = static_cast<uint32_t *>(dst);
  std::fill(p, p + count, value);
}

void mgpuMemset16(void *dst, unsigned short value, size_t count, void *) {
  auto *p = static_cast<uint16_t *>(dst);
  std::fill(p, p + count, value);
}

void mgpuMemHostRegisterMemRef(int64_t rank, StridedMemRefType<char, 1> *desc,
                               int64_t elementBytes) {
  // The extent of the memref: the largest offset its sizes and strides reach.
  const int64_t *sizes = desc->sizes;
  const int64_t *strides = sizes + rank;
  int64_t last = desc->offset;
  for (int64_t i = 0; i < rank; ++i) {
    if (sizes[i] == 0)
      return;
    last += (sizes[i] - 1) * strides[i];
  }
  char *base = desc->data;
  Emulator::get().registerAllocation(base, (last + 1) * elementBytes,
                                     "host-registered memref");
}

void mgpuMemHostUnregisterMemRef(int64_t, StridedMemRefType<char, 1> *,
                                 int64_t) {}
void mgpuMemHostRegister(void *ptr, uint64_t bytes) {
  Emulator::get().registerAllocation(ptr, bytes, "host-registered memory");
}
void mgpuMemHostUnregister(void *) {}

/// The driver's cuTensorMapEncodeTiled, encoding the emulator's tensor map
/// (kvir/Emulator/TensorMap.h). CUDA_ERROR_INVALID_VALUE (1) when a
/// requirement is broken, reported like a failed launch.
int32_t kvemu_cuTensorMapEncodeTiled(
    void *tensorMap, uint32_t dataType, uint32_t rank, void *globalAddress,
    const uint64_t *globalDim, const uint64_t *globalStrides,
    const uint32_t *boxDim, const uint32_t *elementStrides, uint32_t interleave,
    uint32_t swizzle, uint32_t l2Promotion, uint32_t oobFill) {
  std::string error = kvir::emu::encodeTensorMapTiled(
      tensorMap, dataType, rank, globalAddress, globalDim, globalStrides,
      boxDim, elementStrides, interleave, swizzle, l2Promotion, oobFill);
  if (error.empty())
    return 0;
  Emulator::get().addReport("kvir-emu: cuTensorMapEncodeTiled: " + error);
  finishLaunch(llvm::failure());
  return 1;
}

/// MLIR's runtime wrapper of nvgpu.tma.create.descriptor: the memref's
/// sizes (innermost first for the driver) and byte strides, `boxDims`
/// outermost first, the map in a 128-byte device allocation.
void *mgpuTensorMapEncodeTiledMemref(int64_t rank, void *descriptor,
                                     int64_t dataType, int64_t interleave,
                                     int64_t swizzle, int64_t l2Promotion,
                                     int64_t oobFill, int64_t *boxDims) {
  kvir::emu::TensorMapFields type;
  type.dataType = uint32_t(dataType);
  uint32_t e = type.elementBytes(); // 0 for a type the encoder refuses
  // {allocated, aligned, offset, sizes[rank], strides[rank]}
  auto *fields = static_cast<int64_t *>(descriptor);
  char *aligned = reinterpret_cast<char *>(fields[1]);
  int64_t offset = fields[2];
  const int64_t *sizes = fields + 3, *strides = sizes + rank;
  uint64_t dims[5] = {1, 1, 1, 1, 1}, byteStrides[5] = {};
  uint32_t box[5] = {1, 1, 1, 1, 1}, elementStrides[5] = {1, 1, 1, 1, 1};
  for (int64_t d = 0; d < rank && d < 5; ++d) {
    dims[d] = uint64_t(sizes[rank - 1 - d]);
    box[d] = uint32_t(boxDims[rank - 1 - d]);
    if (d + 1 < rank)
      byteStrides[d] = uint64_t(strides[rank - 2 - d]) * e;
  }
  void *map = ::memalign(64, 128);
  Emulator::get().registerAllocation(map, 128, "tensor map");
  kvemu_cuTensorMapEncodeTiled(
      map, uint32_t(dataType), uint32_t(rank), aligned + offset * e, dims,
      byteStrides, box, elementStrides, uint32_t(interleave), uint32_t(swizzle),
      uint32_t(l2Promotion), uint32_t(oobFill));
  return map;
}

} // extern "C"

// libdevice functions kernels lowered by convert-gpu-to-nvvm may call: the
// transcendentals are HostMath's (the same on every host), the rest exact.
extern "C" {
#define KVEMU_EXACT(name, fn)                                                  \
  static float kvemu_##name##f(float x) { return fn(x); }                      \
  static double kvemu_##name(double x) { return fn(x); }
KVEMU_EXACT(sqrt, std::sqrt)
KVEMU_EXACT(fabs, std::fabs)
KVEMU_EXACT(floor, std::floor)
KVEMU_EXACT(ceil, std::ceil)
#undef KVEMU_EXACT
// One rounding of the double 1 / sqrt(x) (IEEE sqrt and division).
static float kvemu_rsqrtf(float x) {
  return float(1.0 / std::sqrt(double(x)));
}
static double kvemu_rsqrt(double x) { return 1.0 / std::sqrt(x); }
static float kvemu_fmaxf(float x, float y) {
  return kvir::emu::math::maxNumber(x, y);
}
static float kvemu_fminf(float x, float y) {
  return kvir::emu::math::minNumber(x, y);
}
}

// Declared in Hooks.cpp / Memory.cpp.
extern "C" {
uint32_t __kvemu_sreg(uint32_t);
void __kvemu_barrier(uint32_t, uint32_t, uint32_t);
void __kvemu_syncwarp(uint32_t, uint32_t);
uint64_t __kvemu_shfl(uint32_t, uint32_t, uint32_t, uint32_t, uint32_t,
                      uint32_t);
uint32_t __kvemu_vote(uint32_t, uint32_t, uint32_t, uint32_t);
void __kvemu_mma(uint32_t, uint32_t, uint32_t, uint32_t, const uint32_t *,
                 const uint32_t *, const uint32_t *, uint32_t *, uint32_t);
void __kvemu_ldmatrix(uint32_t, uint32_t, const void *, uint32_t *, uint32_t);
void __kvemu_stmatrix(uint32_t, uint32_t, void *, const uint32_t *, uint32_t);
void __kvemu_cp_async(void *, const void *, uint32_t, uint32_t, uint32_t,
                      const void *, int32_t);
void __kvemu_cp_async_commit();
void __kvemu_cp_async_wait(uint32_t);
void __kvemu_access(const void *, uint64_t, uint32_t, uint32_t, const void *,
                    int32_t);
void __kvemu_access_masked(const void *, uint64_t, uint64_t, uint32_t,
                           uint32_t, const void *, int32_t);
void *__kvemu_shared_base();
void __kvemu_divide(uint32_t, uint32_t);
// Wgmma.cpp / Barriers.cpp (sm_90).
uint32_t __kvemu_wgmma(uint32_t, uint32_t, uint32_t, uint64_t, const uint32_t *,
                       uint64_t, uint32_t *, uint32_t, uint64_t, uint64_t,
                       uint32_t);
void __kvemu_wgmma_fence(uint32_t);
void __kvemu_wgmma_commit(uint32_t);
void __kvemu_wgmma_wait(uint32_t, uint32_t);
void __kvemu_wgmma_read(uint32_t, uint32_t);
uint64_t __kvemu_reg_defined();
void __kvemu_setmaxnreg(uint32_t, uint32_t, uint32_t);
void __kvemu_fence_proxy_async(uint32_t);
void __kvemu_fence_proxy_tensormap(const void *, uint32_t);
void __kvemu_griddepcontrol_wait(uint32_t);
void __kvemu_cluster_arrive(uint32_t, uint32_t);
void __kvemu_cluster_wait(uint32_t);
void *__kvemu_mapa(void *, uint32_t, uint32_t);
uint64_t __kvemu_mbarrier(uint32_t, const void *, uint32_t, uint64_t, uint32_t,
                          uint32_t);
void __kvemu_fence_mbarrier_init(uint32_t);
void __kvemu_barrier_arrive(uint32_t, uint32_t, uint32_t);
void __kvemu_tma_load(const void *, void *, const void *, const int32_t *,
                      uint32_t, uint32_t, uint32_t);
void __kvemu_tma_store(const void *, const void *, const int32_t *, uint32_t,
                       uint32_t, uint32_t);
void __kvemu_bulk_load(void *, const void *, uint32_t, const void *, uint32_t);
void __kvemu_bulk_store(void *, const void *, uint32_t, uint32_t);
void __kvemu_bulk_commit();
void __kvemu_bulk_wait(uint32_t, uint32_t);
int32_t kvemu_vprintf(const char *, const char *);
void kvemu_assertfail(const char *, const char *, uint32_t, const char *,
                      uint64_t);
}

template <typename F>
static void add(llvm::orc::SymbolMap &map,
                llvm::orc::MangleAndInterner &interner, llvm::StringRef name,
                F *fn) {
  map[interner(name)] = {llvm::orc::ExecutorAddr::fromPtr(fn),
                         llvm::JITSymbolFlags::Exported};
}

llvm::orc::SymbolMap hookSymbols(llvm::orc::MangleAndInterner interner) {
  llvm::orc::SymbolMap map;
  add(map, interner, kabi::kSreg, &__kvemu_sreg);
  add(map, interner, kabi::kBarrier, &__kvemu_barrier);
  add(map, interner, kabi::kSyncWarp, &__kvemu_syncwarp);
  add(map, interner, kabi::kShfl, &__kvemu_shfl);
  add(map, interner, kabi::kVote, &__kvemu_vote);
  add(map, interner, kabi::kMma, &__kvemu_mma);
  add(map, interner, kabi::kLdMatrix, &__kvemu_ldmatrix);
  add(map, interner, kabi::kStMatrix, &__kvemu_stmatrix);
  add(map, interner, kabi::kCpAsync, &__kvemu_cp_async);
  add(map, interner, kabi::kCpAsyncCommit, &__kvemu_cp_async_commit);
  add(map, interner, kabi::kCpAsyncWait, &__kvemu_cp_async_wait);
  add(map, interner, kabi::kAccess, &__kvemu_access);
  add(map, interner, kabi::kAccessMasked, &__kvemu_access_masked);
  add(map, interner, kabi::kSharedBase, &__kvemu_shared_base);
  add(map, interner, kabi::kDivide, &__kvemu_divide);
  add(map, interner, kabi::kWgmma, &__kvemu_wgmma);
  add(map, interner, kabi::kWgmmaFence, &__kvemu_wgmma_fence);
  add(map, interner, kabi::kWgmmaCommit, &__kvemu_wgmma_commit);
  add(map, interner, kabi::kWgmmaWait, &__kvemu_wgmma_wait);
  add(map, interner, kabi::kWgmmaRead, &__kvemu_wgmma_read);
  add(map, interner, kabi::kRegDefined, &__kvemu_reg_defined);
  add(map, interner, kabi::kSetMaxNReg, &__kvemu_setmaxnreg);
  add(map, interner, kabi::kFenceProxyAsync, &__kvemu_fence_proxy_async);
  add(map, interner, kabi::kFenceProxyTensorMap,
      &__kvemu_fence_proxy_tensormap);
  add(map, interner, kabi::kGridDependencyWait, &__kvemu_griddepcontrol_wait);
  add(map, interner, kabi::kClusterArrive, &__kvemu_cluster_arrive);
  add(map, interner, kabi::kClusterWait, &__kvemu_cluster_wait);
  add(map, interner, kabi::kMapa, &__kvemu_mapa);
  add(map, interner, kabi::kMBarrier, &__kvemu_mbarrier);
  add(map, interner, kabi::kFenceMBarrierInit, &__kvemu_fence_mbarrier_init);
  add(map, interner, kabi::kBarrierArrive, &__kvemu_barrier_arrive);
  add(map, interner, kabi::kTmaLoad, &__kvemu_tma_load);
  add(map, interner, kabi::kTmaStore, &__kvemu_tma_store);
  add(map, interner, kabi::kBulkLoad, &__kvemu_bulk_load);
  add(map, interner, kabi::kBulkStore, &__kvemu_bulk_store);
  add(map, interner, kabi::kBulkCommit, &__kvemu_bulk_commit);
  add(map, interner, kabi::kBulkWait, &__kvemu_bulk_wait);
#define KVEMU_NV(name)                                                         \
  add(map, interner, "__nv_" #name "f", &kvemu_##name##f);                     \
  add(map, interner, "__nv_" #name, &kvemu_##name);
  KVEMU_NV(sqrt) KVEMU_NV(rsqrt) KVEMU_NV(fabs) KVEMU_NV(floor) KVEMU_NV(ceil)
#undef KVEMU_NV
  add(map, interner, "__nv_fmaxf", &kvemu_fmaxf);
  add(map, interner, "__nv_fminf", &kvemu_fminf);
  // __nv_expf, __nv_erf, ...: exp, exp2, expm1, log, log2, log1p, sin, cos,
  // tanh, erf, pow in both precisions.
  math::addSymbols(map, interner, "__nv_");
  // The math intrinsics the instrumentation turns into calls.
  math::addSymbols(map, interner, kabi::kMathPrefix);
  // gpu.printf and assertions in kernels (convert-gpu-to-nvvm lowers them
  // to CUDA's device-side vprintf and __assertfail).
  add(map, interner, "vprintf", &kvemu_vprintf);
  add(map, interner, "__assertfail", &kvemu_assertfail);
  return map;
}

llvm::orc::SymbolMap
Emulator::getRuntimeSymbols(llvm::orc::MangleAndInterner interner) {
  llvm::orc::SymbolMap map;
#define KVEMU_API(name) add(map, interner, #name, &name)
  KVEMU_API(mgpuModuleLoad);
  KVEMU_API(mgpuModuleLoadJIT);
  KVEMU_API(mgpuModuleUnload);
  KVEMU_API(mgpuModuleGetFunction);
  KVEMU_API(mgpuLaunchKernel);
  KVEMU_API(mgpuLaunchClusterKernel);
  KVEMU_API(mgpuStreamCreate);
  KVEMU_API(mgpuStreamDestroy);
  KVEMU_API(mgpuStreamSynchronize);
  KVEMU_API(mgpuStreamWaitEvent);
  KVEMU_API(mgpuEventCreate);
  KVEMU_API(mgpuEventDestroy);
  KVEMU_API(mgpuEventSynchronize);
  KVEMU_API(mgpuEventRecord);
  KVEMU_API(mgpuSetDefaultDevice);
  KVEMU_API(mgpuMemAlloc);
  KVEMU_API(mgpuMemFree);
  KVEMU_API(mgpuMemcpy);
  KVEMU_API(mgpuMemset32);
  KVEMU_API(mgpuMemset16);
  KVEMU_API(mgpuMemHostRegisterMemRef);
  KVEMU_API(mgpuMemHostUnregisterMemRef);
  KVEMU_API(mgpuMemHostRegister);
  KVEMU_API(mgpuMemHostUnregister);
  KVEMU_API(mgpuTensorMapEncodeTiledMemref);
#undef KVEMU_API
  add(map, interner, "cuTensorMapEncodeTiled", &kvemu_cuTensorMapEncodeTiled);
  add(map, interner, "malloc", &kvemu_malloc);
  add(map, interner, "aligned_alloc", &kvemu_aligned_alloc);
  // The host side of launch plans with a work schedule.
  add(map, interner, "kvir_schedule_work", &kvir_schedule_work);
  add(map, interner, "kvir_schedule_pad_batch", &kvir_schedule_pad_batch);
  add(map, interner, "kvir_schedule_prefill_work",
      &kvir_schedule_prefill_work);
  // kv-validate-tables' checks.
  add(map, interner, "kvir_check_csr", &kvir_check_csr);
  add(map, interner, "kvir_check_block_table", &kvir_check_block_table);
  add(map, interner, "kvir_check_token_table", &kvir_check_token_table);
  add(map, interner, "kvir_check_token_offset", &kvir_check_token_offset);
  add(map, interner, "kvir_check_query_rows", &kvir_check_query_rows);
  add(map, interner, "kvir_check_topk", &kvir_check_topk);
  add(map, interner, "calloc", &kvemu_calloc);
  add(map, interner, "free", &kvemu_free);
  // The same allocators under the names lowerHostForEmulator renames to.
  add(map, interner, "kvemu_malloc", &kvemu_malloc);
  add(map, interner, "kvemu_aligned_alloc", &kvemu_aligned_alloc);
  add(map, interner, "kvemu_calloc", &kvemu_calloc);
  add(map, interner, "kvemu_free", &kvemu_free);
  add(map, interner, "kvemu_register_global", &kvemu_register_global);
  return map;
}
