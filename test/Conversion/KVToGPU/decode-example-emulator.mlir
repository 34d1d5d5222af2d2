// RUN: kvir-runner %S/../../../examples/decode.mlir -e main --entry-point-result=void --shared-libs=%mlir_runner_libs --emu-stats 2> %t.stats | /usr/bin/python3 %S/../../../examples/decode_reference.py | FileCheck %s
// RUN: sed 's/f16/bf16/g' %S/../../../examples/decode.mlir | kvir-runner - -e main --entry-point-result=void --shared-libs=%mlir_runner_libs | %python %S/../../../examples/decode_reference.py --dtype bf16 | FileCheck %s --check-prefix=BF16
// RUN: FileCheck %s --check-prefix=STATS --input-file=%t.stats

// examples/decode.mlir (FlashInfer-shaped: Hq 32 over Hkv 8, head_dim 128,
// NHD pages of 16, f16, base-2 LSE, kv_len 0, 1, 37 and 300) lowered as
// kv-to-nvvm lowers it (the layout specialized to affine maps, kv-tile,
// convert-kv-to-gpu) and run as GPU kernels in kvir's emulator; the
// example's numpy script recomputes it in float64 and exits non-zero past
// f16's tolerance (which fails the pipeline).

// CHECK: max relative error of out vs float64 numpy: {{.*}} (tolerance 2e-3)
// CHECK: max absolute error of lse vs float64 numpy: {{.*}} (tolerance 1e-3)

// The same with bf16 KV, queries and output.
// BF16: max relative error of out vs float64 numpy: {{.*}} (tolerance 1.6e-2)
// BF16: max absolute error of lse vs float64 numpy: {{.*}} (tolerance 1e-3)

// Batch 4 over 8 KV heads on sm_90a (the runner's default chip): the work
// schedule cuts the 300-key request into 2 chunks (at least 64 x 4 = 256
// keys each for group 4, then halved evenly: 1 + 1 + 1 + 2 = 5 work items),
// so the split kernel and the merge kernel.
// STATS: "kernel": "decode_affine_combined_csr_p16_h32x8_d128_f16_f32_split_{{[0-9a-f]+}}", "grid": [5, 8, 1], "block": [16, 4, 2]
// STATS: "kernel": "merge_rows_h32_d128_f16_base_2_{{[0-9a-f]+}}", "grid": [4, 32, 1], "block": [128, 1, 1]
