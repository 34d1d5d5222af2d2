// RUN: kvir-opt %s --convert-kv-to-gpu=chip=sm_90a | FileCheck %s

// A FlashInfer-shaped batch decode (Hq 32 over Hkv 8, head_dim 128, NHD
// pages of 16, f16) becomes a gpu.module with the direct decode kernel, the
// split-KV decode kernel and the merge kernel, a launch plan, and host code
// derived from the plan: it reads each request's kv_len from the table and
// runs the plan's work schedule (kvir_schedule_work), which cuts long
// requests into chunks. When it cuts none, the direct kernel writes the
// output buffers; else the split kernel takes one work item per block and
// writes f32 partial states into workspace rows, and the merge kernel
// reduces each request's rows. Empty grids launch nothing.

!cache = !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128,
                   dtype = f16, layout = nhd, storage = combined, table = csr>
!state = !kv.state<?x32x128xf16, base = 2>

// CHECK: module attributes {gpu.container_module, kvgpu.launch_plans = [#kvgpu.plan<"kv.decode", "decode_nhd_combined_csr_p16_h32x8_d128_f16_f16_{{[0-9a-f]+}}"
// CHECK-SAME: sizes = [<"batch" from "q"[0]>, <"num_pages" from "pool"[0]>, <"num_page_ids" from "kv_indices"[0]>, <"num_partitions" = <min(32, max(1, ceildiv(264, max(1, batch * 8))))>>, <"max_work" = <max(batch * num_partitions, max(batch, 116))>>]
// CHECK-SAME: schedule = <lengths = "kv_lengths", items = "work_items", merge_indptr = "merge_indptr", count = "num_work", batch = "batch", uniform_chunks = "num_partitions", target_items = 116, granule = 16, min_chunk = 256, window_left = -1>
// CHECK: func.func private @kvir_schedule_work(!llvm.ptr, i64, i64, i64, i64, i64, i64, i64, !llvm.ptr, !llvm.ptr) -> i64

// CHECK-LABEL: func.func @batch_decode
// CHECK-SAME: (%[[Q:[^:]*]]: memref<?x32x128xf16>, %[[POOL:[^:]*]]: memref<?x2x16x8x128xf16>, %[[IP:[^:]*]]: memref<?xi32>, %[[IX:[^:]*]]: memref<?xi32>, %[[LAST:[^:]*]]: memref<?xi32>, %[[OUT:[^:]*]]: memref<?x32x128xf16>, %[[LSE:[^:]*]]: memref<?x32xf32>)
// CHECK-NOT: kv.decode
// CHECK-NOT: kv.store_state
// The requests' lengths, read on the host from the CSR table.
// CHECK: %[[LENS:.*]] = memref.alloc(%{{.*}}) : memref<?xi32>
// CHECK: scf.for %[[R:.*]] = %{{.*}} to
// CHECK: memref.load %[[IP]][%[[R]]]
// CHECK: memref.load %[[LAST]][%[[R]]]
// CHECK: memref.store %{{.*}}, %[[LENS]][%[[R]]]
// CHECK: %[[B:.*]] = memref.dim %[[Q]], %c0
// The plan-free chunk count and the work list's bound.
// CHECK: %[[BLOCKS:.*]] = arith.muli %[[B]], %c8
// CHECK: %[[NZ:.*]] = arith.maxsi %c1{{(_[0-9]+)?}}, %[[BLOCKS]]
// CHECK: %[[WANT:.*]] = arith.ceildivsi %c264, %[[NZ]]
// CHECK: %[[AT1:.*]] = arith.maxsi %c1{{(_[0-9]+)?}}, %[[WANT]]
// CHECK: %[[P:.*]] = arith.minsi %c32, %[[AT1]]
// CHECK: %[[BP:.*]] = arith.muli %[[B]], %[[P]]
// CHECK: %[[B116:.*]] = arith.maxsi %[[B]], %c116
// CHECK: %[[MAXW:.*]] = arith.maxsi %[[BP]], %[[B116]]
// CHECK: %[[ITEMS:.*]] = memref.alloc(%[[MAXW]]) : memref<?x4xi32>
// CHECK: %[[INDPTR:.*]] = memref.alloc(%{{.*}}) : memref<?xi32>
// CHECK: %[[N64:.*]] = call @kvir_schedule_work(
// CHECK: cf.assert
// CHECK: %[[N:.*]] = arith.index_cast %[[N64]] : i64 to index
// CHECK: %[[SPLIT:.*]] = arith.cmpi sgt, %[[N]], %[[B]]
// CHECK: %[[UNSPLIT:.*]] = arith.xori %[[SPLIT]], %true
// CHECK: scf.if %[[UNSPLIT]] {
// CHECK: arith.cmpi sgt, %{{.*}}, %c0
// CHECK: gpu.launch_func @kv_kernels::@[[DIRECT:decode_nhd_combined_csr_p16_h32x8_d128_f16_f16_[0-9a-f]+]] blocks in (%[[B]], %{{.*}}, %{{.*}}) threads in (%c16, %c4, %c2) args(%[[Q]] : memref<?x32x128xf16>, %[[POOL]] : memref<?x2x16x8x128xf16>, %[[IP]] : memref<?xi32>, %[[IX]] : memref<?xi32>, %[[LAST]] : memref<?xi32>, %[[OUT]] : memref<?x32x128xf16>, %[[LSE]] : memref<?x32xf32>)
// CHECK: %[[SPLIT2:.*]] = arith.cmpi sgt, %[[N]], %[[B]]
// CHECK: scf.if %[[SPLIT2]] {
// CHECK: %[[WO:.*]] = memref.alloc(%[[MAXW2:.*]]) : memref<?x32x128xf32>
// CHECK: %[[WL:.*]] = memref.alloc(%[[MAXW2]]) : memref<?x32xf32>
// CHECK: gpu.launch_func @kv_kernels::@[[SPLITK:decode_nhd_combined_csr_p16_h32x8_d128_f16_f32_split_[0-9a-f]+]] blocks in (%[[N]], %{{.*}}, %{{.*}}) threads in (%c16, %c4, %c2) args(%[[Q]] : {{.*}}, %[[ITEMS]] : memref<?x4xi32>, %[[WO]] : memref<?x32x128xf32>, %[[WL]] : memref<?x32xf32>, %[[OUT]] : memref<?x32x128xf16>, %[[LSE]] : memref<?x32xf32>)
// CHECK: gpu.launch_func @kv_kernels::@[[MERGE:merge_rows_h32_d128_f16_base_2_[0-9a-f]+]] blocks in (%[[B]], %{{.*}}, %{{.*}}) threads in (%c128, %{{.*}}, %{{.*}}) args(%[[WO]] : memref<?x32x128xf32>, %[[WL]] : memref<?x32xf32>, %[[INDPTR]] : memref<?xi32>, %[[OUT]] : memref<?x32x128xf16>, %[[LSE]] : memref<?x32xf32>)
// CHECK: memref.dealloc %[[WO]]
// CHECK: memref.dealloc %[[WL]]
// CHECK: memref.dealloc %[[ITEMS]]
// CHECK: memref.dealloc %[[INDPTR]]
// CHECK: memref.dealloc %[[LENS]]
// CHECK: return

