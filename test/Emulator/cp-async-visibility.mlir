// RUN: kvir-runner %s -e main --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs | FileCheck %s

// cp.async data is not visible before the wait that retires its group. PTX
// leaves a read of the destination before cp.async.wait_group undefined; the
// emulator makes the copy land exactly at the wait, so such a read returns
// the old contents, and a kernel that forgets the wait sees stale data.
//
// Lane l fills its slots of two shared buffers with -1, then issues two
// groups: group A copies 4 floats x[4l..4l+3] into a[4l..], group B copies
// y[4l..] into b[4l..] with only 1 source element (src-size 4 bytes), so
// b[4l+1..4l+3] are zero-filled. x[i] = i, y[i] = 100 + i. Lane l records:
//   before any wait:      a[4l]   -> -1
//   after wait {1} (A retired, B pending): a[4l] -> 4l, b[4l] -> -1
//   after wait {0}:       b[4l], b[4l+1] -> 100 + 4l, 0
// Lane 3 therefore records [-1, 12, -1, 112, 0].

!buf = memref<128xf32, #gpu.address_space<workgroup>>

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @visibility(%x: memref<128xf32>, %y: memref<128xf32>,
                         %out: memref<32x5xf32>)
        workgroup(%a: !buf, %b: !buf) kernel {
      %l = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %c4 = arith.constant 4 : index
      %m1 = arith.constant -1.0 : f32
      %i = arith.muli %l, %c4 : index
      %i1 = arith.addi %i, %c1 : index
      scf.for %k = %c0 to %c4 step %c1 {
        %j = arith.addi %i, %k : index
        memref.store %m1, %a[%j] : !buf
        memref.store %m1, %b[%j] : !buf
      }
      %ta = nvgpu.device_async_copy %x[%i], %a[%i], 4 : memref<128xf32> to !buf
      %ga = nvgpu.device_async_create_group %ta
      %before = memref.load %a[%i] : !buf
      memref.store %before, %out[%l, %c0] : memref<32x5xf32>

      %tb = nvgpu.device_async_copy %y[%i], %b[%i], 4, %c1 : memref<128xf32> to !buf
      %gb = nvgpu.device_async_create_group %tb
      nvgpu.device_async_wait %ga {numGroups = 1 : i32}
      %a1 = memref.load %a[%i] : !buf
      memref.store %a1, %out[%l, %c1] : memref<32x5xf32>
      %b1 = memref.load %b[%i] : !buf
      memref.store %b1, %out[%l, %c2] : memref<32x5xf32>

      nvgpu.device_async_wait %gb {numGroups = 0 : i32}
      %b2 = memref.load %b[%i] : !buf
      memref.store %b2, %out[%l, %c3] : memref<32x5xf32>
      %b3 = memref.load %b[%i1] : !buf
      memref.store %b3, %out[%l, %c4] : memref<32x5xf32>
      gpu.return
    }
  }

  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c32 = arith.constant 32 : index
    %c128 = arith.constant 128 : index
    %hundred = arith.constant 100.0 : f32
    %x = memref.alloc() : memref<128xf32>
    %y = memref.alloc() : memref<128xf32>
    %out = memref.alloc() : memref<32x5xf32>
    scf.for %i = %c0 to %c128 step %c1 {
      %ii = arith.index_cast %i : index to i32
      %f = arith.sitofp %ii : i32 to f32
      memref.store %f, %x[%i] : memref<128xf32>
      %g = arith.addf %f, %hundred : f32
      memref.store %g, %y[%i] : memref<128xf32>
    }
    gpu.launch_func @kernels::@visibility blocks in (%c1, %c1, %c1)
        threads in (%c32, %c1, %c1)
        args(%x : memref<128xf32>, %y : memref<128xf32>, %out : memref<32x5xf32>)
    %row = memref.subview %out[3, 0] [1, 5] [1, 1]
        : memref<32x5xf32> to memref<5xf32, strided<[1], offset: 15>>
    %u = memref.cast %row : memref<5xf32, strided<[1], offset: 15>> to memref<*xf32>
    call @printMemrefF32(%u) : (memref<*xf32>) -> ()
    return
  }
  func.func private @printMemrefF32(memref<*xf32>)
}

// CHECK: [-1,  12,  -1,  112,  0]
