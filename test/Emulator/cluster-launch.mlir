// RUN: kvir-runner %s -e main --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs --emu-stats 2>%t.stats | FileCheck %s
// RUN: FileCheck %s --check-prefix=STATS < %t.stats

// gpu.launch_func with `clusters in (...)` reaches the emulator through
// mgpuLaunchClusterKernel: 4 CTAs in clusters of 2. Thread 0 of each CTA
// stores 10 * %cluster_ctarank + %clusterid.x, after one barrier.cluster
// (arrive + wait by all 64 threads of the cluster).

// CHECK: ( 0, 10, 1, 11 )
// STATS: "cluster": [2, 1, 1], "cluster_barriers": 4

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @ranks(%out: memref<4xi32>) kernel {
      %t = gpu.thread_id x
      %cta = gpu.block_id x
      %c0 = arith.constant 0 : index
      nvvm.cluster.arrive
      nvvm.cluster.wait
      %first = arith.cmpi eq, %t, %c0 : index
      scf.if %first {
        %rank = nvvm.read.ptx.sreg.cluster.ctarank : i32
        %cluster = nvvm.read.ptx.sreg.clusterid.x : i32
        %ten = arith.constant 10 : i32
        %r10 = arith.muli %rank, %ten : i32
        %v = arith.addi %r10, %cluster : i32
        memref.store %v, %out[%cta] : memref<4xi32>
      }
      gpu.return
    }
  }

  func.func @main() {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c32 = arith.constant 32 : index
    %out = memref.alloc() : memref<4xi32>
    gpu.launch_func @kernels::@ranks clusters in (%c2, %c1, %c1)
        blocks in (%c4, %c1, %c1) threads in (%c32, %c1, %c1)
        args(%out : memref<4xi32>)
    %c0 = arith.constant 0 : index
    %c3 = arith.constant 3 : index
    %v0 = memref.load %out[%c0] : memref<4xi32>
    %v1 = memref.load %out[%c1] : memref<4xi32>
    %v2 = memref.load %out[%c2] : memref<4xi32>
    %v3 = memref.load %out[%c3] : memref<4xi32>
    %v = vector.from_elements %v0, %v1, %v2, %v3 : vector<4xi32>
    vector.print %v : vector<4xi32>
    return
  }
}