// The direct kernel: block (16 x-threads of 8-element vectors, the group of
// 4 query heads, 2 tokens in flight); a ring of 3 stages of 16-token K/V
// tiles, the group's queries, the block's token range, the page ids of the
// tiles in the ring, and the z-lanes' partial states in shared memory.
// CHECK: gpu.module @kv_kernels {
// CHECK: gpu.func @[[DIRECT]](%{{.*}}: memref<?x32x128xf16>, %{{.*}}: memref<?x2x16x8x128xf16>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?x32x128xf16>, %{{.*}}: memref<?x32xf32>)
// Every shared buffer is 16-byte aligned: they are accessed with 16-byte
// vectors, and their element types alone would let ptxas place them at 2- or
// 4-byte offsets (a misaligned-address fault on the GPU).
// CHECK-SAME: workgroup(%[[KT:.*]] : memref<3x16x128xf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[VT:.*]] : memref<3x16x128xf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[QS:.*]] : memref<4x128xf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[META:.*]] : memref<4xi32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[PAGES:.*]] : memref<3x2xi32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.*}} : memref<8xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.*}} : memref<8xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.*}} : memref<8x128xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// CHECK-SAME: kernel attributes {nvvm.reqntid = array<i32: 16, 4, 2>}
// Thread 0 reads the request's CSR entries once and publishes the range.
// CHECK: scf.if
// CHECK: memref.load %{{.*}}[%block_id_x] : memref<?xi32>
// CHECK: memref.store %{{.*}}, %[[META]]
// The z == 0 threads stage q with 16-byte loads.
// CHECK: vector.load %{{.*}}[%block_id_x, %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x32x128xf16>, vector<8xf16>
// CHECK: vector.store %{{.*}}, %[[QS]]
// CHECK: gpu.barrier
// The prologue: the page ids of tiles 0, 1, 2 (one table load per page,
// all issued before any is stored), then tiles 0 and 1 in 16-byte cp.async
// copies (kv = 0 and 1 of the combined pool), one commit group each.
// CHECK: memref.load %{{.*}} : memref<?xi32>
// CHECK: memref.load %{{.*}} : memref<?xi32>
// CHECK: memref.load %{{.*}} : memref<?xi32>
// CHECK: memref.store %{{.*}}, %[[PAGES]]
// CHECK: gpu.barrier
// CHECK: memref.load %[[PAGES]]
// CHECK: nvgpu.device_async_copy %{{.*}}[%{{.*}}, %c0{{.*}}, %{{.*}}, %block_id_y, %{{.*}}], %[[KT]]
// CHECK: nvgpu.device_async_copy %{{.*}}[%{{.*}}, %c1{{.*}}, %{{.*}}, %block_id_y, %{{.*}}], %[[VT]]
// CHECK: nvvm.cp.async.commit.group
// CHECK: nvvm.cp.async.commit.group
// The tile loop: wait for tile i, issue tile i + 2, load the page ids of
// tile i + 3 into registers.
// CHECK: scf.for
// CHECK-NEXT: nvvm.cp.async.wait.group 1
// CHECK-NEXT: gpu.barrier
// CHECK: nvgpu.device_async_copy
// CHECK: nvvm.cp.async.commit.group
// CHECK: memref.load %{{.*}} : memref<?xi32>
// Scores of the lane's 8 tokens: fma dot products reduced over the 16
// x-threads by xor shuffles 8, 4, 2, 1, no lane selects (every lane holds
// head dims); then one online update for the tile in base 2 with
// ex2.approx.
// CHECK: vector.load %[[KT]]
// CHECK: llvm.intr.fma
// CHECK: %[[O8:.*]] = arith.constant 8 : i32
// CHECK: gpu.shuffle xor %{{.*}}, %[[O8]], %{{.*}} : f32
// CHECK: gpu.shuffle xor
// CHECK: gpu.shuffle xor
// CHECK: gpu.shuffle xor
// CHECK-NOT: arith.select %{{.*}} : vector<8xi1>, vector<8xf32>
// CHECK: arith.maximumf
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: vector.load %[[VT]]
// CHECK: llvm.intr.fma({{.*}}) : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// The page ids of tile i + 3 go to its slot at the end of the iteration.
// CHECK: memref.store %{{.*}}, %[[PAGES]]
// CHECK: scf.yield
// CHECK: nvvm.cp.async.wait.group 0
// The z-lanes' states merge through shared memory; z == 0 writes the row.
// CHECK: gpu.barrier
// CHECK: llvm.call_intrinsic "llvm.nvvm.lg2.approx.ftz.f"
// CHECK: arith.truncf %{{.*}} : vector<8xf32> to vector<8xf16>
// CHECK: vector.store %{{.*}}, %{{.*}}[%block_id_x, %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x32x128xf16>, vector<8xf16>
// CHECK: gpu.return

