// RUN: kvir-opt %s -test-kvir-codegen | FileCheck %s --check-prefix=IR
// RUN: kvir-opt %s -test-kvir-codegen | kvir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s

// MmaTile, attention's two products: S = A B^T (16 x 16, two n8
// accumulators), P = S rounded to the input type straight from the
// accumulator registers into an A fragment, then O = P V with V [keys, dims]
// read by ldmatrix.x4.trans. Small integers keep every step exact; the host
// recomputes O with scalar loops.

// IR-LABEL: gpu.func @chain_f16
// IR: nvgpu.mma.sync
// IR: nvgpu.mma.sync
// P = the two accumulators rounded, rows (0, 1) from the first and (2, 3)
// from the second.
// IR: arith.truncf %{{.*}} : vector<2x2xf32> to vector<2x2xf16>
// IR: arith.truncf %{{.*}} : vector<2x2xf32> to vector<2x2xf16>
// IR: vector.insert_strided_slice %{{.*}}, %{{.*}} {offsets = [0, 0], strides = [1, 1]} : vector<2x2xf16> into vector<4x2xf16>
// IR: vector.insert_strided_slice %{{.*}}, %{{.*}} {offsets = [2, 0], strides = [1, 1]} : vector<2x2xf16> into vector<4x2xf16>
// IR: nvgpu.ldmatrix %{{.*}}[%{{.*}}, %{{.*}}] {numTiles = 4 : i32, transpose = true} : memref<16x32xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
// IR: nvgpu.mma.sync

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @chain_f16(%a: memref<16x16xf16>, %b: memref<16x16xf16>, %v: memref<16x32xf16>, %o: memref<16x32xf32>) kernel
        attributes {test.component = "mma_chain"} {
      gpu.return
    }
    gpu.func @chain_bf16(%a: memref<16x16xbf16>, %b: memref<16x16xbf16>, %v: memref<16x64xbf16>, %o: memref<16x64xf32>) kernel
        attributes {test.component = "mma_chain"} {
      gpu.return
    }
  }

  // x[i][j] = (p i + q j) % m - s as T.
  func.func @fill(%x: memref<?x?xf32>, %p: index, %q: index, %m: index, %s: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
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
        memref.store %vf, %x[%i, %j] : memref<?x?xf32>
      }
    }
    return
  }

  // The number of elements of o[16, n] that differ from round(a b^T) v.
  func.func @check(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %v: memref<?x?xf32>, %o: memref<?x?xf32>) -> i32 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %zero = arith.constant 0 : i32
    %one = arith.constant 1 : i32
    %fzero = arith.constant 0.0 : f32
    %n = memref.dim %v, %c1 : memref<?x?xf32>
    %bad = scf.for %i = %c0 to %c16 step %c1 iter_args(%cnt = %zero) -> i32 {
      %row = scf.for %j = %c0 to %n step %c1 iter_args(%cj = %cnt) -> i32 {
        %acc = scf.for %key = %c0 to %c16 step %c1 iter_args(%s = %fzero) -> f32 {
          %dot = scf.for %k = %c0 to %c16 step %c1 iter_args(%d = %fzero) -> f32 {
            %x = memref.load %a[%i, %k] : memref<?x?xf32>
            %y = memref.load %b[%key, %k] : memref<?x?xf32>
            %p = arith.mulf %x, %y : f32
            %d2 = arith.addf %d, %p : f32
            scf.yield %d2 : f32
          }
          %w = memref.load %v[%key, %j] : memref<?x?xf32>
          %p = arith.mulf %dot, %w : f32
          %s2 = arith.addf %s, %p : f32
          scf.yield %s2 : f32
        }
        %got = memref.load %o[%i, %j] : memref<?x?xf32>
        %ne = arith.cmpf une, %got, %acc : f32
        %inc = arith.select %ne, %one, %zero : i32
        %cj2 = arith.addi %cj, %inc : i32
        scf.yield %cj2 : i32
      }
      scf.yield %row : i32
    }
    return %bad : i32
  }

  func.func @main() {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c5 = arith.constant 5 : index
    %c7 = arith.constant 7 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    // f32 copies of the inputs (for the reference), then the kernel's types.
    %a = memref.alloc(%c16, %c16) : memref<?x?xf32>
    %b = memref.alloc(%c16, %c16) : memref<?x?xf32>
    %v = memref.alloc(%c16, %c32) : memref<?x?xf32>
    %v2 = memref.alloc(%c16, %c64) : memref<?x?xf32>
    call @fill(%a, %c1, %c2, %c5, %c2) : (memref<?x?xf32>, index, index, index, index) -> ()
    call @fill(%b, %c1, %c3, %c4, %c1) : (memref<?x?xf32>, index, index, index, index) -> ()
    call @fill(%v, %c3, %c1, %c7, %c3) : (memref<?x?xf32>, index, index, index, index) -> ()
    call @fill(%v2, %c3, %c1, %c7, %c3) : (memref<?x?xf32>, index, index, index, index) -> ()

    %ah = memref.alloc() : memref<16x16xf16>
    %bh = memref.alloc() : memref<16x16xf16>
    %vh = memref.alloc() : memref<16x32xf16>
    %oh = memref.alloc() : memref<16x32xf32>
    %c0 = arith.constant 0 : index
    scf.for %i = %c0 to %c16 step %c1 {
      scf.for %j = %c0 to %c16 step %c1 {
        %x = memref.load %a[%i, %j] : memref<?x?xf32>
        %xh = arith.truncf %x : f32 to f16
        memref.store %xh, %ah[%i, %j] : memref<16x16xf16>
        %y = memref.load %b[%i, %j] : memref<?x?xf32>
        %yh = arith.truncf %y : f32 to f16
        memref.store %yh, %bh[%i, %j] : memref<16x16xf16>
      }
      scf.for %j = %c0 to %c32 step %c1 {
        %w = memref.load %v[%i, %j] : memref<?x?xf32>
        %wh = arith.truncf %w : f32 to f16
        memref.store %wh, %vh[%i, %j] : memref<16x32xf16>
      }
    }
    gpu.launch_func @kernels::@chain_f16 blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1)
        args(%ah : memref<16x16xf16>, %bh : memref<16x16xf16>, %vh : memref<16x32xf16>, %oh : memref<16x32xf32>)
    %ohd = memref.cast %oh : memref<16x32xf32> to memref<?x?xf32>
    %bad = call @check(%a, %b, %v, %ohd) : (memref<?x?xf32>, memref<?x?xf32>, memref<?x?xf32>, memref<?x?xf32>) -> i32
    // CHECK: f16 mismatches: 0
    vector.print str "f16 mismatches: "
    vector.print %bad : i32

    %ab = memref.alloc() : memref<16x16xbf16>
    %bb = memref.alloc() : memref<16x16xbf16>
    %vb = memref.alloc() : memref<16x64xbf16>
    %ob = memref.alloc() : memref<16x64xf32>
    scf.for %i = %c0 to %c16 step %c1 {
      scf.for %j = %c0 to %c16 step %c1 {
        %x = memref.load %a[%i, %j] : memref<?x?xf32>
        %xh = arith.truncf %x : f32 to bf16
        memref.store %xh, %ab[%i, %j] : memref<16x16xbf16>
        %y = memref.load %b[%i, %j] : memref<?x?xf32>
        %yh = arith.truncf %y : f32 to bf16
        memref.store %yh, %bb[%i, %j] : memref<16x16xbf16>
      }
      scf.for %j = %c0 to %c64 step %c1 {
        %w = memref.load %v2[%i, %j] : memref<?x?xf32>
        %wh = arith.truncf %w : f32 to bf16
        memref.store %wh, %vb[%i, %j] : memref<16x64xbf16>
      }
    }
    gpu.launch_func @kernels::@chain_bf16 blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1)
        args(%ab : memref<16x16xbf16>, %bb : memref<16x16xbf16>, %vb : memref<16x64xbf16>, %ob : memref<16x64xf32>)
    %obd = memref.cast %ob : memref<16x64xf32> to memref<?x?xf32>
    %bad2 = call @check(%a, %b, %v2, %obd) : (memref<?x?xf32>, memref<?x?xf32>, memref<?x?xf32>, memref<?x?xf32>) -> i32
    // CHECK-NEXT: bf16 mismatches: 0
    vector.print str "bf16 mismatches: "
    vector.print %bad2 : i32
    return
  }
}
