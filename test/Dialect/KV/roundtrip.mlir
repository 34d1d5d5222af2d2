// RUN: kvir-opt %s | kvir-opt | FileCheck %s
// RUN: kvir-opt %s --mlir-print-op-generic | kvir-opt | FileCheck %s

// Every kv op in its custom form survives print -> parse -> print, directly
// and through the generic form.

!csr = !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr>
!mla = !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = bf16, layout = nhd, storage = mla, table = block_table, pe_dim = 64>
!rag = !kv.ragged<kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16>
!s2 = !kv.state<?x32x128xf16, base = 2>
!se = !kv.state<?x32x128xf16, base = e>

// CHECK-LABEL: func.func @paged_view
// CHECK-SAME: (%[[POOL:.*]]: memref<?x2x16x8x128xf16>, %[[IP:.*]]: memref<?xi32>, %[[IX:.*]]: memref<?xi32>, %[[LAST:.*]]: memref<?xi32>)
// CHECK: %[[KV:.*]] = kv.paged_view pools(%[[POOL]] : memref<?x2x16x8x128xf16>) tables(%[[IP]], %[[IX]], %[[LAST]] : memref<?xi32>, memref<?xi32>, memref<?xi32>) : <page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr>
// CHECK: return %[[KV]]
func.func @paged_view(%pool: memref<?x2x16x8x128xf16>, %indptr: memref<?xi32>,
                      %indices: memref<?xi32>, %last: memref<?xi32>) -> !csr {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x8x128xf16>)
      tables(%indptr, %indices, %last : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !csr
  return %kv : !csr
}

// CHECK-LABEL: func.func @ragged_view
// CHECK: kv.ragged_view %{{.*}}, %{{.*}}, %{{.*}} : memref<?x8x128xf16>, memref<?x8x128xf16>, memref<?xi32> -> <kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16>
func.func @ragged_view(%k: memref<?x8x128xf16>, %v: memref<?x8x128xf16>,
                       %indptr: memref<?xi32>) -> !rag {
  %kv = kv.ragged_view %k, %v, %indptr : memref<?x8x128xf16>, memref<?x8x128xf16>, memref<?xi32> -> !rag
  return %kv : !rag
}

// CHECK-LABEL: func.func @decode
// CHECK-SAME: (%[[Q:.*]]: memref<?x32x128xf16>, %[[KV:.*]]: !kv.paged
// CHECK: %[[S:.*]] = kv.decode %[[Q]], %[[KV]] : memref<?x32x128xf16>, <page_size = 16, {{.*}}table = csr> -> <?x32x128xf16, base = 2>
// CHECK: return %[[S]]
func.func @decode(%q: memref<?x32x128xf16>, %kv: !csr) -> !s2 {
  %s = kv.decode %q, %kv : memref<?x32x128xf16>, !csr -> !s2
  return %s : !s2
}

// CHECK-LABEL: func.func @prefill_paged
// CHECK: kv.prefill %{{.*}}, %{{.*}}, %{{.*}} {causal} : memref<?x32x128xf16>, memref<?xi32>, !kv.paged<page_size = 16, {{.*}}> -> <?x32x128xf16, base = 2>
func.func @prefill_paged(%q: memref<?x32x128xf16>, %qo: memref<?xi32>, %kv: !csr) -> !s2 {
  %s = kv.prefill %q, %qo, %kv {causal} : memref<?x32x128xf16>, memref<?xi32>, !csr -> !s2
  return %s : !s2
}

// CHECK-LABEL: func.func @prefill_ragged
// CHECK: kv.prefill %{{.*}}, %{{.*}}, %{{.*}} : memref<?x32x128xf16>, memref<?xi32>, !kv.ragged<kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16> -> <?x32x128xf16, base = e>
func.func @prefill_ragged(%q: memref<?x32x128xf16>, %qo: memref<?xi32>, %kv: !rag) -> !se {
  %s = kv.prefill %q, %qo, %kv : memref<?x32x128xf16>, memref<?xi32>, !rag -> !se
  return %s : !se
}

