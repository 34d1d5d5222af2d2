// RUN: kvir-opt %s --convert-linalg-to-loops --kv-lower-to-llvm | mlir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s

// kv.append into an int8-group cache, then kv.decode through it (OpenPPL
// style: cache_layout 1 (L, T, 2, H, D), layer 1 of 2, token offsets,
// quant_group 2, f16 scales). Per (token, head, group):
// scale = max(max|x| / 127, 1e-5) stored as f16, q = clamp(round half to
// even(x / scale), -127, 127), x' = q * scale. Inputs are chosen so every
// scale is a power of two (max|x| = 127 * 2^k) and thus exact.
//
// token 0 (position 0):
//   k = (63.5, 1.25 | 0, 0): scale 0.5 -> q (127, 2.5 -> 2) -> (63.5, 1);
//                            all-zero group: scale 1e-5 (f16: 168 * 2^-24 =
//                            1.00136e-05), q (0, 0).
//   v = (127, -63.5 | 31.75, -0.375): scale 1 -> q (127, -63.5 -> -64);
//                            scale 0.25 -> q (127, -1.5 -> -2) -> -0.5.
// token 1 (position 1):
//   k = (-1.984375, 0.9921875 | 0, 0): scale 1/64 -> q (-127, 63.5 -> 64)
//                            -> (-1.984375, 1); zero group as above.
//   v = (3.96875, 0 | 1.984375, -1.984375): scale 1/32 -> q (127, 0);
//                            scale 1/64 -> q (127, -127).
// Dequantized V: token 0 (127, -64, 31.75, -0.5), token 1 (3.96875, 0,
// 1.984375, -1.984375).
// Decode (kv_len 2, sm_scale 1, two query heads over the one KV head):
//   head 0, q = 0: o = mean = (65.484375, -32, 16.8671875, -1.2421875),
//     printed (65.4844, -32, 16.8672, -1.24219); lse = ln 2 = 0.693147.
//   head 1, q = (1, 0, 0, 0): logits = k'[0] = 63.5 and -1.984375; token 1
//     weighs e^-65.5: o = token 0's V, lse = 63.5.

// codes of layer 1: [token][kv][head][dim]
// CHECK: rank = 4 offset = 0 sizes = [2, 2, 1, 4]
// CHECK-NEXT: {{\[\[\[\[}}127, 2, 0, 0]
// CHECK-NEXT: {{\[\[}}127, -64, 127, -2]
// CHECK-NEXT: {{\[\[\[}}-127, 64, 0, 0]
// CHECK-NEXT: {{\[\[}}127, 0, 127, -127]
// scales of layer 1: [token][kv][head][group]
// CHECK: rank = 4 offset = 0 sizes = [2, 2, 1, 2]
// CHECK-NEXT: {{\[\[\[\[}}0.5, 1.00136e-05]
// CHECK-NEXT: {{\[\[}}1, 0.25]
// CHECK-NEXT: {{\[\[\[}}0.015625, 1.00136e-05]
// CHECK-NEXT: {{\[\[}}0.03125, 0.015625]
// decode
// CHECK: rank = 3 offset = 0 sizes = [1, 2, 4]
// CHECK-NEXT: {{\[\[\[}}65.4844, -32, 16.8672, -1.24219]
// CHECK-NEXT: {{\[}}127, -64, 31.75, -0.5]
// CHECK: rank = 2 offset = 0 sizes = [1, 2]
// CHECK-NEXT: {{\[\[}}0.693147, 63.5]

!kvt = !kv.paged<page_size = 4, kv_heads = 1, head_dim = 4, head_dim_v = 4, dtype = f16, layout = ppl1, storage = combined, table = token_offset, quant = int8_group, quant_group = 2, layer = 1>

