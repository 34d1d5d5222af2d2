// RUN: kvir-opt %s --convert-kv-to-gpu=chip=sm_90a | FileCheck %s

// A FlashInfer-shaped batch decode (Hq 32 over Hkv 8, head_dim 128, NHD
// pages of 16, f16) becomes a gpu.module with the direct decode kernel, the
// split-KV decode kernel and the merge kernel, a launch plan, and host code
// derived from the plan that computes the partition count
// P = min(32, max(1, ceildiv(2 * 132, max(1, batch * 8)))) at run time:
// P == 1 launches the direct kernel into the output buffers, else the split
// kernel writes f32 partial states into a workspace and the merge kernel
// reduces them. Empty grids launch nothing.

!cache = !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128,
                   dtype = f16, layout = nhd, storage = combined, table = csr>
!state = !kv.state<?x32x128xf16, base = 2>

// CHECK: module attributes {gpu.container_module, kvgpu.launch_plans = [#kvgpu.plan<"kv.decode", "decode_nhd_combined_csr_p16_h32x8_d128_f16_f16_{{[0-9a-f]+}}"
// CHECK-SAME: sizes = [<"batch" from "q"[0]>, <"num_pages" from "pool"[0]>, <"num_page_ids" from "kv_indices"[0]>, <"num_partitions" = <min(32, max(1, ceildiv(264, max(1, batch * 8))))>>], partitions = "num_partitions"

// CHECK-LABEL: func.func @batch_decode
// CHECK-SAME: (%[[Q:[^:]*]]: memref<?x32x128xf16>, %[[POOL:[^:]*]]: memref<?x2x16x8x128xf16>, %[[IP:[^:]*]]: memref<?xi32>, %[[IX:[^:]*]]: memref<?xi32>, %[[LAST:[^:]*]]: memref<?xi32>, %[[OUT:[^:]*]]: memref<?x32x128xf16>, %[[LSE:[^:]*]]: memref<?x32xf32>)
// CHECK-NOT: kv.decode
// CHECK-NOT: kv.store_state
// CHECK: %[[B:.*]] = memref.dim %[[Q]], %c0
// The split rule of the plan.
// CHECK: %[[BLOCKS:.*]] = arith.muli %[[B]], %c8
// CHECK: %[[NZ:.*]] = arith.maxsi %c1{{(_[0-9]+)?}}, %[[BLOCKS]]
// CHECK: %[[WANT:.*]] = arith.ceildivsi %c264, %[[NZ]]
// CHECK: %[[AT1:.*]] = arith.maxsi %c1{{(_[0-9]+)?}}, %[[WANT]]
// CHECK: %[[P:.*]] = arith.minsi %c32, %[[AT1]]
// CHECK: %[[SPLIT:.*]] = arith.cmpi sgt, %[[P]], %c1
// CHECK: %[[UNSPLIT:.*]] = arith.xori %[[SPLIT]], %true
// CHECK: scf.if %[[UNSPLIT]] {
// CHECK: %[[N:.*]] = arith.muli %[[B]]
// CHECK: arith.cmpi sgt, %{{.*}}, %c0
// CHECK: gpu.launch_func @kv_kernels::@[[DIRECT:decode_nhd_combined_csr_p16_h32x8_d128_f16_f16_[0-9a-f]+]] blocks in (%[[B]], %{{.*}}, %{{.*}}) threads in (%c16, %c4, %c2) args(%[[Q]] : memref<?x32x128xf16>, %[[POOL]] : memref<?x2x16x8x128xf16>, %[[IP]] : memref<?xi32>, %[[IX]] : memref<?xi32>, %[[LAST]] : memref<?xi32>, %[[OUT]] : memref<?x32x128xf16>, %[[LSE]] : memref<?x32xf32>)
// CHECK: %[[SPLIT2:.*]] = arith.cmpi sgt, %[[P]], %c1
// CHECK: scf.if %[[SPLIT2]] {
// CHECK: %[[WO:.*]] = memref.alloc(%[[P]], %[[B]]) : memref<?x?x32x128xf32>
// CHECK: %[[WL:.*]] = memref.alloc(%[[P]], %[[B]]) : memref<?x?x32xf32>
// CHECK: gpu.launch_func @kv_kernels::@[[SPLITK:decode_nhd_combined_csr_p16_h32x8_d128_f16_f32_split_[0-9a-f]+]] blocks in (%[[B]], %{{.*}}, %[[P]]) threads in (%c16, %c4, %c2) args(%[[Q]] : {{.*}}, %[[WO]] : memref<?x?x32x128xf32>, %[[WL]] : memref<?x?x32xf32>, %[[P]] : index)
// CHECK: gpu.launch_func @kv_kernels::@[[MERGE:merge_partitions_h32_d128_f16_base_2_[0-9a-f]+]] blocks in (%[[B]], %{{.*}}, %{{.*}}) threads in (%c128, %{{.*}}, %{{.*}}) args(%[[WO]] : memref<?x?x32x128xf32>, %[[WL]] : memref<?x?x32xf32>, %[[OUT]] : memref<?x32x128xf16>, %[[LSE]] : memref<?x32xf32>)
// CHECK: memref.dealloc %[[WO]]
// CHECK: memref.dealloc %[[WL]]
// CHECK: return

