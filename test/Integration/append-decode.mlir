// RUN: kvir-opt %s --convert-linalg-to-loops --kv-lower-to-llvm | mlir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s
// RUN: kvir-opt %s --cse --canonicalize --convert-linalg-to-loops --kv-lower-to-llvm | mlir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s

// kv.append writes new K/V rows through the page table (CSR, pages already
// allocated and kv_last_page_len already final), then kv.decode reads them.
//
// NHD combined pool of 3 pages (page_size 2), all zero at first.
// Request 0: pages [1, 0], last 1 -> kv_len 3; request 1: page [2], last 1
// -> kv_len 1. Rows (batch, position) -> (page, slot):
//   row 0: (0, 2) -> (0, 0), k = (0, 0),    v = (6, 60)
//   row 1: (1, 0) -> (2, 0), k = (0.5, 0),  v = (5, 5)
//   row 2: (0, 0) -> (1, 0), k = (-100, 0), v = (1, 10)
//   row 3: (0, 1) -> (1, 1), k = (-100, 0), v = (2, 20)
// The same decode before the append sees the zero pool: all logits 0,
//   o = 0, lse = ln 3 = 1.09861 (request 0) and 0 (request 1). It must not
//   be merged with the decode after the append (second RUN line: CSE first).
// Decode, sm_scale = 1, two query heads over the one KV head:
//   head 0, q = 0: request 0 -> mean of (1, 10), (2, 20), (6, 60) = (3, 30),
//     lse = ln 3 = 1.09861; request 1 -> (5, 5), lse 0.
//   head 1, q = (1, 0): request 0 logits -100, -100, 0 -> (6, 60), lse 0;
//     request 1 -> (5, 5), lse = 0.5.

// decode before the append
// CHECK: rank = 3 offset = 0 sizes = [2, 2, 2]
// CHECK-NEXT: {{\[\[\[}}0, 0]
// CHECK-NEXT: {{\[}}0, 0]
// CHECK-NEXT: {{\[\[}}0, 0]
// CHECK-NEXT: {{\[}}0, 0]
// CHECK: rank = 2 offset = 0 sizes = [2, 2]
// CHECK-NEXT: {{\[\[}}1.09861, 1.09861]
// CHECK-NEXT: {{\[}}0, 0]
// pool[page][kv][slot][head][dim] after the append
// CHECK: rank = 5 offset = 0 sizes = [3, 2, 2, 1, 2]
// CHECK-NEXT: {{\[\[\[\[\[}}0, 0]
// CHECK-NEXT: {{\[\[}}0, 0]
// CHECK-NEXT: {{\[\[\[}}6, 60]
// CHECK-NEXT: {{\[\[}}0, 0]
// CHECK-NEXT: {{\[\[\[\[}}-100, 0]
// CHECK-NEXT: {{\[\[}}-100, 0]
// CHECK-NEXT: {{\[\[\[}}1, 10]
// CHECK-NEXT: {{\[\[}}2, 20]
// CHECK-NEXT: {{\[\[\[\[}}0.5, 0]
// CHECK-NEXT: {{\[\[}}0, 0]
// CHECK-NEXT: {{\[\[\[}}5, 5]
// CHECK-NEXT: {{\[\[}}0, 0]
// CHECK: rank = 3 offset = 0 sizes = [2, 2, 2]
// CHECK-NEXT: {{\[\[\[}}3, 30]
// CHECK-NEXT: {{\[}}6, 60]
// CHECK-NEXT: {{\[\[}}5, 5]
// CHECK-NEXT: {{\[}}5, 5]
// CHECK: rank = 2 offset = 0 sizes = [2, 2]
// CHECK-NEXT: {{\[\[}}1.09861, 0]
// CHECK-NEXT: {{\[}}0, 0.5]

!kvt = !kv.paged<page_size = 2, kv_heads = 1, head_dim = 2, head_dim_v = 2, dtype = f32, layout = nhd, storage = combined, table = csr>

