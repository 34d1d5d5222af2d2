// RUN: kvir-opt %s --convert-kv-to-gpu="chip=sm_90a graph-max-batch=64" | FileCheck %s
// RUN: kvir-opt %s --kv-to-ptx="chip=sm_90a graph-max-batch=64" | kvir-translate -o %t
// RUN: FileCheck %s --check-prefix=HEADER --input-file=%t/kv_kernels.h

// With graph-max-batch, a decode's grids are fixed for up to 64 requests
// (CUDA graphs replay launches with the grids they were captured with):
// every size of the grids is a constant of the plan, the split kernel
// (max_work blocks, padding items do nothing) and the merge kernel (64
// blocks, requests past the batch have no rows) always launch, the direct
// kernel is not built, and merge_indptr holds 65 entries, padded by
// kvir_schedule_pad_batch after the schedule.

!cache = !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128,
                   dtype = f16, layout = nhd, storage = combined, table = csr>
!state = !kv.state<?x32x128xf16, base = 2>

// CHECK: kvgpu.launch_plans = [#kvgpu.plan<"kv.decode",
// CHECK-SAME: <"merge_indptr", schedule, memref<?xi32>, shape = [<max_batch + 1>]>
// 64 requests x 8 KV heads fill 132 SMs twice with one chunk each:
// num_partitions ceil(264 / 512) = 1, max_work max(64, 116) = 116.
// CHECK-SAME: sizes = [<"batch" from "q"[0]>, <"num_pages" from "pool"[0]>, <"num_page_ids" from "kv_indices"[0]>, <"max_batch" = <64>>, <"num_partitions" = <1>>, <"max_work" = <116>>]
// CHECK-SAME: schedule = <{{.*}}, window_left = -1, max_batch = "max_batch">
// CHECK-SAME: kernels = [<"split", @kv_kernels::@[[SPLIT:decode_nhd_combined_csr_p16_h32x8_d128_f16_f32_split_[0-9a-f]+]], always, grid = [<max_work>, <8>, <1>]
// CHECK-SAME: <"merge", @kv_kernels::@[[MERGE:merge_rows_h32_d128_f16_base_2_[0-9a-f]+]], always, grid = [<max_batch>, <32>, <1>]
// CHECK: func.func private @kvir_schedule_pad_batch(i64, i64, !llvm.ptr) -> i64
// CHECK-LABEL: func.func @batch_decode
// CHECK: arith.cmpi sle, %{{.*}}, %c64
// CHECK: cf.assert %{{.*}}, "the batch exceeds the fixed grid's max_batch"
// CHECK: call @kvir_schedule_work(
// CHECK: call @kvir_schedule_pad_batch(
// CHECK: cf.assert %{{.*}}, "kvir_schedule_pad_batch failed"
// CHECK: gpu.launch_func @kv_kernels::@[[SPLIT]] blocks in (%c116, %c8, %{{.*}})
// CHECK: gpu.launch_func @kv_kernels::@[[MERGE]] blocks in (%c64, %c32, %{{.*}})
// Only the split and merge kernels are built.
// CHECK: gpu.module @kv_kernels
// CHECK-NOT: gpu.func @decode_nhd_combined_csr_p16_h32x8_d128_f16_f16_
// CHECK: gpu.func @[[SPLIT]]
// CHECK-NOT: gpu.func @decode_nhd_combined_csr_p16_h32x8_d128_f16_f16_

// The C header's schedule pads merge_indptr to the fixed grid.
// HEADER: int64_t kvir_schedule_pad_batch(int64_t batch, int64_t max_batch,
// HEADER: static inline int64_t kvir_kv_kernels_plan0_schedule(
// HEADER: int64_t count = kvir_schedule_work(
// HEADER: /* A fixed grid for 64 requests: merge_indptr holds 65 entries. */
// HEADER-NEXT: if (count >= 0 && kvir_schedule_pad_batch(batch, 64, merge_indptr) < 0)
// HEADER-NEXT: return -1;
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
