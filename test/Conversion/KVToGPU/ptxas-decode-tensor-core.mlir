// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: kvir-opt %S/Inputs/decode-tensor-core.mlir --kv-to-ptx=chip=sm_80 | kvir-translate -o %t/sm80
// RUN: %ptxas -arch=sm_80 -v %t/sm80/kv_kernels.ptx -o %t/sm80.cubin > %t/sm80.txt 2>&1
// RUN: FileCheck %s --check-prefix=COUNT < %t/sm80.txt
// RUN: FileCheck %s --check-prefix=CLEAN < %t/sm80.txt
// RUN: kvir-opt %S/Inputs/decode-tensor-core.mlir --kv-to-ptx=chip=sm_90a | kvir-translate -o %t/sm90a
// RUN: %ptxas -arch=sm_90a -v %t/sm90a/kv_kernels.ptx -o %t/sm90a.cubin > %t/sm90a.txt 2>&1
// RUN: FileCheck %s --check-prefix=COUNT < %t/sm90a.txt
// RUN: FileCheck %s --check-prefix=CLEAN < %t/sm90a.txt

// Every decode of the input runs on tensor cores (4 split, 4 direct
// kernels; wgmma on sm_90a); none spills, ptxas reports no error and no
// warning (none that wgmma was serialized: C7515, C7511).
// COUNT-COUNT-4: Compiling entry function 'decode_tc_{{.*}}_split_
// CLEAN-NOT: {{[1-9][0-9]* bytes spill}}
// CLEAN-NOT: error
// CLEAN-NOT: warning
