// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t/a %t/h
// RUN: kvir-opt %S/cascade-positions.mlir --kv-to-ptx=chip=sm_80 | kvir-translate -o %t/a
// RUN: kvir-opt %S/cascade-positions.mlir --kv-to-ptx=chip=sm_90a | kvir-translate -o %t/h
// RUN: %ptxas -arch=sm_80 -v %t/a/kv_kernels.ptx -o %t/a/k.cubin > %t/a/ptxas.txt 2>&1
// RUN: %ptxas -arch=sm_90a -v %t/h/kv_kernels.ptx -o %t/h/k.cubin > %t/h/ptxas.txt 2>&1
// RUN: FileCheck %s --check-prefix=COUNT < %t/a/ptxas.txt
// RUN: FileCheck %s --check-prefix=COUNT < %t/h/ptxas.txt
// RUN: FileCheck %s --check-prefix=CLEAN < %t/a/ptxas.txt
// RUN: FileCheck %s --check-prefix=CLEAN < %t/h/ptxas.txt
// RUN: FileCheck %s --check-prefix=PTX < %t/a/kv_kernels.ptx

// A windowed cascade under kv-to-ptx: the positions kernel and the
// shared level's prefill with per-row positions assemble for both chips
// without spills.
// COUNT-DAG: Compiling entry function 'cascade_positions_2_csr_csr_
// COUNT-DAG: Compiling entry function 'prefill_nhd_combined_csr_p16_h8x2_d64_f16_f16_positions_
// CLEAN-NOT: {{[1-9][0-9]* bytes spill}}
// CLEAN-NOT: error

// PTX-NOT: call
// PTX-NOT: __nv_
