// RUN: kvir-opt %s --kv-validate-tables -split-input-file | FileCheck %s

// CSR over a combined NHD pool: the runtime check gets the three tables,
// batch = dim(kv_indptr) - 1, the page size and the pool's capacity in
// tokens (its page axis x page size, once: K and V share the pool), and
// the program exits with status 1 when the check fails.
!csr = !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr>
// CHECK: func.func private @exit(i32)
// CHECK: func.func private @kvir_check_csr(!llvm.ptr, !llvm.ptr, i64, !llvm.ptr, i64, i64, i64, !llvm.ptr, i64) -> i64
// CHECK-LABEL: func.func @csr
// CHECK: kv.paged_view
// CHECK: %[[PAGES:.*]] = memref.dim %arg1, %c0
// CHECK: %[[TOKENS:.*]] = arith.muli %[[PAGES]], %c16
// CHECK-NOT: memref.dim %arg1
// CHECK: %[[CAP:.*]] = arith.index_cast %[[TOKENS]] : index to i64
// CHECK: %[[N:.*]] = memref.dim %arg2, %c0
// CHECK: %[[B:.*]] = arith.subi %[[N]], %c1
// CHECK: memref.extract_aligned_pointer_as_index %arg2
// CHECK: memref.extract_aligned_pointer_as_index %arg3
// CHECK: memref.extract_aligned_pointer_as_index %arg4
// CHECK: %[[R:.*]] = call @kvir_check_csr({{.*}}, %c16_i64, %[[CAP]], %{{.*}}, %c0_i64)
// CHECK: %[[BAD:.*]] = arith.cmpi ne, %[[R]], %c0_i64
// CHECK: scf.if %[[BAD]] {
// CHECK: call @exit(%c1_i32) : (i32) -> ()
// CHECK: kv.decode
func.func @csr(%q: memref<?x32x128xf16>, %pool: memref<?x2x16x8x128xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>) -> !kv.state<?x32x128xf16, base = 2> {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x8x128xf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !csr
  %s = kv.decode %q, %kv : memref<?x32x128xf16>, !csr -> !kv.state<?x32x128xf16, base = 2>
  return %s : !kv.state<?x32x128xf16, base = 2>
}

// -----

// A strided block table (a column slice) is copied to a dense buffer for
// the check, and freed after it; split K and V pools bound the capacity by
// the smaller one.
!bt = !kv.paged<page_size = 64, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = bf16, layout = hnd, storage = split, table = block_table>
// CHECK-LABEL: func.func @block_table
// CHECK: %[[KCAP:.*]] = arith.muli %{{.*}}, %c64
// CHECK: %[[VCAP:.*]] = arith.muli %{{.*}}, %c64
// CHECK: arith.minui %[[KCAP]], %[[VCAP]]
// CHECK: %[[DENSE:.*]] = memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?xi32>
// CHECK: memref.copy %{{.*}}, %[[DENSE]]
// CHECK: memref.extract_aligned_pointer_as_index %[[DENSE]]
// CHECK: call @kvir_check_block_table(
// CHECK: memref.dealloc %[[DENSE]]
// CHECK: kv.decode
func.func @block_table(%q: memref<?x8x64xbf16>, %k: memref<?x2x64x64xbf16>, %v: memref<?x2x64x64xbf16>, %t: memref<?x?xi32, strided<[?, 2]>>, %l: memref<?xi32>) -> !kv.state<?x8x64xf32, base = e> {
  %kv = kv.paged_view pools(%k, %v : memref<?x2x64x64xbf16>, memref<?x2x64x64xbf16>) tables(%t, %l : memref<?x?xi32, strided<[?, 2]>>, memref<?xi32>) : !bt
  %s = kv.decode %q, %kv : memref<?x8x64xbf16>, !bt -> !kv.state<?x8x64xf32, base = e>
  return %s : !kv.state<?x8x64xf32, base = e>
}

// -----

