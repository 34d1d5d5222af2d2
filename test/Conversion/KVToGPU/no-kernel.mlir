// RUN: kvir-opt %s -split-input-file --convert-kv-to-gpu=chip=sm_90a -verify-diagnostics

// Without allow-host-loops (kv-to-nvvm and kv-to-ptx never set it), every kv
// op that reads or writes data must become a kernel: an op that cannot is an
// error naming the op and the reason, never host loops over device memory.

!c = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 1024, head_dim_v = 1024, dtype = f32, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x1024xf32, base = e>
func.func @f32_kv(%q: memref<?x8x1024xf32>, %pool: memref<?x2x16x2x1024xf32>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>, %o: memref<?x8x1024xf32>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x2x1024xf32>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !c
  // expected-error @below {{'kv.decode' op has no GPU kernel: on tensor cores (head dim 1024): KV of type f32 has no kernel (f16 and bf16 do: mma.sync) (kv-to-nvvm and kv-to-ptx lower every kv op to kernels; host loops are allowed only with allow-host-loops, as kvir-runner does)}}
  %s = kv.decode %q, %kv : memref<?x8x1024xf32>, !c -> !s
  kv.store_state %s, %o, %l : !s, memref<?x8x1024xf32>, memref<?x8xf32>
  return
}

// -----

!c = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr, quant = int8_group, quant_group = 64>
!s = !kv.state<?x8x64xf16, base = e>
func.func @int8_one_scale_per_row(%q: memref<?x8x64xf16>, %pool: memref<?x2x16x2x64xi8>, %scales: memref<?x2x16x2x1xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>, %o: memref<?x8x64xf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x2x64xi8>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) scales(%scales : memref<?x2x16x2x1xf16>) : !c
  // expected-error @below {{has no GPU kernel: int8 scale rows of 1 / 1 scales not contiguous in chunks of at least 4 bytes (the decode kernel copies scales with cp.async)}}
  %s = kv.decode %q, %kv : memref<?x8x64xf16>, !c -> !s
  kv.store_state %s, %o, %l : !s, memref<?x8x64xf16>, memref<?x8xf32>
  return
}

// -----

!c = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 16, head_dim_v = 16, dtype = f16, layout = nhd, storage = combined, table = csr, quant = int8_group, quant_group = 8>
!s = !kv.state<?x8x16xf16, base = e>
!pool = memref<?x2x16x2x16xi8, strided<[?, ?, ?, ?, 1], offset: ?>>
func.func @int8_codes_not_16_byte(%q: memref<?x8x16xf16>, %pool: !pool, %scales: memref<?x2x16x2x2xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>, %o: memref<?x8x16xf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%pool : !pool) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) scales(%scales : memref<?x2x16x2x2xf16>) : !c
  // expected-error @below {{has no GPU kernel: int8 codes in 1-element vectors: the int8 decode kernel copies 16-byte chunks of codes (the pool layout must prove the head dim contiguous in 16 bytes)}}
  %s = kv.decode %q, %kv : memref<?x8x16xf16>, !c -> !s
  kv.store_state %s, %o, %l : !s, memref<?x8x16xf16>, memref<?x8xf32>
  return
}

// -----

!c = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x64xf16, base = e>
func.func @rope(%q: memref<?x8x64xf16>, %pool: memref<?x2x16x2x64xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>, %o: memref<?x8x64xf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x2x64xf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !c
  // expected-error @below {{has no GPU kernel: on-the-fly interleaved RoPE over 36 rotary dims in 8-element vectors: the decode kernel needs each lane's vector to hold whole pairs, all of them rotated or none}}
  %s = kv.decode %q, %kv {rope = #kv.rope<interleave, rotary_dim = 36>} : memref<?x8x64xf16>, !c -> !s
  kv.store_state %s, %o, %l : !s, memref<?x8x64xf16>, memref<?x8xf32>
  return
}

// -----

// vLLM's V pool [blocks, heads, head_dim, block] is staged transposed in
// chunks of consecutive slots: pages of one slot give 2-byte chunks.
!c = !kv.paged<page_size = 1, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = vllm, storage = split, table = block_table>
!s = !kv.state<?x4x64xf16, base = e>
func.func @vllm_page_of_one_slot(%q: memref<?x4x64xf16>, %k: memref<?x2x8x1x8xf16>, %v: memref<?x2x64x1xf16>, %bt: memref<?x?xi32>, %lens: memref<?xi32>, %o: memref<?x4x64xf16>, %l: memref<?x4xf32>) {
  %kv = kv.paged_view pools(%k, %v : memref<?x2x8x1x8xf16>, memref<?x2x64x1xf16>) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) : !c
  // expected-error @below {{has no GPU kernel: a V pool whose slots are its innermost axis (vLLM's layout) at page size 1: the decode kernel stages V transposed in chunks of at least 4 bytes of consecutive slots within a page}}
  %s = kv.decode %q, %kv : memref<?x4x64xf16>, !c -> !s
  kv.store_state %s, %o, %l : !s, memref<?x4x64xf16>, memref<?x4xf32>
  return
}

