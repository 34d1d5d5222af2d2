// RUN: kvir-opt %s -test-kvir-codegen | FileCheck %s --check-prefix=IR
// RUN: kvir-opt %s -test-kvir-codegen | kvir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s

// PagedTileLoader gathering (top-k sparse selection): each block walks the
// entries of its request's key list tile by tile, stages each entry's key
// and the table entry of its page, copies the keys' K rows into shared
// memory (by vector loads, or by cp.async into a swizzled tile) and writes
// them back to out[b, e, :]. Lists hold keys in any order across pages,
// repeats, -1 padding and keys outside the request (negative, kv_len,
// beyond): entries of no key are zero-filled without a read. The host
// checks every element: pool[page][0][slot][0][d] = 10000 page + 100 slot
// + d.

// IR-LABEL: gpu.func @gather_sync
// IR: memref.load %{{.*}} : memref<?x?xi32>
// IR: vector.load %{{.*}} : memref<?x2x16x1x64xf32>, vector<4xf32>
// IR-NOT: nvgpu.device_async_copy
// IR-LABEL: gpu.func @gather_async
// IR: nvgpu.device_async_copy
// IR: nvvm.cp.async.wait.group 0

!kv = !kv.paged<page_size = 16, kv_heads = 1, head_dim = 64, head_dim_v = 64, dtype = f32, layout = nhd, storage = combined, table = csr>

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @gather_sync(%pool: memref<?x2x16x1x64xf32>, %indptr: memref<?xi32>, %indices: memref<?xi32>, %last: memref<?xi32>, %topk: memref<?x?xi32>, %out: memref<?x?x64xf32>) kernel
        attributes {test.component = "paged_gather", test.kv_type = !kv, test.tile = 16 : i64} {
      gpu.return
    }
    gpu.func @gather_async(%pool: memref<?x2x16x1x64xf32>, %indptr: memref<?xi32>, %indices: memref<?xi32>, %last: memref<?xi32>, %topk: memref<?x?xi32>, %out: memref<?x?x64xf32>) kernel
        attributes {test.component = "paged_gather", test.kv_type = !kv, test.tile = 16 : i64, test.async} {
      gpu.return
    }
  }

  // Requests of 37, 0 and 70 tokens over 3 + 0 + 5 of 10 pages.
  memref.global "private" constant @indptr : memref<4xi32> = dense<[0, 3, 3, 8]>
  memref.global "private" constant @indices : memref<8xi32> = dense<[7, 2, 9, 0, 5, 3, 8, 1]>
  memref.global "private" constant @last : memref<3xi32> = dense<[5, 0, 6]>
  memref.global "private" constant @lens : memref<3xi32> = dense<[37, 0, 70]>
  // 20 entries per request: two tiles, the second of 4 entries.
  memref.global "private" constant @topk : memref<3x20xi32> = dense<[
    [36, 0, -1, 17, 17, 5, 37, 16, 15, 31, 32, -5, 1000, 2, 20, -1, 33, 9, 4, 35],
    [0, -1, 3, 1, -1, -1, 0, 0, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16],
    [69, 68, 70, 0, 64, 63, 47, 48, -1, 1, 33, 17, 71, 50, 2, 2, 65, 31, 32, 16]]>

  // Mismatches of out against the table: the listed key's row, or zeros.
  func.func @check(%pool: memref<?x2x16x1x64xf32>, %out: memref<?x?x64xf32>) -> i32 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c16 = arith.constant 16 : index
    %c20 = arith.constant 20 : index
    %c64 = arith.constant 64 : index
    %zero = arith.constant 0 : i32
    %one = arith.constant 1 : i32
    %f0 = arith.constant 0.0 : f32
    %indptr = memref.get_global @indptr : memref<4xi32>
    %indices = memref.get_global @indices : memref<8xi32>
    %lens = memref.get_global @lens : memref<3xi32>
    %topk = memref.get_global @topk : memref<3x20xi32>
    %bad = scf.for %b = %c0 to %c3 step %c1 iter_args(%n = %zero) -> i32 {
      %len = memref.load %lens[%b] : memref<3xi32>
      %p0i = memref.load %indptr[%b] : memref<4xi32>
      %p0 = arith.index_cast %p0i : i32 to index
      %nb = scf.for %e = %c0 to %c20 step %c1 iter_args(%nt = %n) -> i32 {
        %key = memref.load %topk[%b, %e] : memref<3x20xi32>
        %ge = arith.cmpi sge, %key, %zero : i32
        %lt = arith.cmpi slt, %key, %len : i32
        %valid = arith.andi %ge, %lt : i1
        %nd = scf.for %d = %c0 to %c64 step %c1 iter_args(%nn = %nt) -> i32 {
          %expect = scf.if %valid -> f32 {
            %t = arith.index_cast %key : i32 to index
            %lp = arith.divui %t, %c16 : index
            %slot = arith.remui %t, %c16 : index
            %at = arith.addi %p0, %lp : index
            %pg = memref.load %indices[%at] : memref<8xi32>
            %page = arith.index_cast %pg : i32 to index
            %v = memref.load %pool[%page, %c0, %slot, %c0, %d] : memref<?x2x16x1x64xf32>
            scf.yield %v : f32
          } else {
            scf.yield %f0 : f32
          }
          %got = memref.load %out[%b, %e, %d] : memref<?x?x64xf32>
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
    %c20 = arith.constant 20 : index
    %c64 = arith.constant 64 : index
    %fm1 = arith.constant -1.0 : f32
    scf.for %b = %c0 to %c3 step %c1 {
      scf.for %e = %c0 to %c20 step %c1 {
        scf.for %d = %c0 to %c64 step %c1 {
          memref.store %fm1, %out[%b, %e, %d] : memref<?x?x64xf32>
        }
      }
    }
    return
  }

  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c10 = arith.constant 10 : index
    %c16 = arith.constant 16 : index
    %c20 = arith.constant 20 : index
    %c64 = arith.constant 64 : index
    %c100 = arith.constant 100 : index
    %c128 = arith.constant 128 : index
    %c10000 = arith.constant 10000 : index
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
    %topk = memref.get_global @topk : memref<3x20xi32>
    %ip = memref.cast %indptr : memref<4xi32> to memref<?xi32>
    %ix = memref.cast %indices : memref<8xi32> to memref<?xi32>
    %ls = memref.cast %last : memref<3xi32> to memref<?xi32>
    %tk = memref.cast %topk : memref<3x20xi32> to memref<?x?xi32>
    %out = memref.alloc(%c3, %c20) : memref<?x?x64xf32>

    call @poison(%out) : (memref<?x?x64xf32>) -> ()
    gpu.launch_func @kernels::@gather_sync blocks in (%c3, %c1, %c1) threads in (%c128, %c1, %c1)
        args(%pool : memref<?x2x16x1x64xf32>, %ip : memref<?xi32>, %ix : memref<?xi32>, %ls : memref<?xi32>, %tk : memref<?x?xi32>, %out : memref<?x?x64xf32>)
    %bad0 = call @check(%pool, %out) : (memref<?x2x16x1x64xf32>, memref<?x?x64xf32>) -> i32
    // CHECK: gathered by loads: 0
    vector.print str "gathered by loads: "
    vector.print %bad0 : i32

    call @poison(%out) : (memref<?x?x64xf32>) -> ()
    gpu.launch_func @kernels::@gather_async blocks in (%c3, %c1, %c1) threads in (%c128, %c1, %c1)
        args(%pool : memref<?x2x16x1x64xf32>, %ip : memref<?xi32>, %ix : memref<?xi32>, %ls : memref<?xi32>, %tk : memref<?x?xi32>, %out : memref<?x?x64xf32>)
    %bad1 = call @check(%pool, %out) : (memref<?x2x16x1x64xf32>, memref<?x?x64xf32>) -> i32
    // CHECK-NEXT: gathered by cp.async: 0
    vector.print str "gathered by cp.async: "
    vector.print %bad1 : i32
    return
  }
}
