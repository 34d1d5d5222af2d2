/* A device for the example engines: the CUDA driver when there is one
   (libcuda.so.1, loaded at run time), else kvir's emulator (the C API of
   libKVIRCAPI.so) standing in for it. Either way the typed launchers of the
   generated header run unchanged: they only see the kvir_cuda_t table.
   Include after the generated header. */
#ifndef KVIR_EXAMPLES_DEVICE_H
#define KVIR_EXAMPLES_DEVICE_H

#include <kvir-c/KVIR.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  kvir_cuda_t cu; /* what the typed launchers call */
  int emulated;
  /* Device memory: CUdeviceptr values (host addresses when emulated). */
  int (*alloc)(uint64_t *ptr, size_t bytes);
  int (*upload)(uint64_t dst, const void *src, size_t bytes);
  int (*download)(void *dst, uint64_t src, size_t bytes);
  int (*synchronize)(void);
} device_t;

/* ---- the CUDA driver ---- */
static struct {
  int (*init)(unsigned);
  int (*device_get)(int *, int);
  int (*primary_ctx_retain)(void **, int);
  int (*ctx_set_current)(void *);
  int (*mem_alloc)(uint64_t *, size_t);
  int (*memcpy_htod)(uint64_t, const void *, size_t);
  int (*memcpy_dtoh)(void *, uint64_t, size_t);
  int (*ctx_synchronize)(void);
} gpu;

static int gpu_alloc(uint64_t *p, size_t n) { return gpu.mem_alloc(p, n ? n : 16); }
static int gpu_upload(uint64_t d, const void *s, size_t n) { return n ? gpu.memcpy_htod(d, s, n) : 0; }
static int gpu_download(void *d, uint64_t s, size_t n) { return n ? gpu.memcpy_dtoh(d, s, n) : 0; }
static int gpu_synchronize(void) { return gpu.ctx_synchronize(); }

static int open_gpu(device_t *dev) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  int device;
  void *context;
  if (!lib || kvir_cuda_load(&dev->cu) != 0)
    return -1;
  gpu.init = (int (*)(unsigned))dlsym(lib, "cuInit");
  gpu.device_get = (int (*)(int *, int))dlsym(lib, "cuDeviceGet");
  gpu.primary_ctx_retain = (int (*)(void **, int))dlsym(lib, "cuDevicePrimaryCtxRetain");
  gpu.ctx_set_current = (int (*)(void *))dlsym(lib, "cuCtxSetCurrent");
  gpu.mem_alloc = (int (*)(uint64_t *, size_t))dlsym(lib, "cuMemAlloc_v2");
  gpu.memcpy_htod = (int (*)(uint64_t, const void *, size_t))dlsym(lib, "cuMemcpyHtoD_v2");
  gpu.memcpy_dtoh = (int (*)(void *, uint64_t, size_t))dlsym(lib, "cuMemcpyDtoH_v2");
  gpu.ctx_synchronize = (int (*)(void))dlsym(lib, "cuCtxSynchronize");
  if (!gpu.init || gpu.init(0) != 0 || gpu.device_get(&device, 0) != 0 ||
      gpu.primary_ctx_retain(&context, device) != 0 ||
      gpu.ctx_set_current(context) != 0)
    return -1;
  dev->emulated = 0;
  dev->alloc = gpu_alloc;
  dev->upload = gpu_upload;
  dev->download = gpu_download;
  dev->synchronize = gpu_synchronize;
  return 0;
}

/* ---- kvir's emulator in the driver's place ---- */
static int emu_module_load_data(void **module, const void *image) {
  (void)image; /* the kernels were loaded from the kv module */
  *module = (void *)1;
  return 0;
}
static int emu_module_get_function(void **function, void *module,
                                   const char *name) {
  (void)module;
  if (kvir_emulator_kernel_params(name) < 0)
    return 500; /* CUDA_ERROR_NOT_FOUND */
  *function = (void *)name; /* the launchers pass string literals */
  return 0;
}
static int emu_func_set_attribute(void *function, int attribute, int value) {
  (void)function, (void)attribute, (void)value;
  return 0;
}
/* Launches the emulator ran as programmatic dependents. */
static int dependent_launches;

/* One launch of kernel `name` with kvir_emulator_launch_ex's `flags`. */
static int emu_launch(const char *name, const uint32_t grid[3],
                      const uint32_t block[3], unsigned shared, void **params,
                      uint32_t flags) {
  if (kvir_emulator_launch_ex(name, grid, block, shared, params,
                              kvir_emulator_kernel_params(name), flags) != 0) {
    fprintf(stderr, "%s\n", kvir_last_error());
    return 719; /* CUDA_ERROR_LAUNCH_FAILED */
  }
  if (flags & KVIR_LAUNCH_PROGRAMMATIC_DEPENDENT)
    ++dependent_launches;
  return 0;
}
static int emu_launch_kernel(void *function, unsigned gx, unsigned gy,
                             unsigned gz, unsigned bx, unsigned by, unsigned bz,
                             unsigned shared, void *stream, void **params,
                             void **extra) {
  const uint32_t grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  (void)stream, (void)extra;
  return emu_launch((const char *)function, grid, block, shared, params, 0);
}
/* cuLaunchKernelEx: the launchers ask for programmatic stream
   serialization (a merge after its split kernel on sm_90); the emulator
   checks that the kernel touches nothing of the grid before it until its
   griddepcontrol.wait. */
