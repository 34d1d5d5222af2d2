// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: kvir-opt %s --kv-to-ptx=chip=sm_90a | kvir-translate -o %t
// RUN: %ptxas -arch=sm_90a -v %t/kv_kernels.ptx -o %t/kernels.cubin > %t/ptxas.txt 2>&1
// RUN: FileCheck %s --check-prefix=COUNT < %t/ptxas.txt
// RUN: FileCheck %s --check-prefix=CLEAN < %t/ptxas.txt
// RUN: FileCheck %s --check-prefix=PTX < %t/kv_kernels.ptx

// Top-k sparse selection: DeepSeek-V3.2's MLA decode over 2048 selected
// keys (direct and work-scheduled split), causal rows of a speculative
// MLA decode, a GQA decode (the decode kernel) and a decode only tensor
// cores take (head dims 192 / 128) gather their keys and compile to PTX
// that ptxas takes without spills, calling nothing.
// COUNT-DAG: Compiling entry function 'mla_block_table_p64_h64_d512_pe64_bf16_bf16_topk_
// COUNT-DAG: Compiling entry function 'mla_block_table_p64_h64_d512_pe64_bf16_f32_topk_split_
// COUNT-DAG: Compiling entry function 'mla_block_table_p64_h16_d512_pe64_bf16_bf16_rows_causal_topk_
// COUNT-DAG: Compiling entry function 'decode_{{.*}}_h32x8_d128_bf16_bf16_topk_
// COUNT-DAG: Compiling entry function 'decode_{{.*}}_h32x8_d128_bf16_f32_topk_split_
// COUNT-DAG: Compiling entry function 'decode_tc_{{.*}}_h8x1_d192x128_bf16_bf16_topk_

// CLEAN-NOT: {{[1-9][0-9]* bytes spill}}
// CLEAN-NOT: error

// PTX-NOT: call
// PTX-NOT: __nv_

!mla = !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = bf16, layout = nhd, storage = mla, table = block_table, pe_dim = 64>
!sm = !kv.state<?x64x512xbf16, base = e>
func.func @mla(%qn: memref<?x64x512xbf16>, %qp: memref<?x64x64xbf16>, %ckv: memref<?x64x512xbf16>, %kpe: memref<?x64x64xbf16>, %bt: memref<?x?xi32>, %lens: memref<?xi32>, %idx: memref<?x2048xi32>, %o: memref<?x64x512xbf16>, %l: memref<?x64xf32>) {
  %kv = kv.paged_view pools(%ckv, %kpe : memref<?x64x512xbf16>, memref<?x64x64xbf16>) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) : !mla
  %s = kv.mla_decode %qn, %qp, %kv topk(%idx : memref<?x2048xi32>) : memref<?x64x512xbf16>, memref<?x64x64xbf16>, !mla -> !sm
  kv.store_state %s, %o, %l : !sm, memref<?x64x512xbf16>, memref<?x64xf32>
  return
}

!mla16 = !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = bf16, layout = nhd, storage = mla, table = block_table, pe_dim = 64>
!sm16 = !kv.state<?x16x512xbf16, base = e>
func.func @mla_rows(%qn: memref<?x16x512xbf16>, %qp: memref<?x16x64xbf16>, %ckv: memref<?x64x512xbf16>, %kpe: memref<?x64x64xbf16>, %bt: memref<?x?xi32>, %lens: memref<?xi32>, %qo: memref<?xi32>, %idx: memref<?x2048xi32>, %o: memref<?x16x512xbf16>, %l: memref<?x16xf32>) {
  %kv = kv.paged_view pools(%ckv, %kpe : memref<?x64x512xbf16>, memref<?x64x64xbf16>) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) : !mla16
  %s = kv.mla_decode %qn, %qp, %kv rows(%qo : memref<?xi32>) topk(%idx : memref<?x2048xi32>) {causal} : memref<?x16x512xbf16>, memref<?x16x64xbf16>, !mla16 -> !sm16
  kv.store_state %s, %o, %l : !sm16, memref<?x16x512xbf16>, memref<?x16xf32>
  return
}

!p = !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = bf16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x32x128xbf16, base = e>
func.func @decode(%q: memref<?x32x128xbf16>, %pool: memref<?x2x16x8x128xbf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>, %idx: memref<?x2048xi32>, %o: memref<?x32x128xbf16>, %l: memref<?x32xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x8x128xbf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !p
  %s = kv.decode %q, %kv topk(%idx : memref<?x2048xi32>) {window_left = 4095 : i64} : memref<?x32x128xbf16>, !p -> !s
  kv.store_state %s, %o, %l : !s, memref<?x32x128xbf16>, memref<?x32xf32>
  return
}

!tc = !kv.paged<page_size = 16, kv_heads = 1, head_dim = 192, head_dim_v = 128, dtype = bf16, layout = nhd, storage = split, table = csr>
!stc = !kv.state<?x8x128xbf16, base = e>
func.func @tensor_cores(%q: memref<?x8x192xbf16>, %k: memref<?x16x1x192xbf16>, %v: memref<?x16x1x128xbf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>, %idx: memref<?x512xi32>, %o: memref<?x8x128xbf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%k, %v : memref<?x16x1x192xbf16>, memref<?x16x1x128xbf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !tc
  %s = kv.decode %q, %kv topk(%idx : memref<?x512xi32>) : memref<?x8x192xbf16>, !tc -> !stc
  kv.store_state %s, %o, %l : !stc, memref<?x8x128xbf16>, memref<?x8xf32>
  return
}