// CHECK-LABEL: func.func @mla_decode
// CHECK: kv.mla_decode %{{.*}}, %{{.*}}, %{{.*}} {sm_scale = 0.0416666679 : f32} : memref<?x16x512xbf16>, memref<?x16x64xbf16>, <page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = bf16, layout = nhd, storage = mla, table = block_table, pe_dim = 64> -> <?x16x512xf32, base = e>
func.func @mla_decode(%qn: memref<?x16x512xbf16>, %qp: memref<?x16x64xbf16>, %kv: !mla)
    -> !kv.state<?x16x512xf32, base = e> {
  %s = kv.mla_decode %qn, %qp, %kv {sm_scale = 0.0416666679 : f32}
      : memref<?x16x512xbf16>, memref<?x16x64xbf16>, !mla -> !kv.state<?x16x512xf32, base = e>
  return %s : !kv.state<?x16x512xf32, base = e>
}

// CHECK-LABEL: func.func @mla_decode_rows
// CHECK: kv.mla_decode %{{.*}}, %{{.*}}, %{{.*}} rows(%{{.*}} : memref<?xi32>) {causal} : memref<?x16x512xbf16>, memref<?x16x64xbf16>, <{{.*}}storage = mla{{.*}}> -> <?x16x512xbf16, base = e>
func.func @mla_decode_rows(%qn: memref<?x16x512xbf16>, %qp: memref<?x16x64xbf16>, %kv: !mla, %qo: memref<?xi32>)
    -> !kv.state<?x16x512xbf16, base = e> {
  %s = kv.mla_decode %qn, %qp, %kv rows(%qo : memref<?xi32>) {causal}
      : memref<?x16x512xbf16>, memref<?x16x64xbf16>, !mla -> !kv.state<?x16x512xbf16, base = e>
  return %s : !kv.state<?x16x512xbf16, base = e>
}

// CHECK-LABEL: func.func @cascade
// CHECK-SAME: (%[[Q:.*]]: memref<?x32x128xf16>, %[[I0:.*]]: memref<?xi32>, %[[I1:.*]]: memref<?xi32>, %[[K0:.*]]: !kv.paged<{{.*}}>, %[[K1:.*]]: !kv.paged<{{.*}}>)
// CHECK: kv.cascade %[[Q]] levels(%[[I0]], %[[I1]] : memref<?xi32>, memref<?xi32>) kvs(%[[K0]], %[[K1]] : !kv.paged<{{.*}}table = csr>, !kv.paged<{{.*}}table = csr>) {causal} : memref<?x32x128xf16> -> <?x32x128xf16, base = 2>
func.func @cascade(%q: memref<?x32x128xf16>, %qi0: memref<?xi32>, %qi1: memref<?xi32>,
                   %kv0: !csr, %kv1: !csr) -> !s2 {
  %s = kv.cascade %q levels(%qi0, %qi1 : memref<?xi32>, memref<?xi32>)
      kvs(%kv0, %kv1 : !csr, !csr) {causal} : memref<?x32x128xf16> -> !s2
  return %s : !s2
}

// CHECK-LABEL: func.func @append
// CHECK-SAME: (%[[K:.*]]: memref<?x8x128xf16>, %[[V:.*]]: memref<?x8x128xf16>, %[[B:.*]]: memref<?xi32>, %[[P:.*]]: memref<?xi32>, %[[KV:.*]]: !kv.paged
// CHECK: kv.append %[[K]], %[[V]], %[[B]], %[[P]] into %[[KV]] : memref<?x8x128xf16>, memref<?x8x128xf16>, memref<?xi32>, memref<?xi32>, <page_size = 16, {{.*}}>
func.func @append(%k: memref<?x8x128xf16>, %v: memref<?x8x128xf16>, %b: memref<?xi32>,
                  %p: memref<?xi32>, %kv: !csr) {
  kv.append %k, %v, %b, %p into %kv
      : memref<?x8x128xf16>, memref<?x8x128xf16>, memref<?xi32>, memref<?xi32>, !csr
  return
}

// CHECK-LABEL: func.func @merge
// CHECK-SAME: (%[[A:.*]]: !kv.state<?x32x128xf16, base = 2>, %[[B:.*]]: !kv.state<?x32x128xf16, base = 2>, %[[C:.*]]: !kv.state<?x32x128xf16, base = 2>)
// CHECK: %[[M:.*]] = kv.merge %[[A]], %[[B]], %[[C]] : !kv.state<?x32x128xf16, base = 2>, !kv.state<?x32x128xf16, base = 2>, !kv.state<?x32x128xf16, base = 2> -> <?x32x128xf16, base = 2>
// CHECK: return %[[M]]
func.func @merge(%a: !s2, %b: !s2, %c: !s2) -> !s2 {
  %m = kv.merge %a, %b, %c : !s2, !s2, !s2 -> !s2
  return %m : !s2
}

