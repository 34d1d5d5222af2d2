// RUN: kvir-opt %s --kv-to-loops -split-input-file | FileCheck %s

// Quantize on append. int8 groups: scale = max(max|x| / 127, 1e-5), stored
// in the activation dtype, and q = clamp(round_half_even(x / scale), -127,
// 127) with the stored (rounded) scale. fp8: x / k_scale (v_scale for V)
// encoded with round-to-nearest-even and saturation.

!i8 = !kv.paged<page_size = 4, kv_heads = 1, head_dim = 4, head_dim_v = 4, dtype = f16, layout = nhd, storage = split, table = block_table, quant = int8_group, quant_group = 2>

// CHECK-LABEL: func.func @append_int8
// CHECK-SAME: %[[KP:[^:]*]]: memref<?x4x1x4xi8>, %[[VP:[^:]*]]: memref<?x4x1x4xi8>, %[[KS:[^:]*]]: memref<?x4x1x2xf16>, %[[VS:[^:]*]]: memref<?x4x1x2xf16>
// One scale per group of 2 dims: groups [2g, 2g + 2).
// CHECK: scf.for %[[G:[^ ]*]] = %{{.*}} to %c2{{[_0-9]*}} step
// CHECK-NEXT: %[[FIRST:.*]] = arith.muli %[[G]], %[[GS:.*]] : index
// CHECK-NEXT: %[[LAST:.*]] = arith.addi %[[FIRST]], %[[GS]] : index
// CHECK: %[[AMAX:.*]] = scf.for %{{[^ ]*}} = %[[FIRST]] to %[[LAST]]
// CHECK: math.absf
// CHECK: arith.maximumf
// CHECK: %[[C127:.*]] = arith.constant 1.270000e+02 : f32
// CHECK-NEXT: %[[RAW:.*]] = arith.divf %[[AMAX]], %[[C127]] : f32
// CHECK-NEXT: %[[EPS:.*]] = arith.constant 9.99999974E-6 : f32
// CHECK-NEXT: %[[SC:.*]] = arith.maximumf %[[RAW]], %[[EPS]] : f32
// CHECK-NEXT: %[[SC16:.*]] = arith.truncf %[[SC]] : f32 to f16
// CHECK-NEXT: arith.constant 0 : index
// CHECK-NEXT: memref.store %[[SC16]], %[[KS]][%{{.*}}, %{{.*}}, %{{.*}}, %[[G]]] : memref<?x4x1x2xf16>
// CHECK-NEXT: %[[S:.*]] = arith.extf %[[SC16]] : f16 to f32
// CHECK: scf.for %[[D:[^ ]*]] = %[[FIRST]] to %[[LAST]]
// CHECK-NEXT: %[[X:.*]] = memref.load %{{.*}}[%[[D]]] : memref<4xf32>
// CHECK-NEXT: %[[XS:.*]] = arith.divf %[[X]], %[[S]] : f32
// Round half to even by adding and subtracting 1.5 * 2^23.
// CHECK-NEXT: %[[MAGIC:.*]] = arith.constant 0x4B400000 : f32
// CHECK-NEXT: %[[UP:.*]] = arith.addf %[[XS]], %[[MAGIC]] : f32
// CHECK-NEXT: %[[R:.*]] = arith.subf %[[UP]], %[[MAGIC]] : f32
// CHECK-NEXT: %[[LO:.*]] = arith.constant -1.270000e+02 : f32
// CHECK-NEXT: %[[RL:.*]] = arith.maximumf %[[R]], %[[LO]] : f32
// CHECK-NEXT: %[[HI:.*]] = arith.constant 1.270000e+02 : f32
// CHECK-NEXT: %[[RC:.*]] = arith.minimumf %[[RL]], %[[HI]] : f32
// CHECK-NEXT: %[[Q:.*]] = arith.fptosi %[[RC]] : f32 to i8
// CHECK-NEXT: arith.constant 0 : index
// CHECK-NEXT: memref.store %[[Q]], %[[KP]][%{{.*}}, %{{.*}}, %{{.*}}, %[[D]]] : memref<?x4x1x4xi8>
// V goes to the V pool with the V scales.
// CHECK: memref.store %{{.*}}, %[[VS]][%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : memref<?x4x1x2xf16>
// CHECK: arith.constant 0x4B400000 : f32
// CHECK: memref.store %{{.*}}, %[[VP]][%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : memref<?x4x1x4xi8>
func.func @append_int8(%k: memref<?x1x4xf16>, %v: memref<?x1x4xf16>, %b: memref<?xi32>, %p: memref<?xi32>, %kp: memref<?x4x1x4xi8>, %vp: memref<?x4x1x4xi8>, %ks: memref<?x4x1x2xf16>, %vs: memref<?x4x1x2xf16>, %bt: memref<?x?xi32>, %lens: memref<?xi32>) {
  %kv = kv.paged_view pools(%kp, %vp : memref<?x4x1x4xi8>, memref<?x4x1x4xi8>) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) scales(%ks, %vs : memref<?x4x1x2xf16>, memref<?x4x1x2xf16>) : !i8
  kv.append %k, %v, %b, %p into %kv : memref<?x1x4xf16>, memref<?x1x4xf16>, memref<?xi32>, memref<?xi32>, !i8
  return
}

