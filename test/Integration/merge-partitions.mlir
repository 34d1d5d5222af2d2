// RUN: kvir-opt %s --convert-linalg-to-loops --kv-lower-to-llvm | mlir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s

// kv.merge_partitions over a partition axis (vLLM PagedAttention v2 /
// FlashDecoding split-KV reduce), base e, 3 partitions, 3 rows:
//   row 0: lse (0, 0, 0), o (1, 2), (3, 4), (5, 6): equal weights ->
//          (3, 4), lse = 0 + ln 3 = 1.09861.
//   row 1: lse (-inf, 2, -inf): only partition 1 counts -> (7, 8), lse 2.
//   row 2: all -inf -> (0, 0), -inf.
// The partition count is dynamic (partitions = ?) and comes from the
// buffers.

// CHECK: rank = 3 offset = 0 sizes = [3, 1, 2]
// CHECK-NEXT: {{\[\[\[}}3, 4]
// CHECK-NEXT: {{\[\[}}7, 8]
// CHECK-NEXT: {{\[\[}}0, 0]
// CHECK: rank = 2 offset = 0 sizes = [3, 1]
// CHECK-NEXT: {{\[\[}}1.09861]
// CHECK-NEXT: {{\[}}2]
// CHECK-NEXT: {{\[}}-inf]

!p = !kv.state<3x1x2xf32, base = e, partitions = ?>
!s = !kv.state<3x1x2xf32, base = e>

// o[partition][row][head][dim], lse[partition][row][head]
memref.global "private" constant @po : memref<3x3x1x2xf32> = dense<[
  [[[1.0, 2.0]], [[0.0, 0.0]], [[0.0, 0.0]]],
  [[[3.0, 4.0]], [[7.0, 8.0]], [[0.0, 0.0]]],
  [[[5.0, 6.0]], [[0.0, 0.0]], [[0.0, 0.0]]]]>
memref.global "private" constant @pl : memref<3x3x1xf32> = dense<[
  [[0.0], [0xFF800000], [0xFF800000]],
  [[0.0], [2.0], [0xFF800000]],
  [[0.0], [0xFF800000], [0xFF800000]]]>

func.func @main() {
  %po = memref.get_global @po : memref<3x3x1x2xf32>
  %pl = memref.get_global @pl : memref<3x3x1xf32>
  %pod = memref.cast %po : memref<3x3x1x2xf32> to memref<?x3x1x2xf32>
  %pld = memref.cast %pl : memref<3x3x1xf32> to memref<?x3x1xf32>
  %p = kv.load_state %pod, %pld : memref<?x3x1x2xf32>, memref<?x3x1xf32> -> !p
  %m = kv.merge_partitions %p : !p -> !s
  %o = memref.alloc() : memref<3x1x2xf32>
  %lse = memref.alloc() : memref<3x1xf32>
  kv.store_state %m, %o, %lse : !s, memref<3x1x2xf32>, memref<3x1xf32>
  %u1 = memref.cast %o : memref<3x1x2xf32> to memref<*xf32>
  call @printMemrefF32(%u1) : (memref<*xf32>) -> ()
  %u2 = memref.cast %lse : memref<3x1xf32> to memref<*xf32>
  call @printMemrefF32(%u2) : (memref<*xf32>) -> ()
  memref.dealloc %o : memref<3x1x2xf32>
  memref.dealloc %lse : memref<3x1xf32>
  return
}

func.func private @printMemrefF32(memref<*xf32>)
