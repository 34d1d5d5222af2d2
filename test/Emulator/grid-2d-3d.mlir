// RUN: kvir-runner %s -e main --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs | FileCheck %s

// Multi-dimensional grids and blocks.
//
// @transpose: a 2-D grid (3, 2) of 2-D blocks (8, 8) transposes a 16x24
// matrix, in[r][c] = 100 r + c: thread (tx, ty) of block (bx, by) handles
// c = 8 bx + tx, r = 8 by + ty and writes out[c][r] = in[r][c]. The host
// counts elements with out[c][r] != 100 r + c; out[23][15] = 1523.
//
// @ids: a 3-D grid (2, 3, 2) of 3-D blocks (4, 2, 3) writes, at global
// coordinates (x, y, z) = (4 bx + tx, 2 by + ty, 3 bz + tz),
//   ids[z][y][x] = (tx + 4 ty + 8 tz) + 100 (bx + 2 by + 6 bz)
// (the linear thread id plus 100 times the linear block id). At (7, 5, 5):
// bx = 1, tx = 3; by = 2, ty = 1; bz = 1, tz = 2: 23 + 100 * 11 = 1123.
// Thread (0,0,0) of block (1,2,1) also records block_dim and grid_dim:
// [4, 2, 3, 2, 3, 2].

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @transpose(%in: memref<16x24xi32>, %out: memref<24x16xi32>) kernel {
      %tx = gpu.thread_id x
      %ty = gpu.thread_id y
      %bx = gpu.block_id x
      %by = gpu.block_id y
      %c8 = arith.constant 8 : index
      %cb = arith.muli %bx, %c8 : index
      %c = arith.addi %cb, %tx : index
      %rb = arith.muli %by, %c8 : index
      %r = arith.addi %rb, %ty : index
      %v = memref.load %in[%r, %c] : memref<16x24xi32>
      memref.store %v, %out[%c, %r] : memref<24x16xi32>
      gpu.return
    }

    gpu.func @ids(%ids: memref<6x6x8xi32>, %dims: memref<6xi32>) kernel {
      %tx = gpu.thread_id x
      %ty = gpu.thread_id y
      %tz = gpu.thread_id z
      %bx = gpu.block_id x
      %by = gpu.block_id y
      %bz = gpu.block_id z
      %sx = gpu.block_dim x
      %sy = gpu.block_dim y
      %sz = gpu.block_dim z
      %gx = gpu.grid_dim x
      %gy = gpu.grid_dim y
      %gz = gpu.grid_dim z
      %x0 = arith.muli %bx, %sx : index
      %x = arith.addi %x0, %tx : index
      %y0 = arith.muli %by, %sy : index
      %y = arith.addi %y0, %ty : index
      %z0 = arith.muli %bz, %sz : index
      %z = arith.addi %z0, %tz : index
      // Linear ids, x fastest.
      %t1 = arith.muli %tz, %sy : index
      %t2 = arith.addi %t1, %ty : index
      %t3 = arith.muli %t2, %sx : index
      %tl = arith.addi %t3, %tx : index
      %b1 = arith.muli %bz, %gy : index
      %b2 = arith.addi %b1, %by : index
      %b3 = arith.muli %b2, %gx : index
      %bl = arith.addi %b3, %bx : index
      %c100 = arith.constant 100 : index
      %bh = arith.muli %bl, %c100 : index
      %code = arith.addi %bh, %tl : index
      %code32 = arith.index_cast %code : index to i32
      memref.store %code32, %ids[%z, %y, %x] : memref<6x6x8xi32>

      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %zt = arith.cmpi eq, %tl, %c0 : index
      %target = arith.constant 11 : index
      %zb = arith.cmpi eq, %bl, %target : index
      %rec = arith.andi %zt, %zb : i1
      scf.if %rec {
        %c3 = arith.constant 3 : index
        %c4 = arith.constant 4 : index
        %c5 = arith.constant 5 : index
        %v0 = arith.index_cast %sx : index to i32
        %v1 = arith.index_cast %sy : index to i32
        %v2 = arith.index_cast %sz : index to i32
        %v3 = arith.index_cast %gx : index to i32
        %v4 = arith.index_cast %gy : index to i32
        %v5 = arith.index_cast %gz : index to i32
        memref.store %v0, %dims[%c0] : memref<6xi32>
        memref.store %v1, %dims[%c1] : memref<6xi32>
        memref.store %v2, %dims[%c2] : memref<6xi32>
        memref.store %v3, %dims[%c3] : memref<6xi32>
        memref.store %v4, %dims[%c4] : memref<6xi32>
        memref.store %v5, %dims[%c5] : memref<6xi32>
      }
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
    %c7 = arith.constant 7 : index
    %c8 = arith.constant 8 : index
    %c15 = arith.constant 15 : index
    %c16 = arith.constant 16 : index
    %c23 = arith.constant 23 : index
    %c24 = arith.constant 24 : index
    %c100 = arith.constant 100 : index
    %zero = arith.constant 0 : i32
    %one = arith.constant 1 : i32

    %in = memref.alloc() : memref<16x24xi32>
    %out = memref.alloc() : memref<24x16xi32>
    scf.for %r = %c0 to %c16 step %c1 {
      scf.for %c = %c0 to %c24 step %c1 {
        %r100 = arith.muli %r, %c100 : index
        %v = arith.addi %r100, %c : index
        %vi = arith.index_cast %v : index to i32
        memref.store %vi, %in[%r, %c] : memref<16x24xi32>
      }
    }
    gpu.launch_func @kernels::@transpose blocks in (%c3, %c2, %c1)
        threads in (%c8, %c8, %c1)
        args(%in : memref<16x24xi32>, %out : memref<24x16xi32>)
    %bad = scf.for %c = %c0 to %c24 step %c1 iter_args(%n = %zero) -> i32 {
      %row = scf.for %r = %c0 to %c16 step %c1 iter_args(%nr = %n) -> i32 {
        %r100 = arith.muli %r, %c100 : index
        %want = arith.addi %r100, %c : index
        %wi = arith.index_cast %want : index to i32
        %got = memref.load %out[%c, %r] : memref<24x16xi32>
        %ne = arith.cmpi ne, %got, %wi : i32
        %inc = arith.select %ne, %one, %zero : i32
        %nr2 = arith.addi %nr, %inc : i32
        scf.yield %nr2 : i32
      }
      scf.yield %row : i32
    }
    // CHECK: transpose mismatches: 0
    vector.print str "transpose mismatches: "
    vector.print %bad : i32
    // CHECK-NEXT: out[23][15]: 1523
    %o = memref.load %out[%c23, %c15] : memref<24x16xi32>
    vector.print str "out[23][15]: "
    vector.print %o : i32

    %ids = memref.alloc() : memref<6x6x8xi32>
    %dims = memref.alloc() : memref<6xi32>
    gpu.launch_func @kernels::@ids blocks in (%c2, %c3, %c2)
        threads in (%c4, %c2, %c3)
        args(%ids : memref<6x6x8xi32>, %dims : memref<6xi32>)
    // CHECK-NEXT: ids[5][5][7]: 1123
    %i = memref.load %ids[%c5, %c5, %c7] : memref<6x6x8xi32>
    vector.print str "ids[5][5][7]: "
    vector.print %i : i32
    // Thread (1, 0, 2) of block (0, 1, 0): 1 + 0 + 8 * 2 + 100 * 2 = 217 at
    // (x, y, z) = (1, 2, 2).
    // CHECK-NEXT: ids[2][2][1]: 217
    %j = memref.load %ids[%c2, %c2, %c1] : memref<6x6x8xi32>
    vector.print str "ids[2][2][1]: "
    vector.print %j : i32
    %u = memref.cast %dims : memref<6xi32> to memref<*xi32>
    call @printMemrefI32(%u) : (memref<*xi32>) -> ()
    return
  }
  func.func private @printMemrefI32(memref<*xi32>)
}

// CHECK: [4,  2,  3,  2,  3,  2]