memref.global "private" @pool : memref<2x4x2x1x4xi8> = dense<0>
memref.global "private" @scales : memref<2x4x2x1x2xf16> = dense<0.0>
memref.global "private" constant @cachestarts : memref<1xi32> = dense<[0]>
memref.global "private" constant @kv_lens : memref<1xi32> = dense<[2]>
memref.global "private" constant @batch : memref<2xi32> = dense<[0, 0]>
memref.global "private" constant @pos : memref<2xi32> = dense<[0, 1]>
memref.global "private" constant @k : memref<2x1x4xf16> = dense<[[[63.5, 1.25, 0.0, 0.0]], [[-1.984375, 0.9921875, 0.0, 0.0]]]>
memref.global "private" constant @v : memref<2x1x4xf16> = dense<[[[127.0, -63.5, 31.75, -0.375]], [[3.96875, 0.0, 1.984375, -1.984375]]]>
memref.global "private" constant @q : memref<1x2x4xf16> = dense<[[[0.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]]]>

func.func @main() {
  %pool = memref.get_global @pool : memref<2x4x2x1x4xi8>
  %scales = memref.get_global @scales : memref<2x4x2x1x2xf16>
  %starts = memref.get_global @cachestarts : memref<1xi32>
  %lens = memref.get_global @kv_lens : memref<1xi32>
  %b = memref.get_global @batch : memref<2xi32>
  %p = memref.get_global @pos : memref<2xi32>
  %k = memref.get_global @k : memref<2x1x4xf16>
  %v = memref.get_global @v : memref<2x1x4xf16>
  %q = memref.get_global @q : memref<1x2x4xf16>
  %kv = kv.paged_view pools(%pool : memref<2x4x2x1x4xi8>) tables(%starts, %lens : memref<1xi32>, memref<1xi32>)
      scales(%scales : memref<2x4x2x1x2xf16>) : !kvt
  kv.append %k, %v, %b, %p into %kv : memref<2x1x4xf16>, memref<2x1x4xf16>, memref<2xi32>, memref<2xi32>, !kvt

  // Print layer 1, tokens 0 and 1, as f32.
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %codes = memref.alloc() : memref<2x2x1x4xf32>
  %sc = memref.alloc() : memref<2x2x1x2xf32>
  scf.for %t = %c0 to %c2 step %c1 {
    scf.for %kvi = %c0 to %c2 step %c1 {
      scf.for %d = %c0 to %c4 step %c1 {
        %x = memref.load %pool[%c1, %t, %kvi, %c0, %d] : memref<2x4x2x1x4xi8>
        %f = arith.sitofp %x : i8 to f32
        memref.store %f, %codes[%t, %kvi, %c0, %d] : memref<2x2x1x4xf32>
      }
      scf.for %g = %c0 to %c2 step %c1 {
        %x = memref.load %scales[%c1, %t, %kvi, %c0, %g] : memref<2x4x2x1x2xf16>
        %f = arith.extf %x : f16 to f32
        memref.store %f, %sc[%t, %kvi, %c0, %g] : memref<2x2x1x2xf32>
      }
    }
  }
  %u1 = memref.cast %codes : memref<2x2x1x4xf32> to memref<*xf32>
  call @printMemrefF32(%u1) : (memref<*xf32>) -> ()
  %u2 = memref.cast %sc : memref<2x2x1x2xf32> to memref<*xf32>
  call @printMemrefF32(%u2) : (memref<*xf32>) -> ()

  %s = kv.decode %q, %kv {sm_scale = 1.0 : f32} : memref<1x2x4xf16>, !kvt -> !kv.state<1x2x4xf32, base = e>
  %o = memref.alloc() : memref<1x2x4xf32>
  %lse = memref.alloc() : memref<1x2xf32>
  kv.store_state %s, %o, %lse : !kv.state<1x2x4xf32, base = e>, memref<1x2x4xf32>, memref<1x2xf32>
  %u3 = memref.cast %o : memref<1x2x4xf32> to memref<*xf32>
  call @printMemrefF32(%u3) : (memref<*xf32>) -> ()
  %u4 = memref.cast %lse : memref<1x2xf32> to memref<*xf32>
  call @printMemrefF32(%u4) : (memref<*xf32>) -> ()
  memref.dealloc %codes : memref<2x2x1x4xf32>
  memref.dealloc %sc : memref<2x2x1x2xf32>
  memref.dealloc %o : memref<1x2x4xf32>
  memref.dealloc %lse : memref<1x2xf32>
  return
}

func.func private @printMemrefF32(memref<*xf32>)
