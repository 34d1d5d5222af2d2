// RUN: kvir-opt %s --kv-tile="chip=sm_90a explain=true" -split-input-file -verify-diagnostics
// RUN: kvir-opt %s --kv-tile="chip=sm_90a mma=mma_sync explain=true" -split-input-file 2>&1 >/dev/null | FileCheck %s --check-prefix=SYNC
// RUN: kvir-opt %s --kv-tile="chip=sm_80 explain=true" -split-input-file 2>&1 >/dev/null | FileCheck %s --check-prefix=A100

// kv-tile's `explain`: each op's configuration as a remark, and where sm_90a
// has wgmma but an op stays on mma.sync, why. mma=mma_sync keeps every op
// there; sm_80 has no wgmma to explain.

// SYNC: remark: kv-tile: #kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, stages = 2, q_in_registers = true, max_partitions = 16>; mma.sync, as mma=mma_sync asks
// A100: remark: kv-tile: #kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, stages = 2, q_in_registers = true, max_partitions = 16>{{$}}
func.func @wgmma(%q: memref<?x32x128xbf16>, %qo: memref<?xi32>, %pool: memref<?x2x16x8x128xbf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>) -> !kv.state<?x32x128xbf16, base = 2> {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x8x128xbf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = bf16, layout = nhd, storage = combined, table = csr>
  // expected-remark @below {{kv-tile: #kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, stages = 3, q_in_registers = false, max_partitions = 16, mma = wgmma, schedule = overlap, roles = producer, copy = tma>}}
  %s = kv.prefill %q, %qo, %kv {causal} : memref<?x32x128xbf16>, memref<?xi32>, !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = bf16, layout = nhd, storage = combined, table = csr> -> !kv.state<?x32x128xbf16, base = 2>
  return %s : !kv.state<?x32x128xbf16, base = 2>
}

// -----

// A producer over ragged K/V copies by TMA; over a strided K (a view whose
// rows are not those of a row-major buffer), over vLLM's pools, over pages
// of 4 tokens (not a swizzle atom of rows) by cp.async, and why.
// SYNC: remark: kv-tile: #kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, stages = 2, q_in_registers = true, max_partitions = 16>; mma.sync, as mma=mma_sync asks
!r128 = !kv.ragged<kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f16>
func.func @ragged_tma(%q: memref<?x8x128xf16>, %qo: memref<?xi32>, %k: memref<?x2x128xf16>, %v: memref<?x2x128xf16>, %ki: memref<?xi32>, %ks: memref<?x2x128xf16, strided<[512, 128, 1]>>) {
  %kv = kv.ragged_view %k, %v, %ki : memref<?x2x128xf16>, memref<?x2x128xf16>, memref<?xi32> -> !r128
  // expected-remark @below {{kv-tile: #kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, stages = 3, q_in_registers = false, max_partitions = 16, mma = wgmma, schedule = overlap, roles = producer, copy = tma>}}
  %s = kv.prefill %q, %qo, %kv {causal} : memref<?x8x128xf16>, memref<?xi32>, !r128 -> !kv.state<?x8x128xf16, base = 2>
  %kvs = kv.ragged_view %ks, %v, %ki : memref<?x2x128xf16, strided<[512, 128, 1]>>, memref<?x2x128xf16>, memref<?xi32> -> !r128
  // expected-remark @below {{roles = producer>; cp.async, not TMA: a tensor map spans a row-major buffer with static inner dims, not memref<?x2x128xf16, strided<[512, 128, 1]>>}}
  %ss = kv.prefill %q, %qo, %kvs {causal} : memref<?x8x128xf16>, memref<?xi32>, !r128 -> !kv.state<?x8x128xf16, base = 2>
  return
}

// -----

