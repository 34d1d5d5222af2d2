// RUN: kvir-opt %s --llvm-host-independent-float --split-input-file | FileCheck %s

// f32 -> bf16: round the low half to even on the integer bits; NaN keeps
// its payload's top bits and is made quiet.
// CHECK-LABEL: llvm.func @truncate_bf16
// CHECK-NOT: llvm.fptrunc
// CHECK-DAG: %[[HALF:.*]] = llvm.mlir.constant(32767 : i32)
// CHECK-DAG: llvm.mlir.constant(2139095040 : i32)
// CHECK: llvm.add %{{.*}}, %[[HALF]] : i32
// CHECK: %[[BITS:.*]] = llvm.trunc %{{.*}} : i32 to i16
// CHECK: %[[R:.*]] = llvm.bitcast %[[BITS]] : i16 to bf16
// CHECK: llvm.return %[[R]] : bf16
llvm.func @truncate_bf16(%x: f32) -> bf16 {
  %r = llvm.fptrunc %x : f32 to bf16
  llvm.return %r : bf16
}

// -----

// f32 -> f16 on vectors: subnormal results through an exact f32 sum with
// 2^23, normal ones on the bits, 65520 and above to infinity.
// CHECK-LABEL: llvm.func @truncate_f16_vector
// CHECK-NOT: llvm.fptrunc
// CHECK: llvm.fadd %{{.*}}, %{{.*}} : vector<2xf32>
// CHECK: llvm.icmp "uge" %{{.*}}, %{{.*}} : vector<2xi32>
// CHECK: llvm.trunc %{{.*}} : vector<2xi32> to vector<2xi16>
// CHECK: llvm.bitcast %{{.*}} : vector<2xi16> to vector<2xf16>
llvm.func @truncate_f16_vector(%x: vector<2xf32>) -> vector<2xf16> {
  %r = llvm.fptrunc %x : vector<2xf32> to vector<2xf16>
  llvm.return %r : vector<2xf16>
}

// -----

// f16 -> f32: integer rebias; subnormals as mantissa * 2^-24 in f32.
// bf16 -> f64: the f32 of the same top half, then an exact fpext.
// CHECK-LABEL: llvm.func @extend
// CHECK-NOT: llvm.fpext %{{.*}} : f16
// CHECK-NOT: llvm.fpext %{{.*}} : bf16
// CHECK: llvm.uitofp %{{.*}} : i32 to f32
// CHECK: llvm.fmul
// CHECK: llvm.fpext %{{.*}} : f32 to f64
llvm.func @extend(%h: f16, %b: bf16) -> f64 {
  %x = llvm.fpext %h : f16 to f32
  %y = llvm.fpext %b : bf16 to f64
  %xd = llvm.fpext %x : f32 to f64
  %s = llvm.fadd %xd, %y : f64
  llvm.return %s : f64
}

// -----

// f64 -> bf16 rounds once: to odd in f32, then to nearest even.
// CHECK-LABEL: llvm.func @truncate_f64
// CHECK: %[[N:.*]] = llvm.fptrunc %{{.*}} : f64 to f32
// CHECK: llvm.fcmp "one"
// CHECK: llvm.or %{{.*}}, %{{.*}} : i32
// CHECK: llvm.bitcast %{{.*}} : i16 to bf16
llvm.func @truncate_f64(%x: f64) -> bf16 {
  %r = llvm.fptrunc %x : f64 to bf16
  llvm.return %r : bf16
}

// -----

// i64 -> f16: to f64 rounded to odd (a sticky bit past 2^53), then once.
// CHECK-LABEL: llvm.func @from_i64
// CHECK-NOT: llvm.sitofp %{{.*}} : i64 to f16
// CHECK: llvm.uitofp %{{.*}} : i64 to f64
// CHECK: llvm.fneg
// CHECK: llvm.bitcast %{{.*}} : i16 to f16
llvm.func @from_i64(%x: i64) -> f16 {
  %r = llvm.sitofp %x : i64 to f16
  llvm.return %r : f16
}

// -----

// Arithmetic on f16 runs in f32 and rounds back once; comparisons are exact
// in f32; fneg only flips the sign bit.
// CHECK-LABEL: llvm.func @arith
// CHECK: llvm.fmul %{{.*}}, %{{.*}} : vector<4xf32>
// CHECK: llvm.xor %{{.*}}, %{{.*}} : vector<4xi16>
// CHECK: llvm.fcmp "olt" %{{.*}}, %{{.*}} : vector<4xf32>
// CHECK-NOT: f16>
// CHECK: llvm.return
llvm.func @arith(%a: vector<4xf16>, %b: vector<4xf16>) -> vector<4xi1> {
  %p = llvm.fmul %a, %b : vector<4xf16>
  %n = llvm.fneg %p : vector<4xf16>
  %c = llvm.fcmp "olt" %n, %b : vector<4xf16>
  llvm.return %c : vector<4xi1>
}

// -----

