// RUN: kvir-opt %s -test-kvir-codegen | FileCheck %s --check-prefix=IR
// RUN: kvir-opt %s -test-kvir-codegen | kvir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s

// MmaTile: one warp computes C[16, N] = A[16, K] B[N, K]^T (B as a key tile:
// rows N, the contracted dim contiguous) from swizzled shared tiles with
// ldmatrix.x4 (A fragments; two n8 B fragments per call) and mma.sync
// m16n8k16, f16 and bf16 inputs, f32 accumulators. Inputs are small
// integers, so the host's scalar loop must agree bit for bit.

// IR-LABEL: gpu.func @gemm_f16
// IR-SAME: workgroup(%[[A:.*]] : memref<16x32xf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[B:.*]] : memref<32x32xf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// IR-SAME: nvvm.reqntid = array<i32: 32, 1, 1>
// The swizzle: chunk c of row r at c ^ (r % 4) (4 chunks per 32-wide row).
// IR: arith.andi %{{.*}}, %c3
// IR: arith.xori
// IR: gpu.barrier
// IR: nvgpu.ldmatrix %[[A]][%{{.*}}, %{{.*}}] {numTiles = 4 : i32, transpose = false} : memref<16x32xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
// IR: nvgpu.ldmatrix %[[B]][%{{.*}}, %{{.*}}] {numTiles = 4 : i32, transpose = false} : memref<32x32xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
// IR: vector.extract_strided_slice %{{.*}} {offsets = [0, 0], sizes = [2, 2], strides = [1, 1]} : vector<4x2xf16> to vector<2x2xf16>
// IR: vector.extract_strided_slice %{{.*}} {offsets = [2, 0], sizes = [2, 2], strides = [1, 1]} : vector<4x2xf16> to vector<2x2xf16>
// IR: nvgpu.mma.sync(%{{.*}}, %{{.*}}, %{{.*}}) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
// bf16: nvgpu.mma.sync cannot deduce bf16 PTX types in MLIR 22, so the
// fragments are packed into 32-bit registers for nvvm.mma.sync.
// IR-LABEL: gpu.func @gemm_bf16
// IR: vector.bitcast %{{.*}} : vector<2xbf16> to vector<1xi32>
// IR: nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[{{.*}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @gemm_f16(%a: memref<16x32xf16>, %b: memref<32x32xf16>, %c: memref<16x32xf32>) kernel
        attributes {test.component = "mma_gemm"} {
      gpu.return
    }
    gpu.func @gemm_bf16(%a: memref<16x64xbf16>, %b: memref<16x64xbf16>, %c: memref<16x16xf32>) kernel
        attributes {test.component = "mma_gemm"} {
      gpu.return
    }
  }

  // A[i][k] = (i + 2k) % 5 - 2 and B[n][k] = (3k + n) % 4 - 1 into `a`, `b`.
  func.func @fill_f16(%a: memref<16x32xf16>, %b: memref<32x32xf16>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c5 = arith.constant 5 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    scf.for %i = %c0 to %c16 step %c1 {
      scf.for %k = %c0 to %c32 step %c1 {
        %k2 = arith.muli %k, %c2 : index
        %s = arith.addi %i, %k2 : index
        %m = arith.remui %s, %c5 : index
        %v = arith.subi %m, %c2 : index
        %vi = arith.index_cast %v : index to i32
        %vf = arith.sitofp %vi : i32 to f16
        memref.store %vf, %a[%i, %k] : memref<16x32xf16>
      }
    }
    scf.for %n = %c0 to %c32 step %c1 {
      scf.for %k = %c0 to %c32 step %c1 {
        %k3 = arith.muli %k, %c3 : index
        %s = arith.addi %k3, %n : index
        %m = arith.remui %s, %c4 : index
        %v = arith.subi %m, %c1 : index
        %vi = arith.index_cast %v : index to i32
        %vf = arith.sitofp %vi : i32 to f16
        memref.store %vf, %b[%n, %k] : memref<32x32xf16>
      }
    }
    return
  }

  func.func @fill_bf16(%a: memref<16x64xbf16>, %b: memref<16x64xbf16>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c5 = arith.constant 5 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    scf.for %i = %c0 to %c16 step %c1 {
      scf.for %k = %c0 to %c64 step %c1 {
        %k2 = arith.muli %k, %c2 : index
        %s = arith.addi %i, %k2 : index
        %m = arith.remui %s, %c5 : index
        %v = arith.subi %m, %c2 : index
        %vi = arith.index_cast %v : index to i32
        %vf = arith.sitofp %vi : i32 to bf16
        memref.store %vf, %a[%i, %k] : memref<16x64xbf16>
        %k3 = arith.muli %k, %c3 : index
        %t = arith.addi %k3, %i : index
        %tm = arith.remui %t, %c4 : index
        %w = arith.subi %tm, %c1 : index
        %wi = arith.index_cast %w : index to i32
        %wf = arith.sitofp %wi : i32 to bf16
        memref.store %wf, %b[%i, %k] : memref<16x64xbf16>
      }
    }
    return
  }

  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    %zero = arith.constant 0 : i32
    %one = arith.constant 1 : i32
    %fzero = arith.constant 0.0 : f32

    %a = memref.alloc() : memref<16x32xf16>
    %b = memref.alloc() : memref<32x32xf16>
    %c = memref.alloc() : memref<16x32xf32>
    call @fill_f16(%a, %b) : (memref<16x32xf16>, memref<32x32xf16>) -> ()
    gpu.launch_func @kernels::@gemm_f16 blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1)
        args(%a : memref<16x32xf16>, %b : memref<32x32xf16>, %c : memref<16x32xf32>)
    %bad = scf.for %i = %c0 to %c16 step %c1 iter_args(%n = %zero) -> i32 {
      %row = scf.for %j = %c0 to %c32 step %c1 iter_args(%nj = %n) -> i32 {
        %acc = scf.for %k = %c0 to %c32 step %c1 iter_args(%s = %fzero) -> f32 {
          %x = memref.load %a[%i, %k] : memref<16x32xf16>
          %y = memref.load %b[%j, %k] : memref<32x32xf16>
          %xf = arith.extf %x : f16 to f32
          %yf = arith.extf %y : f16 to f32
          %p = arith.mulf %xf, %yf : f32
          %s2 = arith.addf %s, %p : f32
          scf.yield %s2 : f32
        }
        %got = memref.load %c[%i, %j] : memref<16x32xf32>
        %ne = arith.cmpf une, %got, %acc : f32
        %inc = arith.select %ne, %one, %zero : i32
        %nj2 = arith.addi %nj, %inc : i32
        scf.yield %nj2 : i32
      }
      scf.yield %row : i32
    }
    // CHECK: f16 mismatches: 0
    vector.print str "f16 mismatches: "
    vector.print %bad : i32

    %a2 = memref.alloc() : memref<16x64xbf16>
    %b2 = memref.alloc() : memref<16x64xbf16>
    %c2 = memref.alloc() : memref<16x16xf32>
    call @fill_bf16(%a2, %b2) : (memref<16x64xbf16>, memref<16x64xbf16>) -> ()
    gpu.launch_func @kernels::@gemm_bf16 blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1)
        args(%a2 : memref<16x64xbf16>, %b2 : memref<16x64xbf16>, %c2 : memref<16x16xf32>)
    %bad2 = scf.for %i = %c0 to %c16 step %c1 iter_args(%n = %zero) -> i32 {
      %row = scf.for %j = %c0 to %c16 step %c1 iter_args(%nj = %n) -> i32 {
        %acc = scf.for %k = %c0 to %c64 step %c1 iter_args(%s = %fzero) -> f32 {
          %x = memref.load %a2[%i, %k] : memref<16x64xbf16>
          %y = memref.load %b2[%j, %k] : memref<16x64xbf16>
          %xf = arith.extf %x : bf16 to f32
          %yf = arith.extf %y : bf16 to f32
          %p = arith.mulf %xf, %yf : f32
          %s2 = arith.addf %s, %p : f32
          scf.yield %s2 : f32
        }
        %got = memref.load %c2[%i, %j] : memref<16x16xf32>
        %ne = arith.cmpf une, %got, %acc : f32
        %inc = arith.select %ne, %one, %zero : i32
        %nj2 = arith.addi %nj, %inc : i32
        scf.yield %nj2 : i32
      }
      scf.yield %row : i32
    }
    // CHECK-NEXT: bf16 mismatches: 0
    vector.print str "bf16 mismatches: "
    vector.print %bad2 : i32
    // Row 0 of A repeats -2 0 2 -1 1, row 0 of B repeats -1 2 1 0: their
    // products over k < 20 (one common period) sum to 0, and over k < 12
    // (2 0 2 0 -1 -4 0 0 1 2 -2 0) too, so C[0][0] = 0.
    // CHECK-NEXT: c00: 0
    %c00 = memref.load %c[%c0, %c0] : memref<16x32xf32>
    vector.print str "c00: "
    vector.print %c00 : f32
    return
  }
}
