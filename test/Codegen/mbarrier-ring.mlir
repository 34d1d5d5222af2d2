// RUN: kvir-opt %s -test-kvir-codegen | FileCheck %s --check-prefix=IR
// RUN: kvir-opt %s -test-kvir-codegen | kvir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s
// RUN: kvir-opt %s -test-kvir-codegen | not kvir-runner -e main_no_release --entry-point-result=void --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s --check-prefix=DEADLOCK

// MBarrierPipeline: warp 0 (its lane 0) streams the 7 tiles of in[7, 256]
// through a 3-stage ring, each tile one cp.async.bulk completing on the
// stage's full barrier after an arrive.expect_tx of its 1024 bytes; the
// consumer warpgroup (warps 1-4) waits on the full barrier, writes
// out[t][j] = ring[j] + t and releases the stage on its empty barrier (128
// arrivals). 7 tiles go round the ring more than twice, so both phase
// parities of every barrier are used. Without the releases the producer
// waits forever for tile 3's stage: the emulator reports the deadlock.

// IR-LABEL: gpu.func @ring
// IR: nvvm.mbarrier.init %{{.*}}, %{{.*}} : !llvm.ptr<3>, i32
// IR: nvvm.fence.mbarrier.init
// IR: gpu.barrier
// IR: nvvm.mbarrier.try_wait.parity
// IR: nvvm.mbarrier.arrive.expect_tx
// IR: nvvm.cp.async.bulk.shared.cluster.global
// IR: nvvm.mbarrier.try_wait.parity
// IR: nvvm.mbarrier.arrive %{{.*}} : !llvm.ptr<3> -> i64

// CHECK: ring mismatches: 0
// DEADLOCK: kvir-emu: kernel 'ring_no_release': deadlock: every live thread waits and no wait can complete

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @ring(%in: memref<7x256xf32>, %out: memref<7x256xf32>) kernel
        attributes {test.component = "mbarrier_ring", test.stages = 3} {
      gpu.return
    }
    gpu.func @ring_no_release(%in: memref<7x256xf32>, %out: memref<7x256xf32>) kernel
        attributes {test.component = "mbarrier_ring", test.stages = 3, test.skip_release} {
      gpu.return
    }
  }

  // in[t][j] = 1000 t + j; out poisoned with NaN.
  func.func @prepare(%in: memref<7x256xf32>, %out: memref<7x256xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c7 = arith.constant 7 : index
    %c256 = arith.constant 256 : index
    %c1000 = arith.constant 1000 : index
    %nan = arith.constant 0x7FC00000 : f32
    scf.for %t = %c0 to %c7 step %c1 {
      scf.for %j = %c0 to %c256 step %c1 {
        %a = arith.muli %t, %c1000 : index
        %v = arith.addi %a, %j : index
        %vi = arith.index_cast %v : index to i32
        %vf = arith.sitofp %vi : i32 to f32
        memref.store %vf, %in[%t, %j] : memref<7x256xf32>
        memref.store %nan, %out[%t, %j] : memref<7x256xf32>
      }
    }
    return
  }

  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c7 = arith.constant 7 : index
    %c160 = arith.constant 160 : index
    %c256 = arith.constant 256 : index
    %in = memref.alloc() : memref<7x256xf32>
    %out = memref.alloc() : memref<7x256xf32>
    call @prepare(%in, %out) : (memref<7x256xf32>, memref<7x256xf32>) -> ()
    gpu.launch_func @kernels::@ring blocks in (%c1, %c1, %c1) threads in (%c160, %c1, %c1)
        args(%in : memref<7x256xf32>, %out : memref<7x256xf32>)
    %zero = arith.constant 0 : i32
    %one = arith.constant 1 : i32
    %bad = scf.for %t = %c0 to %c7 step %c1 iter_args(%cnt = %zero) -> i32 {
      %row = scf.for %j = %c0 to %c256 step %c1 iter_args(%cj = %cnt) -> i32 {
        %x = memref.load %in[%t, %j] : memref<7x256xf32>
        %ti = arith.index_cast %t : index to i32
        %tf = arith.sitofp %ti : i32 to f32
        %want = arith.addf %x, %tf : f32
        %got = memref.load %out[%t, %j] : memref<7x256xf32>
        %ne = arith.cmpf une, %got, %want : f32
        %inc = arith.select %ne, %one, %zero : i32
        %cj2 = arith.addi %cj, %inc : i32
        scf.yield %cj2 : i32
      }
      scf.yield %row : i32
    }
    vector.print str "ring mismatches: "
    vector.print %bad : i32
    return
  }

  func.func @main_no_release() {
    %c1 = arith.constant 1 : index
    %c160 = arith.constant 160 : index
    %in = memref.alloc() : memref<7x256xf32>
    %out = memref.alloc() : memref<7x256xf32>
    call @prepare(%in, %out) : (memref<7x256xf32>, memref<7x256xf32>) -> ()
    gpu.launch_func @kernels::@ring_no_release blocks in (%c1, %c1, %c1) threads in (%c160, %c1, %c1)
        args(%in : memref<7x256xf32>, %out : memref<7x256xf32>)
    return
  }
}
