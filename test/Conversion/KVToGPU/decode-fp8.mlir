// RUN: kvir-opt %s -split-input-file -kv-tile=chip=sm_80 --convert-kv-to-gpu=chip=sm_80 | FileCheck %s

// fp8 (e4m3) decodes become the decode kernel with the codes as stored:
// the plan passes the per-tensor k_scale and v_scale by value (role
// scalar); kv-tile picks 16-element vectors (16 bytes of codes per lane,
// one cp.async per row chunk) and at most 4 tokens per z-lane; the stage
// ring holds fp8. Codes decode with integer ops on 32-bit words (two f16
// per half word, 2^-8 of the value for e4m3) -- in each lane's registers
// without a GQA group; with one, once per tile into f16 tiles in shared
// memory that all the group's heads read. k_scale (times 2^8) scales the
// query once and v_scale (times 2^8) the accumulated output once.

!f8 = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr, quant = fp8_e4m3>
!s = !kv.state<?x8x128xf16, base = 2>

// CHECK: #kvgpu.plan<"kv.decode", "[[DIRECT:decode_nhd_combined_csr_p16_h8x2_d128_f16_fp8_e4m3_f16_[0-9a-f]+]]"
// CHECK-SAME: <"pool", input, memref<?x2x16x2x128xf8E4M3FN>
// CHECK-SAME: <"k_scale", scalar, f32>, <"v_scale", scalar, f32>
// CHECK-SAME: config = #kvgpu.decode<vector = 16, threads_x = 8, threads_z = 4, tile_tokens = 16, stages = 4, max_partitions = 32>
// CHECK-SAME: args = ["q", "pool", "kv_indptr", "kv_indices", "kv_last_page_len", "k_scale", "v_scale", "out", "lse"]

// CHECK-LABEL: func.func @grouped
// CHECK: gpu.launch_func @kv_kernels::@[[DIRECT]] {{.*}} args(%{{.*}} : memref<?x8x128xf16>, %{{.*}} : memref<?x2x16x2x128xf8E4M3FN>, {{.*}}, %{{.*}} : f32, %{{.*}} : f32,

// CHECK: gpu.func @[[DIRECT]](
// CHECK-SAME: %[[KSCALE:arg[0-9]+]]: f32, %[[VSCALE:arg[0-9]+]]: f32
// CHECK-SAME: workgroup(%[[KT:.*]] : memref<4x16x128xf8E4M3FN, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[VT:.*]] : memref<4x16x128xf8E4M3FN, #gpu.address_space<workgroup>>
// CHECK-SAME: %[[KD:arg[0-9]+]] : memref<16x128xf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[VD:arg[0-9]+]] : memref<16x128xf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// CHECK: vector.broadcast %[[KSCALE]] : f32 to vector<16xf32>
// CHECK: nvgpu.device_async_copy {{.*}}, 16, {{.*}} : memref<?x2x16x2x128xf8E4M3FN> to memref<4x16x128xf8E4M3FN, #gpu.address_space<workgroup>>
// CHECK: scf.for
// CHECK: gpu.barrier
// The block decodes the tile's K codes, then its V codes, 16 at a time.
// CHECK: scf.for
// CHECK: %[[CODES:.*]] = vector.load %[[KT]][{{.*}}] : memref<4x16x128xf8E4M3FN, #gpu.address_space<workgroup>>, vector<16xf8E4M3FN>
// CHECK-NEXT: %[[BYTES:.*]] = arith.bitcast %[[CODES]] : vector<16xf8E4M3FN> to vector<16xi8>
// CHECK-NEXT: vector.bitcast %[[BYTES]] : vector<16xi8> to vector<4xi32>
// CHECK: %[[LOW:.*]] = vector.bitcast %{{.*}} : vector<4xi32> to vector<8xf16>
// CHECK-NEXT: %[[HIGH:.*]] = vector.bitcast %{{.*}} : vector<4xi32> to vector<8xf16>
// CHECK-NEXT: %[[HALVES:.*]] = vector.shuffle %[[LOW]], %[[HIGH]] [0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15] : vector<8xf16>, vector<8xf16>
// CHECK-NEXT: vector.store %[[HALVES]], %[[KD]][{{.*}}] : memref<16x128xf16, #gpu.address_space<workgroup>>, vector<16xf16>
// CHECK: scf.for
// CHECK: vector.load %[[VT]]
// CHECK: vector.store %{{.*}}, %[[VD]]
// CHECK: gpu.barrier
// Every head of the group reads the decoded rows.
// CHECK: vector.load %[[KD]][{{.*}}] : memref<16x128xf16, #gpu.address_space<workgroup>>, vector<16xf16>
// CHECK: vector.load %[[VD]][{{.*}}] : memref<16x128xf16, #gpu.address_space<workgroup>>, vector<16xf16>
// CHECK: %[[VS256:.*]] = arith.mulf %[[VSCALE]], %{{.*}} : f32
// CHECK-NEXT: vector.broadcast %[[VS256]] : f32 to vector<16xf32>
func.func @grouped(%q: memref<?x8x128xf16>, %pool: memref<?x2x16x2x128xf8E4M3FN>, %ip: memref<?xi32>, %ix: memref<?xi32>, %last: memref<?xi32>, %ks: f32, %vs: f32, %o: memref<?x8x128xf16>, %lse: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x2x128xf8E4M3FN>) tables(%ip, %ix, %last : memref<?xi32>, memref<?xi32>, memref<?xi32>) fp8_scales(%ks, %vs) : !f8
  %s = kv.decode %q, %kv : memref<?x8x128xf16>, !f8 -> !s
  kv.store_state %s, %o, %lse : !s, memref<?x8x128xf16>, memref<?x8xf32>
  return
}

// -----

!f8 = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr, quant = fp8_e5m2>
!s = !kv.state<?x2x128xf16, base = 2>

// Without a group, each lane decodes the rows it reads in its registers:
// no decoded tiles.
// CHECK: gpu.func @decode_nhd_combined_csr_p16_h2x2_d128_f16_fp8_e5m2_f16_
// CHECK-SAME: workgroup(%[[KT:.*]] : memref<3x32x128xf8E5M2, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.*}} : memref<3x32x128xf8E5M2, #gpu.address_space<workgroup>>
// CHECK-NOT: xf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}) kernel
// CHECK: scf.for
// CHECK: %[[CODES:.*]] = vector.load %[[KT]][{{.*}}] : memref<3x32x128xf8E5M2, #gpu.address_space<workgroup>>, vector<16xf8E5M2>
// CHECK-NEXT: arith.bitcast %[[CODES]] : vector<16xf8E5M2> to vector<16xi8>
// CHECK: vector.shuffle
// CHECK-NEXT: arith.extf %{{.*}} : vector<16xf16> to vector<16xf32>
func.func @ungrouped(%q: memref<?x2x128xf16>, %pool: memref<?x2x16x2x128xf8E5M2>, %ip: memref<?xi32>, %ix: memref<?xi32>, %last: memref<?xi32>, %ks: f32, %vs: f32, %o: memref<?x2x128xf16>, %lse: memref<?x2xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x2x128xf8E5M2>) tables(%ip, %ix, %last : memref<?xi32>, memref<?xi32>, memref<?xi32>) fp8_scales(%ks, %vs) : !f8
  %s = kv.decode %q, %kv : memref<?x2x128xf16>, !f8 -> !s
  kv.store_state %s, %o, %lse : !s, memref<?x2x128xf16>, memref<?x2xf32>
  return
}
