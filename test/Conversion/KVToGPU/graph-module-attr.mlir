// RUN: kvir-opt %s --convert-kv-to-gpu="chip=sm_90a" | FileCheck %s
// RUN: kvir-opt %s --convert-kv-to-gpu="chip=sm_90a graph-max-batch=16" | FileCheck %s
// RUN: not kvir-opt %s --convert-kv-to-gpu="chip=sm_90a graph-max-batch=8" 2>&1 | FileCheck %s --check-prefix=CONFLICT

// A module may carry its fixed grids (a spec's graph_max_batch): the
// lowering takes them as the graph-max-batch option would; an option that
// disagrees is an error.

// CHECK: <"max_batch" = <16>>
// CHECK-SAME: kernels = [<"split", {{.*}}, always, grid = [<max_work>,
// CONFLICT: error: convert-kv-to-gpu: graph-max-batch=8 but the module's kvgpu.graph_max_batch is 16

!cache = !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128,
                   dtype = f16, layout = nhd, storage = combined, table = csr>
!state = !kv.state<?x32x128xf16, base = 2>
module attributes {kvgpu.graph_max_batch = 16 : i64} {
func.func @batch_decode(%q: memref<?x32x128xf16>, %pool: memref<?x2x16x8x128xf16>,
                        %indptr: memref<?xi32>, %indices: memref<?xi32>,
                        %last: memref<?xi32>, %out: memref<?x32x128xf16>,
                        %lse: memref<?x32xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x8x128xf16>)
      tables(%indptr, %indices, %last : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !cache
  %s = kv.decode %q, %kv : memref<?x32x128xf16>, !cache -> !state
  kv.store_state %s, %out, %lse : !state, memref<?x32x128xf16>, memref<?x32xf32>
  return
}
}
