// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: kvir-opt %S/Inputs/mla-matrix.mlir --kv-to-ptx=chip=sm_90a | kvir-translate -o %t
// RUN: %ptxas -arch=sm_90a -v %t/kv_kernels.ptx -o %t/kernels.cubin > %t/ptxas.txt 2>&1
// RUN: FileCheck %s --check-prefix=COUNT < %t/ptxas.txt
// RUN: FileCheck %s --check-prefix=CLEAN < %t/ptxas.txt
// RUN: FileCheck %s --check-prefix=PTX < %t/kv_kernels.ptx

// Every MLA op of the matrix becomes kernels: 4 split kernels, 4 direct
// ones, and their merge kernels.
// COUNT-COUNT-4: Compiling entry function 'mla_{{.*}}_split_

// No kernel spills, and ptxas reports no error and no warning (none that
// wgmma was serialized: C7515, C7511).
// CLEAN-NOT: {{[1-9][0-9]* bytes spill}}
// CLEAN-NOT: error
// CLEAN-NOT: warning

// Tiles of 64 rows (64 and 128 heads, and rows()) run on wgmma: the first
// warpgroup scores 32-key ckv + kpe tiles (S = Q K^T in the SS form, both
// K-major), shares P through shared memory (fenced for the async proxy),
// and both warpgroups accumulate their 256 value columns in the SS form
// (P K-major, ckv MN-major). The 16-row tiles of 16 heads stay on
// mma.sync, fed by ldmatrix (ckv / kpe rows for the scores, ckv transposed
// for the values). 16-byte cp.async of ckv and kpe in one commit group per
// tile (wait depth 0), ex2.approx for the softmax; no calls.
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 {{.*}}, %rd{{[0-9]+}}, %rd{{[0-9]+}}, p, 1, {{ *}}1, 0, {{ *}}0;
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {{.*}}, %rd{{[0-9]+}}, %rd{{[0-9]+}}, p, 1, {{ *}}1, 0, {{ *}}1;
// PTX-DAG: fence.proxy.async.shared::cta;
// PTX-DAG: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// PTX-DAG: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// PTX-DAG: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// PTX-DAG: cp.async.cg.shared.global {{.*}}, 16
// PTX-DAG: cp.async.wait_group 0;
// PTX-DAG: ex2.approx.ftz.f32
// PTX-NOT: call
// PTX-NOT: __nv_
