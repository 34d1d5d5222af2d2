// RUN: rm -rf %t && mkdir -p %t
// RUN: kvir-opt %S/Inputs/decode-kernels.mlir --kv-to-ptx=chip=sm_80 | kvir-translate -o %t/sm80
// RUN: FileCheck %s --check-prefixes=PTX,SM80 --input-file=%t/sm80/kv_kernels.ptx
// RUN: FileCheck %s --check-prefix=SELF --input-file=%t/sm80/kv_kernels.ptx
// RUN: kvir-opt %S/Inputs/decode-kernels.mlir --kv-to-ptx=chip=sm_90a | kvir-translate -o %t/sm90a
// RUN: FileCheck %s --check-prefixes=PTX,SM90 --input-file=%t/sm90a/kv_kernels.ptx
// RUN: FileCheck %s --check-prefix=SELF --input-file=%t/sm90a/kv_kernels.ptx

// kv-to-ptx (kv-specialize-layout, kv-tile, convert-kv-to-gpu, NVVM,
// gpu-module-to-binary) yields self-contained code -- q in 16-byte global
// loads, K/V rows in 16-byte cp.async copies through a ring of stages, fma
// dot products, xor shuffles, ex2.approx / lg2.approx for the softmax,
// 16-byte aligned shared buffers, and no calls (no libdevice), no local
// memory.

// SM80: .target sm_80
// SM90: .target sm_90a
// PTX: .address_size 64

// The FlashInfer-shaped direct kernel (blocks of 16 x 4 x 2 threads).
// PTX-LABEL: .visible .entry decode_affine_combined_csr_p16_h32x8_d128_f16_f16_
// PTX: .reqntid 16, 4, 2
// Three stages of 16-token K and V tiles.
// PTX: .shared .align 16 .b8 {{.*}}[12288];
// PTX: .shared .align 16 .b8 {{.*}}[12288];
// PTX: ld.global.v4.b32
// PTX: bar.sync
// PTX: cp.async.cg.shared.global [{{.*}}], [{{.*}}], 16, {{.*}};
// PTX: cp.async.commit_group;
// PTX: cp.async.wait_group 1;
// PTX: bar.sync
// PTX: fma.rn.f32
// PTX: shfl.sync.bfly.b32 {{.*}}, 8, 31,
// PTX: shfl.sync.bfly.b32 {{.*}}, 4, 31,
// PTX: shfl.sync.bfly.b32 {{.*}}, 2, 31,
// PTX: shfl.sync.bfly.b32 {{.*}}, 1, 31,
// PTX: ex2.approx.ftz.f32
// PTX-DAG: lg2.approx.ftz.f32
// PTX-DAG: st.global.v4.b32
// PTX: ret;

// Its split-KV variant (one 16-byte load of its work item) and the merge
// kernel of the work list's rows.
// PTX-LABEL: .visible .entry decode_affine_combined_csr_p16_h32x8_d128_f16_f32_split_
// PTX: ld.global.v4.b32
// PTX: ld.global.v4.b32
// PTX: cp.async.cg.shared.global
// PTX: ex2.approx.ftz.f32
// PTX-LABEL: .visible .entry merge_rows_h32_d128_f16_base_2_
// PTX: .reqntid 128, 1, 1
// PTX: ex2.approx.ftz.f32
// PTX: lg2.approx.ftz.f32

// The vLLM-shaped kernel: bf16 rows of 64 in 8 x-threads (xor 4, 2, 1),
// group 8 on y.
// PTX-LABEL: .visible .entry decode_affine_split_block_table_p64_h16x2_d64_bf16_f32_
// PTX: .reqntid 8, 8, 2
// PTX: cp.async.cg.shared.global [{{.*}}], [{{.*}}], 16, {{.*}};
// PTX: shfl.sync.bfly.b32 {{.*}}, 4, 31,
// PTX: shfl.sync.bfly.b32 {{.*}}, 2, 31,
// PTX: shfl.sync.bfly.b32 {{.*}}, 1, 31,
// PTX: ex2.approx.ftz.f32

// Over the whole file: no calls, no libdevice, no local memory (spills or
// stack arrays), nothing but 16-byte aligned shared buffers.
// SELF-NOT: call
// SELF-NOT: __nv_
// SELF-NOT: .local
// SELF-NOT: .shared .align {{[1248]}} .b8
