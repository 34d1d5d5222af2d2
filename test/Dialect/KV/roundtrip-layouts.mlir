// RUN: kvir-opt %s -split-input-file | kvir-opt -split-input-file | FileCheck %s

// kv.paged_view accepts, and round-trips, the pool and table memrefs each
// layout, storage and table form expects (docs/Semantics.md, "Paged KV").

// NHD combined: (pages, 2, page_size, H, D); CSR tables.
// CHECK-LABEL: func.func @nhd_combined_csr
// CHECK: kv.paged_view pools(%{{.*}} : memref<?x2x4x2x8xf16>) tables(%{{.*}}, %{{.*}}, %{{.*}} : memref<?xi32>, memref<?xi32>, memref<?xi32>) : <page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = nhd, storage = combined, table = csr>
func.func @nhd_combined_csr(%pool: memref<?x2x4x2x8xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x4x2x8xf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      : !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = nhd, storage = combined, table = csr>
  return
}

// -----

// NHD split with head_dim != head_dim_v: K (pages, page_size, H, D) and
// V (pages, page_size, H, Dv); block table [B, max_blocks] + seq_lens.
// CHECK-LABEL: func.func @nhd_split_block_table
// CHECK: kv.paged_view pools(%{{.*}}, %{{.*}} : memref<?x4x2x8xf32>, memref<?x4x2x16xf32>) tables(%{{.*}}, %{{.*}} : memref<?x?xi32>, memref<?xi32>) : <page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 16, dtype = f32, layout = nhd, storage = split, table = block_table>
func.func @nhd_split_block_table(%k: memref<?x4x2x8xf32>, %v: memref<?x4x2x16xf32>, %bt: memref<?x?xi32>, %lens: memref<?xi32>) {
  %kv = kv.paged_view pools(%k, %v : memref<?x4x2x8xf32>, memref<?x4x2x16xf32>) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>)
      : !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 16, dtype = f32, layout = nhd, storage = split, table = block_table>
  return
}

// -----

// HND combined: (pages, 2, H, page_size, D), static page count.
// CHECK-LABEL: func.func @hnd_combined
// CHECK: kv.paged_view pools(%{{.*}} : memref<10x2x2x4x8xbf16>) {{.*}} : <page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = bf16, layout = hnd, storage = combined, table = csr>
func.func @hnd_combined(%pool: memref<10x2x2x4x8xbf16>, %a: memref<3xi32>, %b: memref<?xi32>, %c: memref<2xi32>) {
  %kv = kv.paged_view pools(%pool : memref<10x2x2x4x8xbf16>) tables(%a, %b, %c : memref<3xi32>, memref<?xi32>, memref<2xi32>)
      : !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = bf16, layout = hnd, storage = combined, table = csr>
  return
}

// -----

// HND split: K and V (pages, H, page_size, D).
// CHECK-LABEL: func.func @hnd_split
// CHECK: kv.paged_view pools(%{{.*}}, %{{.*}} : memref<?x2x4x8xf16>, memref<?x2x4x8xf16>) {{.*}} layout = hnd, storage = split, table = csr>
func.func @hnd_split(%k: memref<?x2x4x8xf16>, %v: memref<?x2x4x8xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>) {
  %kv = kv.paged_view pools(%k, %v : memref<?x2x4x8xf16>, memref<?x2x4x8xf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      : !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = hnd, storage = split, table = csr>
  return
}

// -----

// vLLM: K [p, h, d / x, slot, x] with x = 16 bytes / 2 = 8 for f16,
// V [p, h, d, slot].
// CHECK-LABEL: func.func @vllm
// CHECK: kv.paged_view pools(%{{.*}}, %{{.*}} : memref<?x2x2x16x8xf16>, memref<?x2x16x16xf16>) tables(%{{.*}}, %{{.*}} : memref<?x?xi32>, memref<?xi32>) : <page_size = 16, kv_heads = 2, head_dim = 16, head_dim_v = 16, dtype = f16, layout = vllm, storage = split, table = block_table>
func.func @vllm(%k: memref<?x2x2x16x8xf16>, %v: memref<?x2x16x16xf16>, %bt: memref<?x?xi32>, %lens: memref<?xi32>) {
  %kv = kv.paged_view pools(%k, %v : memref<?x2x2x16x8xf16>, memref<?x2x16x16xf16>) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>)
      : !kv.paged<page_size = 16, kv_heads = 2, head_dim = 16, head_dim_v = 16, dtype = f16, layout = vllm, storage = split, table = block_table>
  return
}

// -----

