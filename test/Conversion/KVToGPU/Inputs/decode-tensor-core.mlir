// Decodes on the tensor-core kernel: head_dim != head_dim_v, head dim 512,
// a GQA group of 64 at head dim 256, and (faster there than the decode
// kernel) Llama-3-70B's group of 8 at head dim 128.
!dv = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 192, head_dim_v = 128, dtype = bf16, layout = nhd, storage = split, table = csr>
!w = !kv.paged<page_size = 16, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f16, layout = nhd, storage = combined, table = csr>
!g = !kv.paged<page_size = 16, kv_heads = 1, head_dim = 256, head_dim_v = 256, dtype = bf16, layout = hnd, storage = combined, table = block_table>
!g8 = !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr>

func.func @value_dim_differs(%q: memref<?x8x192xbf16>, %k: memref<?x16x2x192xbf16>, %v: memref<?x16x2x128xbf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>, %o: memref<?x8x128xbf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%k, %v : memref<?x16x2x192xbf16>, memref<?x16x2x128xbf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !dv
  %s = kv.decode %q, %kv {window_left = 255 : i64} : memref<?x8x192xbf16>, !dv -> !kv.state<?x8x128xbf16, base = e>
  kv.store_state %s, %o, %l : !kv.state<?x8x128xbf16, base = e>, memref<?x8x128xbf16>, memref<?x8xf32>
  return
}

func.func @head_dim_512(%q: memref<?x4x512xf16>, %pool: memref<?x2x16x1x512xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>, %o: memref<?x4x512xf16>, %l: memref<?x4xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x1x512xf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !w
  %s = kv.decode %q, %kv : memref<?x4x512xf16>, !w -> !kv.state<?x4x512xf16, base = e>
  kv.store_state %s, %o, %l : !kv.state<?x4x512xf16, base = e>, memref<?x4x512xf16>, memref<?x4xf32>
  return
}

func.func @group_64(%q: memref<?x64x256xbf16>, %pool: memref<?x2x1x16x256xbf16>, %bt: memref<?x?xi32>, %lens: memref<?xi32>, %o: memref<?x64x256xf32>, %l: memref<?x64xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x1x16x256xbf16>) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) : !g
  %s = kv.decode %q, %kv : memref<?x64x256xbf16>, !g -> !kv.state<?x64x256xf32, base = 2>
  kv.store_state %s, %o, %l : !kv.state<?x64x256xf32, base = 2>, memref<?x64x256xf32>, memref<?x64xf32>
  return
}

func.func @group_8(%q: memref<?x64x128xf16>, %pool: memref<?x2x16x8x128xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>, %o: memref<?x64x128xf16>, %l: memref<?x64xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x8x128xf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !g8
  %s = kv.decode %q, %kv : memref<?x64x128xf16>, !g8 -> !kv.state<?x64x128xf16, base = 2>
  kv.store_state %s, %o, %l : !kv.state<?x64x128xf16, base = 2>, memref<?x64x128xf16>, memref<?x64xf32>
  return
}
