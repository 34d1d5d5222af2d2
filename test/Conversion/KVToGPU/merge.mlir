// RUN: kvir-opt %s -split-input-file --convert-kv-to-gpu=chip=sm_90a | FileCheck %s

// States held in buffers (kv.load_state), merged and stored: one launch of a
// merge kernel, grid (rows, heads), one thread per output dim. Each input
// LSE is read once per block into shared memory.

!s2 = !kv.state<?x4x64xf16, base = 2>
// CHECK-LABEL: func.func @merge_two_base2
// CHECK-SAME: (%[[O0:[^:]*]]: memref<?x4x64xf16>, %[[L0:[^:]*]]: memref<?x4xf32>, %[[O1:[^:]*]]: memref<?x4x64xf16>, %[[L1:[^:]*]]: memref<?x4xf32>, %[[O:[^:]*]]: memref<?x4x64xf16>, %[[L:[^:]*]]: memref<?x4xf32>)
// CHECK-NOT: kv.
// The plan's size `rows` is the output's dim 0; an empty grid launches
// nothing.
// CHECK: %[[ROWS:.*]] = memref.dim %[[O]], %c0
// CHECK: %[[N:.*]] = arith.muli %[[ROWS]], %c4
// CHECK: %[[N2:.*]] = arith.muli %[[N]], %c1
// CHECK: %[[NE:.*]] = arith.cmpi sgt, %[[N2]], %c0
// CHECK: scf.if %[[NE]] {
// CHECK: gpu.launch_func @kv_kernels::@[[K:merge2_h4_d64_f16_base_2_[0-9a-f]+]] blocks in (%[[ROWS]], %c4, %{{.*}}) threads in (%c64, %{{.*}}, %{{.*}}) args(%[[O0]] : memref<?x4x64xf16>, %[[L0]] : memref<?x4xf32>, %[[O1]] : memref<?x4x64xf16>, %[[L1]] : memref<?x4xf32>, %[[O]] : memref<?x4x64xf16>, %[[L]] : memref<?x4xf32>)
// CHECK: gpu.func @[[K]]({{.*}}) workgroup(%[[LS:.*]] : memref<2xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}) kernel attributes {nvvm.reqntid = array<i32: 64, 1, 1>}
// Thread 0 stages LSE 0, thread 1 LSE 1 (base 2: no rescaling).
// CHECK: scf.if
// CHECK: memref.load %{{.*}}[%block_id_x, %block_id_y] : memref<?x4xf32>
// CHECK: memref.store %{{.*}}, %[[LS]][%{{.*}}]
// CHECK: scf.if
// CHECK: memref.store %{{.*}}, %[[LS]][%{{.*}}]
// CHECK: gpu.barrier
// CHECK: arith.extf %{{.*}} : f16 to f32
// CHECK: arith.maximumf
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: arith.divf
// CHECK: llvm.call_intrinsic "llvm.nvvm.lg2.approx.ftz.f"
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: memref.store %{{.*}}, %{{.*}}[%block_id_x, %block_id_y, %thread_id_x] : memref<?x4x64xf16>
// CHECK: memref.store %{{.*}}, %{{.*}}[%block_id_x, %block_id_y] : memref<?x4xf32>
func.func @merge_two_base2(%o0: memref<?x4x64xf16>, %l0: memref<?x4xf32>,
                           %o1: memref<?x4x64xf16>, %l1: memref<?x4xf32>,
                           %o: memref<?x4x64xf16>, %l: memref<?x4xf32>) {
  %a = kv.load_state %o0, %l0 : memref<?x4x64xf16>, memref<?x4xf32> -> !s2
  %b = kv.load_state %o1, %l1 : memref<?x4x64xf16>, memref<?x4xf32> -> !s2
  %m = kv.merge %a, %b : !s2, !s2 -> !s2
  kv.store_state %m, %o, %l : !s2, memref<?x4x64xf16>, memref<?x4xf32>
  return
}

// -----

// Base e (vLLM): LSEs are scaled by log2(e) on load and the result by ln 2.
!se = !kv.state<?x2x128xf32, base = e>
// CHECK-LABEL: func.func @merge_three_base_e
// CHECK: gpu.launch_func @kv_kernels::@[[K:merge3_h2_d128_f32_base_e_[0-9a-f]+]] blocks in
// CHECK: gpu.func @[[K]]({{.*}}) workgroup(%{{.*}} : memref<3xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// CHECK: arith.constant 1.44269502 : f32
// CHECK: gpu.barrier
// CHECK: arith.constant 0.693147182 : f32
func.func @merge_three_base_e(%o0: memref<?x2x128xf32>, %l0: memref<?x2xf32>,
                              %o1: memref<?x2x128xf32>, %l1: memref<?x2xf32>,
                              %o2: memref<?x2x128xf32>, %l2: memref<?x2xf32>,
                              %o: memref<?x2x128xf32>, %l: memref<?x2xf32>) {
  %a = kv.load_state %o0, %l0 : memref<?x2x128xf32>, memref<?x2xf32> -> !se
  %b = kv.load_state %o1, %l1 : memref<?x2x128xf32>, memref<?x2xf32> -> !se
  %c = kv.load_state %o2, %l2 : memref<?x2x128xf32>, memref<?x2xf32> -> !se
  %m = kv.merge %a, %b, %c : !se, !se, !se -> !se
  kv.store_state %m, %o, %l : !se, memref<?x2x128xf32>, memref<?x2xf32>
  return
}

