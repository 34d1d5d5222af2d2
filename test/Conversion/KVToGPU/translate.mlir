// RUN: rm -rf %t && mkdir -p %t
// RUN: kvir-opt %S/Inputs/decode-kernels.mlir --kv-to-ptx=chip=sm_90a | kvir-translate -o %t
// RUN: cat %t/decode_affine_combined_csr_p16_h32x8_d128_f16_f16_*.json | FileCheck %s --check-prefix=DIRECT
// RUN: cat %t/decode_affine_combined_csr_p16_h32x8_d128_f16_f32_split_*.json | FileCheck %s --check-prefix=SPLIT
// RUN: cat %t/merge_rows_h32_d128_f16_base_2_*.json | FileCheck %s --check-prefix=MERGE
// RUN: FileCheck %s --check-prefix=HEADER --input-file=%t/kv_kernels.h

// kvir-translate writes, per kernel, a JSON manifest derived from its launch
// plan (entry name, role and launch condition, chip, block, grid
// expressions, shared memory, parameters with roles, dtypes, shape
// expressions and the bare-pointer ABI, the whole plan with the kernels'
// configuration) and one C header with
// the PTX, each plan's kernel table and its size functions.

// The direct kernel. Parameters: seven bare pointers (q, pool, the three
// tables, out, lse), then the dynamic extent of each (its leading size).
// DIRECT: "block": [
// DIRECT-NEXT: 16,
// DIRECT-NEXT: 4,
// DIRECT-NEXT: 2
// DIRECT: "chip": "sm_90a",
// DIRECT: "dynamic_shared_bytes": 0,
// DIRECT: "grid": [
// DIRECT-NEXT: "batch",
// DIRECT-NEXT: 8,
// DIRECT-NEXT: 1
// DIRECT: "kernel": "decode_affine_combined_csr_p16_h32x8_d128_f16_f16_{{[0-9a-f]+}}",
// DIRECT: "num_params": 14,
// DIRECT: "param_abi": "buffers as bare device pointers (16-byte aligned) and sizes as int64, in order; then each buffer's dynamic extents as int64 (role extent, value an expression)",
// DIRECT: "params": [
// DIRECT: "abi": "pointer",
// DIRECT-NEXT: "align": 16,
// DIRECT-NEXT: "dtype": "f16",
// DIRECT-NEXT: "name": "q",
// DIRECT: "name": "pool",
// DIRECT: "num_pages",
// DIRECT: "name": "kv_indptr",
// DIRECT: "batch + 1"
// DIRECT: "name": "kv_indices",
// DIRECT: "name": "kv_last_page_len",
// DIRECT: "name": "out",
// DIRECT: "role": "output",
// DIRECT: "name": "lse",
// DIRECT: "abi": "i64",
// DIRECT-NEXT: "axis": 0,
// DIRECT-NEXT: "dtype": "index",
// DIRECT-NEXT: "extent": "size",
// DIRECT-NEXT: "name": "q_size0",
// DIRECT-NEXT: "of": "q",
// DIRECT-NEXT: "role": "extent",
// DIRECT-NEXT: "shape": [],
// DIRECT-NEXT: "value": "batch"
// DIRECT: "name": "kv_indptr_size0",
// DIRECT: "value": "batch + 1"
// DIRECT: "name": "lse_size0",
// DIRECT: "plan": {
// The configuration the kernels were built with.
// DIRECT: "config": {
// DIRECT-NEXT: "kind": "decode",
// DIRECT-NEXT: "max_partitions": 32,
// DIRECT-NEXT: "stages": 3,
// DIRECT-NEXT: "threads_x": 16,
// DIRECT-NEXT: "threads_z": 2,
// DIRECT-NEXT: "tile_tokens": 16,
// DIRECT-NEXT: "vector": 8
// DIRECT: "kernels": [
// DIRECT: "role": "direct",
// DIRECT-NEXT: "when": "unsplit"
// DIRECT: "role": "split",
// DIRECT-NEXT: "when": "split"
// DIRECT: "role": "merge",
// DIRECT-NEXT: "when": "split"
// DIRECT: "op": "kv.decode",
// The work schedule: its parameters, the sizes and buffers it reads and
// fills, and when it selects the split kernels.
// DIRECT: "schedule": {
// DIRECT-NEXT: "batch": "batch",
// DIRECT-NEXT: "count": "num_work",
// DIRECT-NEXT: "function": "kvir_schedule_work",
// DIRECT-NEXT: "granule": 16,
// DIRECT-NEXT: "items": "work_items",
// DIRECT-NEXT: "lengths": "kv_lengths",
// Where a host with only the plan's inputs finds them: CSR's tables.
// DIRECT-NEXT: "lengths_from": {
// DIRECT-NEXT: "indptr": "kv_indptr",
// DIRECT-NEXT: "kind": "csr",
// DIRECT-NEXT: "last_page_len": "kv_last_page_len",
// DIRECT-NEXT: "page_size": 16
// DIRECT-NEXT: },
// DIRECT-NEXT: "merge_indptr": "merge_indptr",
// DIRECT-NEXT: "min_chunk": 256,
// DIRECT-NEXT: "split_when": "num_work > batch",
// DIRECT-NEXT: "target_items": 116,
// DIRECT-NEXT: "uniform_chunks": "num_partitions",
// DIRECT-NEXT: "window_left": -1
// DIRECT: "sizes": [
// DIRECT: "name": "batch"
// DIRECT: "name": "num_partitions",
// DIRECT-NEXT: "value": "min(32, max(1, ceildiv(264, max(1, batch * 8))))"
// DIRECT: "name": "max_work",
// DIRECT-NEXT: "value": "max(batch * num_partitions, max(batch, 116))"
// The page tables, for a run-time check (kvir_check_csr of libKVIRRuntime).
// DIRECT: "tables": {
// DIRECT-NEXT: "check_function": "kvir_check_csr",
// DIRECT-NEXT: "form": "csr",
// DIRECT-NEXT: "page_size": 16,
// DIRECT-NEXT: "pool_tokens": "num_pages * 16"
// DIRECT: "workspace_bytes": {
// DIRECT-NEXT: "split": "max_work * 32 * 128 * 4 + max_work * 32 * 4",
// DIRECT-NEXT: "unsplit": 0
// DIRECT: "ptx": "kv_kernels.ptx",
// DIRECT: "role": "direct",
// The shared buffers as ptxas lays them out (16-byte aligned each).
// DIRECT: "static_shared_bytes": 29808,
// DIRECT: "when": "unsplit"

