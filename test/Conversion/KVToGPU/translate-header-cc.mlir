// REQUIRES: cc
// The C program links libKVIRRuntime.a, instrumented in a sanitizer build,
// with the system C compiler's runtime: not both.
// UNSUPPORTED: sanitizers
// RUN: rm -rf %t && mkdir -p %t
// RUN: kvir-opt %S/Inputs/decode-kernels.mlir --kv-to-ptx=chip=sm_90a | kvir-translate -o %t
// RUN: %cc -std=c99 -Wall -Werror -fsyntax-only -x c %t/kv_kernels.h
// RUN: %cc -std=c99 -Wall -Werror -I %t %S/Inputs/check_header.c %kvir_runtime -o %t/check_header
// RUN: %t/check_header | FileCheck %s

// kvir-translate's C header is valid C99 on its own, its split-KV helpers
// (partition count, work list bound, workspace bytes) follow the plan's
// formulas, and its schedule function, linked with libKVIRRuntime, cuts a
// skewed batch.

// CHECK-NOT: FAIL
// CHECK: header check passed
