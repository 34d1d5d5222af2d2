// RUN: kvir-opt %s -test-kvir-codegen | FileCheck %s

// AttentionState in the kernels' flavor: base 2 with PTX's ex2.approx and
// lg2.approx (no libdevice call, no math dialect op left for
// convert-gpu-to-nvvm to turn into one), the same -inf guards as the exact
// flavor, and LSEs converted between bases by constant factors.

// CHECK-LABEL: func.func private @ptx
// A base-e input LSE enters base 2: * log2(e).
// CHECK: arith.constant 1.44269502 : f32
// CHECK: %[[M:.*]] = arith.maximumf
// CHECK: %[[EMPTY:.*]] = arith.cmpf oeq, %[[M]], %{{.*}} : f32
// CHECK: %[[REF:.*]] = arith.select %[[EMPTY]], %{{.*}}, %[[M]] : f32
// CHECK: arith.subf %{{.*}}, %[[REF]] : f32
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: llvm.call_intrinsic "llvm.nvvm.lg2.approx.ftz.f"
// The merged LSE leaves base 2 for base e: * ln 2.
// CHECK: arith.constant 0.693147182 : f32
// CHECK-NOT: math.
// CHECK: return
func.func private @ptx(f32, f32, f32, f32, f32, f32) -> (f32, f32, f32, f32)
    attributes {test.component = "attention_state", test.flavor = "ptx"}