static int emu_launch_kernel_ex(const kvir_cu_launch_config_t *config,
                                void *function, void **params, void **extra) {
  const uint32_t grid[3] = {config->grid_x, config->grid_y, config->grid_z};
  const uint32_t block[3] = {config->block_x, config->block_y, config->block_z};
  uint32_t flags = 0;
  unsigned i;
  (void)extra;
  for (i = 0; i < config->num_attrs; ++i) {
    if (config->attrs[i].id !=
        KVIR_CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
      return 1; /* CUDA_ERROR_INVALID_VALUE */
    if (config->attrs[i].value.value)
      flags |= KVIR_LAUNCH_PROGRAMMATIC_DEPENDENT;
  }
  return emu_launch((const char *)function, grid, block, config->shared_bytes,
                    params, flags);
}
static int emu_memcpy_htod_async(uint64_t dst, const void *src, size_t n,
                                 void *stream) {
  (void)stream;
  memcpy((void *)(uintptr_t)dst, src, n);
  return 0;
}
static int emu_alloc(uint64_t *p, size_t n) {
  void *m = aligned_alloc(256, (n + 255) / 256 * 256 + 256);
  if (!m)
    return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
  kvir_emulator_register(m, n ? n : 1);
  *p = (uint64_t)(uintptr_t)m;
  return 0;
}
static int emu_upload(uint64_t d, const void *s, size_t n) {
  memcpy((void *)(uintptr_t)d, s, n);
  return 0;
}
static int emu_download(void *d, uint64_t s, size_t n) {
  memcpy(d, (const void *)(uintptr_t)s, n);
  return 0;
}
static int emu_synchronize(void) { return 0; }

/* The emulated device runs the kernels of function `func` of the kv module
   in `mlir_file` (the module the header was generated from) for `chip`. */
static int open_emulator(device_t *dev, const char *mlir_file,
                         const char *func, const char *chip) {
  FILE *f = fopen(mlir_file, "rb");
  char *text;
  long size;
  kvir_module_t module;
  if (!f) {
    fprintf(stderr, "cannot open %s\n", mlir_file);
    return -1;
  }
  fseek(f, 0, SEEK_END);
  size = ftell(f);
  fseek(f, 0, SEEK_SET);
  text = (char *)calloc((size_t)size + 1, 1);
  if (!text || fread(text, 1, (size_t)size, f) != (size_t)size) {
    fclose(f);
    free(text);
    return -1;
  }
  fclose(f);
  module = kvir_module_parse(text);
  free(text);
  if (!module || kvir_emulator_load(module, func, chip) != 0) {
    fprintf(stderr, "kvir: %s\n", kvir_last_error());
    return -1;
  }
  dev->cu.module_load_data = emu_module_load_data;
  dev->cu.module_get_function = emu_module_get_function;
  dev->cu.func_set_attribute = emu_func_set_attribute;
  dev->cu.launch_kernel = emu_launch_kernel;
  dev->cu.launch_kernel_ex = emu_launch_kernel_ex;
  dev->cu.memcpy_htod_async = emu_memcpy_htod_async;
  /* The emulator's tensor maps, for kernels that copy by TMA. */
  dev->cu.tensor_map_encode_tiled = kvir_emulator_encode_tensor_map;
  dev->emulated = 1;
  dev->alloc = emu_alloc;
  dev->upload = emu_upload;
  dev->download = emu_download;
  dev->synchronize = emu_synchronize;
  return 0;
}

static int open_device(device_t *dev, const char *mlir_file, const char *func,
                       const char *chip) {
  memset(dev, 0, sizeof *dev);
  if (!getenv("KVIR_EXAMPLE_EMULATE") && open_gpu(dev) == 0)
    return 0;
  return open_emulator(dev, mlir_file, func, chip);
}

/* IEEE half <-> float, round to nearest even. */
static uint16_t f32_to_f16(float value) {
  uint32_t x;
  uint32_t sign, mantissa;
  int32_t exponent;
  memcpy(&x, &value, 4);
  sign = (x >> 16) & 0x8000u;
  exponent = (int32_t)((x >> 23) & 0xff) - 127 + 15;
  mantissa = x & 0x7fffffu;
  if (exponent >= 31)
    return (uint16_t)(sign | 0x7c00u);
  if (exponent <= 0) {
    uint32_t shift;
    if (exponent < -10)
      return (uint16_t)sign;
    mantissa |= 0x800000u;
    shift = (uint32_t)(14 - exponent);
    {
      uint32_t half = mantissa >> shift;
      uint32_t rest = mantissa & ((1u << shift) - 1), mid = 1u << (shift - 1);
      if (rest > mid || (rest == mid && (half & 1)))
        ++half;
      return (uint16_t)(sign | half);
    }
  }
  {
    uint32_t half = sign | ((uint32_t)exponent << 10) | (mantissa >> 13);
    uint32_t rest = mantissa & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1)))
      ++half;
    return (uint16_t)half;
  }
}

static float f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ffu, x;
  float value;
  if (exponent == 0) {
    value = (float)mantissa / 1024.0f / 16384.0f;
    return sign ? -value : value;
  }
  if (exponent == 31)
    x = sign | 0x7f800000u | (mantissa << 13);
  else
    x = sign | ((exponent + 112) << 23) | (mantissa << 13);
  memcpy(&value, &x, 4);
  return value;
}

#endif /* KVIR_EXAMPLES_DEVICE_H */