// CHECK-LABEL: func.func @merge_partitions
// CHECK: kv.merge_partitions %{{.*}} : <?x32x128xf32, base = e, partitions = 8> -> <?x32x128xf32, base = e>
func.func @merge_partitions(%p: !kv.state<?x32x128xf32, base = e, partitions = 8>)
    -> !kv.state<?x32x128xf32, base = e> {
  %m = kv.merge_partitions %p : !kv.state<?x32x128xf32, base = e, partitions = 8>
      -> !kv.state<?x32x128xf32, base = e>
  return %m : !kv.state<?x32x128xf32, base = e>
}

// CHECK-LABEL: func.func @rebase
// CHECK: %[[R:.*]] = kv.rebase %{{.*}} : <?x32x128xf16, base = 2> -> <?x32x128xf16, base = e>
// CHECK: kv.rebase %[[R]] : <?x32x128xf16, base = e> -> <?x32x128xf16, base = e>
func.func @rebase(%s: !s2) -> !se {
  %r = kv.rebase %s : !s2 -> !se
  %n = kv.rebase %r : !se -> !se
  return %n : !se
}

// CHECK-LABEL: func.func @empty_state
// CHECK-SAME: (%[[N:.*]]: index, %[[P:.*]]: index)
// CHECK: kv.empty_state : <4x32x128xf16, base = 2>
// CHECK: kv.empty_state %[[N]] : <?x32x128xf16, base = 2>
// CHECK: kv.empty_state %[[P]], %[[N]] : <?x32x128xf32, base = e, partitions = ?>
// CHECK: return
func.func @empty_state(%n: index, %p: index)
    -> (!kv.state<4x32x128xf16, base = 2>, !s2, !kv.state<?x32x128xf32, base = e, partitions = ?>) {
  %a = kv.empty_state : !kv.state<4x32x128xf16, base = 2>
  %b = kv.empty_state %n : !s2
  %c = kv.empty_state %p, %n : !kv.state<?x32x128xf32, base = e, partitions = ?>
  return %a, %b, %c : !kv.state<4x32x128xf16, base = 2>, !s2, !kv.state<?x32x128xf32, base = e, partitions = ?>
}

// CHECK-LABEL: func.func @load_store_state
// CHECK-SAME: (%[[O:.*]]: memref<?x32x128xf16>, %[[L:.*]]: memref<?x32xf32>, %[[PO:.*]]: memref<4x?x32x128xf32>, %[[PL:.*]]: memref<4x?x32xf32>)
// CHECK: %[[S:.*]] = kv.load_state %[[O]], %[[L]] : memref<?x32x128xf16>, memref<?x32xf32> -> <?x32x128xf16, base = e>
// CHECK: %[[P:.*]] = kv.load_state %[[PO]], %[[PL]] : memref<4x?x32x128xf32>, memref<4x?x32xf32> -> <?x32x128xf32, base = 2, partitions = 4>
// CHECK: kv.store_state %[[S]], %[[O]], %[[L]] : <?x32x128xf16, base = e>, memref<?x32x128xf16>, memref<?x32xf32>
// CHECK: kv.store_state %[[S]], %[[O]] : <?x32x128xf16, base = e>, memref<?x32x128xf16>{{$}}
// CHECK: kv.store_state %[[P]], %[[PO]], %[[PL]] : <?x32x128xf32, base = 2, partitions = 4>, memref<4x?x32x128xf32>, memref<4x?x32xf32>
func.func @load_store_state(%o: memref<?x32x128xf16>, %lse: memref<?x32xf32>,
                            %po: memref<4x?x32x128xf32>, %pl: memref<4x?x32xf32>) {
  %s = kv.load_state %o, %lse : memref<?x32x128xf16>, memref<?x32xf32> -> !se
  %p = kv.load_state %po, %pl : memref<4x?x32x128xf32>, memref<4x?x32xf32>
      -> !kv.state<?x32x128xf32, base = 2, partitions = 4>
  kv.store_state %s, %o, %lse : !se, memref<?x32x128xf16>, memref<?x32xf32>
  kv.store_state %s, %o : !se, memref<?x32x128xf16>
  kv.store_state %p, %po, %pl : !kv.state<?x32x128xf32, base = 2, partitions = 4>,
      memref<4x?x32x128xf32>, memref<4x?x32xf32>
  return
}
