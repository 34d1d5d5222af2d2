// RUN: kvir-opt %s --kv-tile=chip=sm_89 -split-input-file | FileCheck %s
// RUN: kvir-opt %s --kv-to-nvvm=chip=sm_89 -split-input-file | FileCheck %s --check-prefix=KERNEL

// sm_86 / sm_89 give a block 99 KB of shared memory. At head dim 256 the
// 64-row query tile and two 32-key K/V stages take 96 KB, and an output of
// another type (bf16 from f16 KV) is staged in its own 32 KB tile: the
// chooser counts every buffer of the kernel and halves the query tile.
// (The differential prefill sweep found it: the chosen config needed 131192
// bytes and the lowering refused it.)
!kv_t = !kv.paged<page_size = 8, kv_heads = 2, head_dim = 256, head_dim_v = 256, dtype = f16, layout = hnd, storage = split, table = block_table>
// CHECK-LABEL: func @d256_bf16_out
// CHECK: kvgpu.config = #kvgpu.prefill<q_tile = 32, kv_tile = 32, warps = 2, stages = 2, q_in_registers = false, max_partitions = 16>
// KERNEL-LABEL: func @d256_bf16_out
// KERNEL: gpu.launch_func @{{.*}}::@prefill_
func.func @d256_bf16_out(%p0: memref<?x2x8x256xf16>, %p1: memref<?x2x8x256xf16>, %bt: memref<?x?xi32>, %lens: memref<?xi32>, %q: memref<?x16x256xf16>, %qo: memref<?xi32>, %out: memref<?x16x256xbf16>, %lse: memref<?x16xf32>) {
  %kv = kv.paged_view pools(%p0, %p1 : memref<?x2x8x256xf16>, memref<?x2x8x256xf16>) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) : !kv_t
  %s = kv.prefill %q, %qo, %kv {causal} : memref<?x16x256xf16>, memref<?xi32>, !kv_t -> !kv.state<?x16x256xbf16, base = 2>
  kv.store_state %s, %out, %lse : !kv.state<?x16x256xbf16, base = 2>, memref<?x16x256xbf16>, memref<?x16xf32>
  return
}

// -----

// Same KV and output type: the output reuses the query tile, and the 64-row
// tile fits.
!kv_t = !kv.paged<page_size = 8, kv_heads = 2, head_dim = 256, head_dim_v = 256, dtype = f16, layout = hnd, storage = split, table = block_table>
// CHECK-LABEL: func @d256_f16_out
// CHECK: kvgpu.config = #kvgpu.prefill<q_tile = 64, kv_tile = 32, warps = 4, stages = 2, q_in_registers = false, max_partitions = 16>
// KERNEL-LABEL: func @d256_f16_out
// KERNEL: gpu.launch_func @{{.*}}::@prefill_
func.func @d256_f16_out(%p0: memref<?x2x8x256xf16>, %p1: memref<?x2x8x256xf16>, %bt: memref<?x?xi32>, %lens: memref<?xi32>, %q: memref<?x16x256xf16>, %qo: memref<?xi32>, %out: memref<?x16x256xf16>, %lse: memref<?x16xf32>) {
  %kv = kv.paged_view pools(%p0, %p1 : memref<?x2x8x256xf16>, memref<?x2x8x256xf16>) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) : !kv_t
  %s = kv.prefill %q, %qo, %kv {causal} : memref<?x16x256xf16>, memref<?xi32>, !kv_t -> !kv.state<?x16x256xf16, base = 2>
  kv.store_state %s, %out, %lse : !kv.state<?x16x256xf16, base = 2>, memref<?x16x256xf16>, memref<?x16xf32>
  return
}
