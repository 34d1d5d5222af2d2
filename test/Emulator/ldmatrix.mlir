// RUN: kvir-runner %s -e main --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs | FileCheck %s

// nvgpu.ldmatrix .x4, .x2.trans and .x1 from a 16x16 f16 tile in shared
// memory, T[r][c] = 16 r + c. Each lane stores the halves it received; the
// host compares every one against T indexed directly.
//
// PTX ISA 9.7.14.5.15 (ldmatrix): lanes 8i..8i+7 give the addresses of the
// 8 rows of matrix i; register i of lane t holds row t / 4, columns
// 2 (t % 4) and 2 (t % 4) + 1 of matrix i, or with .trans those of the
// transposed matrix, i.e. rows 2 (t % 4) + e, column t / 4.
//  x4: lane l points at row l % 16, column 8 (l / 16), so matrix i starts at
//      (8 (i % 2), 8 (i / 2)): lane t, register i, half e holds
//      T[8 (i % 2) + t / 4][8 (i / 2) + 2 (t % 4) + e]
//  x2.trans: lanes 0..15 point at rows 0..15, column 0: matrix i is rows
//      8i..8i+7, columns 0..7: T[8i + 2 (t % 4) + e][t / 4]
//  x1: lanes 0..7 point at rows 0..7, column 0: T[t / 4][2 (t % 4) + e]
// Lane 5 (t / 4 = 1, t % 4 = 1):
//  x4:       T[1][2] T[1][3] T[9][2] T[9][3] T[1][10] T[1][11] T[9][10] T[9][11]
//            = 18 19 146 147 26 27 154 155
//  x2.trans: T[2][1] T[3][1] T[10][1] T[11][1] = 33 49 161 177
//  x1:       T[1][2] T[1][3] = 18 19