// -----

// A strided V pool whose slot chunks would not be 16-byte aligned.
!c = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = vllm, storage = split, table = block_table>
!s = !kv.state<?x4x64xf16, base = e>
!v = memref<?x2x64x16xf16, strided<[2052, 1026, 16, 1]>>
func.func @vllm_unaligned_v_pool(%q: memref<?x4x64xf16>, %k: memref<?x2x8x16x8xf16>, %v: !v, %bt: memref<?x?xi32>, %lens: memref<?xi32>, %o: memref<?x4x64xf16>, %l: memref<?x4xf32>) {
  %kv = kv.paged_view pools(%k, %v : memref<?x2x8x16x8xf16>, !v) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) : !c
  // expected-error @below {{has no GPU kernel: V pool memref<?x2x64x16xf16, strided<[2052, 1026, 16, 1]>>: the decode kernel stages V transposed in chunks of 8 slots, which needs static strides and offset that are multiples of the chunk}}
  %s = kv.decode %q, %kv : memref<?x4x64xf16>, !c -> !s
  kv.store_state %s, %o, %l : !s, memref<?x4x64xf16>, memref<?x4xf32>
  return
}

// -----

// Group 64 at head_dim 256 with a decode config: 32 x 64 threads. (Chosen
// by kv-tile, such a decode runs on the tensor-core kernel.)
!c = !kv.paged<page_size = 16, kv_heads = 1, head_dim = 256, head_dim_v = 256, dtype = bf16, layout = hnd, storage = combined, table = csr>
!s = !kv.state<?x64x256xbf16, base = e>
func.func @too_many_threads(%q: memref<?x64x256xbf16>, %pool: memref<?x2x1x16x256xbf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>, %o: memref<?x64x256xbf16>, %l: memref<?x64xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x1x16x256xbf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !c
  // expected-error @below {{has no GPU kernel: a block of 2048 threads, over 1024}}
  %s = kv.decode %q, %kv {kvgpu.config = #kvgpu.decode<vector = 8, threads_x = 32, threads_z = 1, tile_tokens = 16, stages = 3, max_partitions = 32>} : memref<?x64x256xbf16>, !c -> !s
  kv.store_state %s, %o, %l : !s, memref<?x64x256xbf16>, memref<?x64xf32>
  return
}

// -----

// A configuration whose tiles need more shared memory than a kernel may
// declare statically.
!c = !kv.paged<page_size = 16, kv_heads = 1, head_dim = 256, head_dim_v = 256, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x1x256xf16, base = e>
func.func @too_much_shared(%q: memref<?x1x256xf16>, %pool: memref<?x2x16x1x256xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>, %o: memref<?x1x256xf16>, %l: memref<?x1xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x1x256xf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !c
  // expected-error @below {{has no GPU kernel: 393852 bytes of shared memory, over the 48 KB the decode kernel may declare}}
  %s = kv.decode %q, %kv {kvgpu.config = #kvgpu.decode<vector = 8, threads_x = 32, threads_z = 1, tile_tokens = 128, stages = 3, max_partitions = 32>} : memref<?x1x256xf16>, !c -> !s
  kv.store_state %s, %o, %l : !s, memref<?x1x256xf16>, memref<?x1xf32>
  return
}

// -----

// A pool sliced along its innermost axis.
!c = !kv.paged<page_size = 16, kv_heads = 1, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = split, table = csr>
!s = !kv.state<?x1x64xf16, base = e>
func.func @strided_pool(%q: memref<?x1x64xf16>, %k: memref<?x16x1x64xf16, strided<[2048, 128, 128, 2]>>, %v: memref<?x16x1x64xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>, %o: memref<?x1x64xf16>, %l: memref<?x1xf32>) {
  %kv = kv.paged_view pools(%k, %v : memref<?x16x1x64xf16, strided<[2048, 128, 128, 2]>>, memref<?x16x1x64xf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !c
  // expected-error @below {{has no GPU kernel: on tensor cores: the head dim of the pool layout is not contiguous in 16-byte chunks (the tensor-core kernel copies K/V rows with 16-byte cp.async)}}
  %s = kv.decode %q, %kv : memref<?x1x64xf16>, !c -> !s
  kv.store_state %s, %o, %l : !s, memref<?x1x64xf16>, memref<?x1xf32>
  return
}

// -----

!c = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x64xf16, base = e>
func.func @not_a_view(%q: memref<?x8x64xf16>, %kv: !c, %o: memref<?x8x64xf16>, %l: memref<?x8xf32>) {
  // expected-error @below {{has no GPU kernel: its KV is not a kv.paged_view of the same function}}
  %s = kv.decode %q, %kv : memref<?x8x64xf16>, !c -> !s
  kv.store_state %s, %o, %l : !s, memref<?x8x64xf16>, memref<?x8xf32>
  return
}

// -----

// f32 prefills run their query rows on the decode kernel, which takes no
// custom mask.
!c = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f32, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x64xf32, base = 2>
func.func @prefill_f32_mask(%q: memref<?x8x64xf32>, %qo: memref<?xi32>, %pool: memref<?x2x16x2x64xf32>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>, %m: memref<?xi1>, %o: memref<?x8x64xf32>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x2x64xf32>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !c
  // expected-error @below {{'kv.prefill' op has no GPU kernel: an f32 prefill (on the decode kernel, one block per query row) takes no custom mask}}
  %s = kv.prefill %q, %qo, %kv mask(%m : memref<?xi1>) {causal} : memref<?x8x64xf32>, memref<?xi32>, !c -> !s
  kv.store_state %s, %o, %l : !s, memref<?x8x64xf32>, memref<?x8xf32>
  return
}

// -----

!c = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 32, dtype = f32, layout = nhd, storage = split, table = csr>
!s = !kv.state<?x8x32xf32, base = 2>
func.func @prefill_f32_unequal_dims(%q: memref<?x8x64xf32>, %qo: memref<?xi32>, %k: memref<?x16x2x64xf32>, %v: memref<?x16x2x32xf32>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>, %o: memref<?x8x32xf32>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%k, %v : memref<?x16x2x64xf32>, memref<?x16x2x32xf32>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !c
  // expected-error @below {{'kv.prefill' op has no GPU kernel: an f32 prefill (on the decode kernel) needs head_dim == head_dim_v}}
  %s = kv.prefill %q, %qo, %kv {causal} : memref<?x8x64xf32>, memref<?xi32>, !c -> !s
  kv.store_state %s, %o, %l : !s, memref<?x8x32xf32>, memref<?x8xf32>
  return
}

// -----

!r = !kv.ragged<kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f32>
!s = !kv.state<?x8x64xf32, base = 2>
func.func @prefill_f32_ragged(%q: memref<?x8x64xf32>, %qo: memref<?xi32>, %k: memref<?x2x64xf32>, %v: memref<?x2x64xf32>, %ki: memref<?xi32>, %o: memref<?x8x64xf32>, %l: memref<?x8xf32>) {
  %kv = kv.ragged_view %k, %v, %ki : memref<?x2x64xf32>, memref<?x2x64xf32>, memref<?xi32> -> !r
  // expected-error @below {{'kv.prefill' op has no GPU kernel: ragged KV of type f32 has no prefill kernel (f16 and bf16 do: mma.sync; paged f32 KV runs on the decode kernel)}}
  %s = kv.prefill %q, %qo, %kv {causal} : memref<?x8x64xf32>, memref<?xi32>, !r -> !s
  kv.store_state %s, %o, %l : !s, memref<?x8x64xf32>, memref<?x8xf32>
  return
}

// -----

!c = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr, quant = int8_group, quant_group = 64>
!s = !kv.state<?x8x64xf16, base = 2>
func.func @prefill_int8_one_scale_per_row(%q: memref<?x8x64xf16>, %qo: memref<?xi32>, %pool: memref<?x2x16x2x64xi8>, %scales: memref<?x2x16x2x1xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>, %o: memref<?x8x64xf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x2x64xi8>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) scales(%scales : memref<?x2x16x2x1xf16>) : !c
  // expected-error @below {{'kv.prefill' op has no GPU kernel: int8 scale rows of 1 / 1 scales not contiguous in chunks of at least 4 bytes (the prefill kernel copies scales with cp.async)}}
  %s = kv.prefill %q, %qo, %kv {causal} : memref<?x8x64xf16>, memref<?xi32>, !c -> !s
  kv.store_state %s, %o, %l : !s, memref<?x8x64xf16>, memref<?x8xf32>
  return
}

// -----

!c = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x64xf16, base = 2>
func.func @prefill_rope(%q: memref<?x8x64xf16>, %qo: memref<?xi32>, %pool: memref<?x2x16x2x64xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>, %o: memref<?x8x64xf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x2x64xf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !c
  // expected-error @below {{'kv.prefill' op has no GPU kernel: rotate-half RoPE over 40 rotary dims: the tensor-core kernels rotate 16-byte chunks of 8 dims in place, so the rotated dims (each half, for rotate-half) must be whole chunks}}
  %s = kv.prefill %q, %qo, %kv {causal, rope = #kv.rope<rotate_half, rotary_dim = 40>} : memref<?x8x64xf16>, memref<?xi32>, !c -> !s
  kv.store_state %s, %o, %l : !s, memref<?x8x64xf16>, memref<?x8xf32>
  return
}

// -----

!c = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 72, head_dim_v = 72, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x72xf16, base = 2>
func.func @prefill_d72(%q: memref<?x8x72xf16>, %qo: memref<?xi32>, %pool: memref<?x2x16x2x72xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>, %o: memref<?x8x72xf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x2x72xf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !c
  // expected-error @below {{'kv.prefill' op has no GPU kernel: no prefill configuration: head dims 72 and 72 must be multiples of 16 (the k and n of mma m16n8k16)}}
  %s = kv.prefill %q, %qo, %kv {causal} : memref<?x8x72xf16>, memref<?xi32>, !c -> !s
  kv.store_state %s, %o, %l : !s, memref<?x8x72xf16>, memref<?x8xf32>
  return
}

// -----

// Value dims over 256 are split over warps in slices of 128: 320 is not.
!c = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 320, head_dim_v = 320, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x320xf16, base = 2>
func.func @prefill_d320(%q: memref<?x8x320xf16>, %qo: memref<?xi32>, %pool: memref<?x2x16x2x320xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>, %o: memref<?x8x320xf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x2x320xf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !c
  // expected-error @below {{'kv.prefill' op has no GPU kernel: no prefill configuration for head dims 320 / 320: over 256, the value dim must be a multiple of 128 (warps split it in slices of 128) and both at most 1024}}
  %s = kv.prefill %q, %qo, %kv {causal} : memref<?x8x320xf16>, memref<?xi32>, !c -> !s
  kv.store_state %s, %o, %l : !s, memref<?x8x320xf16>, memref<?x8xf32>
  return
}

// -----

!c = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x64xf16, base = 2>
func.func @prefill_strided_pool(%q: memref<?x8x64xf16>, %qo: memref<?xi32>, %pool: memref<?x2x16x2x64xf16, strided<[4096, 2048, 128, 64, 2]>>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>, %o: memref<?x8x64xf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x2x64xf16, strided<[4096, 2048, 128, 64, 2]>>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !c
  // expected-error @below {{'kv.prefill' op has no GPU kernel: pool memref<?x2x16x2x64xf16, strided<[4096, 2048, 128, 64, 2]>> has a non-unit innermost stride}}
  %s = kv.prefill %q, %qo, %kv {causal} : memref<?x8x64xf16>, memref<?xi32>, !c -> !s
  kv.store_state %s, %o, %l : !s, memref<?x8x64xf16>, memref<?x8xf32>
  return
}

// -----

// A configuration given by hand is lowered as it is, or rejected.
!c = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 256, head_dim_v = 256, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x256xf16, base = 2>
func.func @prefill_config_too_big(%q: memref<?x8x256xf16>, %qo: memref<?xi32>, %pool: memref<?x2x16x2x256xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>, %o: memref<?x8x256xf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x2x256xf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !c
  // expected-error @below {{'kv.prefill' op has no GPU kernel: 393384 bytes of shared memory, over the 232448 a block of sm_90a may use}}
  %s = kv.prefill %q, %qo, %kv {causal, kvgpu.config = #kvgpu.prefill<q_tile = 256, kv_tile = 128, warps = 8, stages = 2, q_in_registers = false, max_partitions = 16>} : memref<?x8x256xf16>, memref<?xi32>, !c -> !s
  kv.store_state %s, %o, %l : !s, memref<?x8x256xf16>, memref<?x8xf32>
  return
}

// -----

// vLLM's V pool [blocks, heads, head_dim, block] at page size 1: the
// prefill kernel's transposed V staging needs chunks of at least 4 bytes.
!c = !kv.paged<page_size = 1, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = vllm, storage = split, table = block_table>
!s = !kv.state<?x4x64xf16, base = 2>
func.func @prefill_vllm_page_of_one_slot(%q: memref<?x4x64xf16>, %qo: memref<?xi32>, %k: memref<?x2x8x1x8xf16>, %v: memref<?x2x64x1xf16>, %bt: memref<?x?xi32>, %lens: memref<?xi32>, %o: memref<?x4x64xf16>, %l: memref<?x4xf32>) {
  %kv = kv.paged_view pools(%k, %v : memref<?x2x8x1x8xf16>, memref<?x2x64x1xf16>) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) : !c
  // expected-error @below {{has no GPU kernel: a V pool whose slots are its innermost axis (vLLM's layout) at page size 1: the prefill kernel stages V transposed in chunks of at least 4 bytes of consecutive slots within a page}}
  %s = kv.prefill %q, %qo, %kv : memref<?x4x64xf16>, memref<?xi32>, !c -> !s
  kv.store_state %s, %o, %l : !s, memref<?x4x64xf16>, memref<?x4xf32>
  return
}

// -----

// int8 groups with a V map whose innermost index is the slot (vLLM's V
// layout as affine maps; the vllm preset refuses int8 in the dialect).
!c = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = affine, storage = split, table = block_table, quant = int8_group, quant_group = 8, k_map = (d0, d1, d2, d3, d4) -> (d0, d3, d2, d4), v_map = (d0, d1, d2, d3, d4) -> (d0, d3, d4, d2)>
!s = !kv.state<?x4x64xf16, base = 2>
func.func @prefill_transposed_v_int8(%q: memref<?x4x64xf16>, %qo: memref<?xi32>, %k: memref<?x2x16x64xi8>, %v: memref<?x2x64x16xi8>, %bt: memref<?x?xi32>, %lens: memref<?xi32>, %ks: memref<?x2x16x8xf16>, %vs: memref<?x2x8x16xf16>, %o: memref<?x4x64xf16>, %l: memref<?x4xf32>) {
  %kv = kv.paged_view pools(%k, %v : memref<?x2x16x64xi8>, memref<?x2x64x16xi8>) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) scales(%ks, %vs : memref<?x2x16x8xf16>, memref<?x2x8x16xf16>) : !c
  // expected-error @below {{has no GPU kernel: int8 groups with a V pool whose slots are its innermost axis (vLLM's layout) have no prefill kernel}}
  %s = kv.prefill %q, %qo, %kv : memref<?x4x64xf16>, memref<?xi32>, !c -> !s
  kv.store_state %s, %o, %l : !s, memref<?x4x64xf16>, memref<?x4xf32>
  return
}

// -----

// Ragged K whose rows are not 16-byte aligned.
!r = !kv.ragged<kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16>
!s = !kv.state<?x4x64xf16, base = 2>
func.func @prefill_ragged_unaligned(%q: memref<?x4x64xf16>, %qo: memref<?xi32>, %k: memref<?x2x64xf16, strided<[130, 65, 1]>>, %v: memref<?x2x64xf16>, %ki: memref<?xi32>, %o: memref<?x4x64xf16>, %l: memref<?x4xf32>) {
  %kv = kv.ragged_view %k, %v, %ki : memref<?x2x64xf16, strided<[130, 65, 1]>>, memref<?x2x64xf16>, memref<?xi32> -> !r
  // expected-error @below {{has no GPU kernel: k memref<?x2x64xf16, strided<[130, 65, 1]>> has rows that are not 16-byte aligned (cp.async and the output stores move 16-byte chunks)}}
  %s = kv.prefill %q, %qo, %kv : memref<?x4x64xf16>, memref<?xi32>, !r -> !s
  kv.store_state %s, %o, %l : !s, memref<?x4x64xf16>, memref<?x4xf32>
  return
}

// -----

// The kv.store_state destination: output rows that are not 16-byte aligned.
!r = !kv.ragged<kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16>
!s = !kv.state<?x4x64xf16, base = 2>
func.func @prefill_unaligned_output(%q: memref<?x4x64xf16>, %qo: memref<?xi32>, %k: memref<?x2x64xf16>, %v: memref<?x2x64xf16>, %ki: memref<?xi32>, %o: memref<?x4x64xf16, strided<[260, 65, 1]>>, %l: memref<?x4xf32>) {
  %kv = kv.ragged_view %k, %v, %ki : memref<?x2x64xf16>, memref<?x2x64xf16>, memref<?xi32> -> !r
  // expected-error @below {{has no GPU kernel: output memref<?x4x64xf16, strided<[260, 65, 1]>> has rows that are not 16-byte aligned (cp.async and the output stores move 16-byte chunks)}}
  %s = kv.prefill %q, %qo, %kv : memref<?x4x64xf16>, memref<?xi32>, !r -> !s
  kv.store_state %s, %o, %l : !s, memref<?x4x64xf16, strided<[260, 65, 1]>>, memref<?x4xf32>
  return
}

// -----

!s = !kv.state<?x4x64xf16, base = 2>
func.func @merge_kept_as_value(%o0: memref<?x4x64xf16>, %l0: memref<?x4xf32>, %o1: memref<?x4x64xf16>, %l1: memref<?x4xf32>) -> !s {
  %a = kv.load_state %o0, %l0 : memref<?x4x64xf16>, memref<?x4xf32> -> !s
  %b = kv.load_state %o1, %l1 : memref<?x4x64xf16>, memref<?x4xf32> -> !s
  // expected-error @below {{'kv.merge' op has no GPU kernel: its state is not stored by a kv.store_state (its only user)}}
  %m = kv.merge %a, %b : !s, !s -> !s
  return %m : !s
}

// -----

!s = !kv.state<?x4x64xf16, base = 2>
func.func @merge_without_lse(%o0: memref<?x4x64xf16>, %l0: memref<?x4xf32>, %o1: memref<?x4x64xf16>, %l1: memref<?x4xf32>, %o: memref<?x4x64xf16>) {
  %a = kv.load_state %o0, %l0 : memref<?x4x64xf16>, memref<?x4xf32> -> !s
  %b = kv.load_state %o1, %l1 : memref<?x4x64xf16>, memref<?x4xf32> -> !s
  // expected-error @below {{'kv.merge' op has no GPU kernel: its kv.store_state keeps no LSE buffer}}
  %m = kv.merge %a, %b : !s, !s -> !s
  kv.store_state %m, %o : !s, memref<?x4x64xf16>
  return
}

// -----

// The merge kernel runs a thread per value dim: 1025 is past a block's
// 1024 (the kernel is refused before a plan is built; it asserted once).
!p = !kv.state<?x32x1025xf16, base = e, partitions = ?>
!s = !kv.state<?x32x1025xf16, base = e>
func.func @merge_wide_values(%v: memref<?x?x32x1025xf16>, %l: memref<?x?x32xf32>, %o: memref<?x32x1025xf16>, %lo: memref<?x32xf32>) {
  %p = kv.load_state %v, %l : memref<?x?x32x1025xf16>, memref<?x?x32xf32> -> !p
  // expected-error @below {{'kv.merge_partitions' op has no GPU kernel: head_dim_v 1025 needs more than 1024 threads}}
  %m = kv.merge_partitions %p : !p -> !s
  kv.store_state %m, %o, %lo : !s, memref<?x32x1025xf16>, memref<?x32xf32>
  return
}

// -----

!s = !kv.state<?x4x64xf16, base = 2>
func.func @merge_of_computed(%o0: memref<?x4x64xf16>, %l0: memref<?x4xf32>, %n: index, %o: memref<?x4x64xf16>, %l: memref<?x4xf32>) {
  %a = kv.load_state %o0, %l0 : memref<?x4x64xf16>, memref<?x4xf32> -> !s
  // expected-error @below {{'kv.empty_state' op has no GPU kernel: kv.empty_state has no GPU kernel yet}}
  %e = kv.empty_state %n : !s
  // expected-error @below {{'kv.merge' op has no GPU kernel: an input state is not in buffers (a kv.load_state)}}
  %m = kv.merge %a, %e : !s, !s -> !s
  kv.store_state %m, %o, %l : !s, memref<?x4x64xf16>, memref<?x4xf32>
  return
}

// -----

!s = !kv.state<?x4x64xf16, base = 2>
func.func @merge_mixed_buffers(%o0: memref<?x4x64xf16>, %l0: memref<?x4xf32>, %o1: memref<8x4x64xf16>, %l1: memref<8x4xf32>, %o: memref<?x4x64xf16>, %l: memref<?x4xf32>) {
  %a = kv.load_state %o0, %l0 : memref<?x4x64xf16>, memref<?x4xf32> -> !s
  %b = kv.load_state %o1, %l1 : memref<8x4x64xf16>, memref<8x4xf32> -> !s
  // expected-error @below {{'kv.merge' op has no GPU kernel: its input buffers have different types}}
  %m = kv.merge %a, %b : !s, !s -> !s
  kv.store_state %m, %o, %l : !s, memref<?x4x64xf16>, memref<?x4xf32>
  return
}

// -----

!s2 = !kv.state<?x4x64xf16, base = 2>
!se = !kv.state<?x4x64xf16, base = e>
func.func @rebase(%o0: memref<?x4x64xf16>, %l0: memref<?x4xf32>, %o: memref<?x4x64xf16>, %l: memref<?x4xf32>) {
  %a = kv.load_state %o0, %l0 : memref<?x4x64xf16>, memref<?x4xf32> -> !s2
  // expected-error @below {{'kv.rebase' op has no GPU kernel: kv.rebase has no GPU kernel yet}}
  %r = kv.rebase %a : !s2 -> !se
  kv.store_state %r, %o, %l : !se, memref<?x4x64xf16>, memref<?x4xf32>
  return
}

// -----

!s = !kv.state<?x4x64xf16, base = 2>
func.func @copy(%o0: memref<?x4x64xf16>, %l0: memref<?x4xf32>, %o: memref<?x4x64xf16>, %l: memref<?x4xf32>) {
  %a = kv.load_state %o0, %l0 : memref<?x4x64xf16>, memref<?x4xf32> -> !s
  // expected-error @below {{'kv.store_state' op has no GPU kernel: it copies a state between buffers, which has no kernel}}
  kv.store_state %a, %o, %l : !s, memref<?x4x64xf16>, memref<?x4xf32>
  return
}

// -----

!c = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x64xf16, base = 2>
func.func @cascade(%q: memref<?x8x64xf16>, %qo0: memref<?xi32>, %qo1: memref<?xi32>, %pool: memref<?x2x16x2x64xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>, %o: memref<?x8x64xf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x2x64xf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !c
  // expected-error @below {{'kv.cascade' op has no GPU kernel: kv.cascade is lowered per level: run kv-expand-cascade first}}
  %s = kv.cascade %q levels(%qo0, %qo1 : memref<?xi32>, memref<?xi32>) kvs(%kv, %kv : !c, !c) : memref<?x8x64xf16> -> !s
  kv.store_state %s, %o, %l : !s, memref<?x8x64xf16>, memref<?x8xf32>
  return
}

// -----

!c = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 32, head_dim_v = 32, dtype = f16, layout = nhd, storage = combined, table = csr, quant = int8_group, quant_group = 32>
func.func @append_int8_group_across_rotated_halves(%k: memref<?x2x32xf16>, %v: memref<?x2x32xf16>, %bi: memref<?xi32>, %pos: memref<?xi32>, %pool: memref<?x2x16x2x32xi8>, %scales: memref<?x2x16x2x1xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x2x32xi8>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) scales(%scales : memref<?x2x16x2x1xf16>) : !c
  // expected-error @below {{'kv.append' op has no GPU kernel: int8 groups of 32 dims are wider than the half of head_dim 32 that rotate-half RoPE pairs with the other: the append kernel quantizes each half's groups on their own}}
  kv.append %k, %v, %bi, %pos into %kv {rope = #kv.rope<rotate_half, theta = 1.0e4>} : memref<?x2x32xf16>, memref<?x2x32xf16>, memref<?xi32>, memref<?xi32>, !c
  return
}

// -----

// A partial rotary whose boundary falls inside an int8 group: each group
// is quantized whole, by one thread.
!c = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr, quant = int8_group, quant_group = 16>
func.func @append_rotary_inside_int8_group(%k: memref<?x2x64xf16>, %v: memref<?x2x64xf16>, %bi: memref<?xi32>, %pos: memref<?xi32>, %pool: memref<?x2x16x2x64xi8>, %scales: memref<?x2x16x2x4xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x2x64xi8>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) scales(%scales : memref<?x2x16x2x4xf16>) : !c
  // expected-error @below {{'kv.append' op has no GPU kernel: rope rotary_dim 40 splits the append kernel's chunks of 16 dims (int8 groups of 16 are quantized whole)}}
  kv.append %k, %v, %bi, %pos into %kv {rope = #kv.rope<interleave, rotary_dim = 40>} : memref<?x2x64xf16>, memref<?x2x64xf16>, memref<?xi32>, memref<?xi32>, !c
  return
}

// -----

!c = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
func.func @append_strided_input(%k: memref<?x2x64xf16, strided<[256, 128, 2]>>, %v: memref<?x2x64xf16>, %bi: memref<?xi32>, %pos: memref<?xi32>, %pool: memref<?x2x16x2x64xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x2x64xf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !c
  // expected-error @below {{'kv.append' op has no GPU kernel: input memref<?x2x64xf16, strided<[256, 128, 2]>> has a non-unit innermost stride}}
  kv.append %k, %v, %bi, %pos into %kv : memref<?x2x64xf16, strided<[256, 128, 2]>>, memref<?x2x64xf16>, memref<?xi32>, memref<?xi32>, !c
  return
}

// -----

// MLA kernels read 16-bit ckv / kpe rows with 16-byte copies: fp8 caches
// have none yet, f32 ones none, and pool slices whose strides are dynamic
// are not known to be contiguous.
!m = !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f16, layout = nhd, storage = mla, table = csr, pe_dim = 64, quant = fp8_e4m3>
!s = !kv.state<?x16x512xf16, base = e>
func.func @mla_fp8(%qn: memref<?x16x512xf16>, %qp: memref<?x16x64xf16>, %ckv: memref<?x64x512xf8E4M3FN>, %kpe: memref<?x64x64xf8E4M3FN>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>, %ks: f32, %vs: f32, %o: memref<?x16x512xf16>, %l: memref<?x16xf32>) {
  %kv = kv.paged_view pools(%ckv, %kpe : memref<?x64x512xf8E4M3FN>, memref<?x64x64xf8E4M3FN>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) fp8_scales(%ks, %vs) : !m
  // expected-error @below {{'kv.mla_decode' op has no GPU kernel: quantized MLA caches (fp8_e4m3) have no kernel yet}}
  %s = kv.mla_decode %qn, %qp, %kv : memref<?x16x512xf16>, memref<?x16x64xf16>, !m -> !s
  kv.store_state %s, %o, %l : !s, memref<?x16x512xf16>, memref<?x16xf32>
  return
}

// -----

!m = !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f32, layout = nhd, storage = mla, table = csr, pe_dim = 64>
!s = !kv.state<?x16x512xf32, base = e>
func.func @mla_f32(%qn: memref<?x16x512xf32>, %qp: memref<?x16x64xf32>, %ckv: memref<?x64x512xf32>, %kpe: memref<?x64x64xf32>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>, %qo: memref<?xi32>, %o: memref<?x16x512xf32>, %l: memref<?x16xf32>) {
  %kv = kv.paged_view pools(%ckv, %kpe : memref<?x64x512xf32>, memref<?x64x64xf32>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !m
  // expected-error @below {{'kv.mla_decode' op has no GPU kernel: MLA caches of type f32 have no kernel (f16 and bf16 do: mma.sync)}}
  %s = kv.mla_decode %qn, %qp, %kv rows(%qo : memref<?xi32>) {causal} : memref<?x16x512xf32>, memref<?x16x64xf32>, !m -> !s
  kv.store_state %s, %o, %l : !s, memref<?x16x512xf32>, memref<?x16xf32>
  return
}

// -----

!m = !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = bf16, layout = nhd, storage = mla, table = csr, pe_dim = 64>
!s = !kv.state<?x16x512xbf16, base = e>
!ckv = memref<?x64x512xbf16, strided<[?, ?, ?], offset: ?>>
!kpe = memref<?x64x64xbf16, strided<[?, ?, ?], offset: ?>>
func.func @mla_dynamic_slices(%qn: memref<?x16x512xbf16>, %qp: memref<?x16x64xbf16>, %ckv: !ckv, %kpe: !kpe, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>, %o: memref<?x16x512xbf16>, %l: memref<?x16xf32>) {
  %kv = kv.paged_view pools(%ckv, %kpe : !ckv, !kpe) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !m
  // expected-error @below {{'kv.mla_decode' op has no GPU kernel: pool memref<?x64x512xbf16, strided<[?, ?, ?], offset: ?>> has a non-unit innermost stride}}
  %s = kv.mla_decode %qn, %qp, %kv : memref<?x16x512xbf16>, memref<?x16x64xbf16>, !m -> !s
  kv.store_state %s, %o, %l : !s, memref<?x16x512xbf16>, memref<?x16xf32>
  return
}

// -----

// A configuration given by hand for head dims that are not whole mma tiles.
!c = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 72, head_dim_v = 72, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x72xf16, base = 2>
func.func @prefill_config_d72(%q: memref<?x8x72xf16>, %qo: memref<?xi32>, %pool: memref<?x2x16x2x72xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>, %o: memref<?x8x72xf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x2x72xf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !c
  // expected-error @below {{'kv.prefill' op has no GPU kernel: head dims 72 / 72 split over 1 value warps are not whole mma tiles of 16}}
  %s = kv.prefill %q, %qo, %kv {kvgpu.config = #kvgpu.prefill<q_tile = 64, kv_tile = 32, warps = 4, stages = 2, q_in_registers = false, max_partitions = 16>} : memref<?x8x72xf16>, memref<?xi32>, !c -> !s
  kv.store_state %s, %o, %l : !s, memref<?x8x72xf16>, memref<?x8xf32>
  return
}

// -----

// A decode given a tensor-core configuration for head dims that are not
// whole mma tiles.
!c = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 72, head_dim_v = 72, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x72xf16, base = 2>
func.func @decode_tensor_core_d72(%q: memref<?x8x72xf16>, %pool: memref<?x2x16x2x72xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>, %o: memref<?x8x72xf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x2x72xf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !c
  // expected-error @below {{'kv.decode' op has no GPU kernel: on tensor cores (head dim 72): head dims 72 / 72 split over 1 value warps are not whole mma tiles of 16}}
  %s = kv.decode %q, %kv {kvgpu.config = #kvgpu.prefill<q_tile = 16, kv_tile = 32, warps = 1, stages = 2, q_in_registers = false, max_partitions = 16>} : memref<?x8x72xf16>, !c -> !s
  kv.store_state %s, %o, %l : !s, memref<?x8x72xf16>, memref<?x8xf32>
  return
}

// -----

// Cascade positions read the levels' tables through their views.
!c = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
func.func @cascade_positions_kv_argument(%qi: memref<?xi32>, %kv: !c, %p: memref<?xi32>) {
  // expected-error @below {{'kv.cascade_positions' op has no GPU kernel: a level's KV is not a kv.paged_view of the same function}}
  kv.cascade_positions levels(%qi : memref<?xi32>) kvs(%kv : !c) into %p : memref<?xi32>
  return
}

// -----

// The tensor-core decode (head_dim != head_dim_v) rotates 16-byte chunks.
!c = !kv.paged<page_size = 16, kv_heads = 1, head_dim = 192, head_dim_v = 128, dtype = f16, layout = nhd, storage = split, table = csr>
!s = !kv.state<?x8x128xf16, base = e>
func.func @tensor_core_decode_rope(%q: memref<?x8x192xf16>, %k: memref<?x16x1x192xf16>, %v: memref<?x16x1x128xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>, %o: memref<?x8x128xf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%k, %v : memref<?x16x1x192xf16>, memref<?x16x1x128xf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !c
  // expected-error @below {{'kv.decode' op has no GPU kernel: on tensor cores (head_dim != head_dim_v): rotate-half RoPE over 40 rotary dims: the tensor-core kernels rotate 16-byte chunks of 8 dims in place, so the rotated dims (each half, for rotate-half) must be whole chunks}}
  %s = kv.decode %q, %kv {rope = #kv.rope<rotate_half, rotary_dim = 40>} : memref<?x8x192xf16>, !c -> !s
  kv.store_state %s, %o, %l : !s, memref<?x8x128xf16>, memref<?x8xf32>
  return
}

// -----

// A given one-warp config over a head dim of 512: 64 interleaved 16-byte
// units per row, more than the block's threads.
!c = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 512, head_dim_v = 512, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x4x512xf16, base = 2>
func.func @prefill_rope_units_past_threads(%q: memref<?x4x512xf16>, %qo: memref<?xi32>, %pool: memref<?x2x16x2x512xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>, %o: memref<?x4x512xf16>, %l: memref<?x4xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x2x512xf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !c
  // expected-error @below {{'kv.prefill' op has no GPU kernel: interleaved RoPE over 512 rotary dims in a block of 32 threads: the tensor-core kernels give each thread one of a row's 64 16-byte units (more warps would do)}}
  %s = kv.prefill %q, %qo, %kv {rope = #kv.rope<interleave>, kvgpu.config = #kvgpu.prefill<q_tile = 16, kv_tile = 16, warps = 1, stages = 2, q_in_registers = false, max_partitions = 32>} : memref<?x4x512xf16>, memref<?xi32>, !c -> !s
  kv.store_state %s, %o, %l : !s, memref<?x4x512xf16>, memref<?x4xf32>
  return
}
