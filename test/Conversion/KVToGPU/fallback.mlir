// RUN: kvir-opt %s -split-input-file --convert-kv-to-gpu="chip=sm_90a allow-host-loops=1" | FileCheck %s

// With allow-host-loops (kvir-runner's choice, where device memory is host
// memory), decodes convert-kv-to-gpu has no kernel for stay as they are, for
// kv-to-loops (no-kernel.mlir has the errors the default reports): f32 KV
// wider than a warp of 16-element vectors (head dim 1024: tensor cores take
// no f32),
// int8 groups whose scale rows are under cp.async's 4 bytes, on-the-fly
// RoPE whose rotary dims split a lane's vector, vLLM's V pool at a page size of one slot (its transposed staging
// needs chunks of at least 4 bytes), blocks over 48 KB of static shared
// memory, and KV that is not a
// kv.paged_view of the function. (head_dim != head_dim_v and head dim 512
// run on the tensor-core kernel: decode-tensor-core.mlir.) A module with
// nothing to lower gets no gpu.module.

!f32cache = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 1024, head_dim_v = 1024,
                      dtype = f32, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x1024xf32, base = e>
// CHECK-LABEL: func.func @f32_kv
// CHECK-NOT: gpu.container_module
// CHECK: kv.decode
// CHECK-NOT: gpu.launch_func
// CHECK-NOT: gpu.module
func.func @f32_kv(%q: memref<?x8x1024xf32>, %pool: memref<?x2x16x2x1024xf32>,
                  %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>,
                  %o: memref<?x8x1024xf32>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x2x1024xf32>)
      tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !f32cache
  %s = kv.decode %q, %kv : memref<?x8x1024xf32>, !f32cache -> !s
  kv.store_state %s, %o, %l : !s, memref<?x8x1024xf32>, memref<?x8xf32>
  return
}

// -----

!int8 = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64,
                  dtype = f16, layout = nhd, storage = combined, table = csr,
                  quant = int8_group, quant_group = 64>
!s = !kv.state<?x8x64xf16, base = e>
// CHECK-LABEL: func.func @int8_one_scale_per_row
// CHECK: kv.decode
// CHECK-NOT: gpu.launch_func
func.func @int8_one_scale_per_row(%q: memref<?x8x64xf16>, %pool: memref<?x2x16x2x64xi8>,
                   %scales: memref<?x2x16x2x1xf16>,
                   %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>,
                   %o: memref<?x8x64xf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x2x64xi8>)
      tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      scales(%scales : memref<?x2x16x2x1xf16>) : !int8
  %s = kv.decode %q, %kv : memref<?x8x64xf16>, !int8 -> !s
  kv.store_state %s, %o, %l : !s, memref<?x8x64xf16>, memref<?x8xf32>
  return
}

// -----

!c = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64,
               dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x64xf16, base = e>
// CHECK-LABEL: func.func @rope
// CHECK: kv.decode
// CHECK-NOT: gpu.launch_func
func.func @rope(%q: memref<?x8x64xf16>, %pool: memref<?x2x16x2x64xf16>,
                %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>,
                %o: memref<?x8x64xf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x2x64xf16>)
      tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !c
  %s = kv.decode %q, %kv {rope = #kv.rope<interleave, rotary_dim = 36>}
      : memref<?x8x64xf16>, !c -> !s
  kv.store_state %s, %o, %l : !s, memref<?x8x64xf16>, memref<?x8xf32>
  return
}

// -----

// vLLM's V pool [blocks, heads, head_dim, block] at page size 1: its
// transposed staging would copy 2-byte chunks.
!c = !kv.paged<page_size = 1, kv_heads = 2, head_dim = 64, head_dim_v = 64,
               dtype = f16, layout = vllm, storage = split, table = block_table>
!s = !kv.state<?x4x64xf16, base = e>
// CHECK-LABEL: func.func @vllm
// CHECK: kv.decode
// CHECK-NOT: gpu.launch_func
func.func @vllm(%q: memref<?x4x64xf16>, %k: memref<?x2x8x1x8xf16>,
                %v: memref<?x2x64x1xf16>, %bt: memref<?x?xi32>, %lens: memref<?xi32>,
                %o: memref<?x4x64xf16>, %l: memref<?x4xf32>) {
  %kv = kv.paged_view pools(%k, %v : memref<?x2x8x1x8xf16>, memref<?x2x64x1xf16>)
      tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) : !c
  %s = kv.decode %q, %kv : memref<?x4x64xf16>, !c -> !s
  kv.store_state %s, %o, %l : !s, memref<?x4x64xf16>, memref<?x4xf32>
  return
}

// -----

// Group 64 at head_dim 256 with a decode config: 32 x 64 threads, over
// 1024 per block. (Chosen by kv-tile, it would run on tensor cores.)
!c = !kv.paged<page_size = 16, kv_heads = 1, head_dim = 256, head_dim_v = 256,
               dtype = bf16, layout = hnd, storage = combined, table = csr>
!s = !kv.state<?x64x256xbf16, base = e>
// CHECK-LABEL: func.func @too_many_threads
// CHECK: kv.decode
// CHECK-NOT: gpu.launch_func
func.func @too_many_threads(%q: memref<?x64x256xbf16>, %pool: memref<?x2x1x16x256xbf16>,
                            %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>,
                            %o: memref<?x64x256xbf16>, %l: memref<?x64xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x1x16x256xbf16>)
      tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !c
  %s = kv.decode %q, %kv {kvgpu.config = #kvgpu.decode<vector = 8, threads_x = 32, threads_z = 1, tile_tokens = 16, stages = 3, max_partitions = 32>} : memref<?x64x256xbf16>, !c -> !s
  kv.store_state %s, %o, %l : !s, memref<?x64x256xbf16>, memref<?x64xf32>
  return
}

// -----

// Of two decodes, the supported one becomes kernels, the other stays.
!ok = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64,
                dtype = f16, layout = nhd, storage = combined, table = csr>
!no = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 1024, head_dim_v = 1024,
                dtype = f32, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x64xf16, base = e>
!s32 = !kv.state<?x8x1024xf32, base = e>
// CHECK: module attributes {gpu.container_module
// CHECK-LABEL: func.func @mixed
// CHECK: gpu.launch_func @kv_kernels::@decode_nhd_combined_csr_p16_h8x2_d64_f16_f16_
// CHECK: kv.decode %{{.*}}, %{{.*}} : memref<?x8x1024xf32>
// CHECK: kv.store_state
// CHECK: gpu.module @kv_kernels
func.func @mixed(%q: memref<?x8x64xf16>, %pool: memref<?x2x16x2x64xf16>,
                 %q32: memref<?x8x1024xf32>, %pool32: memref<?x2x16x2x1024xf32>,
                 %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>,
                 %o: memref<?x8x64xf16>, %l: memref<?x8xf32>,
                 %o32: memref<?x8x1024xf32>, %l32: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x2x64xf16>)
      tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !ok
  %kv32 = kv.paged_view pools(%pool32 : memref<?x2x16x2x1024xf32>)
      tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !no
  %s = kv.decode %q, %kv : memref<?x8x64xf16>, !ok -> !s
  kv.store_state %s, %o, %l : !s, memref<?x8x64xf16>, memref<?x8xf32>
  %t = kv.decode %q32, %kv32 : memref<?x8x1024xf32>, !no -> !s32
  kv.store_state %t, %o32, %l32 : !s32, memref<?x8x1024xf32>, memref<?x8xf32>
  return
}
