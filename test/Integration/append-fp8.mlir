// RUN: kvir-opt %s --convert-linalg-to-loops --kv-lower-to-llvm | mlir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s

// kv.append into fp8 caches (per-tensor k_scale = 0.5, v_scale = 2): the
// stored byte is the fp8 encoding of x / scale, rounded to nearest even and
// saturated to the largest finite value; reads decode it and multiply by the
// scale. One token at position 0, k = (0.75, -1.5, 0.5, 224),
// v = (2.125, -6, 1000, 0.3).
//
// k / 0.5 = (1.5, -3, 1, 448): exact in both formats (448 = 1.11b * 2^8 is
// the largest e4m3), so K reads back unchanged.
// v / 2 = (1.0625, -3, 500, 0.15):
//   e4m3 (3 mantissa bits): 1.0625 is halfway between 1 and 1.125 -> even 1;
//     500 > 448 -> 448; 0.15 = 1.2 * 2^-3 -> 1.25 * 2^-3 = 0.15625.
//     V reads back (2, -6, 896, 0.3125).
//     codes: k 1.5 = 0 0111 100 = 60, -3 = 1 1000 100 = 196, 1 = 0 0111 000
//     = 56, 448 = 0 1111 110 = 126; v 1 -> 56, -3 -> 196, 448 -> 126,
//     0.15625 = 0 0100 010 = 34.
//   e5m2 (2 mantissa bits): 1.0625 -> 1 (nearest of 1, 1.25); 500 -> 512
//     (nearest of 448, 512); 0.15 -> 0.15625. V reads back
//     (2, -6, 1024, 0.3125).
//     codes: k 1.5 = 0 01111 10 = 62, -3 = 1 10000 10 = 194, 1 = 0 01111 00
//     = 60, 448 = 0 10111 11 = 95; v 1 -> 60, -3 -> 194,
//     512 = 0 11000 00 = 96, 0.15625 = 0 01100 01 = 49.
// Decode, kv_len 1, sm_scale 1: o = V read back; head 0 q = (1, 0, 0, 0) ->
// lse = k[0] = 0.75; head 1 q = (0, 0, 0, 1) -> lse = k[3] = 224.

// e4m3
// CHECK: rank = 2 offset = 0 sizes = [2, 4]
// CHECK-NEXT: {{\[\[}}60, 196, 56, 126]
// CHECK-NEXT: {{\[}}56, 196, 126, 34]
// CHECK: rank = 3 offset = 0 sizes = [1, 2, 4]
// CHECK-NEXT: {{\[\[\[}}2, -6, 896, 0.3125]
// CHECK-NEXT: {{\[}}2, -6, 896, 0.3125]
// CHECK: rank = 2 offset = 0 sizes = [1, 2]
// CHECK-NEXT: {{\[\[}}0.75, 224]
// e5m2
// CHECK: rank = 2 offset = 0 sizes = [2, 4]
// CHECK-NEXT: {{\[\[}}62, 194, 60, 95]
// CHECK-NEXT: {{\[}}60, 194, 96, 49]
// CHECK: rank = 3 offset = 0 sizes = [1, 2, 4]
// CHECK-NEXT: {{\[\[\[}}2, -6, 1024, 0.3125]
// CHECK-NEXT: {{\[}}2, -6, 1024, 0.3125]
// CHECK: rank = 2 offset = 0 sizes = [1, 2]
// CHECK-NEXT: {{\[\[}}0.75, 224]

!e4m3 = !kv.paged<page_size = 2, kv_heads = 1, head_dim = 4, head_dim_v = 4, dtype = f32, layout = nhd, storage = combined, table = block_table, quant = fp8_e4m3>
!e5m2 = !kv.paged<page_size = 2, kv_heads = 1, head_dim = 4, head_dim_v = 4, dtype = f32, layout = nhd, storage = combined, table = block_table, quant = fp8_e5m2>

