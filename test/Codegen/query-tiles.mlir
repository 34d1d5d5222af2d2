// RUN: kvir-opt %s -test-kvir-codegen | kvir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s

// QueryTiles: ragged query rows in tiles of T packed rows without a host
// plan. With G = 2, T = 64 and qo_len = [0, 40, 1, 32, 100]
// (qo_indptr = [0, 0, 40, 41, 73, 173], nnz = 173):
//   slots = floor(173 * 2 / 64) + 5 = 10;
//   start(b) = floor(qo_indptr[b] * 2 / 64) + b = 0, 1, 3, 4, 6;
//   tiles(b) = ceil(qo_len * 2 / 64) = 0, 2, 1, 1, 4.
// Slot 0 (request 0, no tile) and slot 5 (past request 3's one tile) are
// idle; a request's slots take its tiles backwards (the last first).
// Rows: [request, qo_start, qo_len, first packed row, valid].

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @tiles(%qo_indptr: memref<?xi32>, %out: memref<?x5xi32>) kernel
        attributes {test.component = "query_tiles", test.group = 2 : i64,
                    test.tile_rows = 64 : i64} {
      gpu.return
    }
  }

  func.func private @printMemrefI32(memref<*xi32>)

  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c5 = arith.constant 5 : index
    %c6 = arith.constant 6 : index
    %c10 = arith.constant 10 : index
    %indptr = memref.alloc(%c6) : memref<?xi32>
    %i0 = arith.constant 0 : i32
    %i40 = arith.constant 40 : i32
    %i41 = arith.constant 41 : i32
    %i73 = arith.constant 73 : i32
    %i173 = arith.constant 173 : i32
    memref.store %i0, %indptr[%c0] : memref<?xi32>
    memref.store %i0, %indptr[%c1] : memref<?xi32>
    memref.store %i40, %indptr[%c2] : memref<?xi32>
    memref.store %i41, %indptr[%c3] : memref<?xi32>
    memref.store %i73, %indptr[%c4] : memref<?xi32>
    memref.store %i173, %indptr[%c5] : memref<?xi32>
    %out = memref.alloc(%c10) : memref<?x5xi32>
    gpu.launch_func @kernels::@tiles blocks in (%c10, %c1, %c1) threads in (%c1, %c1, %c1)
        args(%indptr : memref<?xi32>, %out : memref<?x5xi32>)
    %u = memref.cast %out : memref<?x5xi32> to memref<*xi32>
    call @printMemrefI32(%u) : (memref<*xi32>) -> ()
    return
  }
}

// CHECK: [0,   0,   0,   0,   0]
// CHECK-NEXT: [1,   0,   40,   64,   1]
// CHECK-NEXT: [1,   0,   40,   0,   1]
// CHECK-NEXT: [2,   40,   1,   0,   1]
// CHECK-NEXT: [3,   41,   32,   0,   1]
// CHECK-NEXT: [3,   41,   32,   0,   0]
// CHECK-NEXT: [4,   73,   100,   192,   1]
// CHECK-NEXT: [4,   73,   100,   128,   1]
// CHECK-NEXT: [4,   73,   100,   64,   1]
// CHECK-NEXT: [4,   73,   100,   0,   1]
