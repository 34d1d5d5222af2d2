// RUN: kvir-opt %s -test-kvir-codegen | FileCheck %s --check-prefix=IR
// RUN: kvir-opt %s -test-kvir-codegen | kvir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s

// WgmmaAtom: one warpgroup (128 threads) computes C = A B^T with SS wgmma
// (A and B in 128-byte-swizzled shared tiles, K in steps of 16 chained in
// one group; K 128 crosses a 64-element column block, N 256 is the widest
// issue), and O = round(A B^T) V with S by SS wgmma, P rounded from the
// accumulator into RS A registers and O += P V by RS wgmma (inline PTX)
// reading V MN-major (Dv 128: two column blocks, the leading byte
// offset). Small integers keep every step exact; the host recomputes the
// results with scalar loops. The emulator checks the descriptors, the
// fences, the proxy fence and the waits as it runs them.

// IR-LABEL: gpu.func @gemm_f16
// IR: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// IR: nvvm.wgmma.fence.aligned
// The K-major descriptor's constant fields: LBO 16, SBO 1024, 128-byte
// swizzle: 1 << 62 | 64 << 32 | 1 << 16.
// IR: arith.constant 4611686293305360384 : i64
// IR: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 64, k = 16>, D[<f32>, <zero>], A[<f16>, <one>, <row>], B[<f16>, <one>, <col>]
// IR: nvvm.wgmma.mma_async {{.*}}, D[<f32>, <one>]
// IR: nvvm.wgmma.commit.group.sync.aligned
// IR: nvvm.wgmma.wait.group.sync.aligned 0
// IR-LABEL: gpu.func @chain_f16
// P: two accumulator registers rounded into one b32 register.
// IR: arith.truncf %{{.*}} : vector<2xf32> to vector<2xf16>
// IR: vector.bitcast %{{.*}} : vector<2xf16> to vector<1xi32>
// IR: nvvm.wgmma.fence.aligned
// The MN-major descriptor of V [64, 128]: LBO 64 x 128 bytes.
// IR: arith.constant 4611686293338849280 : i64
// IR: llvm.inline_asm has_side_effects asm_dialect = att "{\0A.reg .pred p;\0Asetp.ne.b32 p, $133, 0;\0Awgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {$0, $1,
// IR-SAME: {$128, $129, $130, $131}, $132, p, 1, 1, 1;\0A}\0A"