// fma on bf16: exact product in f64, the sum rounded to odd there.
// CHECK-LABEL: llvm.func @fma_bf16
// CHECK-NOT: llvm.intr.fma
// CHECK: llvm.fmul %{{.*}}, %{{.*}} : f64
// CHECK: llvm.fadd %{{.*}}, %{{.*}} : f64
// CHECK: llvm.fcmp "one"
llvm.func @fma_bf16(%a: bf16, %b: bf16, %c: bf16) -> bf16 {
  %r = llvm.intr.fma(%a, %b, %c) : (bf16, bf16, bf16) -> bf16
  llvm.return %r : bf16
}

// -----

// What LLVM leaves to the backend is pinned: fmuladd fuses, fast-math
// flags go, fptosi saturates (NaN -> 0), maxnum orders -0 below +0.
// CHECK-LABEL: llvm.func @pinned
// CHECK: llvm.intr.fma(%{{.*}}) : (f32, f32, f32) -> f32
// CHECK-NOT: fastmath
// CHECK: llvm.and %{{.*}}, %{{.*}} : i32
// CHECK: llvm.fcmp "uno"
// CHECK: llvm.fptosi %{{.*}} : f32 to i32
// CHECK: llvm.fcmp "oge" %{{.*}}, %{{.*}} : f32
// CHECK-NOT: llvm.intr.maxnum
// CHECK-NOT: llvm.intr.fmuladd
llvm.func @pinned(%a: f32, %b: f32, %c: f32) -> i32 {
  %m = llvm.intr.fmuladd(%a, %b, %c) : (f32, f32, f32) -> f32
  %s = llvm.fadd %m, %c {fastmathFlags = #llvm.fastmath<contract, afn>} : f32
  %x = llvm.intr.maxnum(%s, %a) : (f32, f32) -> f32
  %i = llvm.fptosi %x : f32 to i32
  llvm.return %i : i32
}

// -----

// f16 / bf16 values that are only moved become i16 bits, phis included;
// the signature keeps its types (cast at entry and return).
// CHECK-LABEL: llvm.func @moved
// CHECK-SAME: (%{{.*}}: i1, %[[P:.*]]: !llvm.ptr, %[[A:.*]]: bf16) -> bf16
// CHECK: %[[ABITS:.*]] = llvm.bitcast %[[A]] : bf16 to i16
// CHECK: %[[L:.*]] = llvm.load %[[P]] : !llvm.ptr -> i16
// CHECK: llvm.cond_br %{{.*}}, ^[[JOIN:.*]](%[[L]] : i16), ^[[JOIN]](%[[ABITS]] : i16)
// CHECK: ^[[JOIN]](%[[V:.*]]: i16):
// CHECK: llvm.store %[[V]], %[[P]] : i16, !llvm.ptr
// CHECK: %[[R:.*]] = llvm.bitcast %[[V]] : i16 to bf16
// CHECK: llvm.return %[[R]] : bf16
llvm.func @moved(%c: i1, %p: !llvm.ptr, %a: bf16) -> bf16 {
  %l = llvm.load %p : !llvm.ptr -> bf16
  llvm.cond_br %c, ^join(%l : bf16), ^join(%a : bf16)
^join(%v: bf16):
  llvm.store %v, %p : bf16, !llvm.ptr
  llvm.return %v : bf16
}

// -----

// Narrow constants become their bits.
// CHECK-LABEL: llvm.func @constant
// CHECK: llvm.mlir.constant(dense<16256> : vector<2xi16>) : vector<2xi16>
// CHECK: llvm.store %{{.*}}, %{{.*}} : vector<2xi16>, !llvm.ptr
llvm.func @constant(%p: !llvm.ptr) {
  %c = llvm.mlir.constant(dense<1.0> : vector<2xbf16>) : vector<2xbf16>
  llvm.store %c, %p : vector<2xbf16>, !llvm.ptr
  llvm.return
}

// -----

// A gpu.module's kernels are left for the GPU.
// CHECK-LABEL: gpu.module @kernels
// CHECK: llvm.fptrunc %{{.*}} : f32 to bf16
module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @k(%x: f32) -> bf16 {
      %r = llvm.fptrunc %x : f32 to bf16
      llvm.return %r : bf16
    }
  }
}

// -----

// An array of narrow vectors as one dense constant.
// CHECK-LABEL: llvm.func @array_constant
// CHECK: llvm.mlir.constant(dense<0> : vector<4x2xi16>) : !llvm.array<4 x vector<2xi16>>
// CHECK: llvm.extractvalue %{{.*}}[1] : !llvm.array<4 x vector<2xi16>>
llvm.func @array_constant(%p: !llvm.ptr) {
  %c = llvm.mlir.constant(dense<0.0> : vector<4x2xf16>) : !llvm.array<4 x vector<2xf16>>
  %e = llvm.extractvalue %c[1] : !llvm.array<4 x vector<2xf16>>
  llvm.store %e, %p : vector<2xf16>, !llvm.ptr
  llvm.return
}

// -----

// Saturation for any width: i128 gets its own limits.
// CHECK-LABEL: llvm.func @to_i128
// CHECK: llvm.fptosi %{{.*}} : f32 to i128
// CHECK: llvm.mlir.constant(170141183460469231731687303715884105727 : i128)
llvm.func @to_i128(%x: f32) -> i128 {
  %r = llvm.fptosi %x : f32 to i128
  llvm.return %r : i128
}
