// REQUIRES: cc
// A C program against libKVIRCAPI.so; in a sanitizer build the library is
// instrumented and the system compiler's program is not.
// UNSUPPORTED: sanitizers
// RUN: rm -rf %t && mkdir -p %t
// RUN: %cc -std=c99 -Wall -Werror %S/Inputs/capi.c %kvir_capi -lm -o %t/capi
// RUN: %t/capi %S/Inputs/merge.mlir %t/out | FileCheck %s

// The C API from C: every failure comes back as -1 / NULL with a message
// (location, what is wrong, what was expected), never an abort; a module
// compiles to PTX + manifests + header and runs in the emulator on host
// buffers, its kernels checked.

// CHECK: parse: NULL: cannot parse the module:
// CHECK-NEXT: input.mlir:1:14: expected non-function type
// CHECK: spec: NULL: spec: 'num_heads' is required (a positive integer)
// CHECK: spec: NULL: spec: unknown field 'head_dims'
// CHECK: spec: NULL: spec: not JSON:
// CHECK: null module: -1: kvir_compile: no module (NULL)
// CHECK: chip: -1: unknown chip 'sm_70', expected sm_80, sm_86, sm_89, sm_90 or sm_90a
// CHECK: compile: 0: kv_kernels.h kv_kernels.ptx
// CHECK: arguments: -1: kvir_emulate: 'merge' takes 6 arguments, got 5
// CHECK: rank: -1: argument #1: a buffer of rank 1, expected rank 2 ([?, 4])
// CHECK: shape: -1: argument #0: shape [3, 5, 64], expected [?, 4, 64]
// CHECK: scalar: -1: argument #0: expected a buffer for memref<?x4x64xf32>
// CHECK: null buffer: -1: argument #0: expected a buffer for memref<?x4x64xf32>, got a null pointer
// CHECK: function: -1: the module has no function 'nope' with a body
// CHECK: emulate: 0: max error 0
// CHECK: launches: [{"kernel": "merge2_h4_d64_f32_base_e_{{[0-9a-f]+}}"
// CHECK: launch unknown: -1: kvir_emulator_launch: no loaded kernel 'nope' (kvir_emulator_load its module first)
// CHECK: launch flags: -1: kvir_emulator_launch_ex: unknown launch flags 0x6
// CHECK: done
