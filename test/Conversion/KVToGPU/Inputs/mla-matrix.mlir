// The MLA kernels the ptxas-mla-matrix tests compile: heads 16, 64 and
// 128, one query row per request and causal rows(qo_indptr), separate
// ckv / kpe pools (CSR) and slices of one 576-wide pool (block table,
// FlashMLA's layout), page sizes 64 and 16, f16 and bf16.

!csr = !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = bf16, layout = nhd, storage = mla, table = csr, pe_dim = 64>
!bt = !kv.paged<page_size = 16, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f16, layout = nhd, storage = mla, table = block_table, pe_dim = 64>
!ckv = memref<?x16x512xf16, strided<[9216, 576, 1]>>
!kpe = memref<?x16x64xf16, strided<[9216, 576, 1], offset: 512>>

func.func @h16_csr(%ckv: memref<?x64x512xbf16>, %kpe: memref<?x64x64xbf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>,
                   %qn: memref<?x16x512xbf16>, %qp: memref<?x16x64xbf16>, %o: memref<?x16x512xbf16>, %l: memref<?x16xf32>) {
  %kv = kv.paged_view pools(%ckv, %kpe : memref<?x64x512xbf16>, memref<?x64x64xbf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !csr
  %s = kv.mla_decode %qn, %qp, %kv : memref<?x16x512xbf16>, memref<?x16x64xbf16>, !csr -> !kv.state<?x16x512xbf16, base = e>
  kv.store_state %s, %o, %l : !kv.state<?x16x512xbf16, base = e>, memref<?x16x512xbf16>, memref<?x16xf32>
  return
}

func.func @h128_csr(%ckv: memref<?x64x512xbf16>, %kpe: memref<?x64x64xbf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>,
                    %qn: memref<?x128x512xbf16>, %qp: memref<?x128x64xbf16>, %o: memref<?x128x512xbf16>, %l: memref<?x128xf32>) {
  %kv = kv.paged_view pools(%ckv, %kpe : memref<?x64x512xbf16>, memref<?x64x64xbf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !csr
  %s = kv.mla_decode %qn, %qp, %kv : memref<?x128x512xbf16>, memref<?x128x64xbf16>, !csr -> !kv.state<?x128x512xbf16, base = e>
  kv.store_state %s, %o, %l : !kv.state<?x128x512xbf16, base = e>, memref<?x128x512xbf16>, memref<?x128xf32>
  return
}

func.func @h64_rows_causal_shared_pool(%ckv: !ckv, %kpe: !kpe, %bt: memref<?x?xi32>, %lens: memref<?xi32>, %qo: memref<?xi32>,
                                       %qn: memref<?x64x512xf16>, %qp: memref<?x64x64xf16>, %o: memref<?x64x512xf16>, %l: memref<?x64xf32>) {
  %kv = kv.paged_view pools(%ckv, %kpe : !ckv, !kpe) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) : !bt
  %s = kv.mla_decode %qn, %qp, %kv rows(%qo : memref<?xi32>) {causal} : memref<?x64x512xf16>, memref<?x64x64xf16>, !bt -> !kv.state<?x64x512xf16, base = e>
  kv.store_state %s, %o, %l : !kv.state<?x64x512xf16, base = e>, memref<?x64x512xf16>, memref<?x64xf32>
  return
}

func.func @h16_rows_shared_pool_f32_out(%ckv: !ckv, %kpe: !kpe, %bt: memref<?x?xi32>, %lens: memref<?xi32>, %qo: memref<?xi32>,
                                        %qn: memref<?x16x512xf16>, %qp: memref<?x16x64xf16>, %o: memref<?x16x512xf32>, %l: memref<?x16xf32>) {
  %kv = kv.paged_view pools(%ckv, %kpe : !ckv, !kpe) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) : !bt
  %s = kv.mla_decode %qn, %qp, %kv rows(%qo : memref<?xi32>) {causal} : memref<?x16x512xf16>, memref<?x16x64xf16>, !bt -> !kv.state<?x16x512xf32, base = 2>
  kv.store_state %s, %o, %l : !kv.state<?x16x512xf32, base = 2>, memref<?x16x512xf32>, memref<?x16xf32>
  return
}