// The split kernel reads its work item (lane 0 of each warp, one 16-byte
// load, shuffled to the warp), does nothing for padding items (request -1),
// and writes the f32 partial state of the item's chunk to the item's
// workspace row.
// CHECK: gpu.func @[[SPLITK]]({{.*}}, %{{.*}}: memref<?x4xi32>, %{{.*}}: memref<?x32x128xf32>, %{{.*}}: memref<?x32xf32>)
// CHECK-SAME: nvvm.reqntid = array<i32: 16, 4, 2>
// CHECK: %[[ITEM:.*]] = scf.if %{{.*}} -> (vector<4xi32>) {
// CHECK: vector.load %{{.*}}[%block_id_x, %{{.*}}] {alignment = 16 : i64} : memref<?x4xi32>, vector<4xi32>
// CHECK: %[[REQ0:.*]] = vector.extract %[[ITEM]][0]
// CHECK: %[[REQ:.*]], %{{.*}} = gpu.shuffle idx %[[REQ0]]
// CHECK: %[[ROW0:.*]] = vector.extract %[[ITEM]][3]
// CHECK: %[[ROW32:.*]], %{{.*}} = gpu.shuffle idx %[[ROW0]]
// CHECK: %[[ROW:.*]] = arith.index_cast %[[ROW32]]
// CHECK: %[[HAS:.*]] = arith.cmpi sge, %[[REQ]], %c0_i32
// CHECK: scf.if %[[HAS]] {
// CHECK: arith.ceildivui
// CHECK: vector.store %{{.*}}, %{{.*}}[%[[ROW]], %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x32x128xf32>, vector<8xf32>
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[ROW]], %{{.*}}] : memref<?x32xf32>

// The merge kernel: one thread per output dim over the request's rows
// [indptr[r], indptr[r + 1]), their LSEs staged in shared memory a
// block-width at a time.
// CHECK: gpu.func @[[MERGE]](%{{.*}}: memref<?x32x128xf32>, %{{.*}}: memref<?x32xf32>, %[[MIP:.*]]: memref<?xi32>, %{{.*}}: memref<?x32x128xf16>, %{{.*}}: memref<?x32xf32>)
// CHECK-SAME: workgroup(%[[LS:.*]] : memref<128xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// CHECK-SAME: nvvm.reqntid = array<i32: 128, 1, 1>
// CHECK: memref.load %[[MIP]][%block_id_x]
// CHECK: memref.load %[[MIP]]
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
