// RUN: kvir-opt %s -test-kvir-codegen | FileCheck %s --check-prefix=IR
// RUN: kvir-opt %s -test-kvir-codegen | kvir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s

// TileRotation, the prefill kernel's in-place RoPE: a [16, 64] f16 tile in
// (swizzled) shared memory, row r rotated to positions[r] by 128 threads,
// each keeping one 16-byte unit column (a rotate-half chunk and its
// partner R/2 dims up, or an interleaved chunk of 4 pairs) with its pair
// frequencies computed once. The host rotates the same rows in f64 (angle
// position * 10000^(-2i/R), cos and sin in f64) and counts elements off by
// more than 3e-3 (f16 rounding of values up to 1, plus the f32 angle's
// error at positions up to 20000); dims past rotary_dim must come back
// exactly.

// IR-LABEL: gpu.func @rotate_half
// IR-COUNT-8: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// IR: scf.for
// IR: llvm.call_intrinsic "llvm.nvvm.cos.approx.ftz.f"
// IR-NOT: math.
// IR: gpu.return

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @rotate_half(%in: memref<16x64xf16>, %pos: memref<16xi32>, %out: memref<16x64xf16>) kernel
        attributes {test.component = "tile_rotation", test.style = "rotate_half", test.rotary_dim = 32 : i64} {
      gpu.return
    }
    gpu.func @interleave(%in: memref<16x64xf16>, %pos: memref<16xi32>, %out: memref<16x64xf16>) kernel
        attributes {test.component = "tile_rotation", test.style = "interleave", test.rotary_dim = 0 : i64} {
      gpu.return
    }
  }

  // Elements of `out` that are not `in` rotated: rotate-half (%half) or
  // interleaved pairs over the first %rot dims, the rest unchanged.
  func.func @count_bad(%in: memref<16x64xf16>, %pos: memref<16xi32>, %out: memref<16x64xf16>, %half: i1, %rot: index) -> i32 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    %zero = arith.constant 0 : i32
    %one = arith.constant 1 : i32
    %tol = arith.constant 3.0e-03 : f64
    %log2theta = arith.constant 13.287712379549449 : f64
    %minus2 = arith.constant -2.0 : f64
    %h = arith.divui %rot, %c2 : index
    %rot64 = arith.index_cast %rot : index to i64
    %rotF = arith.sitofp %rot64 : i64 to f64
    %bad = scf.for %r = %c0 to %c16 step %c1 iter_args(%n0 = %zero) -> i32 {
      %p32 = memref.load %pos[%r] : memref<16xi32>
      %p = arith.sitofp %p32 : i32 to f64
      %rowBad = scf.for %d = %c0 to %c64 step %c1 iter_args(%n = %n0) -> i32 {
        %got16 = memref.load %out[%r, %d] : memref<16x64xf16>
        %got = arith.extf %got16 : f16 to f64
        %own16 = memref.load %in[%r, %d] : memref<16x64xf16>
        %own = arith.extf %own16 : f16 to f64
        %rotated = arith.cmpi ult, %d, %rot : index
        %isBad = scf.if %rotated -> i1 {
          // (pair, first, second, whether d is the pair's first)
          %i, %a, %b, %first = scf.if %half -> (index, index, index, i1) {
            %low = arith.cmpi ult, %d, %h : index
            %dh = arith.subi %d, %h : index
            %i = arith.select %low, %d, %dh : index
            %ih = arith.addi %i, %h : index
            scf.yield %i, %i, %ih, %low : index, index, index, i1
          } else {
            %i = arith.divui %d, %c2 : index
            %a = arith.muli %i, %c2 : index
            %b = arith.addi %a, %c1 : index
            %first = arith.cmpi eq, %a, %d : index
            scf.yield %i, %a, %b, %first : index, index, index, i1
          }
          %i64 = arith.index_cast %i : index to i64
          %iF = arith.sitofp %i64 : i64 to f64
          %e0 = arith.mulf %iF, %minus2 : f64
          %e1 = arith.divf %e0, %rotF : f64
          %e = arith.mulf %e1, %log2theta : f64
          %freq = math.exp2 %e : f64
          %angle = arith.mulf %p, %freq : f64
          %c = math.cos %angle : f64
          %s = math.sin %angle : f64
          %x16 = memref.load %in[%r, %a] : memref<16x64xf16>
          %y16 = memref.load %in[%r, %b] : memref<16x64xf16>
          %x = arith.extf %x16 : f16 to f64
          %y = arith.extf %y16 : f16 to f64
          %xc = arith.mulf %x, %c : f64
          %ys = arith.mulf %y, %s : f64
          %yc = arith.mulf %y, %c : f64
          %xs = arith.mulf %x, %s : f64
          %u = arith.subf %xc, %ys : f64
          %v = arith.addf %yc, %xs : f64
          %want = arith.select %first, %u, %v : f64
          %diff = arith.subf %got, %want : f64
          %err = math.absf %diff : f64
          // NaN never passes: ugt is true for NaN.
          %off = arith.cmpf ugt, %err, %tol : f64
          scf.yield %off : i1
        } else {
          %changed = arith.cmpf une, %got, %own : f64
          scf.yield %changed : i1
        }
        %inc = arith.select %isBad, %one, %zero : i32
        %m = arith.addi %n, %inc : i32
        scf.yield %m : i32
      }
      scf.yield %rowBad : i32
    }
    return %bad : i32
  }

  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %in = memref.alloc() : memref<16x64xf16>
    %pos = memref.alloc() : memref<16xi32>
    %out = memref.alloc() : memref<16x64xf16>
    %nan = arith.constant 0x7E00 : f16
    // Inputs sin(0.7 r + 1.3 d + 0.1) (never zero), outputs NaN; positions
    // 0, 1, 2, 5, ... up to 20000.
    %k1 = arith.constant 0.7 : f32
    %k2 = arith.constant 1.3 : f32
    %k3 = arith.constant 0.1 : f32
    scf.for %r = %c0 to %c16 step %c1 {
      %r32 = arith.index_cast %r : index to i32
      %rF = arith.sitofp %r32 : i32 to f32
      scf.for %d = %c0 to %c64 step %c1 {
        %d32 = arith.index_cast %d : index to i32
        %dF = arith.sitofp %d32 : i32 to f32
        %a = arith.mulf %rF, %k1 : f32
        %b = arith.mulf %dF, %k2 : f32
        %ab = arith.addf %a, %b : f32
        %arg = arith.addf %ab, %k3 : f32
        %v = math.sin %arg : f32
        %v16 = arith.truncf %v : f32 to f16
        memref.store %v16, %in[%r, %d] : memref<16x64xf16>
        memref.store %nan, %out[%r, %d] : memref<16x64xf16>
      }
      %sq = arith.muli %r32, %r32 : i32
      %cube = arith.muli %sq, %r32 : i32
      %c6 = arith.constant 6 : i32
      %p = arith.muli %cube, %c6 : i32
      %q = arith.addi %p, %r32 : i32
      memref.store %q, %pos[%r] : memref<16xi32>
    }
    gpu.launch_func @kernels::@rotate_half blocks in (%c1, %c1, %c1) threads in (%c128, %c1, %c1)
        args(%in : memref<16x64xf16>, %pos : memref<16xi32>, %out : memref<16x64xf16>)
    %true = arith.constant true
    %bad0 = func.call @count_bad(%in, %pos, %out, %true, %c32) : (memref<16x64xf16>, memref<16xi32>, memref<16x64xf16>, i1, index) -> i32
    vector.print str "rotate_half bad "
    vector.print %bad0 : i32
    scf.for %r = %c0 to %c16 step %c1 {
      scf.for %d = %c0 to %c64 step %c1 {
        memref.store %nan, %out[%r, %d] : memref<16x64xf16>
      }
    }
    gpu.launch_func @kernels::@interleave blocks in (%c1, %c1, %c1) threads in (%c128, %c1, %c1)
        args(%in : memref<16x64xf16>, %pos : memref<16xi32>, %out : memref<16x64xf16>)
    %false = arith.constant false
    %bad1 = func.call @count_bad(%in, %pos, %out, %false, %c64) : (memref<16x64xf16>, memref<16xi32>, memref<16x64xf16>, i1, index) -> i32
    vector.print str "interleave bad "
    vector.print %bad1 : i32
    return
  }
}

// CHECK: rotate_half bad 0
// CHECK: interleave bad 0
