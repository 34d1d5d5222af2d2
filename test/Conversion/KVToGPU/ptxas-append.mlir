// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t/a %t/h
// RUN: kvir-opt %S/Inputs/append-matrix.mlir --kv-to-ptx=chip=sm_80 | kvir-translate -o %t/a
// RUN: kvir-opt %S/Inputs/append-matrix.mlir --kv-to-ptx=chip=sm_90a | kvir-translate -o %t/h
// RUN: %ptxas -arch=sm_80 -v %t/a/kv_kernels.ptx -o %t/a/k.cubin > %t/a/ptxas.txt 2>&1
// RUN: %ptxas -arch=sm_90a -v %t/h/kv_kernels.ptx -o %t/h/k.cubin > %t/h/ptxas.txt 2>&1
// RUN: FileCheck %s --check-prefix=COUNT < %t/a/ptxas.txt
// RUN: FileCheck %s --check-prefix=CLEAN < %t/a/ptxas.txt
// RUN: FileCheck %s --check-prefix=CLEAN < %t/h/ptxas.txt
// RUN: FileCheck %s --check-prefix=PTX < %t/a/kv_kernels.ptx

// Every append becomes a kernel; none spills.
// COUNT-COUNT-7: Compiling entry function 'append_
// CLEAN-NOT: {{[1-9][0-9]* bytes spill}}
// CLEAN-NOT: error

// 16-byte stores where the layout allows them (NHD, vLLM's K pool) and
// 2-byte ones into vLLM's V pool; RoPE by sin / cos.approx after the
// angle's reduction, no calls.
// PTX-DAG: st.global.v4.b32
// PTX-DAG: st.global.b16
// PTX-DAG: sin.approx.ftz.f32
// PTX-DAG: cos.approx.ftz.f32
// PTX-NOT: call
// PTX-NOT: __nv_