// CHECK: gemm_f16 mismatches: 0
// CHECK-NEXT: gemm_bf16 mismatches: 0
// CHECK-NEXT: chain_f16 mismatches: 0
// CHECK-NEXT: chain_bf16 mismatches: 0

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @gemm_f16(%a: memref<64x128xf16>, %b: memref<64x128xf16>, %c: memref<64x64xf32>) kernel
        attributes {test.component = "wgmma_gemm"} {
      gpu.return
    }
    gpu.func @gemm_bf16(%a: memref<64x64xbf16>, %b: memref<256x64xbf16>, %c: memref<64x256xf32>) kernel
        attributes {test.component = "wgmma_gemm"} {
      gpu.return
    }
    gpu.func @chain_f16(%a: memref<64x64xf16>, %b: memref<64x64xf16>, %v: memref<64x128xf16>, %o: memref<64x128xf32>) kernel
        attributes {test.component = "wgmma_chain"} {
      gpu.return
    }
    gpu.func @chain_bf16(%a: memref<64x64xbf16>, %b: memref<64x64xbf16>, %v: memref<64x64xbf16>, %o: memref<64x64xf32>) kernel
        attributes {test.component = "wgmma_chain"} {
      gpu.return
    }
  }

  // x[i][j] = (p i + q j) % m - s.
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

  // Outputs start as NaN: an element the kernel does not write mismatches.
  func.func @poison(%x: memref<?x?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %nan = arith.constant 0x7FC00000 : f32
    %rows = memref.dim %x, %c0 : memref<?x?xf32>
    %cols = memref.dim %x, %c1 : memref<?x?xf32>
    scf.for %i = %c0 to %rows step %c1 {
      scf.for %j = %c0 to %cols step %c1 {
        memref.store %nan, %x[%i, %j] : memref<?x?xf32>
      }
    }
    return
  }

  // s[i][n] = sum_k a[i][k] b[n][k].
  func.func @abt(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %s: memref<?x?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0.0 : f32
    %rows = memref.dim %a, %c0 : memref<?x?xf32>
    %k = memref.dim %a, %c1 : memref<?x?xf32>
    %n = memref.dim %b, %c0 : memref<?x?xf32>
    scf.for %i = %c0 to %rows step %c1 {
      scf.for %j = %c0 to %n step %c1 {
        %dot = scf.for %x = %c0 to %k step %c1 iter_args(%d = %zero) -> f32 {
          %u = memref.load %a[%i, %x] : memref<?x?xf32>
          %w = memref.load %b[%j, %x] : memref<?x?xf32>
          %p = arith.mulf %u, %w : f32
          %d2 = arith.addf %d, %p : f32
          scf.yield %d2 : f32
        }
        memref.store %dot, %s[%i, %j] : memref<?x?xf32>
      }
    }
    return
  }

  // The elements of got that differ from want (NaN included).
  func.func @mismatches(%got: memref<?x?xf32>, %want: memref<?x?xf32>) -> i32 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0 : i32
    %one = arith.constant 1 : i32
    %rows = memref.dim %got, %c0 : memref<?x?xf32>
    %cols = memref.dim %got, %c1 : memref<?x?xf32>
    %bad = scf.for %i = %c0 to %rows step %c1 iter_args(%cnt = %zero) -> i32 {
      %row = scf.for %j = %c0 to %cols step %c1 iter_args(%cj = %cnt) -> i32 {
        %g = memref.load %got[%i, %j] : memref<?x?xf32>
        %w = memref.load %want[%i, %j] : memref<?x?xf32>
        %ne = arith.cmpf une, %g, %w : f32
        %inc = arith.select %ne, %one, %zero : i32
        %cj2 = arith.addi %cj, %inc : i32
        scf.yield %cj2 : i32
      }
      scf.yield %row : i32
    }
    return %bad : i32
  }

  func.func @to_f16(%x: memref<?x?xf32>, %y: memref<?x?xf16>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %rows = memref.dim %x, %c0 : memref<?x?xf32>
    %cols = memref.dim %x, %c1 : memref<?x?xf32>
    scf.for %i = %c0 to %rows step %c1 {
      scf.for %j = %c0 to %cols step %c1 {
        %v = memref.load %x[%i, %j] : memref<?x?xf32>
        %h = arith.truncf %v : f32 to f16
        memref.store %h, %y[%i, %j] : memref<?x?xf16>
      }
    }
    return
  }

  func.func @to_bf16(%x: memref<?x?xf32>, %y: memref<?x?xbf16>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %rows = memref.dim %x, %c0 : memref<?x?xf32>
    %cols = memref.dim %x, %c1 : memref<?x?xf32>
    scf.for %i = %c0 to %rows step %c1 {
      scf.for %j = %c0 to %cols step %c1 {
        %v = memref.load %x[%i, %j] : memref<?x?xf32>
        %h = arith.truncf %v : f32 to bf16
        memref.store %h, %y[%i, %j] : memref<?x?xbf16>
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
    %c128 = arith.constant 128 : index
    %c64 = arith.constant 64 : index
    %gemm_f16_a = memref.alloc() : memref<64x128xf32>
    %gemm_f16_ad = memref.cast %gemm_f16_a : memref<64x128xf32> to memref<?x?xf32>
    call @fill(%gemm_f16_ad, %c1, %c2, %c5, %c2) : (memref<?x?xf32>, index, index, index, index) -> ()
    %gemm_f16_ah = memref.alloc() : memref<64x128xf16>
    %gemm_f16_ahd = memref.cast %gemm_f16_ah : memref<64x128xf16> to memref<?x?xf16>
    call @to_f16(%gemm_f16_ad, %gemm_f16_ahd) : (memref<?x?xf32>, memref<?x?xf16>) -> ()
    %gemm_f16_b = memref.alloc() : memref<64x128xf32>
    %gemm_f16_bd = memref.cast %gemm_f16_b : memref<64x128xf32> to memref<?x?xf32>
    call @fill(%gemm_f16_bd, %c1, %c3, %c4, %c1) : (memref<?x?xf32>, index, index, index, index) -> ()
    %gemm_f16_bh = memref.alloc() : memref<64x128xf16>
    %gemm_f16_bhd = memref.cast %gemm_f16_bh : memref<64x128xf16> to memref<?x?xf16>
    call @to_f16(%gemm_f16_bd, %gemm_f16_bhd) : (memref<?x?xf32>, memref<?x?xf16>) -> ()
    %gemm_f16_c = memref.alloc() : memref<64x64xf32>
    %gemm_f16_c_p = memref.cast %gemm_f16_c : memref<64x64xf32> to memref<?x?xf32>
    call @poison(%gemm_f16_c_p) : (memref<?x?xf32>) -> ()
    gpu.launch_func @kernels::@gemm_f16 blocks in (%c1, %c1, %c1) threads in (%c128, %c1, %c1)
        args(%gemm_f16_ah : memref<64x128xf16>, %gemm_f16_bh : memref<64x128xf16>, %gemm_f16_c : memref<64x64xf32>)
    %gemm_f16_ref = memref.alloc() : memref<64x64xf32>
    %gemm_f16_refd = memref.cast %gemm_f16_ref : memref<64x64xf32> to memref<?x?xf32>
    call @abt(%gemm_f16_ad, %gemm_f16_bd, %gemm_f16_refd) : (memref<?x?xf32>, memref<?x?xf32>, memref<?x?xf32>) -> ()
    %gemm_f16_got = memref.cast %gemm_f16_c : memref<64x64xf32> to memref<?x?xf32>
    %gemm_f16_bad = call @mismatches(%gemm_f16_got, %gemm_f16_refd) : (memref<?x?xf32>, memref<?x?xf32>) -> i32
    vector.print str "gemm_f16 mismatches: "
    vector.print %gemm_f16_bad : i32
    %gemm_bf16_a = memref.alloc() : memref<64x64xf32>
    %gemm_bf16_ad = memref.cast %gemm_bf16_a : memref<64x64xf32> to memref<?x?xf32>
    call @fill(%gemm_bf16_ad, %c1, %c2, %c5, %c2) : (memref<?x?xf32>, index, index, index, index) -> ()
    %gemm_bf16_ah = memref.alloc() : memref<64x64xbf16>
    %gemm_bf16_ahd = memref.cast %gemm_bf16_ah : memref<64x64xbf16> to memref<?x?xbf16>
    call @to_bf16(%gemm_bf16_ad, %gemm_bf16_ahd) : (memref<?x?xf32>, memref<?x?xbf16>) -> ()
    %gemm_bf16_b = memref.alloc() : memref<256x64xf32>
    %gemm_bf16_bd = memref.cast %gemm_bf16_b : memref<256x64xf32> to memref<?x?xf32>
    call @fill(%gemm_bf16_bd, %c1, %c3, %c4, %c1) : (memref<?x?xf32>, index, index, index, index) -> ()
    %gemm_bf16_bh = memref.alloc() : memref<256x64xbf16>
    %gemm_bf16_bhd = memref.cast %gemm_bf16_bh : memref<256x64xbf16> to memref<?x?xbf16>
    call @to_bf16(%gemm_bf16_bd, %gemm_bf16_bhd) : (memref<?x?xf32>, memref<?x?xbf16>) -> ()
    %gemm_bf16_c = memref.alloc() : memref<64x256xf32>
    %gemm_bf16_c_p = memref.cast %gemm_bf16_c : memref<64x256xf32> to memref<?x?xf32>
    call @poison(%gemm_bf16_c_p) : (memref<?x?xf32>) -> ()
    gpu.launch_func @kernels::@gemm_bf16 blocks in (%c1, %c1, %c1) threads in (%c128, %c1, %c1)
        args(%gemm_bf16_ah : memref<64x64xbf16>, %gemm_bf16_bh : memref<256x64xbf16>, %gemm_bf16_c : memref<64x256xf32>)
    %gemm_bf16_ref = memref.alloc() : memref<64x256xf32>
    %gemm_bf16_refd = memref.cast %gemm_bf16_ref : memref<64x256xf32> to memref<?x?xf32>
    call @abt(%gemm_bf16_ad, %gemm_bf16_bd, %gemm_bf16_refd) : (memref<?x?xf32>, memref<?x?xf32>, memref<?x?xf32>) -> ()
    %gemm_bf16_got = memref.cast %gemm_bf16_c : memref<64x256xf32> to memref<?x?xf32>
    %gemm_bf16_bad = call @mismatches(%gemm_bf16_got, %gemm_bf16_refd) : (memref<?x?xf32>, memref<?x?xf32>) -> i32
    vector.print str "gemm_bf16 mismatches: "
    vector.print %gemm_bf16_bad : i32
    %chain_f16_a = memref.alloc() : memref<64x64xf32>
    %chain_f16_ad = memref.cast %chain_f16_a : memref<64x64xf32> to memref<?x?xf32>
    call @fill(%chain_f16_ad, %c1, %c2, %c5, %c2) : (memref<?x?xf32>, index, index, index, index) -> ()
    %chain_f16_ah = memref.alloc() : memref<64x64xf16>
    %chain_f16_ahd = memref.cast %chain_f16_ah : memref<64x64xf16> to memref<?x?xf16>
    call @to_f16(%chain_f16_ad, %chain_f16_ahd) : (memref<?x?xf32>, memref<?x?xf16>) -> ()
    %chain_f16_b = memref.alloc() : memref<64x64xf32>
    %chain_f16_bd = memref.cast %chain_f16_b : memref<64x64xf32> to memref<?x?xf32>
    call @fill(%chain_f16_bd, %c1, %c3, %c4, %c1) : (memref<?x?xf32>, index, index, index, index) -> ()
    %chain_f16_bh = memref.alloc() : memref<64x64xf16>
    %chain_f16_bhd = memref.cast %chain_f16_bh : memref<64x64xf16> to memref<?x?xf16>
    call @to_f16(%chain_f16_bd, %chain_f16_bhd) : (memref<?x?xf32>, memref<?x?xf16>) -> ()
    %chain_f16_v = memref.alloc() : memref<64x128xf32>
    %chain_f16_vd = memref.cast %chain_f16_v : memref<64x128xf32> to memref<?x?xf32>
    call @fill(%chain_f16_vd, %c3, %c1, %c7, %c3) : (memref<?x?xf32>, index, index, index, index) -> ()
    %chain_f16_vh = memref.alloc() : memref<64x128xf16>
    %chain_f16_vhd = memref.cast %chain_f16_vh : memref<64x128xf16> to memref<?x?xf16>
    call @to_f16(%chain_f16_vd, %chain_f16_vhd) : (memref<?x?xf32>, memref<?x?xf16>) -> ()
    %chain_f16_o = memref.alloc() : memref<64x128xf32>
    %chain_f16_o_p = memref.cast %chain_f16_o : memref<64x128xf32> to memref<?x?xf32>
    call @poison(%chain_f16_o_p) : (memref<?x?xf32>) -> ()
    gpu.launch_func @kernels::@chain_f16 blocks in (%c1, %c1, %c1) threads in (%c128, %c1, %c1)
        args(%chain_f16_ah : memref<64x64xf16>, %chain_f16_bh : memref<64x64xf16>, %chain_f16_vh : memref<64x128xf16>, %chain_f16_o : memref<64x128xf32>)
    %chain_f16_s = memref.alloc() : memref<64x64xf32>
    %chain_f16_sd = memref.cast %chain_f16_s : memref<64x64xf32> to memref<?x?xf32>
    call @abt(%chain_f16_ad, %chain_f16_bd, %chain_f16_sd) : (memref<?x?xf32>, memref<?x?xf32>, memref<?x?xf32>) -> ()
    %chain_f16_vt = memref.alloc() : memref<128x64xf32>
    scf.for %i = %c0 to %c64 step %c1 {
      scf.for %j = %c0 to %c128 step %c1 {
        %x = memref.load %chain_f16_v[%i, %j] : memref<64x128xf32>
        memref.store %x, %chain_f16_vt[%j, %i] : memref<128x64xf32>
      }
    }
    %chain_f16_vtd = memref.cast %chain_f16_vt : memref<128x64xf32> to memref<?x?xf32>
    %chain_f16_ref = memref.alloc() : memref<64x128xf32>
    %chain_f16_refd = memref.cast %chain_f16_ref : memref<64x128xf32> to memref<?x?xf32>
    call @abt(%chain_f16_sd, %chain_f16_vtd, %chain_f16_refd) : (memref<?x?xf32>, memref<?x?xf32>, memref<?x?xf32>) -> ()
    %chain_f16_got = memref.cast %chain_f16_o : memref<64x128xf32> to memref<?x?xf32>
    %chain_f16_bad = call @mismatches(%chain_f16_got, %chain_f16_refd) : (memref<?x?xf32>, memref<?x?xf32>) -> i32
    vector.print str "chain_f16 mismatches: "
    vector.print %chain_f16_bad : i32
    %chain_bf16_a = memref.alloc() : memref<64x64xf32>
    %chain_bf16_ad = memref.cast %chain_bf16_a : memref<64x64xf32> to memref<?x?xf32>
    call @fill(%chain_bf16_ad, %c1, %c2, %c5, %c2) : (memref<?x?xf32>, index, index, index, index) -> ()
    %chain_bf16_ah = memref.alloc() : memref<64x64xbf16>
    %chain_bf16_ahd = memref.cast %chain_bf16_ah : memref<64x64xbf16> to memref<?x?xbf16>
    call @to_bf16(%chain_bf16_ad, %chain_bf16_ahd) : (memref<?x?xf32>, memref<?x?xbf16>) -> ()
    %chain_bf16_b = memref.alloc() : memref<64x64xf32>
    %chain_bf16_bd = memref.cast %chain_bf16_b : memref<64x64xf32> to memref<?x?xf32>
    call @fill(%chain_bf16_bd, %c1, %c3, %c4, %c1) : (memref<?x?xf32>, index, index, index, index) -> ()
    %chain_bf16_bh = memref.alloc() : memref<64x64xbf16>
    %chain_bf16_bhd = memref.cast %chain_bf16_bh : memref<64x64xbf16> to memref<?x?xbf16>
    call @to_bf16(%chain_bf16_bd, %chain_bf16_bhd) : (memref<?x?xf32>, memref<?x?xbf16>) -> ()
    %chain_bf16_v = memref.alloc() : memref<64x64xf32>
    %chain_bf16_vd = memref.cast %chain_bf16_v : memref<64x64xf32> to memref<?x?xf32>
    call @fill(%chain_bf16_vd, %c3, %c1, %c7, %c3) : (memref<?x?xf32>, index, index, index, index) -> ()
    %chain_bf16_vh = memref.alloc() : memref<64x64xbf16>
    %chain_bf16_vhd = memref.cast %chain_bf16_vh : memref<64x64xbf16> to memref<?x?xbf16>
    call @to_bf16(%chain_bf16_vd, %chain_bf16_vhd) : (memref<?x?xf32>, memref<?x?xbf16>) -> ()
    %chain_bf16_o = memref.alloc() : memref<64x64xf32>
    %chain_bf16_o_p = memref.cast %chain_bf16_o : memref<64x64xf32> to memref<?x?xf32>
    call @poison(%chain_bf16_o_p) : (memref<?x?xf32>) -> ()
    gpu.launch_func @kernels::@chain_bf16 blocks in (%c1, %c1, %c1) threads in (%c128, %c1, %c1)
        args(%chain_bf16_ah : memref<64x64xbf16>, %chain_bf16_bh : memref<64x64xbf16>, %chain_bf16_vh : memref<64x64xbf16>, %chain_bf16_o : memref<64x64xf32>)
    %chain_bf16_s = memref.alloc() : memref<64x64xf32>
    %chain_bf16_sd = memref.cast %chain_bf16_s : memref<64x64xf32> to memref<?x?xf32>
    call @abt(%chain_bf16_ad, %chain_bf16_bd, %chain_bf16_sd) : (memref<?x?xf32>, memref<?x?xf32>, memref<?x?xf32>) -> ()
    %chain_bf16_vt = memref.alloc() : memref<64x64xf32>
    scf.for %i = %c0 to %c64 step %c1 {
      scf.for %j = %c0 to %c64 step %c1 {
        %x = memref.load %chain_bf16_v[%i, %j] : memref<64x64xf32>
        memref.store %x, %chain_bf16_vt[%j, %i] : memref<64x64xf32>
      }
    }
    %chain_bf16_vtd = memref.cast %chain_bf16_vt : memref<64x64xf32> to memref<?x?xf32>
    %chain_bf16_ref = memref.alloc() : memref<64x64xf32>
    %chain_bf16_refd = memref.cast %chain_bf16_ref : memref<64x64xf32> to memref<?x?xf32>
    call @abt(%chain_bf16_sd, %chain_bf16_vtd, %chain_bf16_refd) : (memref<?x?xf32>, memref<?x?xf32>, memref<?x?xf32>) -> ()
    %chain_bf16_got = memref.cast %chain_bf16_o : memref<64x64xf32> to memref<?x?xf32>
    %chain_bf16_bad = call @mismatches(%chain_bf16_got, %chain_bf16_refd) : (memref<?x?xf32>, memref<?x?xf32>) -> i32
    vector.print str "chain_bf16 mismatches: "
    vector.print %chain_bf16_bad : i32
    return
  }
}
