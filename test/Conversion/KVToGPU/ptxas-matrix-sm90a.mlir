// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: kvir-opt %S/Inputs/decode-matrix.mlir --kv-to-ptx=chip=sm_90a | kvir-translate -o %t
// RUN: %ptxas -arch=sm_90a -v %t/kv_kernels.ptx -o %t/kernels.cubin > %t/ptxas.txt 2>&1
// RUN: FileCheck %s --check-prefix=COUNT < %t/ptxas.txt
// RUN: FileCheck %s --check-prefix=CLEAN < %t/ptxas.txt
// RUN: FileCheck %s --check-prefix=PTX < %t/kv_kernels.ptx

// Every decode of the matrix becomes kernels (none falls back to loops):
// 19 split kernels, 19 direct ones, and their merge kernels.
// COUNT-COUNT-19: Compiling entry function 'decode_{{.*}}_split_

// No kernel spills (before .reqntid, ptxas capped head_dim 256 / group 8
// at 48 registers on sm_90a and spilled), and ptxas reports no error.
// CLEAN-NOT: {{[1-9][0-9]* bytes spill}}
// CLEAN-NOT: error

// 16-byte K/V loads; no calls (no libdevice, nothing unresolved).
// PTX: ld.global.v4
// PTX-NOT: call
// PTX-NOT: __nv_
