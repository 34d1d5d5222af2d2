// Two decodes for the PTX tests: FlashInfer-shaped (NHD, f16, Hq 32 over
// Hkv 8, head_dim 128, CSR pages of 16, base-2 LSE) and vLLM-shaped (HND,
// bf16, separate K/V pools, block table, pages of 64, head_dim 64, group 8,
// soft cap and window, f32 base-e state; its config pins the decode kernel,
// which group 8 would otherwise leave for the tensor-core kernel).
!fi = !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128,
                dtype = f16, layout = nhd, storage = combined, table = csr>
!fis = !kv.state<?x32x128xf16, base = 2>
!vl = !kv.paged<page_size = 64, kv_heads = 2, head_dim = 64, head_dim_v = 64,
                dtype = bf16, layout = hnd, storage = split, table = block_table>
!vls = !kv.state<?x16x64xf32, base = e>

func.func @flashinfer_decode(%q: memref<?x32x128xf16>, %pool: memref<?x2x16x8x128xf16>,
                             %indptr: memref<?xi32>, %indices: memref<?xi32>,
                             %last: memref<?xi32>,
                             %out: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x8x128xf16>)
      tables(%indptr, %indices, %last : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !fi
  %s = kv.decode %q, %kv : memref<?x32x128xf16>, !fi -> !fis
  kv.store_state %s, %out, %lse : !fis, memref<?x32x128xf16>, memref<?x32xf32>
  return
}

func.func @vllm_decode(%q: memref<?x16x64xbf16>, %k: memref<?x2x64x64xbf16>,
                       %v: memref<?x2x64x64xbf16>, %bt: memref<?x?xi32>,
                       %lens: memref<?xi32>, %out: memref<?x16x64xf32>,
                       %lse: memref<?x16xf32>) {
  %kv = kv.paged_view pools(%k, %v : memref<?x2x64x64xbf16>, memref<?x2x64x64xbf16>)
      tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) : !vl
  %s = kv.decode %q, %kv {logits_soft_cap = 30.0 : f32, window_left = 1000 : i64,
      kvgpu.config = #kvgpu.decode<vector = 8, threads_x = 8, threads_z = 2, tile_tokens = 32, stages = 3, max_partitions = 32>}
      : memref<?x16x64xbf16>, !vl -> !vls
  kv.store_state %s, %out, %lse : !vls, memref<?x16x64xf32>, memref<?x16xf32>
  return
}
