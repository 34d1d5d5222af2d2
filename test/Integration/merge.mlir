// RUN: kvir-opt %s --convert-linalg-to-loops --kv-lower-to-llvm | mlir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s

// kv.merge of states with known LSEs (docs/Semantics.md): m = max(l);
// empty if m = -inf; else w = B^(l - m), o = sum w o / sum w,
// l = m + log_B(sum w).
//
// Base 2, 4 rows, 1 head, Dv = 2:
//        A: o       lse     B: o      lse
//   row 0: (3, 0)    1        (0, 3)   0
//   row 1: (5, 7)    2        (0, 0)   -inf (empty)
//   row 2: (0, 0)    -inf     (0, 0)   -inf
//   row 3: (1, 2)    -3       (3, 6)   -3
// merge(A, B):
//   row 0: w = 1, 1/2 -> o = ((3, 0) + (0, 1.5)) / 1.5 = (2, 1),
//          lse = 1 + log2 1.5 = log2 3 = 1.58496.
//   row 1: B is the identity -> (5, 7), lse 2.
//   row 2: all empty -> (0, 0), -inf.
//   row 3: w = 1, 1 -> (2, 4), lse = -3 + log2 2 = -2.
// merge(A, B, A):
//   row 0: w = 1, 1/2, 1 -> o = (6, 1.5) / 2.5 = (2.4, 0.6),
//          lse = 1 + log2 2.5 = 2.32193.
//   row 1: w = 1, 0, 1 -> (5, 7), lse = 2 + 1 = 3.
//   row 2: (0, 0), -inf.
//   row 3: w = 1, 1, 1 -> (5/3, 10/3) = (1.66667, 3.33333),
//          lse = -3 + log2 3 = -1.41504.
// merge(A, empty_state) = A.
// Base e, one row: C = ((2, 4), 1), D = ((6, 8), 1) -> (4, 6),
//   lse = 1 + ln 2 = 1.69315.

// merge(A, B)
// CHECK: rank = 3 offset = 0 sizes = [4, 1, 2]
// CHECK-NEXT: {{\[\[\[}}2, 1]
// CHECK-NEXT: {{\[\[}}5, 7]
// CHECK-NEXT: {{\[\[}}0, 0]
// CHECK-NEXT: {{\[\[}}2, 4]
// CHECK: rank = 2 offset = 0 sizes = [4, 1]
// CHECK-NEXT: {{\[\[}}1.58496]
// CHECK-NEXT: {{\[}}2]
// CHECK-NEXT: {{\[}}-inf]
// CHECK-NEXT: {{\[}}-2]
// merge(A, B, A)
// CHECK: rank = 3 offset = 0 sizes = [4, 1, 2]
// CHECK-NEXT: {{\[\[\[}}2.4, 0.6]
// CHECK-NEXT: {{\[\[}}5, 7]
// CHECK-NEXT: {{\[\[}}0, 0]
// CHECK-NEXT: {{\[\[}}1.66667, 3.33333]
// CHECK: rank = 2 offset = 0 sizes = [4, 1]
// CHECK-NEXT: {{\[\[}}2.32193]
// CHECK-NEXT: {{\[}}3]
// CHECK-NEXT: {{\[}}-inf]
// CHECK-NEXT: {{\[}}-1.41504]
// merge(A, empty)
// CHECK: rank = 3 offset = 0 sizes = [4, 1, 2]
// CHECK-NEXT: {{\[\[\[}}3, 0]
// CHECK-NEXT: {{\[\[}}5, 7]
// CHECK-NEXT: {{\[\[}}0, 0]
// CHECK-NEXT: {{\[\[}}1, 2]
// CHECK: rank = 2 offset = 0 sizes = [4, 1]
// CHECK-NEXT: {{\[\[}}1]
// CHECK-NEXT: {{\[}}2]
// CHECK-NEXT: {{\[}}-inf]
// CHECK-NEXT: {{\[}}-3]
// base e
// CHECK: rank = 3 offset = 0 sizes = [1, 1, 2]
// CHECK-NEXT: {{\[\[\[}}4, 6]
// CHECK: rank = 2 offset = 0 sizes = [1, 1]
// CHECK-NEXT: {{\[\[}}1.69315]

!s = !kv.state<4x1x2xf32, base = 2>
!se = !kv.state<1x1x2xf32, base = e>