!tile = memref<16x16xf16, #gpu.address_space<workgroup>>

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @ldm(%t: memref<16x16xf16>, %out: memref<32x14xf16>)
        workgroup(%sh: !tile) kernel {
      %lane = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c8 = arith.constant 8 : index
      %c16 = arith.constant 16 : index
      // Stage the tile: lane l copies row l / 2, columns 8 (l % 2) .. +7.
      %row = arith.divui %lane, %c2 : index
      %half = arith.remui %lane, %c2 : index
      %col0 = arith.muli %half, %c8 : index
      scf.for %j = %c0 to %c8 step %c1 {
        %col = arith.addi %col0, %j : index
        %v = memref.load %t[%row, %col] : memref<16x16xf16>
        memref.store %v, %sh[%row, %col] : !tile
      }
      gpu.barrier

      %r16 = arith.remui %lane, %c16 : index
      %q = arith.divui %lane, %c16 : index
      %c16col = arith.muli %q, %c8 : index
      %x4 = nvgpu.ldmatrix %sh[%r16, %c16col] {numTiles = 4 : i32, transpose = false}
          : !tile -> vector<4x2xf16>
      %x2 = nvgpu.ldmatrix %sh[%r16, %c0] {numTiles = 2 : i32, transpose = true}
          : !tile -> vector<2x2xf16>
      %r8 = arith.remui %lane, %c8 : index
      %x1 = nvgpu.ldmatrix %sh[%r8, %c0] {numTiles = 1 : i32, transpose = false}
          : !tile -> vector<1x2xf16>

      %f4 = vector.shape_cast %x4 : vector<4x2xf16> to vector<8xf16>
      %f2 = vector.shape_cast %x2 : vector<2x2xf16> to vector<4xf16>
      %f1 = vector.shape_cast %x1 : vector<1x2xf16> to vector<2xf16>
      vector.store %f4, %out[%lane, %c0] : memref<32x14xf16>, vector<8xf16>
      vector.store %f2, %out[%lane, %c8] : memref<32x14xf16>, vector<4xf16>
      %c12 = arith.constant 12 : index
      vector.store %f1, %out[%lane, %c12] : memref<32x14xf16>, vector<2xf16>
      gpu.return
    }
  }

  // The expected T indices of column `k` of lane `t`, from the formulas above.
  func.func @expected(%t: index, %k: index) -> (index, index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c12 = arith.constant 12 : index
    %tq = arith.divui %t, %c4 : index
    %tr = arith.remui %t, %c4 : index
    %tr2 = arith.muli %tr, %c2 : index
    %isX4 = arith.cmpi ult, %k, %c8 : index
    %isX2 = arith.cmpi ult, %k, %c12 : index
    %r:2 = scf.if %isX4 -> (index, index) {
      %i = arith.divui %k, %c2 : index
      %e = arith.remui %k, %c2 : index
      %im = arith.remui %i, %c2 : index
      %id = arith.divui %i, %c2 : index
      %r0 = arith.muli %im, %c8 : index
      %row = arith.addi %r0, %tq : index
      %cc0 = arith.muli %id, %c8 : index
      %cc1 = arith.addi %cc0, %tr2 : index
      %col = arith.addi %cc1, %e : index
      scf.yield %row, %col : index, index
    } else {
      %r:2 = scf.if %isX2 -> (index, index) {
        %k2 = arith.subi %k, %c8 : index
        %i = arith.divui %k2, %c2 : index
        %e = arith.remui %k2, %c2 : index
        %r0 = arith.muli %i, %c8 : index
        %r1 = arith.addi %r0, %tr2 : index
        %row = arith.addi %r1, %e : index
        scf.yield %row, %tq : index, index
      } else {
        %e = arith.subi %k, %c12 : index
        %col = arith.addi %tr2, %e : index
        scf.yield %tq, %col : index, index
      }
      scf.yield %r#0, %r#1 : index, index
    }
    return %r#0, %r#1 : index, index
  }

  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c5 = arith.constant 5 : index
    %c14 = arith.constant 14 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %t = memref.alloc() : memref<16x16xf16>
    %out = memref.alloc() : memref<32x14xf16>
    scf.for %r = %c0 to %c16 step %c1 {
      scf.for %c = %c0 to %c16 step %c1 {
        %r16 = arith.muli %r, %c16 : index
        %v = arith.addi %r16, %c : index
        %vi = arith.index_cast %v : index to i32
        %vf = arith.sitofp %vi : i32 to f16
        memref.store %vf, %t[%r, %c] : memref<16x16xf16>
      }
    }
    gpu.launch_func @kernels::@ldm blocks in (%c1, %c1, %c1)
        threads in (%c32, %c1, %c1)
        args(%t : memref<16x16xf16>, %out : memref<32x14xf16>)

    %zero = arith.constant 0 : i32
    %one = arith.constant 1 : i32
    %bad = scf.for %l = %c0 to %c32 step %c1 iter_args(%n = %zero) -> i32 {
      %row = scf.for %k = %c0 to %c14 step %c1 iter_args(%nk = %n) -> i32 {
        %idx:2 = func.call @expected(%l, %k) : (index, index) -> (index, index)
        %want = memref.load %t[%idx#0, %idx#1] : memref<16x16xf16>
        %got = memref.load %out[%l, %k] : memref<32x14xf16>
        %ne = arith.cmpf une, %got, %want : f16
        %inc = arith.select %ne, %one, %zero : i32
        %nk2 = arith.addi %nk, %inc : i32
        scf.yield %nk2 : i32
      }
      scf.yield %row : i32
    }
    // CHECK: mismatches: 0
    vector.print str "mismatches: "
    vector.print %bad : i32

    // CHECK-NEXT: lane 5: ( 18, 19, 146, 147, 26, 27, 154, 155, 33, 49, 161, 177, 18, 19 )
    %lane5 = vector.load %out[%c5, %c0] : memref<32x14xf16>, vector<14xf16>
    %lane5f = arith.extf %lane5 : vector<14xf16> to vector<14xf32>
    vector.print str "lane 5: "
    vector.print %lane5f : vector<14xf32>
    return
  }
}
