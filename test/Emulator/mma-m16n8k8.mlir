// RUN: kvir-runner %s -e main --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs | FileCheck %s

// nvgpu.mma.sync m16n8k8 with f16 inputs, once with an f32 accumulator and
// once with an f16 accumulator, each checked against a scalar matmul on the
// host (small integers: every partial sum is exact in f16 and f32).
//
// Fragments (PTX ISA 9.7.14.5.8, mma.m16n8k8 with .f16), groupID = lane / 4,
// tig = lane % 4:
//   A (16x8): a_i at row groupID + 8 * (i / 2), col 2 * tig + i % 2, i = 0..3
//   B (8x8):  b_i at row 2 * tig + i, col groupID,                    i = 0..1
//   C, D:     c_i at row groupID + 8 * (i / 2), col 2 * tig + i % 2,  i = 0..3
//   (an f16 accumulator packs c_0,c_1 and c_2,c_3 into one register each)
//
// A[i][k] = (i + 2k) % 5 - 2, B[k][j] = (3k + j) % 4 - 1, C[i][j] = i - j.
// Row 0 of A is -2 0 2 -1 1 -2 0 2, column 0 of B is -1 2 1 0 -1 2 1 0;
// products 2 0 2 0 -1 -4 0 0 sum to -1, so D[0][0] = -1 + C[0][0] = -1.
// Row 15 of A: (15 + 2k) % 5 - 2 = -2 0 2 -1 1 -2 0 2 as well; column 7 of B:
// (3k + 7) % 4 - 1 = 2 1 0 -1 2 1 0 -1; products -4 0 0 1 2 -2 0 -2 sum to
// -5, so D[15][7] = -5 + (15 - 7) = 3.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @mma_f32(%a: memref<16x8xf16>, %b: memref<8x8xf16>,
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
      %a0 = memref.load %a[%g, %k0] : memref<16x8xf16>
      %a1 = memref.load %a[%g, %k1] : memref<16x8xf16>
      %a2 = memref.load %a[%g8, %k0] : memref<16x8xf16>
      %a3 = memref.load %a[%g8, %k1] : memref<16x8xf16>
      %va = vector.from_elements %a0, %a1, %a2, %a3 : vector<2x2xf16>
      %b0 = memref.load %b[%k0, %g] : memref<8x8xf16>
      %b1 = memref.load %b[%k1, %g] : memref<8x8xf16>
      %vb = vector.from_elements %b0, %b1 : vector<1x2xf16>
      %c0v = memref.load %c[%g, %k0] : memref<16x8xf32>
      %c1v = memref.load %c[%g, %k1] : memref<16x8xf32>
      %c2v = memref.load %c[%g8, %k0] : memref<16x8xf32>
      %c3v = memref.load %c[%g8, %k1] : memref<16x8xf32>
      %vc = vector.from_elements %c0v, %c1v, %c2v, %c3v : vector<2x2xf32>
      %vd = nvgpu.mma.sync (%va, %vb, %vc) {mmaShape = [16, 8, 8]}
          : (vector<2x2xf16>, vector<1x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
      %d0 = vector.extract %vd[0, 0] : f32 from vector<2x2xf32>
      %d1 = vector.extract %vd[0, 1] : f32 from vector<2x2xf32>
      %d2 = vector.extract %vd[1, 0] : f32 from vector<2x2xf32>
      %d3 = vector.extract %vd[1, 1] : f32 from vector<2x2xf32>
      memref.store %d0, %d[%g, %k0] : memref<16x8xf32>
      memref.store %d1, %d[%g, %k1] : memref<16x8xf32>
      memref.store %d2, %d[%g8, %k0] : memref<16x8xf32>
      memref.store %d3, %d[%g8, %k1] : memref<16x8xf32>
      gpu.return
    }

    gpu.func @mma_f16(%a: memref<16x8xf16>, %b: memref<8x8xf16>,
                      %c: memref<16x8xf16>, %d: memref<16x8xf16>) kernel {
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
      %a0 = memref.load %a[%g, %k0] : memref<16x8xf16>
      %a1 = memref.load %a[%g, %k1] : memref<16x8xf16>
      %a2 = memref.load %a[%g8, %k0] : memref<16x8xf16>
      %a3 = memref.load %a[%g8, %k1] : memref<16x8xf16>
      %va = vector.from_elements %a0, %a1, %a2, %a3 : vector<2x2xf16>
      %b0 = memref.load %b[%k0, %g] : memref<8x8xf16>
      %b1 = memref.load %b[%k1, %g] : memref<8x8xf16>
      %vb = vector.from_elements %b0, %b1 : vector<1x2xf16>
      %c0v = memref.load %c[%g, %k0] : memref<16x8xf16>
      %c1v = memref.load %c[%g, %k1] : memref<16x8xf16>
      %c2v = memref.load %c[%g8, %k0] : memref<16x8xf16>
      %c3v = memref.load %c[%g8, %k1] : memref<16x8xf16>
      %vc = vector.from_elements %c0v, %c1v, %c2v, %c3v : vector<2x2xf16>
      %vd = nvgpu.mma.sync (%va, %vb, %vc) {mmaShape = [16, 8, 8]}
          : (vector<2x2xf16>, vector<1x2xf16>, vector<2x2xf16>) -> vector<2x2xf16>
      %d0 = vector.extract %vd[0, 0] : f16 from vector<2x2xf16>
      %d1 = vector.extract %vd[0, 1] : f16 from vector<2x2xf16>
      %d2 = vector.extract %vd[1, 0] : f16 from vector<2x2xf16>
      %d3 = vector.extract %vd[1, 1] : f16 from vector<2x2xf16>
      memref.store %d0, %d[%g, %k0] : memref<16x8xf16>
      memref.store %d1, %d[%g, %k1] : memref<16x8xf16>
      memref.store %d2, %d[%g8, %k0] : memref<16x8xf16>
      memref.store %d3, %d[%g8, %k1] : memref<16x8xf16>
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
    %c7 = arith.constant 7 : index
    %c8 = arith.constant 8 : index
    %c15 = arith.constant 15 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %a = memref.alloc() : memref<16x8xf16>
    %b = memref.alloc() : memref<8x8xf16>
    %c = memref.alloc() : memref<16x8xf32>
    %ch = memref.alloc() : memref<16x8xf16>
    %d = memref.alloc() : memref<16x8xf32>
    %dh = memref.alloc() : memref<16x8xf16>
    scf.for %i = %c0 to %c16 step %c1 {
      scf.for %k = %c0 to %c8 step %c1 {
        %k2 = arith.muli %k, %c2 : index
        %s = arith.addi %i, %k2 : index
        %m = arith.remui %s, %c5 : index
        %v = arith.subi %m, %c2 : index
        %vi = arith.index_cast %v : index to i32
        %vf = arith.sitofp %vi : i32 to f16
        memref.store %vf, %a[%i, %k] : memref<16x8xf16>
      }
    }
    scf.for %k = %c0 to %c8 step %c1 {
      scf.for %j = %c0 to %c8 step %c1 {
        %k3 = arith.muli %k, %c3 : index
        %s = arith.addi %k3, %j : index
        %m = arith.remui %s, %c4 : index
        %v = arith.subi %m, %c1 : index
        %vi = arith.index_cast %v : index to i32
        %vf = arith.sitofp %vi : i32 to f16
        memref.store %vf, %b[%k, %j] : memref<8x8xf16>
      }
    }
    scf.for %i = %c0 to %c16 step %c1 {
      scf.for %j = %c0 to %c8 step %c1 {
        %v = arith.subi %i, %j : index
        %vi = arith.index_cast %v : index to i32
        %vf = arith.sitofp %vi : i32 to f32
        memref.store %vf, %c[%i, %j] : memref<16x8xf32>
        %vh = arith.sitofp %vi : i32 to f16
        memref.store %vh, %ch[%i, %j] : memref<16x8xf16>
      }
    }
    gpu.launch_func @kernels::@mma_f32 blocks in (%c1, %c1, %c1)
        threads in (%c32, %c1, %c1)
        args(%a : memref<16x8xf16>, %b : memref<8x8xf16>,
             %c : memref<16x8xf32>, %d : memref<16x8xf32>)
    gpu.launch_func @kernels::@mma_f16 blocks in (%c1, %c1, %c1)
        threads in (%c32, %c1, %c1)
        args(%a : memref<16x8xf16>, %b : memref<8x8xf16>,
             %ch : memref<16x8xf16>, %dh : memref<16x8xf16>)

    // Reference: a scalar matmul on the host; count the elements of either
    // result that differ from it.
    %zero = arith.constant 0 : i32
    %one = arith.constant 1 : i32
    %bad = scf.for %i = %c0 to %c16 step %c1 iter_args(%n = %zero) -> i32 {
      %row = scf.for %j = %c0 to %c8 step %c1 iter_args(%nj = %n) -> i32 {
        %init = memref.load %c[%i, %j] : memref<16x8xf32>
        %acc = scf.for %k = %c0 to %c8 step %c1 iter_args(%s = %init) -> f32 {
          %x = memref.load %a[%i, %k] : memref<16x8xf16>
          %y = memref.load %b[%k, %j] : memref<8x8xf16>
          %xf = arith.extf %x : f16 to f32
          %yf = arith.extf %y : f16 to f32
          %p = arith.mulf %xf, %yf : f32
          %s2 = arith.addf %s, %p : f32
          scf.yield %s2 : f32
        }
        %got = memref.load %d[%i, %j] : memref<16x8xf32>
        %gh = memref.load %dh[%i, %j] : memref<16x8xf16>
        %ghf = arith.extf %gh : f16 to f32
        %ne1 = arith.cmpf une, %got, %acc : f32
        %ne2 = arith.cmpf une, %ghf, %acc : f32
        %inc1 = arith.select %ne1, %one, %zero : i32
        %inc2 = arith.select %ne2, %one, %zero : i32
        %nj1 = arith.addi %nj, %inc1 : i32
        %nj2 = arith.addi %nj1, %inc2 : i32
        scf.yield %nj2 : i32
      }
      scf.yield %row : i32
    }
    // CHECK: mismatches: 0
    vector.print str "mismatches: "
    vector.print %bad : i32
    // CHECK-NEXT: d00: -1
    %d00 = memref.load %d[%c0, %c0] : memref<16x8xf32>
    vector.print str "d00: "
    vector.print %d00 : f32
    // CHECK-NEXT: d15_7 (f16 accumulator): 3
    %d157 = memref.load %dh[%c15, %c7] : memref<16x8xf16>
    %d157f = arith.extf %d157 : f16 to f32
    vector.print str "d15_7 (f16 accumulator): "
    vector.print %d157f : f32
    return
  }
}
