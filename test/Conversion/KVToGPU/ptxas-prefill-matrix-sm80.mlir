// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: kvir-opt %S/Inputs/prefill-matrix.mlir --kv-to-ptx=chip=sm_80 | kvir-translate -o %t
// RUN: %ptxas -arch=sm_80 -v %t/kv_kernels.ptx -o %t/kernels.cubin > %t/ptxas.txt 2>&1
// RUN: FileCheck %s --check-prefix=COUNT < %t/ptxas.txt
// RUN: FileCheck %s --check-prefix=ROWS < %t/ptxas.txt
// RUN: FileCheck %s --check-prefix=CLEAN < %t/ptxas.txt
// RUN: FileCheck %s --check-prefix=PTX < %t/kv_kernels.ptx

// Every prefill of the matrix becomes kernels (none falls back to loops):
// 18 split kernels, 18 direct ones, and their merge kernels; an f32
// prefill's rows kernel.
// COUNT-COUNT-18: Compiling entry function 'prefill_{{.*}}_split_
// ROWS: Compiling entry function 'prefill_rows_

// No kernel spills (FlashInfer's 128-row prefill spills 20 bytes on
// sm_80), and ptxas reports no error.
// CLEAN-NOT: {{[1-9][0-9]* bytes spill}}
// CLEAN-NOT: error

// Tensor cores fed by ldmatrix (K rows, V transposed), 16-byte cp.async
// (plus 4-byte ones for the page-table entries) in a two-stage pipeline,
// ex2.approx for the softmax; no calls (no libdevice, nothing unresolved).
// PTX-DAG: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// PTX-DAG: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// PTX-DAG: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// PTX-DAG: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// PTX-DAG: cp.async.cg.shared.global {{.*}}, 16
// PTX-DAG: cp.async.ca.shared.global {{.*}}, 4;
// PTX-DAG: cp.async.wait_group 1;
// PTX-DAG: ex2.approx.ftz.f32
// PTX-NOT: call
// PTX-NOT: __nv_
