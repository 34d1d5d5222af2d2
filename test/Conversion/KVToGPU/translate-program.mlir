// RUN: rm -rf %t && mkdir -p %t
// RUN: kvir-opt %s --kv-to-ptx=chip=sm_80 | kvir-translate -o %t
// RUN: FileCheck %s --input-file=%t/cascade.program.json
// RUN: FileCheck %s --check-prefix=LOOP --input-file=%t/decode_steps.program.json
// RUN: cat %t/prefill_nhd_combined_csr_p16_h8x2_d64_f16_f16_causal_*.json | FileCheck %s --check-prefix=SCHEDULE

// kvir-translate describes each host function that runs launch plans as
// the chain a host without the JIT (kvir.gpu) replays: the buffers it
// allocates between plans, with shapes from its arguments' extents, then
// each run of a plan in order, every input, output and scalar bound to a
// function argument or one of those buffers. The plans' own buffers (host
// copies, schedule, workspace) are not listed: whoever runs a plan makes
// them, the schedule's host inputs as its manifest says.

!kvt = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x64xf16, base = 2>

// CHECK: "function": "cascade",
// CHECK: "steps": [
// The positions over the concatenated levels, into the first buffer.
// CHECK: "positions": {
// CHECK-NEXT: "temp": 0
// CHECK: "op": "kv.cascade_positions",
// CHECK-NEXT: "plan": "cascade_positions_2_csr_csr_{{[0-9a-f]+}}"
// The shared level reads them and its own tables (arguments 4-6) into the
// next two buffers.
// CHECK: "kv_indptr": {
// CHECK-NEXT: "arg": 4
// CHECK: "out": {
// CHECK-NEXT: "temp": 1
// CHECK: "positions": {
// CHECK-NEXT: "temp": 0
// CHECK: "q": {
// CHECK-NEXT: "arg": 0
// CHECK: "qo_indptr": {
// CHECK-NEXT: "arg": 1
// CHECK: "op": "kv.prefill",
// CHECK-NEXT: "plan": "prefill_nhd_combined_csr_p16_h8x2_d64_f16_f16_positions_{{[0-9a-f]+}}"
// The last level, causal, over arguments 7-9 and the second grouping.
// CHECK: "kv_indptr": {
// CHECK-NEXT: "arg": 7
// CHECK: "qo_indptr": {
// CHECK-NEXT: "arg": 2
// CHECK: "op": "kv.prefill",
// CHECK-NEXT: "plan": "prefill_nhd_combined_csr_p16_h8x2_d64_f16_f16_causal_{{[0-9a-f]+}}"
// The merge of the two level states into the function's outputs.
// CHECK: "in0_out": {
// CHECK-NEXT: "temp": 1
// CHECK: "in1_out": {
// CHECK-NEXT: "temp": 3
// CHECK: "lse": {
// CHECK-NEXT: "arg": 11
// CHECK: "out": {
// CHECK-NEXT: "arg": 10
// CHECK: "op": "kv.merge",
// CHECK: "temps": [
// CHECK: "dtype": "i32",
// CHECK-NEXT: "shape": [
// CHECK-NEXT: {
// CHECK-NEXT: "arg": 0,
// CHECK-NEXT: "axis": 0
// CHECK: "dtype": "f16",
// CHECK-NEXT: "shape": [
// CHECK-NEXT: {
// CHECK-NEXT: "arg": 0,
// CHECK-NEXT: "axis": 0
// CHECK-NEXT: },
// CHECK-NEXT: 8,
// CHECK-NEXT: 64
// CHECK-NEXT: ],
// CHECK-NEXT: "temp": 1
func.func @cascade(%q: memref<?x8x64xf16>, %qi0: memref<?xi32>, %qi1: memref<?xi32>,
                   %pool: memref<?x2x16x2x64xf16>, %ip0: memref<?xi32>, %ix0: memref<?xi32>, %last0: memref<?xi32>,
                   %ip1: memref<?xi32>, %ix1: memref<?xi32>, %last1: memref<?xi32>,
                   %o: memref<?x8x64xf16>, %lse: memref<?x8xf32>) {
  %kv0 = kv.paged_view pools(%pool : memref<?x2x16x2x64xf16>) tables(%ip0, %ix0, %last0 : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !kvt
  %kv1 = kv.paged_view pools(%pool : memref<?x2x16x2x64xf16>) tables(%ip1, %ix1, %last1 : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !kvt
  %s = kv.cascade %q levels(%qi0, %qi1 : memref<?xi32>, memref<?xi32>) kvs(%kv0, %kv1 : !kvt, !kvt)
      {causal, window_left = 128 : i64} : memref<?x8x64xf16> -> !s
  kv.store_state %s, %o, %lse : !s, memref<?x8x64xf16>, memref<?x8xf32>
  return
}

// A function that runs a plan in a loop of its own is described by why a
// host cannot replay it.
// LOOP: "error": "it launches kernels in a loop",
// LOOP-NEXT: "function": "decode_steps"
func.func @decode_steps(%n: index, %q: memref<?x8x64xf16>, %pool: memref<?x2x16x2x64xf16>,
                        %ip: memref<?xi32>, %ix: memref<?xi32>, %last: memref<?xi32>,
                        %o: memref<?x8x64xf16>, %lse: memref<?x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %kv = kv.paged_view pools(%pool : memref<?x2x16x2x64xf16>) tables(%ip, %ix, %last : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !kvt
  scf.for %i = %c0 to %n step %c1 {
    %s = kv.decode %q, %kv : memref<?x8x64xf16>, !kvt -> !s
    kv.store_state %s, %o, %lse : !s, memref<?x8x64xf16>, memref<?x8xf32>
  }
  return
}

// Where each plan's schedule finds its kv lengths: CSR's page counts and
// last pages; a prefill's row offsets are a copy of its qo_indptr.
// SCHEDULE: "lengths_from": {
// SCHEDULE-NEXT: "indptr": "kv_indptr",
// SCHEDULE-NEXT: "kind": "csr",
// SCHEDULE-NEXT: "last_page_len": "kv_last_page_len",
// SCHEDULE-NEXT: "page_size": 16
// SCHEDULE: "qo_indptr_from": "qo_indptr",