// vLLM with f32: x = 4.
// CHECK-LABEL: func.func @vllm_f32
// CHECK: pools(%{{.*}}, %{{.*}} : memref<?x1x2x8x4xf32>, memref<?x1x8x8xf32>)
func.func @vllm_f32(%k: memref<?x1x2x8x4xf32>, %v: memref<?x1x8x8xf32>, %bt: memref<?x?xi32>, %lens: memref<?xi32>) {
  %kv = kv.paged_view pools(%k, %v : memref<?x1x2x8x4xf32>, memref<?x1x8x8xf32>) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>)
      : !kv.paged<page_size = 8, kv_heads = 1, head_dim = 8, head_dim_v = 8, dtype = f32, layout = vllm, storage = split, table = block_table>
  return
}

// -----

// OpenPPL cache_layout 0..3 over a token axis T with L layers:
// (T, L, 2, H, D), (L, T, 2, H, D), (L, 2, T, H, D), (L, 2, H, T, D).
// CHECK-LABEL: func.func @ppl
// CHECK: pools(%{{.*}} : memref<?x4x2x2x8xf16>) tables(%{{.*}}, %{{.*}} : memref<?x?xi32>, memref<?xi32>) : <{{.*}}layout = ppl0, storage = combined, table = token_table, layer = 3>
// CHECK: pools(%{{.*}} : memref<4x?x2x2x8xf16>) tables(%{{.*}}, %{{.*}} : memref<?xi32>, memref<?xi32>) : <{{.*}}layout = ppl1, storage = combined, table = token_offset, layer = 1>
// CHECK: pools(%{{.*}} : memref<4x2x?x2x8xf16>) tables(%{{.*}}, %{{.*}} : memref<?x?xi32>, memref<?xi32>) : <{{.*}}layout = ppl2, storage = combined, table = token_table>
// CHECK: pools(%{{.*}} : memref<4x2x2x?x8xf16>) tables(%{{.*}}, %{{.*}} : memref<?x?xi32>, memref<?xi32>) : <{{.*}}layout = ppl3, storage = combined, table = token_table, layer = 2>
func.func @ppl(%p0: memref<?x4x2x2x8xf16>, %p1: memref<4x?x2x2x8xf16>, %p2: memref<4x2x?x2x8xf16>, %p3: memref<4x2x2x?x8xf16>,
               %starts2: memref<?x?xi32>, %starts1: memref<?xi32>, %lens: memref<?xi32>) {
  %kv0 = kv.paged_view pools(%p0 : memref<?x4x2x2x8xf16>) tables(%starts2, %lens : memref<?x?xi32>, memref<?xi32>)
      : !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = ppl0, storage = combined, table = token_table, layer = 3>
  %kv1 = kv.paged_view pools(%p1 : memref<4x?x2x2x8xf16>) tables(%starts1, %lens : memref<?xi32>, memref<?xi32>)
      : !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = ppl1, storage = combined, table = token_offset, layer = 1>
  %kv2 = kv.paged_view pools(%p2 : memref<4x2x?x2x8xf16>) tables(%starts2, %lens : memref<?x?xi32>, memref<?xi32>)
      : !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = ppl2, storage = combined, table = token_table>
  %kv3 = kv.paged_view pools(%p3 : memref<4x2x2x?x8xf16>) tables(%starts2, %lens : memref<?x?xi32>, memref<?xi32>)
      : !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = ppl3, storage = combined, table = token_table, layer = 2>
  return
}

// -----

// OpenPPL's seqstarts / kvstarts / cachestarts are int64: i64 tables, an
// i64 qo_indptr and an i64 ragged kv_indptr are accepted as i32 ones are.
// CHECK-LABEL: func.func @ppl_int64
// CHECK: tables(%{{.*}}, %{{.*}} : memref<?x?xi64>, memref<?xi64>) : <{{.*}}layout = ppl2, storage = combined, table = token_table, layer = 1>
// CHECK: tables(%{{.*}}, %{{.*}} : memref<?xi64>, memref<?xi64>) : <{{.*}}layout = ppl1, storage = combined, table = token_offset>
// CHECK: kv.prefill %{{.*}}, %{{.*}}, %{{.*}} {causal} : memref<?x4x8xf16>, memref<?xi64>
// CHECK: kv.ragged_view %{{.*}}, %{{.*}}, %{{.*}} : memref<?x2x8xf16>, memref<?x2x8xf16>, memref<?xi64>
func.func @ppl_int64(%p2: memref<4x2x?x2x8xf16>, %p1: memref<4x?x2x2x8xf16>,
                     %cachestarts: memref<?x?xi64>, %starts: memref<?xi64>,
                     %lens: memref<?xi64>, %q: memref<?x4x8xf16>,
                     %seqstarts: memref<?xi64>, %k: memref<?x2x8xf16>,
                     %v: memref<?x2x8xf16>, %kvstarts: memref<?xi64>) {
  %kv0 = kv.paged_view pools(%p2 : memref<4x2x?x2x8xf16>) tables(%cachestarts, %lens : memref<?x?xi64>, memref<?xi64>)
      : !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = ppl2, storage = combined, table = token_table, layer = 1>
  %kv1 = kv.paged_view pools(%p1 : memref<4x?x2x2x8xf16>) tables(%starts, %lens : memref<?xi64>, memref<?xi64>)
      : !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = ppl1, storage = combined, table = token_offset>
  %s = kv.prefill %q, %seqstarts, %kv0 {causal} : memref<?x4x8xf16>, memref<?xi64>, !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = ppl2, storage = combined, table = token_table, layer = 1> -> !kv.state<?x4x8xf16, base = e>
  %r = kv.ragged_view %k, %v, %kvstarts : memref<?x2x8xf16>, memref<?x2x8xf16>, memref<?xi64> -> !kv.ragged<kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16>
  return
}

