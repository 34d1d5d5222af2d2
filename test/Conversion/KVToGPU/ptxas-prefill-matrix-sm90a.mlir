// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: kvir-opt %S/Inputs/prefill-matrix.mlir --kv-to-ptx=chip=sm_90a | kvir-translate -o %t
// RUN: %ptxas -arch=sm_90a -v %t/kv_kernels.ptx -o %t/kernels.cubin > %t/ptxas.txt 2>&1
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
// sm_80), and ptxas reports no error and no warning (none that wgmma was
// serialized: C7515, C7511).
// CLEAN-NOT: {{[1-9][0-9]* bytes spill}}
// CLEAN-NOT: error
// CLEAN-NOT: warning

// sm_90a's prefills run on wgmma where the kernel takes them: S = Q K^T in
// the SS form (N = the key tile: 64 under a producer warpgroup, where V is
// converted per tile or up to head dim 64, 128 otherwise, 48 at head dim
// 256), O += P V in the RS form (N = head_dim_v); the async proxy sees the
// tiles' copies after each thread's fence.proxy.async; the
// 128-byte-swizzled tiles' base is 1024-byte aligned.
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {{.*}}, %rd{{[0-9]+}}, %rd{{[0-9]+}}, p, 1, {{ *}}1, 0, {{ *}}0;
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}}, {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, %rd{{[0-9]+}}, p, 1, 1, 1;
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n48k16.f32.bf16.bf16
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {{.*}}, p, 1, 1, 1;
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// PTX-DAG: fence.proxy.async.shared::cta;
// PTX-DAG: .shared .align 1024 .b8 __dynamic_shmem__0;
// A cascade's shared level at head dim 128: four warpgroups of 64 rows
// score 32-key tiles.
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 {{.*}}, %rd{{[0-9]+}}, %rd{{[0-9]+}}, p, 1, {{ *}}1, 0, {{ *}}0;

// A ragged producer copies by TMA: it acquires the tensor maps the host
// wrote, announces each tile's bytes, issues 3-D boxes into the cluster
// window of its own block's shared memory.
// PTX-DAG: fence.proxy.tensormap::generic.acquire.sys [%rd{{[0-9]+}}], 128;
// PTX-DAG: mbarrier.arrive.expect_tx.shared.b64 %rd{{[0-9]+}}, [%rd{{[0-9]+}}], %r{{[0-9]+}};
// PTX-DAG: cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%rd{{[0-9]+}}], [%rd{{[0-9]+}}, {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}], [%rd{{[0-9]+}}];

// Tensor cores fed by ldmatrix (K rows, V transposed), 16-byte cp.async
// (plus 4-byte ones for the page-table entries) in a two-stage pipeline,
// ex2.approx for the softmax; no calls (no libdevice, nothing unresolved).
// PTX-DAG: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// PTX-DAG: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// PTX-DAG: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// PTX-DAG: cp.async.cg.shared.global {{.*}}, 16
// PTX-DAG: cp.async.ca.shared.global {{.*}}, 4;
// PTX-DAG: cp.async.wait_group 1;
// PTX-DAG: ex2.approx.ftz.f32
// PTX-NOT: call
// PTX-NOT: __nv_
