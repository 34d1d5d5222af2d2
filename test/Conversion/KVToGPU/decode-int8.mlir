// RUN: kvir-opt %s -split-input-file -kv-tile=chip=sm_80 --convert-kv-to-gpu=chip=sm_80 | FileCheck %s

// OpenPPL's int8 groups become the decode kernel with the codes as stored:
// kv-tile picks 16-element vectors (16 bytes of codes per lane); each
// tile's codes and its scales (one per quant_group dims, in a pool of the
// same layout) reach the stage ring by cp.async: the scale rows in chunks
// of up to 16 bytes (a 128-dim row at group 8: 16 f16 scales, two chunks
// of 16 bytes; a 64-dim row at group 16: 4 scales, one chunk of 8 bytes
// through L1, as cp.async allows only 16-byte copies to bypass it). Codes
// become f16 exactly with integer ops (1024 + (code ^ 0x80) as f16 bits,
// minus 1152); with a GQA group the block does it once per tile into f16
// tiles. Scores take a dot product per group times its scale; V rows are
// multiplied by their groups' scales dim by dim.

!i8 = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr, quant = int8_group, quant_group = 8>
!s = !kv.state<?x8x128xf16, base = 2>

// CHECK: #kvgpu.plan<"kv.decode", "[[DIRECT:decode_nhd_combined_csr_p16_h8x2_d128_f16_int8_group_f16_[0-9a-f]+]]"
// CHECK-SAME: <"pool", input, memref<?x2x16x2x128xi8>
// CHECK-SAME: <"scale_pool", input, memref<?x2x16x2x16xf16>, shape = [<num_pages>, <2>, <16>, <2>, <16>]>
// CHECK-SAME: config = #kvgpu.decode<vector = 16, threads_x = 8, threads_z = 4, tile_tokens = 16, stages = 4, max_partitions = 32>
// CHECK-SAME: args = ["q", "pool", "kv_indptr", "kv_indices", "kv_last_page_len", "scale_pool", "out", "lse"]

// CHECK-LABEL: func.func @grouped
// CHECK: gpu.launch_func @kv_kernels::@[[DIRECT]]

// CHECK: gpu.func @[[DIRECT]](
// CHECK-SAME: %[[SCALES:arg[0-9]+]]: memref<?x2x16x2x16xf16>
// CHECK-SAME: workgroup(%[[KT:.*]] : memref<4x16x128xi8, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[VT:.*]] : memref<4x16x128xi8, #gpu.address_space<workgroup>>
// CHECK-SAME: %[[KD:arg[0-9]+]] : memref<16x128xf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[VD:arg[0-9]+]] : memref<16x128xf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[KS:arg[0-9]+]] : memref<4x16x16xf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[VS:arg[0-9]+]] : memref<4x16x16xf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// CHECK: nvgpu.device_async_copy {{.*}}, %[[KT]][{{.*}}], 16, {{.*}} {bypassL1} : memref<?x2x16x2x128xi8>
// CHECK: nvgpu.device_async_copy {{.*}}, %[[VT]][{{.*}}], 16, {{.*}} {bypassL1} : memref<?x2x16x2x128xi8>
// CHECK: nvgpu.device_async_copy %[[SCALES]][{{.*}}], %[[KS]][{{.*}}], 8, {{.*}} {bypassL1} : memref<?x2x16x2x16xf16>
// CHECK: nvgpu.device_async_copy %[[SCALES]][{{.*}}], %[[VS]][{{.*}}], 8, {{.*}} {bypassL1} : memref<?x2x16x2x16xf16>
// CHECK: scf.for
// CHECK: gpu.barrier
// The block decodes the tile's K codes, then its V codes, 16 at a time.
// CHECK: scf.for
// CHECK: %[[CODES:.*]] = vector.load %[[KT]][{{.*}}] : memref<4x16x128xi8, #gpu.address_space<workgroup>>, vector<16xi8>
// CHECK-NEXT: vector.bitcast %[[CODES]] : vector<16xi8> to vector<4xi32>
// CHECK: arith.xori %{{.*}}, %{{.*}} : vector<4xi32>
// CHECK: %[[HALVES:.*]] = vector.shuffle %{{.*}}, %{{.*}} [0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15] : vector<8xf16>, vector<8xf16>
// CHECK-NEXT: %[[BIAS:.*]] = arith.constant dense<1.152000e+03> : vector<16xf16>
// CHECK-NEXT: %[[EXACT:.*]] = arith.subf %[[HALVES]], %[[BIAS]] : vector<16xf16>
// CHECK-NEXT: vector.store %[[EXACT]], %[[KD]][{{.*}}] : memref<16x128xf16, #gpu.address_space<workgroup>>, vector<16xf16>
// CHECK: vector.load %[[VT]]
// CHECK: vector.store %{{.*}}, %[[VD]]
// CHECK: gpu.barrier
// Every head of the group reads the decoded rows and its two K scales: a
// dot product of 8 codes per group, times the group's scale.
// CHECK: vector.load %[[KD]][{{.*}}] : memref<16x128xf16, #gpu.address_space<workgroup>>, vector<16xf16>
// CHECK: %[[KSV:.*]] = vector.load %[[KS]][{{.*}}] : memref<4x16x16xf16, #gpu.address_space<workgroup>>, vector<2xf16>
// CHECK-NEXT: vector.extract %[[KSV]][0] : f16 from vector<2xf16>
// CHECK: vector.extract_strided_slice %{{.*}} {offsets = [0], sizes = [8], strides = [1]} : vector<16xf32> to vector<8xf32>
// CHECK: vector.extract %[[KSV]][1] : f16 from vector<2xf16>
// CHECK: vector.extract_strided_slice %{{.*}} {offsets = [8], sizes = [8], strides = [1]} : vector<16xf32> to vector<8xf32>
// V rows are scaled dim by dim: the two V scales spread over the 16 dims.
// CHECK: vector.load %[[VD]][{{.*}}] : memref<16x128xf16, #gpu.address_space<workgroup>>, vector<16xf16>
// CHECK: %[[VSV:.*]] = vector.load %[[VS]][{{.*}}] : memref<4x16x16xf16, #gpu.address_space<workgroup>>, vector<2xf16>
// CHECK-NEXT: %[[VSF:.*]] = arith.extf %[[VSV]] : vector<2xf16> to vector<2xf32>
// CHECK-NEXT: vector.shuffle %[[VSF]], %[[VSF]] [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1] : vector<2xf32>, vector<2xf32>
func.func @grouped(%q: memref<?x8x128xf16>, %pool: memref<?x2x16x2x128xi8>, %scales: memref<?x2x16x2x16xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %last: memref<?xi32>, %o: memref<?x8x128xf16>, %lse: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x2x128xi8>) tables(%ip, %ix, %last : memref<?xi32>, memref<?xi32>, memref<?xi32>) scales(%scales : memref<?x2x16x2x16xf16>) : !i8
  %s = kv.decode %q, %kv : memref<?x8x128xf16>, !i8 -> !s
  kv.store_state %s, %o, %lse : !s, memref<?x8x128xf16>, memref<?x8xf32>
  return
}

