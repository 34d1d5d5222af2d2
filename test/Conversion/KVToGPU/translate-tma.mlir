// REQUIRES: cc
// RUN: rm -rf %t && mkdir -p %t
// RUN: kvir-opt %S/prefill-tma.mlir --kv-to-ptx=chip=sm_90a | kvir-translate -o %t
// RUN: %cc -std=c99 -Wall -Wextra -Werror -fsyntax-only -x c %t/kv_kernels.h
// RUN: FileCheck %s --check-prefix=HDR < %t/kv_kernels.h
// RUN: cat %t/prefill_ragged_*_causal_[0-9a-f]*.json | FileCheck %s --check-prefix=JSON

// A TMA kernel's tensor maps in the manifests and the C header: the plan
// argument lists what cuTensorMapEncodeTiled takes besides the buffer
// (its data type, box, swizzle, L2 promotion, out-of-bound fill); the
// typed launcher encodes each map over the caller's K or V (dims from the
// plan's sizes, innermost first, a zero extent as 1 since the driver takes
// no empty tensor; row-major byte strides) into its
// workspace slot and copies it there before the launches.

// JSON: "map": {
// JSON-DAG: "box": [
// JSON-DAG: "data_type": 9
// JSON-DAG: "element_bytes": 2
// JSON-DAG: "l2_promotion": 2
// JSON-DAG: "of": "k"
// JSON-DAG: "swizzle": 3
// JSON-DAG: "swizzle_bytes": 128
// JSON: "name": "k_map"
// JSON: "role": "tensor_map"
// JSON: "copy": "tma"

// HDR: int (*tensor_map_encode_tiled)(void *map, int data_type, unsigned rank,
// HDR: dlsym(lib, "cuTensorMapEncodeTiled")
// HDR: size_t k_map_offset; /* in the workspace */
// HDR: size_t v_map_offset; /* in the workspace */
// HDR: uint64_t k_map = kvir_workspace + kvir_plan->k_map_offset;
// HDR: uint64_t kvir_k_map[16] __attribute__((aligned(64)));
// HDR-NEXT: const uint64_t kvir_k_map_dims[] = {(uint64_t)(128), (uint64_t)(2), ((nnz_kv) ? (uint64_t)(nnz_kv) : 1)};
// HDR: const unsigned kvir_k_map_box[] = {64, 1, 64};
// HDR: if (!kvir_cu->tensor_map_encode_tiled)
// HDR-NEXT: return KVIR_CU_ERROR_NOT_SUPPORTED;
// HDR-NEXT: if ((kvir_rc = kvir_cu->tensor_map_encode_tiled(kvir_k_map, 9, 3, (void *)(uintptr_t)k, kvir_k_map_dims, kvir_k_map_strides, kvir_k_map_box, kvir_k_map_unit, 0, 3, 2, 0)) != 0)
// HDR: kvir_cu->memcpy_htod_async(k_map, kvir_k_map, sizeof kvir_k_map, kvir_stream)
// HDR: kvir_cu->memcpy_htod_async(v_map, kvir_v_map, sizeof kvir_v_map, kvir_stream)
// HDR: (void *)&k_map, (void *)&v_map
