// RUN: kvir-opt %s --kvgpu-bare-kernel-abi --split-input-file | FileCheck %s
// RUN: kvir-opt %s --kvgpu-bare-kernel-abi --kvgpu-bare-kernel-abi --split-input-file | FileCheck %s

// Kernels take bare pointers (rank-0 memrefs) and, after all arguments, one
// index per dynamic size, stride and offset of their memref arguments, in
// argument order; the body sees the original memrefs, rebuilt with
// memref.reinterpret_cast. Launches pass the base pointer and the extents
// from memref.extract_strided_metadata. Running the pass twice changes
// nothing more.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    // CHECK-LABEL: gpu.func @copy
    // CHECK-SAME: (%[[X:.*]]: memref<f16>, %[[N:.*]]: index, %[[OUT:.*]]: memref<f16>, %[[XN:.*]]: index, %[[ON:.*]]: index)
    // CHECK-DAG: %[[XV:.*]] = memref.reinterpret_cast %[[X]] to offset: [0], sizes: [%[[XN]], 8], strides: [8, 1] : memref<f16> to memref<?x8xf16>
    // CHECK-DAG: %[[OV:.*]] = memref.reinterpret_cast %[[OUT]] to offset: [0], sizes: [%[[ON]], 8], strides: [8, 1] : memref<f16> to memref<?x8xf16>
    // CHECK: memref.load %[[XV]]
    // CHECK: memref.store %{{.*}}, %[[OV]]
    gpu.func @copy(%x: memref<?x8xf16>, %n: index, %out: memref<?x8xf16>) kernel {
      %t = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %v = memref.load %x[%t, %c0] : memref<?x8xf16>
      memref.store %v, %out[%t, %c0] : memref<?x8xf16>
      gpu.return
    }
  }

  // CHECK-LABEL: func.func @launch
  // CHECK-SAME: (%[[A:.*]]: memref<?x8xf16>, %[[B:.*]]: memref<?x8xf16>, %[[N:.*]]: index)
  // CHECK-DAG: %[[BA:.*]], %[[OA:.*]], %[[SA:.*]]:2, %[[TA:.*]]:2 = memref.extract_strided_metadata %[[A]]
  // CHECK-DAG: %[[PA:.*]] = memref.reinterpret_cast %[[A]] to offset: [0], sizes: [], strides: [] : memref<?x8xf16> to memref<f16>
  // CHECK-DAG: %[[BB:.*]], %[[OB:.*]], %[[SB:.*]]:2, %[[TB:.*]]:2 = memref.extract_strided_metadata %[[B]]
  // CHECK-DAG: %[[PB:.*]] = memref.reinterpret_cast %[[B]] to offset: [0], sizes: [], strides: [] : memref<?x8xf16> to memref<f16>
  // CHECK: gpu.launch_func @kernels::@copy {{.*}} args(%[[PA]] : memref<f16>, %[[N]] : index, %[[PB]] : memref<f16>, %[[SA]]#0 : index, %[[SB]]#0 : index)
  func.func @launch(%a: memref<?x8xf16>, %b: memref<?x8xf16>, %n: index) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @kernels::@copy blocks in (%c1, %c1, %c1) threads in (%n, %c1, %c1)
        args(%a : memref<?x8xf16>, %n : index, %b : memref<?x8xf16>)
    return
  }
}

// -----

// A strided view (a transposed buffer) passes its dynamic stride; a static
// shape passes nothing but its pointer, its static offset applied in the
// kernel.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    // CHECK-LABEL: gpu.func @strided
    // CHECK-SAME: (%[[S:.*]]: memref<f32>, %[[T:.*]]: memref<f32>, %[[S0:.*]]: index, %[[S1:.*]]: index, %[[SS:.*]]: index)
    // CHECK-DAG: memref.reinterpret_cast %[[S]] to offset: [0], sizes: [%[[S0]], %[[S1]], 4], strides: [4, %[[SS]], 1]
    // CHECK-DAG: memref.reinterpret_cast %[[T]] to offset: [2], sizes: [4], strides: [1] : memref<f32> to memref<4xf32, strided<[1], offset: 2>>
    gpu.func @strided(%s: memref<?x?x4xf32, strided<[4, ?, 1]>>,
                      %t: memref<4xf32, strided<[1], offset: 2>>) kernel {
      gpu.return
    }
  }

  func.func @launch(%s: memref<?x?x4xf32, strided<[4, ?, 1]>>,
                    %t: memref<4xf32, strided<[1], offset: 2>>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @kernels::@strided blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
        args(%s : memref<?x?x4xf32, strided<[4, ?, 1]>>, %t : memref<4xf32, strided<[1], offset: 2>>)
    return
  }
}
