//===- cuda_driver.cpp - dlopen the CUDA driver ---------------------------===//
#include "cuda_driver.h"

#include <dlfcn.h>

using namespace cudrv;

template <typename F>
static bool resolve(void *lib, F &fn, const char *name) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  return fn != nullptr;
}

bool Driver::load(const char **why) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    *why = "libcuda.so.1 not found (no NVIDIA driver on this machine)";
    return false;
  }
  if (!resolve(lib, cuEventElapsedTime, "cuEventElapsedTime_v2"))
    resolve(lib, cuEventElapsedTime, "cuEventElapsedTime");
  bool ok = cuEventElapsedTime && resolve(lib, cuInit, "cuInit") &&
            resolve(lib, cuDeviceGet, "cuDeviceGet") &&
            resolve(lib, cuDeviceGetName, "cuDeviceGetName") &&
            resolve(lib, cuDeviceGetAttribute, "cuDeviceGetAttribute") &&
            resolve(lib, cuCtxCreate, "cuCtxCreate_v2") &&
            resolve(lib, cuCtxSynchronize, "cuCtxSynchronize") &&
            resolve(lib, cuModuleLoadData, "cuModuleLoadData") &&
            resolve(lib, cuModuleGetFunction, "cuModuleGetFunction") &&
            resolve(lib, cuLaunchKernel, "cuLaunchKernel") &&
            resolve(lib, cuMemAlloc, "cuMemAlloc_v2") &&
            resolve(lib, cuMemFree, "cuMemFree_v2") &&
            resolve(lib, cuMemcpyHtoD, "cuMemcpyHtoD_v2") &&
            resolve(lib, cuMemcpyDtoH, "cuMemcpyDtoH_v2") &&
            resolve(lib, cuMemcpyDtoD, "cuMemcpyDtoD_v2") &&
            resolve(lib, cuEventCreate, "cuEventCreate") &&
            resolve(lib, cuEventRecord, "cuEventRecord") &&
            resolve(lib, cuEventSynchronize, "cuEventSynchronize") &&
            resolve(lib, cuGetErrorString, "cuGetErrorString");
  if (!ok)
    *why = "libcuda.so.1 lacks a driver API entry point the bench needs";
  return ok;
}
