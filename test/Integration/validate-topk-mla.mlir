// RUN: not kvir-runner %s --validate-tables -e mla_topk_repeated --entry-point-result=void --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s

// kvir-runner --validate-tables checks an MLA decode's top-k lists before
// its kernels run: a row listing a key twice stops the program, naming the
// row and the entries.
// CHECK: kvir: invalid page table: topk[1] lists key 2 twice (entries 1 and 2); a row selects each key at most once
// CHECK-NOT: Stack dump

// An MLA decode with two causal query rows of one request over 3 keys:
// row 1 lists key 2 twice.
!mla = !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f16, layout = nhd, storage = mla, table = block_table, pe_dim = 64>
!sm = !kv.state<2x16x512xf16, base = e>
memref.global "private" constant @ckv : memref<1x64x512xf16> = dense<1.0>
memref.global "private" constant @kpe : memref<1x64x64xf16> = dense<1.0>
memref.global "private" constant @mla_table : memref<1x1xi32> = dense<0>
memref.global "private" constant @mla_lens : memref<1xi32> = dense<3>
memref.global "private" constant @mla_rows : memref<2xi32> = dense<[0, 2]>
memref.global "private" constant @q_nope : memref<2x16x512xf16> = dense<0.0>
memref.global "private" constant @q_pe : memref<2x16x64xf16> = dense<0.0>
memref.global "private" constant @mla_twice : memref<2x4xi32> = dense<[[0, 1, -1, -1], [0, 2, 2, -1]]>
func.func @mla_topk_repeated() {
  %ckv = memref.get_global @ckv : memref<1x64x512xf16>
  %kpe = memref.get_global @kpe : memref<1x64x64xf16>
  %bt = memref.get_global @mla_table : memref<1x1xi32>
  %lens = memref.get_global @mla_lens : memref<1xi32>
  %qo = memref.get_global @mla_rows : memref<2xi32>
  %qn = memref.get_global @q_nope : memref<2x16x512xf16>
  %qp = memref.get_global @q_pe : memref<2x16x64xf16>
  %sel = memref.get_global @mla_twice : memref<2x4xi32>
  %o = memref.alloc() : memref<2x16x512xf16>
  %lse = memref.alloc() : memref<2x16xf32>
  %kv = kv.paged_view pools(%ckv, %kpe : memref<1x64x512xf16>, memref<1x64x64xf16>)
      tables(%bt, %lens : memref<1x1xi32>, memref<1xi32>) : !mla
  %s = kv.mla_decode %qn, %qp, %kv rows(%qo : memref<2xi32>) topk(%sel : memref<2x4xi32>) {causal}
      : memref<2x16x512xf16>, memref<2x16x64xf16>, !mla -> !sm
  kv.store_state %s, %o, %lse : !sm, memref<2x16x512xf16>, memref<2x16xf32>
  memref.dealloc %o : memref<2x16x512xf16>
  memref.dealloc %lse : memref<2x16xf32>
  return
}