// -----

// kv.merge_partitions over a runtime partition count: chunks of blockDim.x
// partitions, each chunk's LSEs staged by one thread each, merged online.
!p = !kv.state<?x8x64xbf16, base = e, partitions = ?>
!s = !kv.state<?x8x64xbf16, base = e>
// CHECK-LABEL: func.func @merge_partitions
// CHECK-SAME: (%[[PO:[^:]*]]: memref<?x?x8x64xbf16>, %[[PL:[^:]*]]: memref<?x?x8xf32>
// CHECK: gpu.launch_func @kv_kernels::@[[K:merge_partitions_h8_d64_bf16_base_e_[0-9a-f]+]] blocks in (%{{.*}}, %c8, %{{.*}}) threads in (%c64, %{{.*}}, %{{.*}}) args(%[[PO]] : memref<?x?x8x64xbf16>, %[[PL]] : memref<?x?x8xf32>
// CHECK: gpu.func @[[K]]({{.*}}) workgroup(%[[LS:.*]] : memref<64xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// CHECK: %[[P:.*]] = memref.dim %{{.*}}, %c0{{.*}} : memref<?x?x8xf32>
// CHECK: scf.for %[[C0:.*]] = %{{.*}} to %[[P]] step %c64
// CHECK: gpu.barrier
// CHECK: %[[PI:.*]] = arith.addi %[[C0]], %thread_id_x
// CHECK: arith.cmpi slt, %[[PI]], %[[P]]
// CHECK: memref.load %{{.*}}[%[[PI]], %block_id_x, %block_id_y] : memref<?x?x8xf32>
// CHECK: memref.store %{{.*}}, %[[LS]][%thread_id_x]
// CHECK: gpu.barrier
// CHECK: scf.for
// CHECK: memref.load %[[LS]]
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: arith.maximumf
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: arith.truncf %{{.*}} : f32 to bf16
func.func @merge_partitions(%po: memref<?x?x8x64xbf16>, %pl: memref<?x?x8xf32>,
                            %o: memref<?x8x64xbf16>, %l: memref<?x8xf32>) {
  %a = kv.load_state %po, %pl : memref<?x?x8x64xbf16>, memref<?x?x8xf32> -> !p
  %m = kv.merge_partitions %a : !p -> !s
  kv.store_state %m, %o, %l : !s, memref<?x8x64xbf16>, memref<?x8xf32>
  return
}

// -----

// Sinks merged into a merge's result (a cascade's levels, then its sinks)
// join in the same kernel: one launch taking the sinks, each row's state
// merged with (0, sinks[head] / ln B) once, before it is normalized.
!s2 = !kv.state<?x4x64xf16, base = 2>
// CHECK-LABEL: func.func @merge_then_sinks
// CHECK-SAME: %[[SINKS:[^:]*]]: memref<4xf32>
// CHECK-NOT: kv.
// CHECK: gpu.launch_func @kv_kernels::@[[K:merge2_h4_d64_f16_base_2_[0-9a-f]+]] blocks in ({{.*}}) threads in ({{.*}}) args({{.*}}, %[[SINKS]] : memref<4xf32>)
// CHECK-NOT: gpu.launch_func
// CHECK: gpu.func @[[K]](
// CHECK-SAME: %[[S:arg[0-9]+]]: memref<4xf32>)
// CHECK: memref.load %[[S]][%block_id_y] : memref<4xf32>
// CHECK: arith.constant 1.44269502 : f32
func.func @merge_then_sinks(%o0: memref<?x4x64xf16>, %l0: memref<?x4xf32>,
                            %o1: memref<?x4x64xf16>, %l1: memref<?x4xf32>,
                            %sinks: memref<4xf32>,
                            %o: memref<?x4x64xf16>, %l: memref<?x4xf32>) {
  %a = kv.load_state %o0, %l0 : memref<?x4x64xf16>, memref<?x4xf32> -> !s2
  %b = kv.load_state %o1, %l1 : memref<?x4x64xf16>, memref<?x4xf32> -> !s2
  %m = kv.merge %a, %b : !s2, !s2 -> !s2
  %s = kv.merge_sinks %m, %sinks : !s2, memref<4xf32>
  kv.store_state %s, %o, %l : !s2, memref<?x4x64xf16>, memref<?x4xf32>
  return
}

// -----

// A lone kv.merge_sinks of a state in buffers: the merge kernel of one input.
!se = !kv.state<?x4x64xbf16, base = e>
// CHECK-LABEL: func.func @sinks_alone
// CHECK: gpu.launch_func @kv_kernels::@{{merge1_h4_d64_bf16_base_e_[0-9a-f]+}} blocks in
func.func @sinks_alone(%o0: memref<?x4x64xbf16>, %l0: memref<?x4xf32>,
                       %sinks: memref<?xf32>,
                       %o: memref<?x4x64xbf16>, %l: memref<?x4xf32>) {
  %a = kv.load_state %o0, %l0 : memref<?x4x64xbf16>, memref<?x4xf32> -> !se
  %s = kv.merge_sinks %a, %sinks : !se, memref<?xf32>
  kv.store_state %s, %o, %l : !se, memref<?x4x64xbf16>, memref<?x4xf32>
  return
}
