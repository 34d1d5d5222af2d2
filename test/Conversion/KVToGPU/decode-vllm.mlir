// RUN: kvir-opt %s -split-input-file -kv-tile=chip=sm_80 --convert-kv-to-gpu=chip=sm_80 | FileCheck %s

// vLLM's cache on the decode kernel. K [blocks, H, D / x, block, x] holds x
// = 8 f16 of a token's dims together: 16-byte cp.async rows as for NHD.
// V [blocks, H, D, block] holds a dim's slots together: the V ring is
// [stages, dims, tile + 8] (transposed, rows padded by a chunk), filled by
// 16-byte cp.async chunks of 8 consecutive slots of one dim (source size
// cut at the tile's last token: zero-fill past kv_len); after each wait the
// block transposes the stage into [tile, dims] rows that the lanes read
// as for NHD. The token range starts on a sector: tokens before the first
// visible one (window, split chunk) are masked.

!c = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f16, layout = vllm, storage = split, table = block_table>
!s = !kv.state<?x8x128xf16, base = e>

// CHECK-LABEL: func.func @vllm
// CHECK: gpu.func @decode_vllm_split_block_table_p16_h8x2_d128_f16_f16_
// CHECK-SAME: %[[KPOOL:arg[0-9]+]]: memref<?x2x16x16x8xf16>, %[[VPOOL:arg[0-9]+]]: memref<?x2x128x16xf16>
// CHECK-SAME: workgroup(%[[KT:.*]] : memref<3x16x128xf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[VT:.*]] : memref<3x128x24xf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}
// CHECK-SAME: %[[META:.*]] : memref<4xi32, #gpu.address_space<workgroup>>
// CHECK-SAME: %[[VROWS:arg[0-9]+]] : memref<16x128xf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}) kernel
// The first visible token, and the range's start aligned down to a sector
// of 16 slots (the tiles' size).
// CHECK: %[[REM:.*]] = arith.remui %[[START:.*]], %c16
// CHECK: arith.subi %[[START]], %[[REM]]
// CHECK: nvgpu.device_async_copy %[[KPOOL]][{{.*}}], %[[KT]][{{.*}}], 8, %{{.*}} {bypassL1}
// CHECK: nvgpu.device_async_copy %[[VPOOL]][{{.*}}], %[[VT]][{{.*}}], 8, %{{.*}} {bypassL1} : memref<?x2x128x16xf16> to memref<3x128x24xf16, #gpu.address_space<workgroup>>
// CHECK: scf.for
// CHECK: gpu.barrier
// The stage's V chunks become rows: 8 elements of one dim down its column.
// CHECK: scf.for
// CHECK: vector.load %[[VT]][{{.*}}] {alignment = 16 : i64} : memref<3x128x24xf16, #gpu.address_space<workgroup>>, vector<8xf16>
// CHECK-COUNT-8: memref.store %{{.*}}, %[[VROWS]][{{.*}}] : memref<16x128xf16, #gpu.address_space<workgroup>>
// CHECK: gpu.barrier
// Tokens before the first visible one score -inf.
// CHECK: arith.cmpi sge
// CHECK: vector.load %[[VROWS]][{{.*}}] : memref<16x128xf16, #gpu.address_space<workgroup>>, vector<8xf16>
func.func @vllm(%q: memref<?x8x128xf16>, %k: memref<?x2x16x16x8xf16>, %v: memref<?x2x128x16xf16>, %bt: memref<?x?xi32>, %lens: memref<?xi32>, %o: memref<?x8x128xf16>, %l: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%k, %v : memref<?x2x16x16x8xf16>, memref<?x2x128x16xf16>) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) : !c
  %s = kv.decode %q, %kv {window_left = 100 : i64} : memref<?x8x128xf16>, !c -> !s
  kv.store_state %s, %o, %l : !s, memref<?x8x128xf16>, memref<?x8xf32>
  return
}
