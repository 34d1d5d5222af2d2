// Llama-3-70B's decode: 64 query heads over 8 KV heads (GQA group 8),
// head dim 128, NHD pages of 16, f16 KV and state.
!cache = !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128,
                   dtype = f16, layout = nhd, storage = combined, table = csr>
!state = !kv.state<?x64x128xf16, base = 2>
func.func @decode(%q: memref<?x64x128xf16>, %pool: memref<?x2x16x8x128xf16>,
                  %kv_indptr: memref<?xi32>, %kv_indices: memref<?xi32>,
                  %kv_last_page_len: memref<?xi32>,
                  %out: memref<?x64x128xf16>, %lse: memref<?x64xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x8x128xf16>)
      tables(%kv_indptr, %kv_indices, %kv_last_page_len
             : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !cache
  %s = kv.decode %q, %kv : memref<?x64x128xf16>, !cache -> !state
  kv.store_state %s, %out, %lse : !state, memref<?x64x128xf16>, memref<?x64xf32>
  return
}
