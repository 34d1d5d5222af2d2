// RUN: kvir-opt %s --convert-kv-to-gpu="chip=sm_80 graph-max-batch=8" | FileCheck %s
// RUN: kvir-opt %s --kv-to-ptx="chip=sm_80 graph-max-batch=8" | kvir-translate -o %t
// RUN: FileCheck %s --check-prefix=HEADER --input-file=%t/kv_kernels.h
// RUN: %cc -std=c99 -Wall -Wextra -Werror -fsyntax-only -x c %t/kv_kernels.h
// RUN: cat %t/prefill_ragged_*_split_*.json | FileCheck %s --check-prefix=MANIFEST

// With fixed grids (CUDA graphs replay launches with the grids and
// buffers they were captured with), a prefill with query rows keeps the
// host's work schedule: its grids and workspace follow the shapes alone.
// The split kernel always launches over max_work blocks per KV head
// (floordiv(nnz, 64) + batch + 4 x 54 slots; items past the schedule's
// count have request -1 and do nothing) and the merge over every row; the
// direct kernel is not built; the workspace holds two waves of cut items'
// rows (2 x 54 x 64 = 27648), a bound the schedule respects
// (workspace_limit).

!r = !kv.ragged<kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16>
!s = !kv.state<?x4x64xf16, base = 2>

// CHECK: kvgpu.launch_plans = [#kvgpu.plan<"kv.prefill",
// CHECK-SAME: <"partial_out", workspace, memref<?x4x64xf32>, shape = [<max_partial_rows>, <4>, <64>]>
// CHECK-SAME: <"max_work" = <floordiv(nnz, 64) + batch + 216>>, <"max_partial_rows" = <27648>>]
// CHECK-SAME: tile_rows = 64, causal = true, workspace_limit = "max_partial_rows">
// CHECK-SAME: kernels = [<"split", @kv_kernels::@[[SPLIT:prefill_ragged_h4x2_d64_f16_f32_causal_split_[0-9a-f]+]], always, grid = [<max_work>, <2>, <1>]
// CHECK-SAME: <"merge", @kv_kernels::@[[MERGE:merge_rows_h4_d64_f16_base_2_[0-9a-f]+]], always, grid = [<nnz>, <4>, <1>]
// CHECK-LABEL: func.func @ragged_causal
// CHECK: call @kvir_schedule_prefill_work(
// CHECK: gpu.launch_func @kv_kernels::@[[SPLIT]]
// CHECK: gpu.launch_func @kv_kernels::@[[MERGE]]
// Only the split and merge kernels are built.
// CHECK: gpu.module @kv_kernels
// CHECK-NOT: gpu.func @prefill_ragged_h4x2_d64_f16_f16_causal_
// CHECK: gpu.func @[[SPLIT]]
// CHECK-NOT: gpu.func @prefill_ragged_h4x2_d64_f16_f16_causal_

// The C header: the workspace's size needs no schedule (a constant), the
// schedule and the typed launcher pass its rows as the bound.
// HEADER: static inline size_t kvir_kv_kernels_plan0_workspace_bytes(void) {
// HEADER-NEXT: const int64_t max_partial_rows = 27648;
// HEADER: static inline int64_t kvir_kv_kernels_plan0_schedule(const int32_t *qo_indptr,
// HEADER: int64_t *num_query_tiles,
// HEADER-NEXT: int64_t max_partial_rows) {
// HEADER: 54, 64, 256, max_items, max_partial_rows, work_items,
// HEADER: num_work = kvir_kv_kernels_plan0_schedule(qo_indptr_host, kv_lengths, batch, {{.*}}, &num_query_tiles, max_partial_rows);
// MANIFEST: "workspace_limit": "max_partial_rows"
func.func @ragged_causal(%q: memref<?x4x64xf16>, %qo: memref<?xi32>, %k: memref<?x2x64xf16>, %v: memref<?x2x64xf16>, %ki: memref<?xi32>, %o: memref<?x4x64xf16>, %lse: memref<?x4xf32>) {
  %kv = kv.ragged_view %k, %v, %ki : memref<?x2x64xf16>, memref<?x2x64xf16>, memref<?xi32> -> !r
  %s = kv.prefill %q, %qo, %kv {causal} : memref<?x4x64xf16>, memref<?xi32>, !r -> !s
  kv.store_state %s, %o, %lse : !s, memref<?x4x64xf16>, memref<?x4xf32>
  return
}
