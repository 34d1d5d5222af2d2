// RUN: kvir-opt %s -test-kvir-codegen | FileCheck %s --check-prefix=IR
// RUN: kvir-opt %s -test-kvir-codegen | kvir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s

// WarpOps: a sum and a max over each group of 8 lanes with shfl.bfly 4, 2, 1
// (every lane of a group ends with its group's result), run in the emulator
// and checked lane by lane against a host loop over the group.

// IR-LABEL: gpu.func @reduce8
// IR: %[[O4:.*]] = arith.constant 4 : i32
// IR: gpu.shuffle xor %{{.*}}, %[[O4]], %{{.*}} : f32
// IR: arith.addf
// IR: gpu.shuffle xor
// IR: gpu.shuffle xor
// IR-NOT: gpu.shuffle xor
// IR: memref.store
// IR: gpu.shuffle xor
// IR: arith.maximumf
// IR: gpu.shuffle xor
// IR: gpu.shuffle xor
// IR-NOT: gpu.shuffle

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @reduce8(%x: memref<32xf32>, %sum: memref<32xf32>, %max: memref<32xf32>) kernel
        attributes {test.component = "warp_reduce", test.lanes = 8 : i64} {
      gpu.return
    }
  }

  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c5 = arith.constant 5 : index
    %c7 = arith.constant 7 : index
    %c8 = arith.constant 8 : index
    %c13 = arith.constant 13 : index
    %c32 = arith.constant 32 : index
    %x = memref.alloc() : memref<32xf32>
    %s = memref.alloc() : memref<32xf32>
    %m = memref.alloc() : memref<32xf32>
    // x[l] = (7 l) % 13 - 5: small integers, so sums are exact.
    scf.for %l = %c0 to %c32 step %c1 {
      %a = arith.muli %l, %c7 : index
      %r = arith.remui %a, %c13 : index
      %v = arith.subi %r, %c5 : index
      %vi = arith.index_cast %v : index to i32
      %vf = arith.sitofp %vi : i32 to f32
      memref.store %vf, %x[%l] : memref<32xf32>
    }
    gpu.launch_func @kernels::@reduce8 blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1)
        args(%x : memref<32xf32>, %s : memref<32xf32>, %m : memref<32xf32>)
    %zero = arith.constant 0 : i32
    %one = arith.constant 1 : i32
    %fzero = arith.constant 0.0 : f32
    %ninf = arith.constant 0xFF800000 : f32
    %bad = scf.for %l = %c0 to %c32 step %c1 iter_args(%n = %zero) -> i32 {
      %g = arith.divui %l, %c8 : index
      %g0 = arith.muli %g, %c8 : index
      %g1 = arith.addi %g0, %c8 : index
      %ref:2 = scf.for %j = %g0 to %g1 step %c1 iter_args(%a = %fzero, %b = %ninf) -> (f32, f32) {
        %v = memref.load %x[%j] : memref<32xf32>
        %a2 = arith.addf %a, %v : f32
        %b2 = arith.maximumf %b, %v : f32
        scf.yield %a2, %b2 : f32, f32
      }
      %gs = memref.load %s[%l] : memref<32xf32>
      %gm = memref.load %m[%l] : memref<32xf32>
      %e1 = arith.cmpf une, %gs, %ref#0 : f32
      %e2 = arith.cmpf une, %gm, %ref#1 : f32
      %e = arith.ori %e1, %e2 : i1
      %inc = arith.select %e, %one, %zero : i32
      %n2 = arith.addi %n, %inc : i32
      scf.yield %n2 : i32
    }
    // CHECK: mismatches: 0
    vector.print str "mismatches: "
    vector.print %bad : i32
    // Lanes 0-7 hold 7 l % 13 - 5 = -5 2 -4 3 -3 4 -2 5: sum 0, max 5.
    // CHECK-NEXT: lane 3: 0, 5
    %s3 = memref.load %s[%c3] : memref<32xf32>
    %m3 = memref.load %m[%c3] : memref<32xf32>
    vector.print str "lane 3: "
    vector.print %s3 : f32 punctuation <comma>
    vector.print %m3 : f32
    return
  }
}
