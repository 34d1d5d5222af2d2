// REQUIRES: ptxas
// RUN: kvir-opt %S/wgmma.mlir -test-kvir-codegen | kvir-opt --kv-to-ptx=chip=sm_90a | kvir-translate -o %t
// RUN: FileCheck %s --check-prefix=PTX < %t/kernels.ptx
// RUN: %ptxas -arch=sm_90a -v %t/kernels.ptx -o %t/kernels.cubin 2>&1 | FileCheck %s

// The kernels of wgmma.mlir through the PTX pipeline: the SS wgmmas become
// the inline PTX of nvvm.wgmma.mma_async (convert-nvvm-to-llvm, which
// kv-to-ptx runs on the kernel modules), the RS ones keep WgmmaAtom's, and
// ptxas accepts both for sm_90a without warnings (no serialized wgmma:
// C7515 / C7511).

// PTX: .target sm_90a
// PTX: wgmma.fence.sync.aligned;
// PTX: wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16
// PTX: wgmma.commit_group.sync.aligned;
// PTX: wgmma.wait_group.sync.aligned 0;
// PTX: wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {{.*}}, p, 1, 1, 1;

// CHECK-NOT: warning
// CHECK: Compiling entry function 'chain_bf16' for 'sm_90a'
// CHECK-NOT: warning
// CHECK: Compiling entry function 'chain_f16' for 'sm_90a'
// CHECK-NOT: warning
// CHECK: Compiling entry function 'gemm_bf16' for 'sm_90a'
// CHECK-NOT: warning
// CHECK: Compiling entry function 'gemm_f16' for 'sm_90a'
// CHECK-NOT: warning