// -----

!f8 = !kv.paged<page_size = 4, kv_heads = 1, head_dim = 4, head_dim_v = 4, dtype = f32, layout = nhd, storage = combined, table = block_table, quant = fp8_e4m3>

// CHECK-LABEL: func.func @append_fp8
// CHECK-SAME: %[[POOL:[^:]*]]: memref<?x2x4x1x4xf8E4M3FN>, %{{[^:]*}}: memref<?x?xi32>, %{{[^:]*}}: memref<?xi32>, %[[KSC:[^:]*]]: f32, %[[VSC:[^:]*]]: f32
// CHECK: %[[X:.*]] = memref.load %{{.*}} : memref<4xf32>
// CHECK-NEXT: %[[XS:.*]] = arith.divf %[[X]], %[[KSC]] : f32
// The unbiased exponent, clamped to the e4m3 subnormal exponent 1 - 7.
// CHECK: %[[EMIN:.*]] = arith.constant -6 : i32
// CHECK-NEXT: arith.maxsi %{{.*}}, %[[EMIN]] : i32
// CHECK: %[[MAGIC:.*]] = arith.constant 0x4B400000 : f32
// CHECK-NEXT: %[[UP:.*]] = arith.addf %{{.*}}, %[[MAGIC]] : f32
// CHECK-NEXT: arith.subf %[[UP]], %[[MAGIC]] : f32
// Saturate at 448 (0x7e = 126), NaN -> 0x7f.
// CHECK: arith.constant 4.480000e+02 : f32
// CHECK: arith.constant 126 : i32
// CHECK: arith.cmpf uno, %[[XS]], %[[XS]] : f32
// CHECK: %[[BYTE:.*]] = arith.trunci %{{.*}} : i32 to i8
// CHECK-NEXT: %[[F8:.*]] = arith.bitcast %[[BYTE]] : i8 to f8E4M3FN
// CHECK-NEXT: arith.constant 0 : index
// CHECK-NEXT: memref.store %[[F8]], %[[POOL]][%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : memref<?x2x4x1x4xf8E4M3FN>
// V is divided by v_scale and stored at kv = 1.
// CHECK: %[[Y:.*]] = memref.load %{{.*}} : memref<4xf32>
// CHECK-NEXT: arith.divf %[[Y]], %[[VSC]] : f32
// CHECK: %[[VF8:.*]] = arith.bitcast %{{.*}} : i8 to f8E4M3FN
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1 : index
// CHECK-NEXT: memref.store %[[VF8]], %[[POOL]][%{{.*}}, %[[ONE]], %{{.*}}, %{{.*}}, %{{.*}}] : memref<?x2x4x1x4xf8E4M3FN>
func.func @append_fp8(%k: memref<?x1x4xf32>, %v: memref<?x1x4xf32>, %b: memref<?xi32>, %p: memref<?xi32>, %pool: memref<?x2x4x1x4xf8E4M3FN>, %bt: memref<?x?xi32>, %lens: memref<?xi32>, %ks: f32, %vs: f32) {
  %kv = kv.paged_view pools(%pool : memref<?x2x4x1x4xf8E4M3FN>) tables(%bt, %lens : memref<?x?xi32>, memref<?xi32>) fp8_scales(%ks, %vs) : !f8
  kv.append %k, %v, %b, %p into %kv : memref<?x1x4xf32>, memref<?x1x4xf32>, memref<?xi32>, memref<?xi32>, !f8
  return
}
