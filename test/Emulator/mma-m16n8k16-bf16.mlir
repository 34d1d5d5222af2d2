// RUN: kvir-runner %s -e main --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs | FileCheck %s

// One warp computes D = A * B + C with mma.sync m16n8k16 (bf16 inputs,
// f32 accumulator); the host recomputes D with a scalar triple loop and
// counts the elements that differ. All values are small integers, so both
// results are exact and must agree bit for bit.
//
// Fragments follow the PTX ISA tables for mma.m16n8k16 with .f16/.bf16 (section
// 9.7.14.5.8), groupID = lane / 4, tig = lane % 4:
//   A (16x16): a_i at row groupID + 8 * ((i / 2) % 2),
//                     col 2 * tig + i % 2 + 8 * (i / 4),        i = 0..7
//   B (16x8):  b_i at row 2 * tig + i % 2 + 8 * (i / 2), col groupID, i = 0..3
//   C, D:      c_i at row groupID + 8 * (i / 2), col 2 * tig + i % 2, i = 0..3
//
// A[i][k] = (i + 2k) % 5 - 2, B[k][j] = (3k + j) % 4 - 1, C[i][j] = i - j.
// Row 0 of A is -2 0 2 -1 1 -2 0 2 -1 1 -2 0 2 -1 1 -2, column 0 of B is
// -1 2 1 0 -1 2 1 0 -1 2 1 0 -1 2 1 0; their products are
// 2 0 2 0 -1 -4 0 0 1 2 -2 0 -2 -2 1 0, summing to -3, so D[0][0] = -3 + 0.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @mma(%a: memref<16x16xbf16>, %b: memref<16x8xbf16>,
                  %c: memref<16x8xf32>, %d: memref<16x8xf32>) kernel {
      %lane = gpu.thread_id x
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c4 = arith.constant 4 : index
      %c8 = arith.constant 8 : index
      %g = arith.divui %lane, %c4 : index
      %tig = arith.remui %lane, %c4 : index
      %g8 = arith.addi %g, %c8 : index
      %k0 = arith.muli %tig, %c2 : index
      %k1 = arith.addi %k0, %c1 : index
      %k8 = arith.addi %k0, %c8 : index
      %k9 = arith.addi %k1, %c8 : index

      %a0 = memref.load %a[%g, %k0] : memref<16x16xbf16>
      %a1 = memref.load %a[%g, %k1] : memref<16x16xbf16>
      %a2 = memref.load %a[%g8, %k0] : memref<16x16xbf16>
      %a3 = memref.load %a[%g8, %k1] : memref<16x16xbf16>
      %a4 = memref.load %a[%g, %k8] : memref<16x16xbf16>
      %a5 = memref.load %a[%g, %k9] : memref<16x16xbf16>
      %a6 = memref.load %a[%g8, %k8] : memref<16x16xbf16>
      %a7 = memref.load %a[%g8, %k9] : memref<16x16xbf16>
      // nvgpu.mma.sync cannot deduce PTX types for bf16 in MLIR 22, so the
      // kernel packs pairs of bf16 into 32-bit registers (element 2r in the
      // low half, PTX ISA "Matrix Fragments for mma.m16n8k16") and calls
      // nvvm.mma.sync itself.
      %pa0 = vector.from_elements %a0, %a1 : vector<2xbf16>
      %pa1 = vector.from_elements %a2, %a3 : vector<2xbf16>
      %pa2 = vector.from_elements %a4, %a5 : vector<2xbf16>
      %pa3 = vector.from_elements %a6, %a7 : vector<2xbf16>
      %ra0 = llvm.bitcast %pa0 : vector<2xbf16> to i32
      %ra1 = llvm.bitcast %pa1 : vector<2xbf16> to i32
      %ra2 = llvm.bitcast %pa2 : vector<2xbf16> to i32
      %ra3 = llvm.bitcast %pa3 : vector<2xbf16> to i32

      %b0 = memref.load %b[%k0, %g] : memref<16x8xbf16>
      %b1 = memref.load %b[%k1, %g] : memref<16x8xbf16>
      %b2 = memref.load %b[%k8, %g] : memref<16x8xbf16>
      %b3 = memref.load %b[%k9, %g] : memref<16x8xbf16>
      %pb0 = vector.from_elements %b0, %b1 : vector<2xbf16>
      %pb1 = vector.from_elements %b2, %b3 : vector<2xbf16>
      %rb0 = llvm.bitcast %pb0 : vector<2xbf16> to i32
      %rb1 = llvm.bitcast %pb1 : vector<2xbf16> to i32

      %c0v = memref.load %c[%g, %k0] : memref<16x8xf32>
      %c1v = memref.load %c[%g, %k1] : memref<16x8xf32>
      %c2v = memref.load %c[%g8, %k0] : memref<16x8xf32>
      %c3v = memref.load %c[%g8, %k1] : memref<16x8xf32>

      %sd = nvvm.mma.sync A[%ra0, %ra1, %ra2, %ra3] B[%rb0, %rb1]
          C[%c0v, %c1v, %c2v, %c3v]
          {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>,
           multiplicandAPtxType = #nvvm.mma_type<bf16>,
           multiplicandBPtxType = #nvvm.mma_type<bf16>,
           shape = #nvvm.shape<m = 16, n = 8, k = 16>}
          : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>

      %d0 = llvm.extractvalue %sd[0] : !llvm.struct<(f32, f32, f32, f32)>
      %d1 = llvm.extractvalue %sd[1] : !llvm.struct<(f32, f32, f32, f32)>
      %d2 = llvm.extractvalue %sd[2] : !llvm.struct<(f32, f32, f32, f32)>
      %d3 = llvm.extractvalue %sd[3] : !llvm.struct<(f32, f32, f32, f32)>
      memref.store %d0, %d[%g, %k0] : memref<16x8xf32>
      memref.store %d1, %d[%g, %k1] : memref<16x8xf32>
      memref.store %d2, %d[%g8, %k0] : memref<16x8xf32>
      memref.store %d3, %d[%g8, %k1] : memref<16x8xf32>
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
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %a = memref.alloc() : memref<16x16xbf16>
    %b = memref.alloc() : memref<16x8xbf16>
    %c = memref.alloc() : memref<16x8xf32>
    %d = memref.alloc() : memref<16x8xf32>
    scf.for %i = %c0 to %c16 step %c1 {
      scf.for %k = %c0 to %c16 step %c1 {
        %k2 = arith.muli %k, %c2 : index
        %s = arith.addi %i, %k2 : index
        %m = arith.remui %s, %c5 : index
        %v = arith.subi %m, %c2 : index
        %vi = arith.index_cast %v : index to i32
        %vf = arith.sitofp %vi : i32 to bf16
        memref.store %vf, %a[%i, %k] : memref<16x16xbf16>
      }
    }
    scf.for %k = %c0 to %c16 step %c1 {
      scf.for %j = %c0 to %c8 step %c1 {
        %k3 = arith.muli %k, %c3 : index
        %s = arith.addi %k3, %j : index
        %m = arith.remui %s, %c4 : index
        %v = arith.subi %m, %c1 : index
        %vi = arith.index_cast %v : index to i32
        %vf = arith.sitofp %vi : i32 to bf16
        memref.store %vf, %b[%k, %j] : memref<16x8xbf16>
      }
    }
    scf.for %i = %c0 to %c16 step %c1 {
      scf.for %j = %c0 to %c8 step %c1 {
        %v = arith.subi %i, %j : index
        %vi = arith.index_cast %v : index to i32
        %vf = arith.sitofp %vi : i32 to f32
        memref.store %vf, %c[%i, %j] : memref<16x8xf32>
      }
    }
    gpu.launch_func @kernels::@mma blocks in (%c1, %c1, %c1)
        threads in (%c32, %c1, %c1)
        args(%a : memref<16x16xbf16>, %b : memref<16x8xbf16>,
             %c : memref<16x8xf32>, %d : memref<16x8xf32>)

    // Reference: a scalar matmul on the host.
    %zero = arith.constant 0 : i32
    %one = arith.constant 1 : i32
    %bad = scf.for %i = %c0 to %c16 step %c1 iter_args(%n = %zero) -> i32 {
      %row = scf.for %j = %c0 to %c8 step %c1 iter_args(%nj = %n) -> i32 {
        %init = memref.load %c[%i, %j] : memref<16x8xf32>
        %acc = scf.for %k = %c0 to %c16 step %c1 iter_args(%s = %init) -> f32 {
          %x = memref.load %a[%i, %k] : memref<16x16xbf16>
          %y = memref.load %b[%k, %j] : memref<16x8xbf16>
          %xf = arith.extf %x : bf16 to f32
          %yf = arith.extf %y : bf16 to f32
          %p = arith.mulf %xf, %yf : f32
          %s2 = arith.addf %s, %p : f32
          scf.yield %s2 : f32
        }
        %got = memref.load %d[%i, %j] : memref<16x8xf32>
        %ne = arith.cmpf une, %got, %acc : f32
        %inc = arith.select %ne, %one, %zero : i32
        %nj2 = arith.addi %nj, %inc : i32
        scf.yield %nj2 : i32
      }
      scf.yield %row : i32
    }
    // CHECK: mismatches: 0
    vector.print str "mismatches: "
    vector.print %bad : i32
    // CHECK-NEXT: d00: -3
    %d00 = memref.load %d[%c0, %c0] : memref<16x8xf32>
    vector.print str "d00: "
    vector.print %d00 : f32
    return
  }
}
