// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t/sm86 %t/sm89
// RUN: kvir-opt %S/Inputs/prefill-matrix.mlir --kv-to-ptx=chip=sm_86 | kvir-translate -o %t/sm86
// RUN: %ptxas -arch=sm_86 -v %t/sm86/kv_kernels.ptx -o %t/sm86/kernels.cubin > %t/sm86/ptxas.txt 2>&1
// RUN: FileCheck %s --check-prefix=COUNT < %t/sm86/ptxas.txt
// RUN: FileCheck %s --check-prefix=CLEAN < %t/sm86/ptxas.txt
// RUN: kvir-opt %S/Inputs/prefill-matrix.mlir --kv-to-ptx=chip=sm_89 | kvir-translate -o %t/sm89
// RUN: %ptxas -arch=sm_89 -v %t/sm89/kv_kernels.ptx -o %t/sm89/kernels.cubin > %t/sm89/ptxas.txt 2>&1
// RUN: FileCheck %s --check-prefix=COUNT < %t/sm89/ptxas.txt
// RUN: FileCheck %s --check-prefix=CLEAN < %t/sm89/ptxas.txt
// RUN: cat %t/sm86/*.json | FileCheck %s --check-prefix=SMEM
// RUN: cat %t/sm89/*.json | FileCheck %s --check-prefix=SMEM

// The prefill matrix for the A10 / RTX A6000 (sm_86) and the L40S / RTX
// 4090 (sm_89): 100 KB of shared memory a SM (99 KB a block) and 1536
// threads, against the A100's 164 KB and 2048. Every prefill becomes
// kernels whose configs the chooser fitted into those 99 KB (18 split
// kernels, 18 direct ones), and none spills.
// COUNT-COUNT-18: Compiling entry function 'prefill_{{.*}}_split_
// CLEAN-NOT: {{[1-9][0-9]* bytes spill}}
// CLEAN-NOT: error

// No launch (the manifests) asks for more than a block's 101376 bytes of
// dynamic shared memory.
// SMEM-NOT: "dynamic_shared_bytes": {{(10137[7-9]|1013[89][0-9]|101[4-9][0-9][0-9]|10[2-9][0-9][0-9][0-9]|1[1-9][0-9][0-9][0-9][0-9]|[2-9][0-9][0-9][0-9][0-9][0-9]|[0-9][0-9][0-9][0-9][0-9][0-9][0-9]+)}},
// SMEM: "chip": "sm_8{{[69]}}"
// SMEM-NOT: "dynamic_shared_bytes": {{(10137[7-9]|1013[89][0-9]|101[4-9][0-9][0-9]|10[2-9][0-9][0-9][0-9]|1[1-9][0-9][0-9][0-9][0-9]|[2-9][0-9][0-9][0-9][0-9][0-9]|[0-9][0-9][0-9][0-9][0-9][0-9][0-9]+)}},
