// RUN: kvir-opt %s --kv-to-loops | FileCheck %s

// int8-group dequantization: x = q * scale, with the scale of (token, head,
// dim / quant_group) read from the scale pool at the same page and slot, kv
// coordinate and head as the value (the pool layout with D / g).

!kvt = !kv.paged<page_size = 4, kv_heads = 1, head_dim = 8, head_dim_v = 8, dtype = f16, layout = nhd, storage = combined, table = csr, quant = int8_group, quant_group = 4>

// CHECK-LABEL: func.func @int8
// CHECK-SAME: (%{{[^:]*}}: memref<?x1x8xf16>, %[[POOL:[^:]*]]: memref<?x2x4x1x8xi8>, %[[SC:[^:]*]]: memref<?x2x4x1x2xf16>, %{{[^:]*}}: memref<?xi32>, %[[IX:[^:]*]]: memref<?xi32>
// The key loop carries the running max and sum.
// CHECK: %{{.*}}:2 = scf.for %[[J:[^ ]*]] = {{.*}} iter_args
// CHECK: scf.for %[[D:[^ ]*]] = {{.*}} iter_args
// CHECK-DAG: %[[SLOT:.*]] = arith.remui %[[J]], %c4{{.*}} : index
// CHECK-DAG: %[[P32:.*]] = memref.load %[[IX]]
// CHECK-DAG: %[[PAGE:.*]] = arith.index_cast %[[P32]] : i32 to index
// CHECK: %[[Q8:.*]] = memref.load %[[POOL]][%[[PAGE]], %c0{{(_[0-9]+)?}}, %[[SLOT]], %[[H:[^,]*]], %[[D]]] : memref<?x2x4x1x8xi8>
// CHECK-NEXT: %[[QF:.*]] = arith.sitofp %[[Q8]] : i8 to f32
// CHECK-DAG: %[[GRP:.*]] = arith.divui %[[D]], %c4{{(_[0-9]+)?}} : index
// CHECK-DAG: %[[S16:.*]] = memref.load %[[SC]][%[[PAGE]], %c0{{(_[0-9]+)?}}, %[[SLOT]], %[[H]], %[[GRP]]] : memref<?x2x4x1x2xf16>
// CHECK: %[[S:.*]] = arith.extf %[[S16]] : f16 to f32
// CHECK-NEXT: %[[X:.*]] = arith.mulf %[[QF]], %[[S]] : f32
// The dequantized key enters the dot product.
// CHECK: arith.mulf %{{.*}}, %[[X]] : f32
// V reads the V scales (kv = 1).
// CHECK: %[[VQ:.*]] = memref.load %[[POOL]][%{{.*}}, %c1{{(_[0-9]+)?}}, %{{.*}}, %{{.*}}, %{{.*}}] : memref<?x2x4x1x8xi8>
// CHECK-NEXT: %[[VQF:.*]] = arith.sitofp %[[VQ]] : i8 to f32
// CHECK: %[[VS16:.*]] = memref.load %[[SC]][%{{.*}}, %c1{{(_[0-9]+)?}}, %{{.*}}, %{{.*}}, %{{.*}}] : memref<?x2x4x1x2xf16>
// CHECK-NEXT: %[[VS:.*]] = arith.extf %[[VS16]] : f16 to f32
// CHECK-NEXT: arith.mulf %[[VQF]], %[[VS]] : f32
func.func @int8(%q: memref<?x1x8xf16>, %pool: memref<?x2x4x1x8xi8>, %sc: memref<?x2x4x1x2xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>, %last: memref<?xi32>, %o: memref<?x1x8xf16>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x4x1x8xi8>) tables(%ip, %ix, %last : memref<?xi32>, memref<?xi32>, memref<?xi32>) scales(%sc : memref<?x2x4x1x2xf16>) : !kvt
  %s = kv.decode %q, %kv : memref<?x1x8xf16>, !kvt -> !kv.state<?x1x8xf16, base = e>
  kv.store_state %s, %o : !kv.state<?x1x8xf16, base = e>, memref<?x1x8xf16>
  return
}
