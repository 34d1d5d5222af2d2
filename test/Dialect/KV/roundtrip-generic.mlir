// RUN: kvir-opt %s --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC
// RUN: kvir-opt %s --mlir-print-op-generic | kvir-opt | FileCheck %s
// RUN: kvir-opt %s | kvir-opt --mlir-print-op-generic | kvir-opt | FileCheck %s

// The generic form carries the operand segments of the variadic ops
// (pools / tables / scales / k_scale / v_scale, and q / qo_indptrs / kvs) and
// the attributes as properties; printing generic and parsing it back gives
// the same custom form.

!fp8 = !kv.paged<page_size = 4, kv_heads = 1, head_dim = 8, head_dim_v = 8, dtype = f16, layout = nhd, storage = split, table = block_table, quant = fp8_e4m3>
!i8 = !kv.paged<page_size = 4, kv_heads = 1, head_dim = 8, head_dim_v = 8, dtype = f16, layout = nhd, storage = combined, table = csr, quant = int8_group, quant_group = 4>
!s = !kv.state<?x2x8xf16, base = 2>

// GENERIC-LABEL: "func.func"
// GENERIC: "kv.paged_view"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{operandSegmentSizes = array<i32: 2, 2, 0, 1, 1>}>
// GENERIC: "kv.paged_view"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{operandSegmentSizes = array<i32: 1, 3, 1, 0, 0>}>
// GENERIC: "kv.decode"(%{{.*}}, %{{.*}}) <{operandSegmentSizes = array<i32: 1, 1, 0, 0, 0>, rope = #kv.rope<interleave, theta = 1.000000e+04, scale = 1.000000e+00>, window_left = 3 : i64}>
// GENERIC: "kv.cascade"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{causal, operandSegmentSizes = array<i32: 1, 2, 2, 0, 0>}>
// GENERIC: "kv.prefill"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{causal, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0>}>
// GENERIC: "kv.cascade_positions"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{operandSegmentSizes = array<i32: 2, 2, 1>}>
// GENERIC: "kv.prefill"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 0, 0, 0, 0>, window_left = 2 : i64}>
// GENERIC: "kv.merge"(%{{.*}}, %{{.*}}, %{{.*}})
// GENERIC: "kv.store_state"(%{{.*}}, %{{.*}}, %{{.*}})

// CHECK-LABEL: func.func @generic
// CHECK: %[[FP8:.*]] = kv.paged_view pools(%{{.*}}, %{{.*}} : memref<?x4x1x8xf8E4M3FN>, memref<?x4x1x8xf8E4M3FN>) tables(%{{.*}}, %{{.*}} : memref<?x?xi32>, memref<?xi32>) fp8_scales(%{{.*}}, %{{.*}}) : <{{.*}}quant = fp8_e4m3>
// CHECK: %[[I8:.*]] = kv.paged_view pools(%{{.*}} : memref<?x2x4x1x8xi8>) tables(%{{.*}}, %{{.*}}, %{{.*}} : memref<?xi32>, memref<?xi32>, memref<?xi32>) scales(%{{.*}} : memref<?x2x4x1x2xf16>) : <{{.*}}quant = int8_group, quant_group = 4>
// CHECK: %[[A:.*]] = kv.decode %{{.*}}, %[[FP8]] {rope = #kv.rope<interleave, theta = 1.000000e+04, scale = 1.000000e+00>, window_left = 3 : i64}
// CHECK: %[[B:.*]] = kv.cascade %{{.*}} levels(%{{.*}}, %{{.*}} : memref<?xi32>, memref<?xi32>) kvs(%[[FP8]], %[[I8]] : !kv.paged<{{.*}}>, !kv.paged<{{.*}}>) {causal}
// CHECK: %[[C:.*]] = kv.prefill %{{.*}}, %{{.*}}, %[[I8]] mask(%{{.*}} : memref<?xi8>) {causal}
// CHECK: kv.cascade_positions levels(%{{.*}}, %{{.*}} : memref<?xi32>, memref<?xi32>) kvs(%[[FP8]], %[[I8]] : !kv.paged<{{.*}}>, !kv.paged<{{.*}}>) into %[[POS:.*]] : memref<?xi32>
// CHECK: %[[E:.*]] = kv.prefill %{{.*}}, %{{.*}}, %[[I8]] positions(%[[POS]] : memref<?xi32>) {window_left = 2 : i64}
// CHECK: %[[M:.*]] = kv.merge %[[A]], %[[B]], %[[C]], %[[E]]
// CHECK: kv.store_state %[[M]], %{{.*}}, %{{.*}} :
func.func @generic(%k: memref<?x4x1x8xf8E4M3FN>, %v: memref<?x4x1x8xf8E4M3FN>, %bt: memref<?x?xi32>,
                   %lens: memref<?xi32>, %ks: f32, %vs: f32, %pool: memref<?x2x4x1x8xi8>,
                   %scales: memref<?x2x4x1x2xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>,
                   %last: memref<?xi32>, %q: memref<?x2x8xf16>, %qi: memref<?xi32>,
                   %m: memref<?xi8>, %o: memref<?x2x8xf16>, %lse: memref<?x2xf32>,
                   %pos: memref<?xi32>) {
  %fp8 = "kv.paged_view"(%k, %v, %bt, %lens, %ks, %vs) <{operandSegmentSizes = array<i32: 2, 2, 0, 1, 1>}>
      : (memref<?x4x1x8xf8E4M3FN>, memref<?x4x1x8xf8E4M3FN>, memref<?x?xi32>, memref<?xi32>, f32, f32) -> !fp8
  %i8 = "kv.paged_view"(%pool, %ip, %ix, %last, %scales) <{operandSegmentSizes = array<i32: 1, 3, 1, 0, 0>}>
      : (memref<?x2x4x1x8xi8>, memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?x2x4x1x2xf16>) -> !i8
  %a = "kv.decode"(%q, %fp8) <{window_left = 3 : i64, rope = #kv.rope<interleave>, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0>}> ({}, {}) : (memref<?x2x8xf16>, !fp8) -> !s
  %b = "kv.cascade"(%q, %qi, %qi, %fp8, %i8) <{causal, operandSegmentSizes = array<i32: 1, 2, 2, 0, 0>}> ({}, {})
      : (memref<?x2x8xf16>, memref<?xi32>, memref<?xi32>, !fp8, !i8) -> !s
  %c = "kv.prefill"(%q, %qi, %i8, %m) <{causal, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0>}> ({}, {}) : (memref<?x2x8xf16>, memref<?xi32>, !i8, memref<?xi8>) -> !s
  "kv.cascade_positions"(%qi, %qi, %fp8, %i8, %pos) <{operandSegmentSizes = array<i32: 2, 2, 1>}>
      : (memref<?xi32>, memref<?xi32>, !fp8, !i8, memref<?xi32>) -> ()
  %e = "kv.prefill"(%q, %qi, %i8, %pos) <{window_left = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 0, 0, 0, 0>}> ({}, {}) : (memref<?x2x8xf16>, memref<?xi32>, !i8, memref<?xi32>) -> !s
  %d = "kv.merge"(%a, %b, %c, %e) : (!s, !s, !s, !s) -> !s
  "kv.store_state"(%d, %o, %lse) : (!s, memref<?x2x8xf16>, memref<?x2xf32>) -> ()
  return
}