// -----

!i8 = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = bf16, layout = hnd, storage = split, table = block_table, quant = int8_group, quant_group = 16>
!s = !kv.state<?x2x64xbf16, base = e>

// Without a group, each lane converts the rows it reads in its registers
// (no decoded tiles); a 16-code vector is one group: one scale.
// CHECK: gpu.func @decode_hnd_split_block_table_p16_h2x2_d64_bf16_int8_group_bf16_
// CHECK-SAME: %[[KSCALES:arg[0-9]+]]: memref<?x2x16x4xbf16>, %[[VSCALES:arg[0-9]+]]: memref<?x2x16x4xbf16>
// CHECK-SAME: workgroup(%[[KT:.*]] : memref<4x32x64xi8, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.*}} : memref<4x32x64xi8, #gpu.address_space<workgroup>>
// CHECK-NOT: xf16, #gpu.address_space<workgroup>>
// CHECK-SAME: %[[KS:arg[0-9]+]] : memref<4x32x4xbf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.*}} : memref<4x32x4xbf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}) kernel
// The scale rows (8 bytes) are copied through L1.
// CHECK: nvgpu.device_async_copy %[[KSCALES]][{{.*}}], %[[KS]][{{.*}}], 4, %{{[0-9]+}} : memref<?x2x16x4xbf16>
// CHECK: scf.for
// CHECK: %[[CODES:.*]] = vector.load %[[KT]][{{.*}}] : memref<4x32x64xi8, #gpu.address_space<workgroup>>, vector<16xi8>
// CHECK-NEXT: vector.bitcast %[[CODES]] : vector<16xi8> to vector<4xi32>
// CHECK: arith.subf %{{.*}}, %{{.*}} : vector<16xf16>
// CHECK-NEXT: arith.extf %{{.*}} : vector<16xf16> to vector<16xf32>
// One group per 16-code vector: the score is its dot product times the
// group's scale.
// CHECK: %[[S:.*]] = vector.load %[[KS]][{{.*}}] : memref<4x32x4xbf16, #gpu.address_space<workgroup>>, vector<1xbf16>
// CHECK-NEXT: %[[S0:.*]] = vector.extract %[[S]][0] : bf16 from vector<1xbf16>
// CHECK-NEXT: arith.extf %[[S0]] : bf16 to f32
func.func @ungrouped(%q: memref<?x2x64xbf16>, %k: memref<?x2x16x64xi8>, %v: memref<?x2x16x64xi8>, %bt: memref<?x?xi32>, %lens: memref<?xi32>, %ks: memref<?x2x16x4xbf16>, %vs: memref<?x2x16x4xbf16>, %o: memref<?x2x64xbf16>, %lse: memref<?x2xf32>) {
  %kv = kv.paged_view pools(%k, %v : memref<?x2x16x64xi8>, memref<?x2x16x64xi8>) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) scales(%ks, %vs : memref<?x2x16x4xbf16>, memref<?x2x16x4xbf16>) : !i8
  %s = kv.decode %q, %kv : memref<?x2x64xbf16>, !i8 -> !s
  kv.store_state %s, %o, %lse : !s, memref<?x2x64xbf16>, memref<?x2xf32>
  return
}
