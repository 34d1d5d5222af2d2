// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: kvir-opt %S/Inputs/decode-kernels.mlir --kv-to-ptx=chip=sm_80 | kvir-translate -o %t
// RUN: %ptxas -arch=sm_80 -v %t/kv_kernels.ptx -o %t/kernels.cubin 2>&1 | FileCheck %s

// ptxas accepts kvir's PTX for sm_80 and no kernel spills.

// CHECK: Compiling entry function '{{decode|merge}}
// CHECK: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK: Compiling entry function
// CHECK: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK: Compiling entry function
// CHECK: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK: Compiling entry function
// CHECK: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK: Compiling entry function
// CHECK: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK-NOT: {{[1-9][0-9]* bytes spill}}
// CHECK-NOT: error
