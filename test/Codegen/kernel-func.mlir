// RUN: kvir-opt %s -test-kvir-codegen | FileCheck %s

// KernelFunc: kernels carry their exact launch block as .reqntid, and their
// shared buffers as workgroup attributions with explicit alignments (16 by
// default). Past 48 KB the buffers become views of one dynamic allocation
// at their offsets, and the kernel records the bytes it needs.

// CHECK-LABEL: gpu.func @k(%{{.*}}: memref<?xf32>)
// CHECK-SAME: workgroup(%{{.*}} : memref<32x128xf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.*}} : memref<3xi32, #gpu.address_space<workgroup>> {llvm.align = 4 : i64}, %{{.*}} : memref<8x128xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// CHECK-SAME: kernel attributes {nvvm.reqntid = array<i32: 16, 4, 2>}
// CHECK: gpu.return

// 2 x 64 x 128 f16 twice is 64 KB: dynamic, views at offsets 0, 32768 and
// 65536 (5 i32 after).
// CHECK-LABEL: gpu.func @k_dynamic(%{{.*}}: memref<?xf32>) kernel
// CHECK-SAME: kvgpu.dynamic_shared_bytes = 65556 : i64
// CHECK-SAME: nvvm.reqntid = array<i32: 128, 1, 1>
// CHECK: %[[BASE:.*]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// CHECK: %[[O0:.*]] = arith.constant 0 : index
// CHECK: memref.view %[[BASE]][%[[O0]]][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<2x64x128xf16, #gpu.address_space<workgroup>>
// CHECK: %[[O1:.*]] = arith.constant 32768 : index
// CHECK: memref.view %[[BASE]][%[[O1]]][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<2x64x128xf16, #gpu.address_space<workgroup>>
// CHECK: %[[O2:.*]] = arith.constant 65536 : index
// CHECK: memref.view %[[BASE]][%[[O2]]][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<5xi32, #gpu.address_space<workgroup>>
// CHECK: gpu.return
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k(%x: memref<?xf32>) kernel attributes {test.component = "kernel_func"} {
      gpu.return
    }
  }
}
