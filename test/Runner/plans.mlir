// The runtime library is instrumented in a sanitizer build, which Python
// cannot load first.
// UNSUPPORTED: sanitizers
// RUN: rm -rf %t && mkdir -p %t
// RUN: kvir-opt %S/../../examples/decode.mlir --kv-to-ptx=chip=sm_90a | kvir-translate -o %t/g4
// RUN: kvir-opt %S/Inputs/decode-gqa8.mlir --kv-to-ptx=chip=sm_90a | kvir-translate -o %t/g8
// RUN: kvir-opt %S/../../examples/prefill.mlir --kv-to-ptx=chip=sm_90a | kvir-translate -o %t/prefill
// RUN: %python %kvir_bench_gpu/check_plans.py --runtime %libkvir_runtime_so %t/g4:decode:32768 %t/g4:decode:16384,512,512,1,0 %t/g4:decode:100,7 %t/g8:decode:2048,2048 %t/prefill:prefill:512,300 %t/prefill:prefill:100,7 | FileCheck %s
// RUN: ldd %libkvir_runtime_so | not grep -v -E "linux-vdso|ld-linux|libc\.so|libstdc\+\+\.so|libm\.so|libgcc_s\.so"

// The GPU runner's host side, without a GPU: bench/gpu/plan_launch.py plans
// calls from kvir-translate's manifests (sizes, the work list from
// libkvir_runtime.so's kvir_schedule_work, kernel parameters as the
// manifest's ABI says) and each launch is checked against the PTX (kernel
// name, .entry parameter count). On sm_90a's 132 SMs, one request of 32768
// keys is cut into 114 chunks and merged; a skewed batch cuts only its long
// request; two short requests run the direct kernel; a GQA group of 8 runs
// the tensor-core kernel (one wgmma warpgroup); the prefill's blocks are three warpgroups (a
// producer and two consumers). The prefill's work schedule
// (kvir_schedule_prefill_work) cuts the 10 query tiles of 32 rows that
// see more than 256 keys in two (26 tiles, 36 items) and merges their
// rows; two short prompts run the direct kernel. The runtime library needs libc, libstdc++, libm
// and libgcc only (no LLVM or MLIR: it runs on a bare GPU machine).

// CHECK: g4 decode 32768: split decode_affine_combined_csr_p16_h32x8_d128_f16_f32_split_{{[0-9a-f]+}} grid [114, 8, 1] block [16, 4, 2] items 114
// CHECK-NEXT: g4 decode 32768: split merge_rows_h32_d128_f16_base_2_{{[0-9a-f]+}} grid [1, 32, 1] block [128, 1, 1]
// CHECK-NEXT: g4 decode 16384,512,512,1,0: split decode_affine_{{.*}}_split_{{[0-9a-f]+}} grid [[[ITEMS:[0-9]+]], 8, 1] block [16, 4, 2] items [[ITEMS]]
// CHECK-NEXT: g4 decode 16384,512,512,1,0: split merge_rows_{{.*}} grid [5, 32, 1]
// CHECK-NEXT: g4 decode 100,7: direct decode_affine_combined_csr_p16_h32x8_d128_f16_f16_{{[0-9a-f]+}} grid [2, 8, 1] block [16, 4, 2] items 2
// CHECK-NEXT: g8 decode 2048,2048: split decode_tc_affine_combined_csr_p16_h64x8_d128x128_f16_f32_split_{{[0-9a-f]+}} grid [{{[0-9]+}}, 8, 1] block [128, 1, 1]
// CHECK-NEXT: g8 decode 2048,2048: split merge_rows_h64_d128_f16_base_2_{{[0-9a-f]+}} grid [2, 64, 1]
// CHECK-NEXT: prefill prefill 512,300: split prefill_affine_combined_csr_p16_h32x8_d128_f16_f32_causal_split_{{[0-9a-f]+}} grid [36, 8, 1] block [384, 1, 1] items 36
// CHECK-NEXT: prefill prefill 512,300: split merge_rows_h32_d128_f16_base_2_{{[0-9a-f]+}} grid [812, 32, 1] block [128, 1, 1] items 36 dependent
// CHECK-NEXT: prefill prefill 100,7: direct prefill_affine_combined_csr_p16_h32x8_d128_f16_f16_causal_{{[0-9a-f]+}} grid [5, 8, 1] block [384, 1, 1] items 5
// CHECK-NOT: FAIL