// OpenPPL's token axis is the pool's capacity as it is (ppl1: axis 1);
// token tables and token offsets get their own checks.
!tt = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = ppl1, layer = 1, storage = combined, table = token_table>
!to = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = ppl1, layer = 1, storage = combined, table = token_offset>
// CHECK-LABEL: func.func @token_forms
// CHECK: %[[T:.*]] = memref.dim %arg1, %c1
// CHECK: %[[CAP:.*]] = arith.index_cast %[[T]] : index to i64
// CHECK: call @kvir_check_token_table(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c16_i64, %[[CAP]],
// CHECK: call @kvir_check_token_offset(
func.func @token_forms(%q: memref<?x4x64xf16>, %pool: memref<2x?x2x2x64xf16>, %s2: memref<?x?xi32>, %s1: memref<?xi32>, %l: memref<?xi32>) {
  %kv = kv.paged_view pools(%pool : memref<2x?x2x2x64xf16>) tables(%s2, %l : memref<?x?xi32>, memref<?xi32>) : !tt
  %kv2 = kv.paged_view pools(%pool : memref<2x?x2x2x64xf16>) tables(%s1, %l : memref<?xi32>, memref<?xi32>) : !to
  return
}

// -----

// A causal prefill's query rows are checked as any prefill's: qo_indptr
// against the query's rows (any qo_len goes with any kv_len).
!bt = !kv.paged<page_size = 16, kv_heads = 1, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = split, table = block_table>
// CHECK-LABEL: func.func @causal_prefill
// CHECK: call @kvir_check_block_table(
// CHECK-NOT: memref.alloc
// CHECK: call @kvir_check_query_rows(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) :
// CHECK: kv.prefill
func.func @causal_prefill(%q: memref<?x2x64xf16>, %qo: memref<?xi32>, %k: memref<?x16x1x64xf16>, %v: memref<?x16x1x64xf16>, %t: memref<?x?xi32>, %l: memref<?xi32>) -> !kv.state<?x2x64xf16, base = e> {
  %kv = kv.paged_view pools(%k, %v : memref<?x16x1x64xf16>, memref<?x16x1x64xf16>) tables(%t, %l : memref<?x?xi32>, memref<?xi32>) : !bt
  %s = kv.prefill %q, %qo, %kv {causal} : memref<?x2x64xf16>, memref<?xi32>, !bt -> !kv.state<?x2x64xf16, base = e>
  return %s : !kv.state<?x2x64xf16, base = e>
}

// -----

// A sparse selection's lists are checked against each request's kv_len:
// one row per request (no qo_indptr), or the rows of rows(qo_indptr).
!csr = !kv.paged<page_size = 16, kv_heads = 1, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!mla = !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = bf16, layout = nhd, storage = mla, table = block_table, pe_dim = 64>
// CHECK-LABEL: func.func @topk
// CHECK: call @kvir_check_csr(
// CHECK: %[[LENS:.*]] = memref.alloc(%{{.*}}) : memref<?xi32>
// CHECK: %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: call @kvir_check_topk(%{{.*}}, %{{.*}}, %{{.*}}, %[[NULL]], %{{.*}}, %{{.*}},
// CHECK: memref.dealloc %[[LENS]]
// CHECK: kv.decode
// CHECK: %[[LENS2:.*]] = memref.alloc(%{{.*}}) : memref<?xi32>
// CHECK: call @kvir_check_topk(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}},
// CHECK: memref.dealloc %[[LENS2]]
// CHECK: kv.mla_decode
func.func @topk(%q: memref<?x2x64xf16>, %pool: memref<?x2x16x1x64xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %last: memref<?xi32>, %idx: memref<?x2048xi32>,
                %qn: memref<?x16x512xbf16>, %qp: memref<?x16x64xbf16>, %ckv: memref<?x64x512xbf16>, %kpe: memref<?x64x64xbf16>, %bt: memref<?x?xi32>, %lens: memref<?xi32>, %qo: memref<?xi32>, %idx2: memref<?x64xi32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x1x64xf16>) tables(%ip, %ix, %last : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !csr
  %s = kv.decode %q, %kv topk(%idx : memref<?x2048xi32>) : memref<?x2x64xf16>, !csr -> !kv.state<?x2x64xf16, base = e>
  %m = kv.paged_view pools(%ckv, %kpe : memref<?x64x512xbf16>, memref<?x64x64xbf16>) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) : !mla
  %t = kv.mla_decode %qn, %qp, %m rows(%qo : memref<?xi32>) topk(%idx2 : memref<?x64xi32>) : memref<?x16x512xbf16>, memref<?x16x64xbf16>, !mla -> !kv.state<?x16x512xbf16, base = e>
  return
}