// The direct kernel: block (16 x-threads of 8-element vectors, the group of
// 4 query heads, 2 tokens in flight); K/V tiles of 32 tokens, the group's
// queries, the block's token range and page ids, and the z-lanes' partial
// states in shared memory.
// CHECK: gpu.module @kv_kernels {
// CHECK: gpu.func @[[DIRECT]](%{{.*}}: memref<?x32x128xf16>, %{{.*}}: memref<?x2x16x8x128xf16>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?x32x128xf16>, %{{.*}}: memref<?x32xf32>)
// Every shared buffer is 16-byte aligned: they are accessed with 16-byte
// vectors, and their element types alone would let ptxas place them at 2- or
// 4-byte offsets (a misaligned-address fault on the GPU).
// CHECK-SAME: workgroup(%[[KT:.*]] : memref<32x128xf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[VT:.*]] : memref<32x128xf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[QS:.*]] : memref<4x128xf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[META:.*]] : memref<3xi32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[PAGES:.*]] : memref<3xi32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.*}} : memref<8xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.*}} : memref<8xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.*}} : memref<8x128xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// CHECK-SAME: kernel attributes {nvvm.reqntid = array<i32: 16, 4, 2>}
// Thread 0 reads the request's CSR entries once and publishes the range.
// CHECK: scf.if
// CHECK: memref.load %{{.*}}[%block_id_x] : memref<?xi32>
// CHECK: memref.store %{{.*}}, %[[META]]
// The z == 0 threads stage q with 16-byte loads.
// CHECK: vector.load %{{.*}}[%block_id_x, %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x32x128xf16>, vector<8xf16>
// CHECK: vector.store %{{.*}}, %[[QS]]
// CHECK: gpu.barrier
// The tile loop: one page-id load per page, then K and V rows staged with
// 16-byte vector loads (kv = 0 and 1 of the combined pool).
// CHECK: scf.for
// CHECK: scf.for
// CHECK: memref.load %{{.*}} : memref<?xi32>
// CHECK: memref.store %{{.*}}, %[[PAGES]]
// CHECK: gpu.barrier
// CHECK: scf.for
// CHECK: memref.load %[[PAGES]]
// CHECK: %[[K:.*]] = vector.load %{{.*}}[%{{.*}}, %c0{{.*}}, %{{.*}}, %block_id_y, %{{.*}}] {alignment = 16 : i64} : memref<?x2x16x8x128xf16>, vector<8xf16>
// CHECK: vector.store %[[K]], %[[KT]]
// CHECK: %[[V:.*]] = vector.load %{{.*}}[%{{.*}}, %c1{{.*}}, %{{.*}}, %block_id_y, %{{.*}}] {alignment = 16 : i64} : memref<?x2x16x8x128xf16>, vector<8xf16>
// CHECK: vector.store %[[V]], %[[VT]]
// CHECK: gpu.barrier
// Scores: a vector dot product reduced over the 16 x-threads by xor
// shuffles 8, 4, 2, 1; online softmax in base 2 with ex2.approx.
// CHECK: scf.for
// CHECK: vector.load %[[KT]]
// CHECK: vector.reduction <add>
// CHECK: %[[O8:.*]] = arith.constant 8 : i32
// CHECK: gpu.shuffle xor %{{.*}}, %[[O8]], %{{.*}} : f32
// CHECK: gpu.shuffle xor
// CHECK: gpu.shuffle xor
// CHECK: gpu.shuffle xor
// CHECK-NOT: gpu.shuffle
// CHECK: vector.load %[[VT]]
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: gpu.barrier
// The z-lanes' states merge through shared memory; z == 0 writes the row.
// CHECK: gpu.barrier
// CHECK: llvm.call_intrinsic "llvm.nvvm.lg2.approx.ftz.f"
// CHECK: arith.truncf %{{.*}} : vector<8xf32> to vector<8xf16>
// CHECK: vector.store %{{.*}}, %{{.*}}[%block_id_x, %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x32x128xf16>, vector<8xf16>
// CHECK: gpu.return

// The split kernel writes f32 partial states of partition blockIdx.z.
// CHECK: gpu.func @[[SPLITK]]({{.*}}, %{{.*}}: memref<?x?x32x128xf32>, %{{.*}}: memref<?x?x32xf32>, %{{.*}}: index)
// CHECK-SAME: nvvm.reqntid = array<i32: 16, 4, 2>
// CHECK: arith.ceildivui
// CHECK: vector.store %{{.*}}, %{{.*}}[%block_id_z, %block_id_x, %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x?x32x128xf32>, vector<8xf32>
// CHECK: memref.store %{{.*}}, %{{.*}}[%block_id_z, %block_id_x, %{{.*}}] : memref<?x?x32xf32>

// The merge kernel: one thread per output dim, the partitions' LSEs staged
// in shared memory a block-width at a time.
// CHECK: gpu.func @[[MERGE]](%{{.*}}: memref<?x?x32x128xf32>, %{{.*}}: memref<?x?x32xf32>, %{{.*}}: memref<?x32x128xf16>, %{{.*}}: memref<?x32xf32>)
// CHECK-SAME: workgroup(%[[LS:.*]] : memref<128xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// CHECK-SAME: nvvm.reqntid = array<i32: 128, 1, 1>
// CHECK: scf.for
// CHECK: gpu.barrier
// CHECK: memref.store %{{.*}}, %[[LS]]
// CHECK: gpu.barrier
// CHECK: scf.for
// CHECK: memref.load %[[LS]]
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"

func.func @batch_decode(%q: memref<?x32x128xf16>, %pool: memref<?x2x16x8x128xf16>,
                        %indptr: memref<?xi32>, %indices: memref<?xi32>,
                        %last: memref<?xi32>,
                        %out: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x8x128xf16>)
      tables(%indptr, %indices, %last : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !cache
  %s = kv.decode %q, %kv : memref<?x32x128xf16>, !cache -> !state
  kv.store_state %s, %out, %lse : !state, memref<?x32x128xf16>, memref<?x32xf32>
  return
}
