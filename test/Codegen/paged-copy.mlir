// RUN: kvir-opt %s -test-kvir-codegen | FileCheck %s --check-prefix=IR
// RUN: kvir-opt %s -test-kvir-codegen | kvir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s

// PagedTileLoader: each block walks its request's tokens tile by tile
// through a CSR page table over scattered pages, stages the tile's page ids
// once per page, copies the K rows into shared memory and writes them back
// to out[b, t, :]. Synchronously (vector loads; tiles of 16 and of 32
// tokens, the latter spanning 3 pages) and through a 2-, 3- and 4-stage
// cp.async pipeline (CpAsyncPipeline) into swizzled tiles, where rows past
// kv_len are zero-filled without being read. The host checks every element
// against the table: pool[page][0][slot][0][d] = 10000 page + 100 slot + d.

// IR-LABEL: gpu.func @copy_sync16
// IR: vector.load %{{.*}} : memref<?x2x16x1x64xf32>, vector<4xf32>
// IR-NOT: nvgpu.device_async_copy
// IR-LABEL: gpu.func @copy_sync32
// IR-LABEL: gpu.func @copy_async3
// IR-SAME: workgroup(%{{.*}} : memref<3x16x64xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}
// Two tiles in flight before the loop, a 16-byte copy per chunk with a
// source size of 4 elements or 0, one group per tile; in the loop, the next
// tile's group, then a wait for all but the newest 2 (tile t is complete).
// IR: nvgpu.device_async_copy %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}], %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}], 4, %{{.*}} {bypassL1} : memref<?x2x16x1x64xf32> to memref<3x16x64xf32, #gpu.address_space<workgroup>>
// IR: nvvm.cp.async.commit.group
// IR: nvvm.cp.async.commit.group
// IR: scf.for
// IR: nvvm.cp.async.commit.group
// IR: nvvm.cp.async.wait.group 2