// -----

// Llama: contiguous (max_batch, max_seq, H, D) K and V, page_size = max_seq.
// CHECK-LABEL: func.func @llama
// CHECK: kv.paged_view pools(%{{.*}}, %{{.*}} : memref<4x32x2x8xf32>, memref<4x32x2x8xf32>) tables(%{{.*}}, %{{.*}} : memref<4xi32>, memref<4xi32>) : <page_size = 32, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f32, layout = llama, storage = split, table = token_offset>
func.func @llama(%k: memref<4x32x2x8xf32>, %v: memref<4x32x2x8xf32>, %starts: memref<4xi32>, %lens: memref<4xi32>) {
  %kv = kv.paged_view pools(%k, %v : memref<4x32x2x8xf32>, memref<4x32x2x8xf32>) tables(%starts, %lens : memref<4xi32>, memref<4xi32>)
      : !kv.paged<page_size = 32, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f32, layout = llama, storage = split, table = token_offset>
  return
}

// -----

// Affine: the pool rank is the number of map results; with split storage
// K and V have their own maps (and ranks).
// CHECK-LABEL: func.func @affine
// CHECK: kv.paged_view pools(%{{.*}} : memref<?x2x8x4x2xf16>) {{.*}} k_map = (d0, d1, d2, d3, d4) -> (d0, d1, d4, d2, d3)>
// CHECK: kv.paged_view pools(%{{.*}}, %{{.*}} : memref<?x2x8xf16>, memref<?x2x4x8xf16>) {{.*}} k_map = (d0, d1, d2, d3, d4) -> (d0 * 4 + d2, d3, d4), v_map = (d0, d1, d2, d3, d4) -> (d0, d3, d2, d4)>
func.func @affine(%pool: memref<?x2x8x4x2xf16>, %k: memref<?x2x8xf16>, %v: memref<?x2x4x8xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>) {
  %kv0 = kv.paged_view pools(%pool : memref<?x2x8x4x2xf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      : !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = affine, storage = combined, table = csr, k_map = (p, kv, s, h, d) -> (p, kv, d, s, h)>
  %kv1 = kv.paged_view pools(%k, %v : memref<?x2x8xf16>, memref<?x2x4x8xf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      : !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8, dtype = f16, layout = affine, storage = split, table = csr, k_map = (p, kv, s, h, d) -> (p * 4 + s, h, d), v_map = (p, kv, s, h, d) -> (p, h, s, d)>
  return
}

// -----

// MLA: ckv (pages, page_size, 512) and kpe (pages, page_size, 64) as strided
// slices of one 576-wide pool.
// CHECK-LABEL: func.func @mla_slices
// CHECK: %[[CKV:.*]] = memref.subview
// CHECK: %[[KPE:.*]] = memref.subview
// CHECK: kv.paged_view pools(%[[CKV]], %[[KPE]] : memref<?x64x512xf16, strided<[36864, 576, 1]>>, memref<?x64x64xf16, strided<[36864, 576, 1], offset: 512>>) tables(%{{.*}}, %{{.*}}, %{{.*}} : memref<?xi32>, memref<?xi32>, memref<?xi32>) : <page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f16, layout = nhd, storage = mla, table = csr, pe_dim = 64>
func.func @mla_slices(%pool: memref<?x64x576xf16>, %n: index, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>) {
  %ckv = memref.subview %pool[0, 0, 0] [%n, 64, 512] [1, 1, 1] : memref<?x64x576xf16> to memref<?x64x512xf16, strided<[36864, 576, 1]>>
  %kpe = memref.subview %pool[0, 0, 512] [%n, 64, 64] [1, 1, 1] : memref<?x64x576xf16> to memref<?x64x64xf16, strided<[36864, 576, 1], offset: 512>>
  %kv = kv.paged_view pools(%ckv, %kpe : memref<?x64x512xf16, strided<[36864, 576, 1]>>, memref<?x64x64xf16, strided<[36864, 576, 1], offset: 512>>)
      tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      : !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f16, layout = nhd, storage = mla, table = csr, pe_dim = 64>
  return
}
