// RUN: not kvir-opt %s --kv-to-ptx=chip=sm_90a 2>&1 | FileCheck %s

// kv-to-ptx never turns an op into host loops: a module with ops that get no
// kernel fails, naming each op and why (and kvir-translate is never reached
// with a module that computes on the host).

!c = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!c32 = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 1024, head_dim_v = 1024, dtype = f32, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x64xf16, base = 2>
!s32 = !kv.state<?x8x1024xf32, base = 2>

// CHECK: error: 'kv.prefill' op has no GPU kernel: interleaved RoPE over 36 rotary dims: the tensor-core kernels rotate 16-byte chunks of 8 dims in place, so the rotated dims (each half, for rotate-half) must be whole chunks
// CHECK: error: 'kv.decode' op has no GPU kernel: on tensor cores (head dim 1024): KV of type f32 has no kernel (f16 and bf16 do: mma.sync)
// CHECK-NOT: gpu.binary
func.func @f(%q: memref<?x8x64xf16>, %qo: memref<?xi32>, %pool: memref<?x2x16x2x64xf16>,
             %q32: memref<?x8x1024xf32>, %pool32: memref<?x2x16x2x1024xf32>,
             %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>,
             %o: memref<?x8x64xf16>, %l: memref<?x8xf32>,
             %o32: memref<?x8x1024xf32>, %l32: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x2x64xf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !c
  %s = kv.prefill %q, %qo, %kv {causal, rope = #kv.rope<interleave, rotary_dim = 36>} : memref<?x8x64xf16>, memref<?xi32>, !c -> !s
  kv.store_state %s, %o, %l : !s, memref<?x8x64xf16>, memref<?x8xf32>
  %kv32 = kv.paged_view pools(%pool32 : memref<?x2x16x2x1024xf32>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !c32
  %t = kv.decode %q32, %kv32 : memref<?x8x1024xf32>, !c32 -> !s32
  kv.store_state %t, %o32, %l32 : !s32, memref<?x8x1024xf32>, memref<?x8xf32>
  return
}