// SPLIT: "grid": [
// SPLIT-NEXT: "num_work",
// SPLIT-NEXT: 8,
// SPLIT-NEXT: 1
// SPLIT: "num_params": 20,
// SPLIT: "name": "work_items",
// SPLIT: "role": "schedule",
// SPLIT: "max_work",
// SPLIT-NEXT: 4
// SPLIT: "name": "partial_out",
// SPLIT: "role": "workspace",
// SPLIT: "max_work",
// SPLIT-NEXT: 32,
// SPLIT-NEXT: 128
// SPLIT: "name": "partial_lse",
// SPLIT: "role": "split",

// MERGE: "block": [
// MERGE-NEXT: 128,
// MERGE-NEXT: 1,
// MERGE-NEXT: 1
// MERGE: "grid": [
// MERGE-NEXT: "batch",
// MERGE-NEXT: 32,
// MERGE-NEXT: 1
// MERGE: "role": "merge",
// MERGE: "static_shared_bytes": 512

// HEADER: #ifndef KVIR_kv_kernels_H
// HEADER: typedef struct {
// HEADER: } kvir_kernel_t;
// HEADER: static inline int64_t kvir_ceildiv(int64_t a, int64_t b)
// HEADER: static const char kvir_kv_kernels_ptx[] =
// HEADER: ".target sm_90a\n"
// HEADER: ".visible .entry decode_affine_combined_csr_p16_h32x8_d128_f16_f16_
// HEADER: static const char kvir_kv_kernels_plan0_name[] = "decode_affine_combined_csr_p16_h32x8_d128_f16_f16_{{[0-9a-f]+}}";
// HEADER: static const kvir_kernel_t kvir_kv_kernels_plan0_kernels[3] = {
// HEADER-NEXT: {"decode_affine_combined_csr_p16_h32x8_d128_f16_f16_{{[0-9a-f]+}}", "direct", KVIR_UNSPLIT, {16, 4, 2}, 29808, 0, 14}, /* grid (batch, 8, 1) */
// HEADER-NEXT: {"decode_affine_combined_csr_p16_h32x8_d128_f16_f32_split_{{[0-9a-f]+}}", "split", KVIR_SPLIT, {16, 4, 2}, 29808, 0, 20}, /* grid (num_work, 8, 1) */
// HEADER-NEXT: {"merge_rows_h32_d128_f16_base_2_{{[0-9a-f]+}}", "merge", KVIR_SPLIT, {128, 1, 1}, 512, 0, 10}, /* grid (batch, 32, 1) */
// HEADER: static inline int64_t kvir_kv_kernels_plan0_num_partitions(int64_t batch) {
// HEADER-NEXT: return kvir_min(32, kvir_max(1, kvir_ceildiv(264, kvir_max(1, batch * 8))));
// HEADER: static inline int64_t kvir_kv_kernels_plan0_max_work(int64_t batch) {
// The page-table check of the plan's CSR tables over a pool of num_pages
// pages of 16 tokens.
// HEADER: int64_t kvir_check_csr(const int32_t *kv_indptr, const int32_t *kv_indices,
// HEADER: static inline int64_t kvir_kv_kernels_plan0_validate(const int32_t *kv_indptr, const int32_t *kv_indices, const int32_t *kv_last_page_len, int64_t batch, int64_t num_page_ids, int64_t num_pages, char *message, int64_t message_size) {
// HEADER-NEXT: return kvir_check_csr(kv_indptr, kv_indices, num_page_ids, kv_last_page_len, batch, 16, num_pages * 16,
// HEADER: static inline size_t kvir_kv_kernels_plan0_workspace_bytes(int64_t batch) {
// HEADER-NEXT: const int64_t num_partitions = kvir_min(32, kvir_max(1, kvir_ceildiv(264, kvir_max(1, batch * 8))));
// HEADER-NEXT: const int64_t max_work = kvir_max(batch * num_partitions, kvir_max(batch, 116));
// HEADER-NEXT: return (size_t)(max_work * 32 * 128 * 4 + max_work * 32 * 4);
// HEADER: extern "C"
// HEADER: int64_t kvir_schedule_work(const int32_t *kv_lengths, int64_t batch,
// HEADER: static inline int64_t kvir_kv_kernels_plan0_schedule(const int32_t *kv_lengths, int64_t batch,
// HEADER-NEXT: int32_t *work_items, int64_t max_items, int32_t *merge_indptr) {
// HEADER-NEXT: int64_t count = kvir_schedule_work(kv_lengths, batch, -1, 116, 16, 256, kvir_kv_kernels_plan0_num_partitions(batch), max_items,
// HEADER-NEXT: work_items, merge_indptr);
// HEADER-NEXT: return count;
// HEADER: static const kvir_kernel_t kvir_kv_kernels_plan1_kernels[3] = {
// HEADER-NEXT: {"decode_affine_split_block_table_p64_h16x2_d64_bf16_f32_{{[0-9a-f]+}}", "direct", KVIR_UNSPLIT, {8, 8, 2},
// HEADER: static inline int64_t kvir_kv_kernels_plan1_validate(const int32_t *block_table, const int32_t *seq_lens, int64_t batch, int64_t max_pages, int64_t num_pages, char *message, int64_t message_size) {
// HEADER-NEXT: return kvir_check_block_table(block_table, max_pages, seq_lens, batch, 64, num_pages * 64,
// HEADER: kvir_ceildiv(264, kvir_max(1, batch * 2))
// HEADER: #endif
