//===- cuda_driver.h - The CUDA driver API, loaded at run time -*- C++ -*-===//
//
// The few driver entry points the benchmark needs, resolved with dlopen from
// libcuda.so.1 so that the harness builds on machines without CUDA (Debian
// has no CUDA headers) and runs where a driver exists. Signatures follow the
// CUDA driver API (cuda.h, v2 entry points).
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_BENCH_GPU_CUDA_DRIVER_H
#define KVIR_BENCH_GPU_CUDA_DRIVER_H

#include <cstddef>
#include <cstdint>

namespace cudrv {

using CUresult = int;
using CUdevice = int;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
using CUevent = struct CUevent_st *;
using CUdeviceptr = unsigned long long;

constexpr int kAttrMultiprocessorCount = 16; // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
constexpr int kAttrComputeCapabilityMajor = 75;
constexpr int kAttrComputeCapabilityMinor = 76;
constexpr int kFuncAttrMaxDynamicSharedBytes = 8;

struct Driver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDeviceGetName)(char *, int, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*cuCtxCreate)(CUcontext *, unsigned, CUdevice);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuModuleLoadData)(CUmodule *, const void *);
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, CUstream, void **,
                             void **);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*cuMemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
  CUresult (*cuEventCreate)(CUevent *, unsigned);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);
  CUresult (*cuGetErrorString)(CUresult, const char **);

  /// Loads libcuda.so.1; false (with a message) if there is no driver.
  bool load(const char **why);
};

} // namespace cudrv

#endif // KVIR_BENCH_GPU_CUDA_DRIVER_H
