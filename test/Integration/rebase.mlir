// RUN: kvir-opt %s --convert-linalg-to-loops --kv-lower-to-llvm | mlir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s

// kv.rebase: lse_e = lse_2 * ln 2 (and back), and an imported +inf LSE
// (FlashMLA's empty set) becomes -inf with o = 0, so that merging it is the
// identity instead of NaN.
//
// A (base 2): row 0 (1, 2) lse 1; row 1 (9, 9) lse +inf (empty, FlashMLA
// style); row 2 (0, 0) lse -inf; row 3 (3, 4) lse -2.
// rebase A to e: lse * ln 2 = 0.693147, -inf (normalized), -inf,
//   -2 ln 2 = -1.38629; o row 1 -> (0, 0).
// rebase A to 2 (same base): only the normalization: 1, -inf, -inf, -2.
// C (base e) = ((5, 5), 1) rebased to 2: lse = 1 / ln 2 = 1.4427.
// merge(rebase(A to e), D) with D = ((10, 20), 0) on every row (base e):
//   row 0: m = ln 2, w_A = 1, w_D = e^-ln2 = 1/2 -> o = ((1, 2) + (5, 10))
//          / 1.5 = (4, 8), lse = ln 2 + ln 1.5 = ln 3 = 1.09861.
//   rows 1, 2: A is empty -> D: (10, 20), lse 0.
//   row 3: m = 0, w_A = e^(-2 ln 2) = 1/4, w_D = 1 -> o = ((0.75, 1) +
//          (10, 20)) / 1.25 = (8.6, 16.8), lse = ln 1.25 = 0.223144.

// rebase 2 -> e
// CHECK: rank = 3 offset = 0 sizes = [4, 1, 2]
// CHECK-NEXT: {{\[\[\[}}1, 2]
// CHECK-NEXT: {{\[\[}}0, 0]
// CHECK-NEXT: {{\[\[}}0, 0]
// CHECK-NEXT: {{\[\[}}3, 4]
// CHECK: rank = 2 offset = 0 sizes = [4, 1]
// CHECK-NEXT: {{\[\[}}0.693147]
// CHECK-NEXT: {{\[}}-inf]
// CHECK-NEXT: {{\[}}-inf]
// CHECK-NEXT: {{\[}}-1.38629]
// rebase 2 -> 2
// CHECK: rank = 3 offset = 0 sizes = [4, 1, 2]
// CHECK-NEXT: {{\[\[\[}}1, 2]
// CHECK-NEXT: {{\[\[}}0, 0]
// CHECK-NEXT: {{\[\[}}0, 0]
// CHECK-NEXT: {{\[\[}}3, 4]
// CHECK: rank = 2 offset = 0 sizes = [4, 1]
// CHECK-NEXT: {{\[\[}}1]
// CHECK-NEXT: {{\[}}-inf]
// CHECK-NEXT: {{\[}}-inf]
// CHECK-NEXT: {{\[}}-2]
// rebase e -> 2
// CHECK: rank = 3 offset = 0 sizes = [1, 1, 2]
// CHECK-NEXT: {{\[\[\[}}5, 5]
// CHECK: rank = 2 offset = 0 sizes = [1, 1]
// CHECK-NEXT: {{\[\[}}1.4427]
// merge after normalization
// CHECK: rank = 3 offset = 0 sizes = [4, 1, 2]
// CHECK-NEXT: {{\[\[\[}}4, 8]
// CHECK-NEXT: {{\[\[}}10, 20]
// CHECK-NEXT: {{\[\[}}10, 20]
// CHECK-NEXT: {{\[\[}}8.6, 16.8]
// CHECK: rank = 2 offset = 0 sizes = [4, 1]
// CHECK-NEXT: {{\[\[}}1.09861]
// CHECK-NEXT: {{\[}}0]
// CHECK-NEXT: {{\[}}0]
// CHECK-NEXT: {{\[}}0.223144]

!s2 = !kv.state<4x1x2xf32, base = 2>
!se = !kv.state<4x1x2xf32, base = e>
!c = !kv.state<1x1x2xf32, base = e>
!c2 = !kv.state<1x1x2xf32, base = 2>

