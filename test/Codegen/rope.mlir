// RUN: kvir-opt %s -test-kvir-codegen | FileCheck %s --check-prefix=IR
// RUN: kvir-opt %s -test-kvir-codegen | kvir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s

// Rope, PTX flavor: the angle position * scale * theta^(-2i / D) in f32,
// reduced by 2 pi (Cody-Waite, two fused steps) into [-pi, pi] before
// sin.approx / cos.approx, no libdevice. The host recomputes each f32 angle
// with the same f32 operations and takes its cos and sin in f64: the
// kernel may differ only by the reduction's rounding (about 3e-7), here
// bounded by 2e-6, for positions up to 65535 (angles up to 65535 rad,
// where dropping the reduction's second step alone would cost 2e-3).

// IR-LABEL: gpu.func @rope
// IR: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// IR: arith.fptosi
// IR: llvm.intr.fma
// IR: llvm.intr.fma
// IR: llvm.call_intrinsic "llvm.nvvm.cos.approx.ftz.f"
// IR: llvm.call_intrinsic "llvm.nvvm.sin.approx.ftz.f"
// IR-NOT: math.
// IR: gpu.return

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @rope(%positions: memref<?xi32>, %out: memref<?x2xf32>) kernel
        attributes {test.component = "rope", test.style = "rotate_half",
                    test.theta = 1.0e+04 : f64, test.scale = 1.0 : f64,
                    test.head_dim = 128 : i64} {
      gpu.return
    }
  }

  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c5 = arith.constant 5 : index
    %c6 = arith.constant 6 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %c384 = arith.constant 384 : index
    %positions = memref.alloc(%c6) : memref<?xi32>
    %p0 = arith.constant 0 : i32
    %p1 = arith.constant 1 : i32
    %p2 = arith.constant 7 : i32
    %p3 = arith.constant 100 : i32
    %p4 = arith.constant 4097 : i32
    %p5 = arith.constant 65535 : i32
    memref.store %p0, %positions[%c0] : memref<?xi32>
    memref.store %p1, %positions[%c1] : memref<?xi32>
    memref.store %p2, %positions[%c2] : memref<?xi32>
    memref.store %p3, %positions[%c3] : memref<?xi32>
    memref.store %p4, %positions[%c4] : memref<?xi32>
    memref.store %p5, %positions[%c5] : memref<?xi32>
    %out = memref.alloc(%c384) : memref<?x2xf32>
    gpu.launch_func @kernels::@rope blocks in (%c3, %c1, %c1) threads in (%c128, %c1, %c1)
        args(%positions : memref<?xi32>, %out : memref<?x2xf32>)
    // The host's angles: the kernel's f32 operations, written again here;
    // cos and sin in f64.
    %k = arith.constant -0.20762050593046014 : f32
    %scale = arith.constant 1.0 : f32
    %tol = arith.constant 2.0e-06 : f64
    %zero = arith.constant 0 : i32
    %one = arith.constant 1 : i32
    %bad = scf.for %i = %c0 to %c384 step %c1 iter_args(%n = %zero) -> i32 {
      %row = arith.divui %i, %c64 : index
      %pair = arith.remui %i, %c64 : index
      %pos = memref.load %positions[%row] : memref<?xi32>
      %pair32 = arith.index_cast %pair : index to i32
      %pairF = arith.uitofp %pair32 : i32 to f32
      %e = arith.mulf %pairF, %k : f32
      %freq = math.exp2 %e : f32
      %posF = arith.sitofp %pos : i32 to f32
      %ps = arith.mulf %posF, %scale : f32
      %angle = arith.mulf %ps, %freq : f32
      %a64 = arith.extf %angle : f32 to f64
      %cref = math.cos %a64 : f64
      %sref = math.sin %a64 : f64
      %cgot = memref.load %out[%i, %c0] : memref<?x2xf32>
      %sgot = memref.load %out[%i, %c1] : memref<?x2xf32>
      %cg = arith.extf %cgot : f32 to f64
      %sg = arith.extf %sgot : f32 to f64
      %dc = arith.subf %cg, %cref : f64
      %ds = arith.subf %sg, %sref : f64
      %adc = math.absf %dc : f64
      %ads = math.absf %ds : f64
      // NaN never passes: ugt is true for NaN.
      %badc = arith.cmpf ugt, %adc, %tol : f64
      %bads = arith.cmpf ugt, %ads, %tol : f64
      %either = arith.ori %badc, %bads : i1
      %inc = arith.select %either, %one, %zero : i32
      %m = arith.addi %n, %inc : i32
      scf.yield %m : i32
    }
    vector.print str "bad "
    vector.print %bad : i32
    return
  }
}

// CHECK: bad 0