memref.global "private" @pool : memref<3x2x2x1x2xf32> = dense<0.0>
memref.global "private" constant @indptr : memref<3xi32> = dense<[0, 2, 3]>
memref.global "private" constant @indices : memref<3xi32> = dense<[1, 0, 2]>
memref.global "private" constant @last : memref<2xi32> = dense<[1, 1]>
memref.global "private" constant @k : memref<4x1x2xf32> = dense<[[[0.0, 0.0]], [[0.5, 0.0]], [[-100.0, 0.0]], [[-100.0, 0.0]]]>
memref.global "private" constant @v : memref<4x1x2xf32> = dense<[[[6.0, 60.0]], [[5.0, 5.0]], [[1.0, 10.0]], [[2.0, 20.0]]]>
memref.global "private" constant @batch : memref<4xi32> = dense<[0, 1, 0, 0]>
memref.global "private" constant @pos : memref<4xi32> = dense<[2, 0, 0, 1]>
memref.global "private" constant @q : memref<2x2x2xf32> = dense<[[[0.0, 0.0], [1.0, 0.0]], [[0.0, 0.0], [1.0, 0.0]]]>

func.func @main() {
  %pool = memref.get_global @pool : memref<3x2x2x1x2xf32>
  %indptr = memref.get_global @indptr : memref<3xi32>
  %indices = memref.get_global @indices : memref<3xi32>
  %last = memref.get_global @last : memref<2xi32>
  %k = memref.get_global @k : memref<4x1x2xf32>
  %v = memref.get_global @v : memref<4x1x2xf32>
  %b = memref.get_global @batch : memref<4xi32>
  %p = memref.get_global @pos : memref<4xi32>
  %q = memref.get_global @q : memref<2x2x2xf32>
  %kv = kv.paged_view pools(%pool : memref<3x2x2x1x2xf32>)
      tables(%indptr, %indices, %last : memref<3xi32>, memref<3xi32>, memref<2xi32>) : !kvt
  %s0 = kv.decode %q, %kv {sm_scale = 1.0 : f32} : memref<2x2x2xf32>, !kvt -> !kv.state<2x2x2xf32, base = e>
  %o0 = memref.alloc() : memref<2x2x2xf32>
  %lse0 = memref.alloc() : memref<2x2xf32>
  kv.store_state %s0, %o0, %lse0 : !kv.state<2x2x2xf32, base = e>, memref<2x2x2xf32>, memref<2x2xf32>
  %u1 = memref.cast %o0 : memref<2x2x2xf32> to memref<*xf32>
  call @printMemrefF32(%u1) : (memref<*xf32>) -> ()
  %u2 = memref.cast %lse0 : memref<2x2xf32> to memref<*xf32>
  call @printMemrefF32(%u2) : (memref<*xf32>) -> ()
  kv.append %k, %v, %b, %p into %kv : memref<4x1x2xf32>, memref<4x1x2xf32>, memref<4xi32>, memref<4xi32>, !kvt
  %u3 = memref.cast %pool : memref<3x2x2x1x2xf32> to memref<*xf32>
  call @printMemrefF32(%u3) : (memref<*xf32>) -> ()
  %s = kv.decode %q, %kv {sm_scale = 1.0 : f32} : memref<2x2x2xf32>, !kvt -> !kv.state<2x2x2xf32, base = e>
  %o = memref.alloc() : memref<2x2x2xf32>
  %lse = memref.alloc() : memref<2x2xf32>
  kv.store_state %s, %o, %lse : !kv.state<2x2x2xf32, base = e>, memref<2x2x2xf32>, memref<2x2xf32>
  %u4 = memref.cast %o : memref<2x2x2xf32> to memref<*xf32>
  call @printMemrefF32(%u4) : (memref<*xf32>) -> ()
  %u5 = memref.cast %lse : memref<2x2xf32> to memref<*xf32>
  call @printMemrefF32(%u5) : (memref<*xf32>) -> ()
  memref.dealloc %o0 : memref<2x2x2xf32>
  memref.dealloc %lse0 : memref<2x2xf32>
  memref.dealloc %o : memref<2x2x2xf32>
  memref.dealloc %lse : memref<2x2xf32>
  return
}

func.func private @printMemrefF32(memref<*xf32>)
