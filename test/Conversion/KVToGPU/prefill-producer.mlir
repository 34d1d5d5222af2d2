// RUN: kvir-opt %s --convert-kv-to-gpu=chip=sm_90a | FileCheck %s

// roles = producer: warpgroup 0 copies, warpgroups 1 and 2 compute. The
// block is 384 threads at one block per SM (ptxas then knows the 168
// registers a thread starts with, which setmaxnreg moves: the producer
// down to 80, the consumers up to 216). Thread 0 initializes the K/V
// ring's full barriers (128 producer arrivals) and empty barriers (256
// consumer arrivals) while the block copies the query tile.
//
// The producer stages page entries for its own threads (named barrier 1),
// and per tile waits until its stage is empty, issues K and V, and with
// two stages hands the tile over once its copies landed (fenced for the
// async proxy, then one arrival per thread).
//
// The consumers: the last one gives the first its turn; per tile each
// waits until the tile is full, issues its products in its turn (named
// barriers 2 and 3 of 256 threads: its own 128 and the other's arrival),
// passes the turn on, and releases the stage of the tile before once its
// products retired.

// CHECK-LABEL: gpu.func @prefill_{{.*}}_causal_{{[0-9a-f]+}}(
// CHECK-SAME: nvvm.minctasm = 1 : i32, nvvm.reqntid = array<i32: 384, 1, 1>
// CHECK: nvvm.mbarrier.init %{{.*}}, %c128_i32
// CHECK: nvvm.mbarrier.init %{{.*}}, %c256_i32
// CHECK: nvvm.fence.mbarrier.init
// CHECK: gpu.barrier

// Producer.
// CHECK: nvvm.setmaxregister  decrease 80
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %c128_i32
// CHECK: scf.for
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvgpu.device_async_copy
// CHECK: nvvm.cp.async.commit.group
// CHECK-NEXT: nvvm.cp.async.wait.group 0
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>
// CHECK: nvvm.mbarrier.arrive
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %c128_i32

// Consumers.
// CHECK: nvvm.setmaxregister  increase 216
// CHECK: nvvm.barrier.arrive id = %c2_i32{{.*}} number_of_threads = %c256_i32
// CHECK: scf.for
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.barrier id = %c2_i32{{.*}} number_of_threads = %c256_i32
// CHECK: nvvm.barrier id = %c3_i32{{.*}} number_of_threads = %c256_i32
// CHECK: nvvm.wgmma.mma_async
// CHECK: nvvm.barrier.arrive id = %c3_i32{{.*}} number_of_threads = %c256_i32
// CHECK: nvvm.barrier.arrive id = %c2_i32{{.*}} number_of_threads = %c256_i32
// CHECK: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: nvvm.mbarrier.arrive
// CHECK-NOT: gpu.barrier
// CHECK: gpu.return

!p = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = bf16, layout = nhd, storage = combined, table = csr>
func.func @producer(%q: memref<?x8x128xbf16>, %qo: memref<?xi32>, %p0: memref<?x2x16x2x128xbf16>, %t0: memref<?xi32>, %t1: memref<?xi32>, %t2: memref<?xi32>, %o: memref<?x8x128xbf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%p0 : memref<?x2x16x2x128xbf16>) tables(%t0, %t1, %t2 : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !p
  %s = kv.prefill %q, %qo, %kv {causal, kvgpu.config = #kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, stages = 2, q_in_registers = false, max_partitions = 16, mma = wgmma, schedule = overlap, roles = producer>} : memref<?x8x128xbf16>, memref<?xi32>, !p -> !kv.state<?x8x128xbf16, base = 2>
  kv.store_state %s, %o, %l : !kv.state<?x8x128xbf16, base = 2>, memref<?x8x128xbf16>, memref<?x8xf32>
  return
}
