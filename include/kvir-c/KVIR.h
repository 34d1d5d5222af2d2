/*===- kvir-c/KVIR.h - kvir's C API ------------------------------*- C -*-===*\
|*                                                                            *|
|* For frameworks and languages that cannot link C++: build or parse a kv    *|
|* module, compile it for a chip to PTX + JSON manifests + a C header, and   *|
|* run it on host buffers with its kernels in kvir's GPU emulator. Python's  *|
|* kvir package is ctypes over this library (libKVIRCAPI.so).                *|
|*                                                                            *|
|* Errors never abort: a function that fails returns NULL or -1 and          *|
|* kvir_last_error() says why (the location, what is wrong, what was         *|
|* expected). Each module owns its own MLIR context; a module is used by one *|
|* thread at a time.                                                          *|
\*===----------------------------------------------------------------------===*/
#ifndef KVIR_C_KVIR_H
#define KVIR_C_KVIR_H

#include <stdint.h>

#if defined(__GNUC__)
#define KVIR_C_API __attribute__((visibility("default")))
#else
#define KVIR_C_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kvir_module *kvir_module_t;

/* The message of the calling thread's last failure ("" if none). Valid until
   its next call into kvir. */
KVIR_C_API const char *kvir_last_error(void);

/* Parses a module of kv ops (MLIR text). NULL on a syntax or verifier error. */
KVIR_C_API kvir_module_t kvir_module_parse(const char *mlir_source);

/* Builds a module from a JSON spec: one function, `kvir_main`, whose
   arguments are the op's buffers in the order docs/Frameworks.md lists
   ("op": "decode", "prefill", "mla_decode", "merge_state" or
   "merge_states", head counts,
   head dims, page size, dtype, layout, table form, causal, window, soft
   cap, sm_scale, LSE base). NULL on a missing or invalid field. */
KVIR_C_API kvir_module_t kvir_module_from_spec(const char *spec_json);

KVIR_C_API void kvir_module_destroy(kvir_module_t module);

/* The module as MLIR text (free it with kvir_free_string). */
KVIR_C_API char *kvir_module_to_string(kvir_module_t module);
KVIR_C_API void kvir_free_string(char *text);

/* Lowers the module for `chip` (sm_80, sm_86, sm_89, sm_90, sm_90a) and
   writes into `out_dir` the PTX, one JSON manifest per kernel and a C
   header. 0 on success, -1 (with the reason) otherwise, e.g. an op the
   chip has no kernel for. */
KVIR_C_API int kvir_compile(kvir_module_t module, const char *chip, const char *out_dir);

/* One argument of a function run by kvir_emulate. */
typedef enum {
  KVIR_ARG_BUFFER = 0, /* data: contiguous row-major host memory */
  KVIR_ARG_F32 = 1,    /* scalar */
  KVIR_ARG_INDEX = 2   /* scalar (an index or integer argument) */
} kvir_arg_kind_t;

typedef struct {
  kvir_arg_kind_t kind;
  void *data;
  int64_t rank;
  const int64_t *shape;
  double scalar;
} kvir_arg_t;

/* Runs function `func` with its kv ops lowered for `chip` as kernels (no
   host loops) executed by kvir's GPU emulator, on host buffers. Every buffer
   must match the argument's rank, static sizes and element type size. A
   kernel's failed check (an out-of-bounds access, a race, a divergent
   barrier) fails the call with the emulator's report. The lowering is
   compiled once per (function, chip) and kept with the module. */
KVIR_C_API int kvir_emulate(kvir_module_t module, const char *func, const char *chip,
                 const kvir_arg_t *args, int64_t num_args);

/* The kernel launches of the calling thread's last kvir_emulate as a JSON
   array of the emulator's counters (kernel, grid, block, bytes, sectors,
   mma ops, ...). Free it with kvir_free_string. */
KVIR_C_API char *kvir_last_launches_json(void);

/* Kernel-level emulation: what a GPU runner does through the CUDA driver,
   done against the emulator, so that a runner's own plan and parameter
   marshalling can be checked without a GPU. */

/* Lowers function `func` for `chip` (as kvir_emulate does) and leaves its
   kernels loaded in the emulator under their manifest names. */
KVIR_C_API int kvir_emulator_load(kvir_module_t module, const char *func,
                                  const char *chip);
/* The number of parameters of loaded kernel `kernel`, or -1 if none is
   loaded under that name. */
KVIR_C_API int64_t kvir_emulator_kernel_params(const char *kernel);
/* Makes [ptr, ptr + bytes) memory kernels may access (or no longer). */
KVIR_C_API void kvir_emulator_register(const void *ptr, uint64_t bytes);
KVIR_C_API void kvir_emulator_unregister(const void *ptr);
/* Encodes a tensor map into the 64-byte aligned 128 bytes at `map`, as the
   driver's cuTensorMapEncodeTiled would (same arguments; the map is the
   emulator's, for its TMA copies); 0, or -1 with kvir_last_error saying
   which of the driver's requirements is broken. */
KVIR_C_API int
kvir_emulator_encode_tensor_map(void *map, int data_type, unsigned rank,
                                void *address, const uint64_t *dims,
                                const uint64_t *strides, const unsigned *box,
                                const unsigned *element_strides, int interleave,
                                int swizzle, int l2_promotion, int oob_fill);
/* Launches a loaded kernel as cuLaunchKernel would: params[i] points to the
   bytes of parameter i (kvir's kernel ABI: pointers and int64 sizes). The
   parameter count is checked against the kernel's; a failed check in the
   kernel fails the launch with the emulator's report. */
KVIR_C_API int kvir_emulator_launch(const char *kernel, const uint32_t grid[3],
                                    const uint32_t block[3],
                                    uint32_t dynamic_shared_bytes,
                                    void **params, int64_t num_params);
/* Launch attributes of kvir_emulator_launch_ex. */
#define KVIR_LAUNCH_PROGRAMMATIC_DEPENDENT 1u
/* kvir_emulator_launch with `flags`: KVIR_LAUNCH_PROGRAMMATIC_DEPENDENT is
   cuLaunchKernelEx's programmatic stream serialization — the grid may
   overlap the previous launch until its threads execute
   griddepcontrol.wait, and what they access before it is checked against
   what the previous grid accessed (which must have been recorded: a
   kernel using griddepcontrol was loaded before it ran). */
KVIR_C_API int
kvir_emulator_launch_ex(const char *kernel, const uint32_t grid[3],
                        const uint32_t block[3], uint32_t dynamic_shared_bytes,
                        void **params, int64_t num_params, uint32_t flags);
/* 1 when a launch now may be KVIR_LAUNCH_PROGRAMMATIC_DEPENDENT (the grid
   before it was recorded), else 0 (the process's first launch, or one
   after grids of kernels without griddepcontrol only). */
KVIR_C_API int kvir_emulator_can_check_dependent_launch(void);

#ifdef __cplusplus
}
#endif

#endif /* KVIR_C_KVIR_H */
