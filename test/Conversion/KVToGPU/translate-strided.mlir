// RUN: rm -rf %t && mkdir -p %t
// RUN: kvir-opt %s --kv-to-ptx=chip=sm_90a | kvir-translate -o %t
// RUN: cat %t/merge_partitions_h8_d64_f16_base_2_*.json | FileCheck %s --check-prefix=MANIFEST
// RUN: FileCheck %s --check-prefix=HEADER --input-file=%t/kv_kernels.h

// FlashInfer's merge_states layout ([rows, states, heads, dim]) read as
// kvir's partition-major state through a transposed view: the kernel takes
// the view's row stride as an extent, which only the caller's buffer gives.
// The manifest says so (value null); the typed launcher takes it as an
// argument after the buffers.

// MANIFEST: "extent": "stride",
// MANIFEST-NEXT: "name": "in_out_stride1",
// MANIFEST-NEXT: "of": "in_out",
// MANIFEST-NEXT: "role": "extent",
// MANIFEST-NEXT: "shape": [],
// MANIFEST-NEXT: "value": null

// HEADER-LABEL: static inline int kvir_kv_kernels_merge_partitions0_launch(
// HEADER-NEXT: const kvir_kv_kernels_merge_partitions0_plan_t *kvir_plan, uint64_t in_out, uint64_t in_lse, uint64_t out, uint64_t lse, int64_t in_out_stride1, int64_t in_lse_stride1, uint64_t kvir_workspace) {
// HEADER: int64_t kvir_v6 = in_out_stride1;

func.func @merge_states(%v: memref<?x?x8x64xf16>, %s: memref<?x?x8xf32>,
                        %v_out: memref<?x8x64xf16>, %s_out: memref<?x8xf32>) {
  %vt = memref.transpose %v (r, p, h, d) -> (p, r, h, d)
      : memref<?x?x8x64xf16> to memref<?x?x8x64xf16, strided<[512, ?, 64, 1]>>
  %st = memref.transpose %s (r, p, h) -> (p, r, h)
      : memref<?x?x8xf32> to memref<?x?x8xf32, strided<[8, ?, 1]>>
  %p = kv.load_state %vt, %st
      : memref<?x?x8x64xf16, strided<[512, ?, 64, 1]>>, memref<?x?x8xf32, strided<[8, ?, 1]>>
      -> !kv.state<?x8x64xf16, base = 2, partitions = ?>
  %m = kv.merge_partitions %p : !kv.state<?x8x64xf16, base = 2, partitions = ?> -> !kv.state<?x8x64xf16, base = 2>
  kv.store_state %m, %v_out, %s_out : !kv.state<?x8x64xf16, base = 2>, memref<?x8x64xf16>, memref<?x8xf32>
  return
}