memref.global "private" constant @ao : memref<4x1x2xf32> = dense<[[[3.0, 0.0]], [[5.0, 7.0]], [[0.0, 0.0]], [[1.0, 2.0]]]>
memref.global "private" constant @al : memref<4x1xf32> = dense<[[1.0], [2.0], [0xFF800000], [-3.0]]>
memref.global "private" constant @bo : memref<4x1x2xf32> = dense<[[[0.0, 3.0]], [[0.0, 0.0]], [[0.0, 0.0]], [[3.0, 6.0]]]>
memref.global "private" constant @bl : memref<4x1xf32> = dense<[[0.0], [0xFF800000], [0xFF800000], [-3.0]]>
memref.global "private" constant @co : memref<1x1x2xf32> = dense<[[[2.0, 4.0]]]>
memref.global "private" constant @do : memref<1x1x2xf32> = dense<[[[6.0, 8.0]]]>
memref.global "private" constant @one : memref<1x1xf32> = dense<1.0>

func.func @main() {
  %ao = memref.get_global @ao : memref<4x1x2xf32>
  %al = memref.get_global @al : memref<4x1xf32>
  %bo = memref.get_global @bo : memref<4x1x2xf32>
  %bl = memref.get_global @bl : memref<4x1xf32>
  %co = memref.get_global @co : memref<1x1x2xf32>
  %do = memref.get_global @do : memref<1x1x2xf32>
  %one = memref.get_global @one : memref<1x1xf32>
  %o = memref.alloc() : memref<4x1x2xf32>
  %lse = memref.alloc() : memref<4x1xf32>
  %o1 = memref.alloc() : memref<1x1x2xf32>
  %lse1 = memref.alloc() : memref<1x1xf32>
  %a = kv.load_state %ao, %al : memref<4x1x2xf32>, memref<4x1xf32> -> !s
  %b = kv.load_state %bo, %bl : memref<4x1x2xf32>, memref<4x1xf32> -> !s

  %ab = kv.merge %a, %b : !s, !s -> !s
  kv.store_state %ab, %o, %lse : !s, memref<4x1x2xf32>, memref<4x1xf32>
  %u1 = memref.cast %o : memref<4x1x2xf32> to memref<*xf32>
  call @printMemrefF32(%u1) : (memref<*xf32>) -> ()
  %u2 = memref.cast %lse : memref<4x1xf32> to memref<*xf32>
  call @printMemrefF32(%u2) : (memref<*xf32>) -> ()

  %aba = kv.merge %a, %b, %a : !s, !s, !s -> !s
  kv.store_state %aba, %o, %lse : !s, memref<4x1x2xf32>, memref<4x1xf32>
  %u3 = memref.cast %o : memref<4x1x2xf32> to memref<*xf32>
  call @printMemrefF32(%u3) : (memref<*xf32>) -> ()
  %u4 = memref.cast %lse : memref<4x1xf32> to memref<*xf32>
  call @printMemrefF32(%u4) : (memref<*xf32>) -> ()

  %e = kv.empty_state : !s
  %ae = kv.merge %a, %e : !s, !s -> !s
  kv.store_state %ae, %o, %lse : !s, memref<4x1x2xf32>, memref<4x1xf32>
  %u5 = memref.cast %o : memref<4x1x2xf32> to memref<*xf32>
  call @printMemrefF32(%u5) : (memref<*xf32>) -> ()
  %u6 = memref.cast %lse : memref<4x1xf32> to memref<*xf32>
  call @printMemrefF32(%u6) : (memref<*xf32>) -> ()

  %c = kv.load_state %co, %one : memref<1x1x2xf32>, memref<1x1xf32> -> !se
  %d = kv.load_state %do, %one : memref<1x1x2xf32>, memref<1x1xf32> -> !se
  %cd = kv.merge %c, %d : !se, !se -> !se
  kv.store_state %cd, %o1, %lse1 : !se, memref<1x1x2xf32>, memref<1x1xf32>
  %u7 = memref.cast %o1 : memref<1x1x2xf32> to memref<*xf32>
  call @printMemrefF32(%u7) : (memref<*xf32>) -> ()
  %u8 = memref.cast %lse1 : memref<1x1xf32> to memref<*xf32>
  call @printMemrefF32(%u8) : (memref<*xf32>) -> ()

  memref.dealloc %o : memref<4x1x2xf32>
  memref.dealloc %lse : memref<4x1xf32>
  memref.dealloc %o1 : memref<1x1x2xf32>
  memref.dealloc %lse1 : memref<1x1xf32>
  return
}

func.func private @printMemrefF32(memref<*xf32>)