memref.global "private" constant @ao : memref<4x1x2xf32> = dense<[[[1.0, 2.0]], [[9.0, 9.0]], [[0.0, 0.0]], [[3.0, 4.0]]]>
memref.global "private" constant @al : memref<4x1xf32> = dense<[[1.0], [0x7F800000], [0xFF800000], [-2.0]]>
memref.global "private" constant @co : memref<1x1x2xf32> = dense<5.0>
memref.global "private" constant @cl : memref<1x1xf32> = dense<1.0>
memref.global "private" constant @do : memref<4x1x2xf32> = dense<[[[10.0, 20.0]], [[10.0, 20.0]], [[10.0, 20.0]], [[10.0, 20.0]]]>
memref.global "private" constant @dl : memref<4x1xf32> = dense<0.0>

func.func @main() {
  %ao = memref.get_global @ao : memref<4x1x2xf32>
  %al = memref.get_global @al : memref<4x1xf32>
  %co = memref.get_global @co : memref<1x1x2xf32>
  %cl = memref.get_global @cl : memref<1x1xf32>
  %do = memref.get_global @do : memref<4x1x2xf32>
  %dl = memref.get_global @dl : memref<4x1xf32>
  %o = memref.alloc() : memref<4x1x2xf32>
  %lse = memref.alloc() : memref<4x1xf32>
  %o1 = memref.alloc() : memref<1x1x2xf32>
  %lse1 = memref.alloc() : memref<1x1xf32>
  %a = kv.load_state %ao, %al : memref<4x1x2xf32>, memref<4x1xf32> -> !s2

  %ae = kv.rebase %a : !s2 -> !se
  kv.store_state %ae, %o, %lse : !se, memref<4x1x2xf32>, memref<4x1xf32>
  %u1 = memref.cast %o : memref<4x1x2xf32> to memref<*xf32>
  call @printMemrefF32(%u1) : (memref<*xf32>) -> ()
  %u2 = memref.cast %lse : memref<4x1xf32> to memref<*xf32>
  call @printMemrefF32(%u2) : (memref<*xf32>) -> ()

  %a2 = kv.rebase %a : !s2 -> !s2
  kv.store_state %a2, %o, %lse : !s2, memref<4x1x2xf32>, memref<4x1xf32>
  %u3 = memref.cast %o : memref<4x1x2xf32> to memref<*xf32>
  call @printMemrefF32(%u3) : (memref<*xf32>) -> ()
  %u4 = memref.cast %lse : memref<4x1xf32> to memref<*xf32>
  call @printMemrefF32(%u4) : (memref<*xf32>) -> ()

  %c = kv.load_state %co, %cl : memref<1x1x2xf32>, memref<1x1xf32> -> !c
  %c2 = kv.rebase %c : !c -> !c2
  kv.store_state %c2, %o1, %lse1 : !c2, memref<1x1x2xf32>, memref<1x1xf32>
  %u5 = memref.cast %o1 : memref<1x1x2xf32> to memref<*xf32>
  call @printMemrefF32(%u5) : (memref<*xf32>) -> ()
  %u6 = memref.cast %lse1 : memref<1x1xf32> to memref<*xf32>
  call @printMemrefF32(%u6) : (memref<*xf32>) -> ()

  %d = kv.load_state %do, %dl : memref<4x1x2xf32>, memref<4x1xf32> -> !se
  %m = kv.merge %ae, %d : !se, !se -> !se
  kv.store_state %m, %o, %lse : !se, memref<4x1x2xf32>, memref<4x1xf32>
  %u7 = memref.cast %o : memref<4x1x2xf32> to memref<*xf32>
  call @printMemrefF32(%u7) : (memref<*xf32>) -> ()
  %u8 = memref.cast %lse : memref<4x1xf32> to memref<*xf32>
  call @printMemrefF32(%u8) : (memref<*xf32>) -> ()

  memref.dealloc %o : memref<4x1x2xf32>
  memref.dealloc %lse : memref<4x1xf32>
  memref.dealloc %o1 : memref<1x1x2xf32>
  memref.dealloc %lse1 : memref<1x1xf32>
  return
}

func.func private @printMemrefF32(memref<*xf32>)
