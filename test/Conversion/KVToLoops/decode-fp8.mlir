// RUN: kvir-opt %s --kv-to-loops -split-input-file | FileCheck %s

// fp8 KV: the stored byte is decoded exactly to f32 through an f16 holding
// its bits (kv::fp8ToScaledF16; e5m2: the f16's upper byte; e4m3fn: sign,
// then exponent and mantissa shifted into the f16's low exponent and high
// mantissa bits, which reads 2^8 too small, subnormals included, and the
// NaN magnitude 0x7f given an all-ones exponent), then scaled by the
// per-tensor k_scale for K and v_scale for V.

!f8 = !kv.paged<page_size = 4, kv_heads = 1, head_dim = 8, head_dim_v = 8, dtype = f32, layout = nhd, storage = split, table = block_table, quant = fp8_e4m3>

// e4m3: 3 mantissa bits, 4 exponent bits, bias 7, S.1111.111 is NaN.
// CHECK-LABEL: func.func @e4m3
// CHECK-SAME: (%{{[^:]*}}: memref<?x1x8xf32>, %[[K:[^:]*]]: memref<?x4x1x8xf8E4M3FN>, %[[V:[^:]*]]: memref<?x4x1x8xf8E4M3FN>, %{{[^:]*}}: memref<?x?xi32>, %{{[^:]*}}: memref<?xi32>, %[[KS:[^:]*]]: f32, %[[VS:[^:]*]]: f32
// CHECK: %[[RAW:.*]] = memref.load %[[K]][{{.*}}] : memref<?x4x1x8xf8E4M3FN>
// CHECK-NEXT: %[[BYTE:.*]] = arith.bitcast %[[RAW]] : f8E4M3FN to i8
// CHECK-NEXT: %[[WORD:.*]] = arith.extui %[[BYTE]] : i8 to i32
// The magnitude (0x007f007f) and sign (0x00800080) of each 16-bit half.
// CHECK-NEXT: %[[MMASK:.*]] = arith.constant 8323199 : i32
// CHECK-NEXT: %[[MAG:.*]] = arith.andi %[[WORD]], %[[MMASK]] : i32
// CHECK-NEXT: %[[SMASK:.*]] = arith.constant 8388736 : i32
// CHECK-NEXT: %[[SIGN:.*]] = arith.andi %[[WORD]], %[[SMASK]] : i32
// CHECK: arith.shli %[[SIGN]], %{{.*}} : i32
// CHECK: arith.shli %[[MAG]], %{{.*}} : i32
// The NaN magnitude carries into bit 7 (+ 0x00010001).
// CHECK: %[[NANC:.*]] = arith.constant 65537 : i32
// CHECK-NEXT: arith.addi %[[MAG]], %[[NANC]] : i32
// CHECK: %[[HBITS:.*]] = arith.trunci %{{.*}} : i32 to i16
// CHECK-NEXT: %[[HALF:.*]] = arith.bitcast %[[HBITS]] : i16 to f16
// CHECK-NEXT: %[[EXT:.*]] = arith.extf %[[HALF]] : f16 to f32
// CHECK-NEXT: %[[C256:.*]] = arith.constant 2.560000e+02 : f32
// CHECK-NEXT: %[[DEC:.*]] = arith.mulf %[[EXT]], %[[C256]] : f32
// CHECK-NEXT: arith.mulf %[[DEC]], %[[KS]] : f32
// V is scaled by v_scale.
// CHECK: %[[VRAW:.*]] = memref.load %[[V]][{{.*}}] : memref<?x4x1x8xf8E4M3FN>
// CHECK-NEXT: arith.bitcast %[[VRAW]] : f8E4M3FN to i8
// CHECK: %[[VDEC:.*]] = arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT: arith.mulf %[[VDEC]], %[[VS]] : f32
func.func @e4m3(%q: memref<?x1x8xf32>, %k: memref<?x4x1x8xf8E4M3FN>, %v: memref<?x4x1x8xf8E4M3FN>, %bt: memref<?x?xi32>, %lens: memref<?xi32>, %ks: f32, %vs: f32, %o: memref<?x1x8xf32>) {
  %kv = kv.paged_view pools(%k, %v : memref<?x4x1x8xf8E4M3FN>, memref<?x4x1x8xf8E4M3FN>) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) fp8_scales(%ks, %vs) : !f8
  %s = kv.decode %q, %kv : memref<?x1x8xf32>, !f8 -> !kv.state<?x1x8xf32, base = e>
  kv.store_state %s, %o : !kv.state<?x1x8xf32, base = e>, memref<?x1x8xf32>
  return
}

// -----

!f8 = !kv.paged<page_size = 4, kv_heads = 1, head_dim = 8, head_dim_v = 8, dtype = f16, layout = nhd, storage = combined, table = csr, quant = fp8_e5m2>

// e5m2: 2 mantissa bits, 5 exponent bits, bias 15, IEEE-like inf / NaN:
// the upper byte of an f16, no factor.
// CHECK-LABEL: func.func @e5m2
// CHECK-SAME: (%{{[^:]*}}: memref<?x1x8xf16>, %[[POOL:[^:]*]]: memref<?x2x4x1x8xf8E5M2>, %{{[^:]*}}: memref<?xi32>, %{{[^:]*}}: memref<?xi32>, %{{[^:]*}}: memref<?xi32>, %[[KS:[^:]*]]: f32, %[[VS:[^:]*]]: f32
// CHECK: %[[RAW:.*]] = memref.load %[[POOL]][{{.*}}] : memref<?x2x4x1x8xf8E5M2>
// CHECK-NEXT: %[[BYTE:.*]] = arith.bitcast %[[RAW]] : f8E5M2 to i8
// CHECK-NEXT: %[[WORD:.*]] = arith.extui %[[BYTE]] : i8 to i32
// CHECK-NEXT: %[[C8:.*]] = arith.constant 8 : i32
// CHECK-NEXT: %[[HWORD:.*]] = arith.shli %[[WORD]], %[[C8]] : i32
// CHECK-NEXT: %[[HBITS:.*]] = arith.trunci %[[HWORD]] : i32 to i16
// CHECK-NEXT: %[[HALF:.*]] = arith.bitcast %[[HBITS]] : i16 to f16
// CHECK-NEXT: %[[DEC:.*]] = arith.extf %[[HALF]] : f16 to f32
// CHECK-NEXT: arith.mulf %[[DEC]], %[[KS]] : f32
// CHECK: memref.load %[[POOL]][%{{.*}}, %c1{{(_[0-9]+)?}}, {{.*}}] : memref<?x2x4x1x8xf8E5M2>
// CHECK: %[[VDEC:.*]] = arith.extf %{{.*}} : f16 to f32
// CHECK-NEXT: arith.mulf %[[VDEC]], %[[VS]] : f32
func.func @e5m2(%q: memref<?x1x8xf16>, %pool: memref<?x2x4x1x8xf8E5M2>, %ip: memref<?xi32>, %ix: memref<?xi32>, %last: memref<?xi32>, %ks: f32, %vs: f32, %o: memref<?x1x8xf16>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x4x1x8xf8E5M2>) tables(%ip, %ix, %last : memref<?xi32>, memref<?xi32>, memref<?xi32>) fp8_scales(%ks, %vs) : !f8
  %s = kv.decode %q, %kv : memref<?x1x8xf16>, !f8 -> !kv.state<?x1x8xf16, base = e>
  kv.store_state %s, %o : !kv.state<?x1x8xf16, base = e>, memref<?x1x8xf16>
  return
}