memref.global "private" @pool_e4m3 : memref<1x2x2x1x4xf8E4M3FN> = dense<0.0>
memref.global "private" @pool_e5m2 : memref<1x2x2x1x4xf8E5M2> = dense<0.0>
memref.global "private" constant @block_table : memref<1x1xi32> = dense<[[0]]>
memref.global "private" constant @seq_lens : memref<1xi32> = dense<[1]>
memref.global "private" constant @batch : memref<1xi32> = dense<[0]>
memref.global "private" constant @pos : memref<1xi32> = dense<[0]>
memref.global "private" constant @k : memref<1x1x4xf32> = dense<[[[0.75, -1.5, 0.5, 224.0]]]>
memref.global "private" constant @v : memref<1x1x4xf32> = dense<[[[2.125, -6.0, 1000.0, 0.3]]]>
memref.global "private" constant @q : memref<1x2x4xf32> = dense<[[[1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]]]>

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %ks = arith.constant 0.5 : f32
  %vs = arith.constant 2.0 : f32
  %bt = memref.get_global @block_table : memref<1x1xi32>
  %lens = memref.get_global @seq_lens : memref<1xi32>
  %b = memref.get_global @batch : memref<1xi32>
  %p = memref.get_global @pos : memref<1xi32>
  %k = memref.get_global @k : memref<1x1x4xf32>
  %v = memref.get_global @v : memref<1x1x4xf32>
  %q = memref.get_global @q : memref<1x2x4xf32>
  %codes = memref.alloc() : memref<2x4xf32>
  %o = memref.alloc() : memref<1x2x4xf32>
  %lse = memref.alloc() : memref<1x2xf32>
  %pool_e4m3 = memref.get_global @pool_e4m3 : memref<1x2x2x1x4xf8E4M3FN>
  %kv_e4m3 = kv.paged_view pools(%pool_e4m3 : memref<1x2x2x1x4xf8E4M3FN>) tables(%bt, %lens : memref<1x1xi32>, memref<1xi32>)
      fp8_scales(%ks, %vs) : !e4m3
  kv.append %k, %v, %b, %p into %kv_e4m3 : memref<1x1x4xf32>, memref<1x1x4xf32>, memref<1xi32>, memref<1xi32>, !e4m3
  scf.for %kvi = %c0 to %c2 step %c1 {
    scf.for %d = %c0 to %c4 step %c1 {
      %x = memref.load %pool_e4m3[%c0, %kvi, %c0, %c0, %d] : memref<1x2x2x1x4xf8E4M3FN>
      %byte = arith.bitcast %x : f8E4M3FN to i8
      %w = arith.extui %byte : i8 to i32
      %f = arith.uitofp %w : i32 to f32
      memref.store %f, %codes[%kvi, %d] : memref<2x4xf32>
    }
  }
  %u1 = memref.cast %codes : memref<2x4xf32> to memref<*xf32>
  call @printMemrefF32(%u1) : (memref<*xf32>) -> ()
  %s_e4m3 = kv.decode %q, %kv_e4m3 {sm_scale = 1.0 : f32} : memref<1x2x4xf32>, !e4m3 -> !kv.state<1x2x4xf32, base = e>
  kv.store_state %s_e4m3, %o, %lse : !kv.state<1x2x4xf32, base = e>, memref<1x2x4xf32>, memref<1x2xf32>
  %u2 = memref.cast %o : memref<1x2x4xf32> to memref<*xf32>
  call @printMemrefF32(%u2) : (memref<*xf32>) -> ()
  %u3 = memref.cast %lse : memref<1x2xf32> to memref<*xf32>
  call @printMemrefF32(%u3) : (memref<*xf32>) -> ()
  %pool_e5m2 = memref.get_global @pool_e5m2 : memref<1x2x2x1x4xf8E5M2>
  %kv_e5m2 = kv.paged_view pools(%pool_e5m2 : memref<1x2x2x1x4xf8E5M2>) tables(%bt, %lens : memref<1x1xi32>, memref<1xi32>)
      fp8_scales(%ks, %vs) : !e5m2
  kv.append %k, %v, %b, %p into %kv_e5m2 : memref<1x1x4xf32>, memref<1x1x4xf32>, memref<1xi32>, memref<1xi32>, !e5m2
  scf.for %kvi = %c0 to %c2 step %c1 {
    scf.for %d = %c0 to %c4 step %c1 {
      %x = memref.load %pool_e5m2[%c0, %kvi, %c0, %c0, %d] : memref<1x2x2x1x4xf8E5M2>
      %byte = arith.bitcast %x : f8E5M2 to i8
      %w = arith.extui %byte : i8 to i32
      %f = arith.uitofp %w : i32 to f32
      memref.store %f, %codes[%kvi, %d] : memref<2x4xf32>
    }
  }
  %u4 = memref.cast %codes : memref<2x4xf32> to memref<*xf32>
  call @printMemrefF32(%u4) : (memref<*xf32>) -> ()
  %s_e5m2 = kv.decode %q, %kv_e5m2 {sm_scale = 1.0 : f32} : memref<1x2x4xf32>, !e5m2 -> !kv.state<1x2x4xf32, base = e>
  kv.store_state %s_e5m2, %o, %lse : !kv.state<1x2x4xf32, base = e>, memref<1x2x4xf32>, memref<1x2xf32>
  %u5 = memref.cast %o : memref<1x2x4xf32> to memref<*xf32>
  call @printMemrefF32(%u5) : (memref<*xf32>) -> ()
  %u6 = memref.cast %lse : memref<1x2xf32> to memref<*xf32>
  call @printMemrefF32(%u6) : (memref<*xf32>) -> ()
  memref.dealloc %codes : memref<2x4xf32>
  memref.dealloc %o : memref<1x2x4xf32>
  memref.dealloc %lse : memref<1x2xf32>
  return
}

func.func private @printMemrefF32(memref<*xf32>)