!vllm = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f16, layout = vllm, storage = split, table = block_table>
!p4 = !kv.paged<page_size = 4, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr>
func.func @paged_cp_async(%q: memref<?x8x128xf16>, %qo: memref<?xi32>, %kc: memref<?x2x16x16x8xf16>, %vc: memref<?x2x128x16xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %p4: memref<?x2x4x2x128xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>) {
  %kv = kv.paged_view pools(%kc, %vc : memref<?x2x16x16x8xf16>, memref<?x2x128x16xf16>) tables(%bt, %sl : memref<?x?xi32>, memref<?xi32>) : !vllm
  // expected-remark @below {{roles = producer>; cp.async, not TMA: the vllm layout's pages are not boxes (the head dim innermost, the slots one axis)}}
  %s = kv.prefill %q, %qo, %kv {causal} : memref<?x8x128xf16>, memref<?xi32>, !vllm -> !kv.state<?x8x128xf16, base = 2>
  %kv4 = kv.paged_view pools(%p4 : memref<?x2x4x2x128xf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !p4
  // expected-remark @below {{roles = producer>; cp.async, not TMA: pages of 4 tokens are not whole boxes of a 64-key tile in the 128-byte swizzle (a multiple of 8 that divides the tile)}}
  %s4 = kv.prefill %q, %qo, %kv4 {causal} : memref<?x8x128xf16>, memref<?xi32>, !p4 -> !kv.state<?x8x128xf16, base = 2>
  return
}

// -----

// RoPE under a producer warpgroup: it rotates each K tile before handing it
// over, so the tiles come by cp.async.
!p128 = !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = bf16, layout = nhd, storage = combined, table = csr>
func.func @producer_rope(%q: memref<?x32x128xbf16>, %qo: memref<?xi32>, %pool: memref<?x2x16x8x128xbf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>) -> !kv.state<?x32x128xbf16, base = 2> {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x8x128xbf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !p128
  // expected-remark @below {{mma = wgmma, schedule = overlap, roles = producer>; cp.async, not TMA: RoPE rotates each K tile after it lands: the producer copies it by cp.async, rotates it, then hands it over}}
  %s = kv.prefill %q, %qo, %kv {causal, rope = #kv.rope<rotate_half>} : memref<?x32x128xbf16>, memref<?xi32>, !p128 -> !kv.state<?x32x128xbf16, base = 2>
  return %s : !kv.state<?x32x128xbf16, base = 2>
}

// -----

!p64 = !kv.paged<page_size = 16, kv_heads = 8, head_dim = 64, head_dim_v = 64, dtype = bf16, layout = nhd, storage = combined, table = csr>
func.func @uniform_d64(%q: memref<?x32x64xbf16>, %qo: memref<?xi32>, %pool: memref<?x2x16x8x64xbf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>) -> !kv.state<?x32x64xbf16, base = 2> {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x8x64xbf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !p64
  // expected-remark @below {{mma = wgmma>; no producer warpgroup: up to head dim 64 the serial kernel keeps two blocks per SM}}
  %s = kv.prefill %q, %qo, %kv {causal} : memref<?x32x64xbf16>, memref<?xi32>, !p64 -> !kv.state<?x32x64xbf16, base = 2>
  return %s : !kv.state<?x32x64xbf16, base = 2>
}

// -----

// Head dim 96 is no whole number of the 128-byte swizzle's 64-element
// blocks.
func.func @d96(%q: memref<?x4x96xf16>, %qo: memref<?xi32>, %k: memref<?x2x96xf16>, %v: memref<?x2x96xf16>, %ki: memref<?xi32>) -> !kv.state<?x4x96xf16, base = e> {
  %kv = kv.ragged_view %k, %v, %ki : memref<?x2x96xf16>, memref<?x2x96xf16>, memref<?xi32> -> !kv.ragged<kv_heads = 2, head_dim = 96, head_dim_v = 96, dtype = f16>
  // expected-remark @below {{mma.sync, not wgmma: head dims 96 / 96 are not whole 64-element blocks of the 128-byte swizzle}}
  %s = kv.prefill %q, %qo, %kv : memref<?x4x96xf16>, memref<?xi32>, !kv.ragged<kv_heads = 2, head_dim = 96, head_dim_v = 96, dtype = f16> -> !kv.state<?x4x96xf16, base = e>
  return %s : !kv.state<?x4x96xf16, base = e>
}

// -----

// Values wider than one wgmma's 256 columns.
func.func @dv512(%q: memref<?x4x64xbf16>, %qo: memref<?xi32>, %k: memref<?x2x64xbf16>, %v: memref<?x2x512xbf16>, %ki: memref<?xi32>) -> !kv.state<?x4x512xbf16, base = e> {
  %kv = kv.ragged_view %k, %v, %ki : memref<?x2x64xbf16>, memref<?x2x512xbf16>, memref<?xi32> -> !kv.ragged<kv_heads = 2, head_dim = 64, head_dim_v = 512, dtype = bf16>
  // expected-remark @below {{mma.sync, not wgmma: a value slice of 512 columns is wider than one wgmma's 256}}
  %s = kv.prefill %q, %qo, %kv : memref<?x4x64xbf16>, memref<?xi32>, !kv.ragged<kv_heads = 2, head_dim = 64, head_dim_v = 512, dtype = bf16> -> !kv.state<?x4x512xbf16, base = e>
  return %s : !kv.state<?x4x512xbf16, base = e>
}

// -----

// MLA of 16 heads, one query row each: a 16-row tile, which wgmma would
// pad to 64.
!m = !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = bf16, layout = nhd, storage = mla, table = csr, pe_dim = 64>
func.func @mla(%qn: memref<?x16x512xbf16>, %qp: memref<?x16x64xbf16>, %ckv: memref<?x64x512xbf16>, %kpe: memref<?x64x64xbf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>) -> !kv.state<?x16x512xbf16, base = e> {
  %kv = kv.paged_view pools(%ckv, %kpe : memref<?x64x512xbf16>, memref<?x64x64xbf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !m
  // expected-remark @below {{mma.sync, not wgmma: a query tile of 16 rows (the request's heads) would leave most of wgmma's 64 rows padding}}
  %s = kv.mla_decode %qn, %qp, %kv : memref<?x16x512xbf16>, memref<?x16x64xbf16>, !m -> !kv.state<?x16x512xbf16, base = e>
  return %s : !kv.state<?x16x512xbf16, base = e>
}

// -----

// A decode's GQA group of 8 takes the tensor-core kernel: on sm_90a one
// wgmma warpgroup, the group's 8 rows padded to its 64 (memory-bound).
// Head dim 80 is not whole 128-byte swizzle blocks: mma.sync, and why.
// SYNC: remark: kv-tile: #kvgpu.prefill<q_tile = 16, kv_tile = 32, warps = 1, stages = 2, q_in_registers = false, max_partitions = 32>; mma.sync, as mma=mma_sync asks
!g8 = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = bf16, layout = nhd, storage = combined, table = csr>
!g8d80 = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 80, head_dim_v = 80, dtype = bf16, layout = nhd, storage = combined, table = csr>
func.func @decode_group8(%q: memref<?x16x128xbf16>, %pool: memref<?x2x16x2x128xbf16>, %q80: memref<?x16x80xbf16>, %pool80: memref<?x2x16x2x80xbf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x2x128xbf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !g8
  // expected-remark @below {{kv-tile: #kvgpu.prefill<q_tile = 64, kv_tile = 64, warps = 4, stages = 2, q_in_registers = false, max_partitions = 32, mma = wgmma>}}
  %s = kv.decode %q, %kv : memref<?x16x128xbf16>, !g8 -> !kv.state<?x16x128xbf16, base = e>
  %kv80 = kv.paged_view pools(%pool80 : memref<?x2x16x2x80xbf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !g8d80
  // expected-remark @below {{mma.sync, not wgmma: head dims 80 / 80 are not whole 64-element blocks of the 128-byte swizzle}}
  %s80 = kv.decode %q80, %kv80 : memref<?x16x80xbf16>, !g8d80 -> !kv.state<?x16x80xbf16, base = e>
  return
}

// -----

// Value dims past two warpgroups of 256 columns stay on mma.sync.
!d1024 = !kv.paged<page_size = 16, kv_heads = 1, head_dim = 1024, head_dim_v = 1024, dtype = f16, layout = nhd, storage = combined, table = csr>
func.func @decode_d1024(%q: memref<?x4x1024xf16>, %pool: memref<?x2x16x1x1024xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>) -> !kv.state<?x4x1024xf16, base = e> {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x1x1024xf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !d1024
  // expected-remark @below {{mma.sync, not wgmma: a value dim of 1024 takes more than two warpgroups of 256 columns, whose f32 accumulators pass the register file}}
  %s = kv.decode %q, %kv : memref<?x4x1024xf16>, !d1024 -> !kv.state<?x4x1024xf16, base = e>
  return %s : !kv.state<?x4x1024xf16, base = e>
}