!kv = !kv.paged<page_size = 16, kv_heads = 1, head_dim = 64, head_dim_v = 64, dtype = f32, layout = nhd, storage = combined, table = csr>

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @copy_sync16(%pool: memref<?x2x16x1x64xf32>, %indptr: memref<?xi32>, %indices: memref<?xi32>, %last: memref<?xi32>, %out: memref<?x?x64xf32>) kernel
        attributes {test.component = "paged_copy", test.kv_type = !kv, test.tile = 16 : i64} {
      gpu.return
    }
    gpu.func @copy_sync32(%pool: memref<?x2x16x1x64xf32>, %indptr: memref<?xi32>, %indices: memref<?xi32>, %last: memref<?xi32>, %out: memref<?x?x64xf32>) kernel
        attributes {test.component = "paged_copy", test.kv_type = !kv, test.tile = 32 : i64} {
      gpu.return
    }
    gpu.func @copy_async2(%pool: memref<?x2x16x1x64xf32>, %indptr: memref<?xi32>, %indices: memref<?xi32>, %last: memref<?xi32>, %out: memref<?x?x64xf32>) kernel
        attributes {test.component = "paged_copy", test.kv_type = !kv, test.tile = 16 : i64, test.stages = 2 : i64} {
      gpu.return
    }
    gpu.func @copy_async3(%pool: memref<?x2x16x1x64xf32>, %indptr: memref<?xi32>, %indices: memref<?xi32>, %last: memref<?xi32>, %out: memref<?x?x64xf32>) kernel
        attributes {test.component = "paged_copy", test.kv_type = !kv, test.tile = 16 : i64, test.stages = 3 : i64} {
      gpu.return
    }
    gpu.func @copy_async4(%pool: memref<?x2x16x1x64xf32>, %indptr: memref<?xi32>, %indices: memref<?xi32>, %last: memref<?xi32>, %out: memref<?x?x64xf32>) kernel
        attributes {test.component = "paged_copy", test.kv_type = !kv, test.tile = 16 : i64, test.stages = 4 : i64} {
      gpu.return
    }
  }

  // Requests of 37, 0 and 70 tokens over 3 + 0 + 5 of 10 pages.
  memref.global "private" constant @indptr : memref<4xi32> = dense<[0, 3, 3, 8]>
  memref.global "private" constant @indices : memref<8xi32> = dense<[7, 2, 9, 0, 5, 3, 8, 1]>
  memref.global "private" constant @last : memref<3xi32> = dense<[5, 0, 6]>
  memref.global "private" constant @lens : memref<3xindex> = dense<[37, 0, 70]>

  // Mismatches of out against the table; rows of a tile past kv_len must
  // be 0 when `zeroed`, untouched (-1) otherwise; rows past the last tile
  // untouched.
  func.func @check(%pool: memref<?x2x16x1x64xf32>, %out: memref<?x?x64xf32>, %tile: index, %zeroed: i1) -> i32 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    %c80 = arith.constant 80 : index
    %zero = arith.constant 0 : i32
    %one = arith.constant 1 : i32
    %f0 = arith.constant 0.0 : f32
    %fm1 = arith.constant -1.0 : f32
    %indptr = memref.get_global @indptr : memref<4xi32>
    %indices = memref.get_global @indices : memref<8xi32>
    %lens = memref.get_global @lens : memref<3xindex>
    %bad = scf.for %b = %c0 to %c3 step %c1 iter_args(%n = %zero) -> i32 {
      %len = memref.load %lens[%b] : memref<3xindex>
      %tiles = arith.ceildivui %len, %tile : index
      %covered = arith.muli %tiles, %tile : index
      %p0i = memref.load %indptr[%b] : memref<4xi32>
      %p0 = arith.index_cast %p0i : i32 to index
      %nb = scf.for %t = %c0 to %c80 step %c1 iter_args(%nt = %n) -> i32 {
        %valid = arith.cmpi ult, %t, %len : index
        %intile = arith.cmpi ult, %t, %covered : index
        %lp = arith.divui %t, %c16 : index
        %slot = arith.remui %t, %c16 : index
        %nd = scf.for %d = %c0 to %c64 step %c1 iter_args(%nn = %nt) -> i32 {
          %expect = scf.if %valid -> f32 {
            %at = arith.addi %p0, %lp : index
            %pg = memref.load %indices[%at] : memref<8xi32>
            %page = arith.index_cast %pg : i32 to index
            %v = memref.load %pool[%page, %c0, %slot, %c0, %d] : memref<?x2x16x1x64xf32>
            scf.yield %v : f32
          } else {
            %z = arith.andi %intile, %zeroed : i1
            %e = arith.select %z, %f0, %fm1 : f32
            scf.yield %e : f32
          }
          %got = memref.load %out[%b, %t, %d] : memref<?x?x64xf32>
          %ne = arith.cmpf une, %got, %expect : f32
          %inc = arith.select %ne, %one, %zero : i32
          %nn2 = arith.addi %nn, %inc : i32
          scf.yield %nn2 : i32
        }
        scf.yield %nd : i32
      }
      scf.yield %nb : i32
    }
    return %bad : i32
  }

  func.func @poison(%out: memref<?x?x64xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c64 = arith.constant 64 : index
    %c80 = arith.constant 80 : index
    %fm1 = arith.constant -1.0 : f32
    scf.for %b = %c0 to %c3 step %c1 {
      scf.for %t = %c0 to %c80 step %c1 {
        scf.for %d = %c0 to %c64 step %c1 {
          memref.store %fm1, %out[%b, %t, %d] : memref<?x?x64xf32>
        }
      }
    }
    return
  }

  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c10 = arith.constant 10 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    %c80 = arith.constant 80 : index
    %c100 = arith.constant 100 : index
    %c128 = arith.constant 128 : index
    %c10000 = arith.constant 10000 : index
    %false = arith.constant false
    %true = arith.constant true
    %pool = memref.alloc(%c10) : memref<?x2x16x1x64xf32>
    // K = 10000 page + 100 slot + d; V (unused) = NaN, which must never reach out.
    %nan = arith.constant 0x7FC00000 : f32
    scf.for %p = %c0 to %c10 step %c1 {
      scf.for %s = %c0 to %c16 step %c1 {
        scf.for %d = %c0 to %c64 step %c1 {
          %a = arith.muli %p, %c10000 : index
          %b = arith.muli %s, %c100 : index
          %ab = arith.addi %a, %b : index
          %v = arith.addi %ab, %d : index
          %vi = arith.index_cast %v : index to i32
          %vf = arith.sitofp %vi : i32 to f32
          memref.store %vf, %pool[%p, %c0, %s, %c0, %d] : memref<?x2x16x1x64xf32>
          memref.store %nan, %pool[%p, %c1, %s, %c0, %d] : memref<?x2x16x1x64xf32>
        }
      }
    }
    %indptr = memref.get_global @indptr : memref<4xi32>
    %indices = memref.get_global @indices : memref<8xi32>
    %last = memref.get_global @last : memref<3xi32>
    %ip = memref.cast %indptr : memref<4xi32> to memref<?xi32>
    %ix = memref.cast %indices : memref<8xi32> to memref<?xi32>
    %ls = memref.cast %last : memref<3xi32> to memref<?xi32>
    %out = memref.alloc(%c3, %c80) : memref<?x?x64xf32>

    call @poison(%out) : (memref<?x?x64xf32>) -> ()
    gpu.launch_func @kernels::@copy_sync16 blocks in (%c3, %c1, %c1) threads in (%c128, %c1, %c1)
        args(%pool : memref<?x2x16x1x64xf32>, %ip : memref<?xi32>, %ix : memref<?xi32>, %ls : memref<?xi32>, %out : memref<?x?x64xf32>)
    %bad0 = call @check(%pool, %out, %c16, %false) : (memref<?x2x16x1x64xf32>, memref<?x?x64xf32>, index, i1) -> i32
    // CHECK: sync, tiles of 16: 0
    vector.print str "sync, tiles of 16: "
    vector.print %bad0 : i32

    call @poison(%out) : (memref<?x?x64xf32>) -> ()
    gpu.launch_func @kernels::@copy_sync32 blocks in (%c3, %c1, %c1) threads in (%c128, %c1, %c1)
        args(%pool : memref<?x2x16x1x64xf32>, %ip : memref<?xi32>, %ix : memref<?xi32>, %ls : memref<?xi32>, %out : memref<?x?x64xf32>)
    %bad1 = call @check(%pool, %out, %c32, %false) : (memref<?x2x16x1x64xf32>, memref<?x?x64xf32>, index, i1) -> i32
    // CHECK-NEXT: sync, tiles of 32: 0
    vector.print str "sync, tiles of 32: "
    vector.print %bad1 : i32

    call @poison(%out) : (memref<?x?x64xf32>) -> ()
    gpu.launch_func @kernels::@copy_async2 blocks in (%c3, %c1, %c1) threads in (%c128, %c1, %c1)
        args(%pool : memref<?x2x16x1x64xf32>, %ip : memref<?xi32>, %ix : memref<?xi32>, %ls : memref<?xi32>, %out : memref<?x?x64xf32>)
    %bad2 = call @check(%pool, %out, %c16, %true) : (memref<?x2x16x1x64xf32>, memref<?x?x64xf32>, index, i1) -> i32
    // CHECK-NEXT: cp.async, 2 stages: 0
    vector.print str "cp.async, 2 stages: "
    vector.print %bad2 : i32

    call @poison(%out) : (memref<?x?x64xf32>) -> ()
    gpu.launch_func @kernels::@copy_async3 blocks in (%c3, %c1, %c1) threads in (%c128, %c1, %c1)
        args(%pool : memref<?x2x16x1x64xf32>, %ip : memref<?xi32>, %ix : memref<?xi32>, %ls : memref<?xi32>, %out : memref<?x?x64xf32>)
    %bad3 = call @check(%pool, %out, %c16, %true) : (memref<?x2x16x1x64xf32>, memref<?x?x64xf32>, index, i1) -> i32
    // CHECK-NEXT: cp.async, 3 stages: 0
    vector.print str "cp.async, 3 stages: "
    vector.print %bad3 : i32

    call @poison(%out) : (memref<?x?x64xf32>) -> ()
    gpu.launch_func @kernels::@copy_async4 blocks in (%c3, %c1, %c1) threads in (%c128, %c1, %c1)
        args(%pool : memref<?x2x16x1x64xf32>, %ip : memref<?xi32>, %ix : memref<?xi32>, %ls : memref<?xi32>, %out : memref<?x?x64xf32>)
    %bad4 = call @check(%pool, %out, %c16, %true) : (memref<?x2x16x1x64xf32>, memref<?x?x64xf32>, index, i1) -> i32
    // CHECK-NEXT: cp.async, 4 stages: 0
    vector.print str "cp.async, 4 stages: "
    vector.print %bad4 : i32
    return
  }
}
