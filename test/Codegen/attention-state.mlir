// RUN: kvir-opt %s -test-kvir-codegen | FileCheck %s --check-prefix=IR
// RUN: kvir-opt %s -test-kvir-codegen --kv-lower-to-llvm | mlir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s

// AttentionState, the one implementation of the state algebra, in the flavor
// kv-to-loops emits (base e, math.exp / math.log; attention-state-ptx.mlir
// has the kernels' flavor): merge two normalized base-e states, and run one
// online update from the empty state finalized in base 2. It runs on the
// CPU against hand-computed values, including merges with empty states (no
// NaN, the empty state is the identity).

// IR-LABEL: func.func private @exact
// IR-NOT: llvm.call_intrinsic
// The reference point of the weights: the max, or 0 while it is -inf.
// IR: %[[M:.*]] = arith.maximumf
// IR: %[[EMPTY:.*]] = arith.cmpf oeq, %[[M]], %{{.*}} : f32
// IR: %[[REF:.*]] = arith.select %[[EMPTY]], %{{.*}}, %[[M]] : f32
// IR: arith.subf %{{.*}}, %[[REF]] : f32
// IR: math.exp
// IR: math.log

func.func private @exact(f32, f32, f32, f32, f32, f32) -> (f32, f32, f32, f32)
    attributes {test.component = "attention_state", test.flavor = "exact"}

func.func @run(%oa: f32, %la: f32, %ob: f32, %lb: f32, %s: f32, %v: f32) {
  %r:4 = call @exact(%oa, %la, %ob, %lb, %s, %v) : (f32, f32, f32, f32, f32, f32) -> (f32, f32, f32, f32)
  vector.print %r#0 : f32 punctuation <comma>
  vector.print %r#1 : f32 punctuation <comma>
  vector.print %r#2 : f32 punctuation <comma>
  vector.print %r#3 : f32
  return
}

func.func @main() {
  %ninf = arith.constant 0xFF800000 : f32
  %f0 = arith.constant 0.0 : f32
  %f1 = arith.constant 1.0 : f32
  %f2 = arith.constant 2.0 : f32
  %f3 = arith.constant 3.0 : f32
  %f5 = arith.constant 5.0 : f32
  %f7 = arith.constant 7.0 : f32
  %ln3 = arith.constant 1.09861229 : f32
  // merge((1, 0), (3, ln 3)): weights 1 and 3, o = (1 + 9) / 4 = 2.5,
  // lse = ln 4 = 1.386294; one key of logit 2 (base e) and value 5:
  // o = 5, lse in base 2 = 2 log2(e) = 2.885390.
  // CHECK: 2.5, 1.38629, 5, 2.88539
  call @run(%f1, %f0, %f3, %ln3, %f2, %f5) : (f32, f32, f32, f32, f32, f32) -> ()
  // The empty state is the identity: merge((0, -inf), (7, 1)) = (7, 1).
  // CHECK-NEXT: 7, 1, 5, 2.88539
  call @run(%f0, %ninf, %f7, %f1, %f2, %f5) : (f32, f32, f32, f32, f32, f32) -> ()
  // Two empty states merge to the empty state, never NaN.
  // CHECK-NEXT: 0, -inf, 5, 2.88539
  call @run(%f0, %ninf, %f0, %ninf, %f2, %f5) : (f32, f32, f32, f32, f32, f32) -> ()
  return
}
