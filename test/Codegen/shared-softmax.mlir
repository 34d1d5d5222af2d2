// RUN: kvir-opt %s -test-kvir-codegen | FileCheck %s --check-prefix=IR
// RUN: kvir-opt %s -test-kvir-codegen | kvir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s

// SharedSoftmax on mma.sync (test/lib/Codegen/TestSharedSoftmax.cpp): two
// value warps of the same 16 rows, 64 value columns each, one 16-key tile.
// Each warp first scores the tile and runs the softmax itself (P from its
// registers); then warp 0 alone scores it and publishes P, each row's
// rescale factor, max and the lanes' partial sums, and after the barrier
// both warps accumulate P V from the shared P (ldmatrix). The host finds
// the two outputs bit-identical, and every element written (both are
// poisoned with NaN first).

// IR-LABEL: gpu.func @shared_softmax_f16
// Warp 0's P stores (A fragment registers, two keys each), its row
// leaders' stats, the barrier, then every warp's P fragments by ldmatrix.
// IR: vector.store %{{.*}} : memref<16x16xf16, #gpu.address_space<workgroup>>, vector<2xf16>
// IR: memref.store %{{.*}} : memref<16x6xf32, #gpu.address_space<workgroup>>
// IR: gpu.barrier
// IR: memref.load %{{.*}} : memref<16x6xf32, #gpu.address_space<workgroup>>
// IR: nvgpu.ldmatrix %{{.*}} {numTiles = 4 : i32, transpose = false} : memref<16x16xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @shared_softmax_f16(%q: memref<16x16xf16>, %k: memref<16x16xf16>, %v: memref<16x128xf16>, %shared: memref<16x128xf32>, %own: memref<16x128xf32>) kernel
        attributes {test.component = "shared_softmax"} {
      gpu.return
    }
    gpu.func @shared_softmax_bf16(%q: memref<16x16xbf16>, %k: memref<16x16xbf16>, %v: memref<16x128xbf16>, %shared: memref<16x128xf32>, %own: memref<16x128xf32>) kernel
        attributes {test.component = "shared_softmax"} {
      gpu.return
    }
  }

  // x[i][j] = ((p i + q j) % m - s) / 4 as f32.
  func.func @fill(%x: memref<?x?xf32>, %p: index, %q: index, %m: index, %s: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %quarter = arith.constant 0.25 : f32
    %rows = memref.dim %x, %c0 : memref<?x?xf32>
    %cols = memref.dim %x, %c1 : memref<?x?xf32>
    scf.for %i = %c0 to %rows step %c1 {
      scf.for %j = %c0 to %cols step %c1 {
        %pi = arith.muli %p, %i : index
        %qj = arith.muli %q, %j : index
        %t = arith.addi %pi, %qj : index
        %r = arith.remui %t, %m : index
        %v = arith.subi %r, %s : index
        %vi = arith.index_cast %v : index to i32
        %vf = arith.sitofp %vi : i32 to f32
        %vq = arith.mulf %vf, %quarter : f32
        memref.store %vq, %x[%i, %j] : memref<?x?xf32>
      }
    }
    return
  }

  // Elements of `a` and `b` whose bits differ, or that are NaN.
  func.func @differ(%a: memref<16x128xf32>, %b: memref<16x128xf32>) -> i32 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c128 = arith.constant 128 : index
    %zero = arith.constant 0 : i32
    %one = arith.constant 1 : i32
    %bad = scf.for %i = %c0 to %c16 step %c1 iter_args(%n = %zero) -> i32 {
      %row = scf.for %j = %c0 to %c128 step %c1 iter_args(%m = %n) -> i32 {
        %x = memref.load %a[%i, %j] : memref<16x128xf32>
        %y = memref.load %b[%i, %j] : memref<16x128xf32>
        %xb = arith.bitcast %x : f32 to i32
        %yb = arith.bitcast %y : f32 to i32
        %ne = arith.cmpi ne, %xb, %yb : i32
        %nan = arith.cmpf uno, %x, %x : f32
        %either = arith.ori %ne, %nan : i1
        %inc = arith.select %either, %one, %zero : i32
        %m2 = arith.addi %m, %inc : i32
        scf.yield %m2 : i32
      }
      scf.yield %row : i32
    }
    return %bad : i32
  }

  func.func @poison(%x: memref<16x128xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c128 = arith.constant 128 : index
    %nan = arith.constant 0x7FC00000 : f32
    scf.for %i = %c0 to %c16 step %c1 {
      scf.for %j = %c0 to %c128 step %c1 {
        memref.store %nan, %x[%i, %j] : memref<16x128xf32>
      }
    }
    return
  }

  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c5 = arith.constant 5 : index
    %c7 = arith.constant 7 : index
    %c9 = arith.constant 9 : index
    %c11 = arith.constant 11 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %q = memref.alloc(%c16, %c16) : memref<?x?xf32>
    %k = memref.alloc(%c16, %c16) : memref<?x?xf32>
    %v = memref.alloc(%c16, %c128) : memref<?x?xf32>
    call @fill(%q, %c3, %c5, %c11, %c5) : (memref<?x?xf32>, index, index, index, index) -> ()
    call @fill(%k, %c7, %c2, %c9, %c4) : (memref<?x?xf32>, index, index, index, index) -> ()
    call @fill(%v, %c5, %c3, %c7, %c3) : (memref<?x?xf32>, index, index, index, index) -> ()

    %qh = memref.alloc() : memref<16x16xf16>
    %kh = memref.alloc() : memref<16x16xf16>
    %vh = memref.alloc() : memref<16x128xf16>
    %qb = memref.alloc() : memref<16x16xbf16>
    %kb = memref.alloc() : memref<16x16xbf16>
    %vb = memref.alloc() : memref<16x128xbf16>
    scf.for %i = %c0 to %c16 step %c1 {
      scf.for %j = %c0 to %c16 step %c1 {
        %x = memref.load %q[%i, %j] : memref<?x?xf32>
        %xh = arith.truncf %x : f32 to f16
        memref.store %xh, %qh[%i, %j] : memref<16x16xf16>
        %xb = arith.truncf %x : f32 to bf16
        memref.store %xb, %qb[%i, %j] : memref<16x16xbf16>
        %y = memref.load %k[%i, %j] : memref<?x?xf32>
        %yh = arith.truncf %y : f32 to f16
        memref.store %yh, %kh[%i, %j] : memref<16x16xf16>
        %yb = arith.truncf %y : f32 to bf16
        memref.store %yb, %kb[%i, %j] : memref<16x16xbf16>
      }
      scf.for %j = %c0 to %c128 step %c1 {
        %w = memref.load %v[%i, %j] : memref<?x?xf32>
        %wh = arith.truncf %w : f32 to f16
        memref.store %wh, %vh[%i, %j] : memref<16x128xf16>
        %wb = arith.truncf %w : f32 to bf16
        memref.store %wb, %vb[%i, %j] : memref<16x128xbf16>
      }
    }
    %shared = memref.alloc() : memref<16x128xf32>
    %own = memref.alloc() : memref<16x128xf32>
    call @poison(%shared) : (memref<16x128xf32>) -> ()
    call @poison(%own) : (memref<16x128xf32>) -> ()
    gpu.launch_func @kernels::@shared_softmax_f16 blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1)
        args(%qh : memref<16x16xf16>, %kh : memref<16x16xf16>, %vh : memref<16x128xf16>, %shared : memref<16x128xf32>, %own : memref<16x128xf32>)
    %bad = call @differ(%shared, %own) : (memref<16x128xf32>, memref<16x128xf32>) -> i32
    // CHECK: f16 differing: 0
    vector.print str "f16 differing: "
    vector.print %bad : i32

    call @poison(%shared) : (memref<16x128xf32>) -> ()
    call @poison(%own) : (memref<16x128xf32>) -> ()
    gpu.launch_func @kernels::@shared_softmax_bf16 blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1)
        args(%qb : memref<16x16xbf16>, %kb : memref<16x16xbf16>, %vb : memref<16x128xbf16>, %shared : memref<16x128xf32>, %own : memref<16x128xf32>)
    %bad2 = call @differ(%shared, %own) : (memref<16x128xf32>, memref<16x128xf32>) -> i32
    // CHECK-NEXT: bf16 differing: 0
    vector.print str "bf16 differing: "
    vector.print %bad2 : i32
    return
  }
}
