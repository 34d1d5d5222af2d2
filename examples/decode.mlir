// Batch decode over a FlashInfer-style paged KV cache: 32 query heads over
// 8 KV heads (GQA group 4), head_dim 128, NHD pages of 16 tokens, f16 KV and
// output, LSE in base 2 (FlashInfer's convention).
//
// @batch_decode is the kernel a framework calls; @main builds a batch of
// four requests (kv_len 0, 1, 37 and 300) whose pages are scattered through
// the pool, runs it and prints out[b, h, 0:8] for every head and all LSEs.
//
//   On the CPU (kv-to-loops):
//     kvir-opt examples/decode.mlir --kv-lower-to-llvm | mlir-runner -e main ...
//   As GPU kernels in kvir's emulator (convert-kv-to-gpu):
//     kvir-runner examples/decode.mlir -e main ...
//   As PTX plus manifests:
//     kvir-opt examples/decode.mlir --kv-to-ptx="chip=sm_90a" | kvir-translate -o out
//
// examples/decode_reference.py recomputes the result in float64.

!cache = !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128,
                   dtype = f16, layout = nhd, storage = combined, table = csr>
!state = !kv.state<?x32x128xf16, base = 2>

func.func @batch_decode(%q: memref<?x32x128xf16>, %pool: memref<?x2x16x8x128xf16>,
                        %kv_indptr: memref<?xi32>, %kv_indices: memref<?xi32>,
                        %kv_last_page_len: memref<?xi32>,
                        %out: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x8x128xf16>)
      tables(%kv_indptr, %kv_indices, %kv_last_page_len
             : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !cache
  %s = kv.decode %q, %kv : memref<?x32x128xf16>, !cache -> !state
  kv.store_state %s, %out, %lse : !state, memref<?x32x128xf16>, memref<?x32xf32>
  return
}

func.func private @printMemrefF32(memref<*xf32>)

// buf[i] = f16(sin(0.37 * i + phase)).
func.func @fill(%buf: memref<?xf16>, %phase: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %buf, %c0 : memref<?xf16>
  %step = arith.constant 0.37 : f32
  scf.for %i = %c0 to %n step %c1 {
    %ii = arith.index_cast %i : index to i32
    %fi = arith.sitofp %ii : i32 to f32
    %x = arith.mulf %fi, %step : f32
    %y = arith.addf %x, %phase : f32
    %s = math.sin %y : f32
    %h = arith.truncf %s : f32 to f16
    memref.store %h, %buf[%i] : memref<?xf16>
  }
  return
}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c8 = arith.constant 8 : index
  %c23 = arith.constant 23 : index
  %c24 = arith.constant 24 : index
  %c32 = arith.constant 32 : index
  // 24 pages of 2 x 16 x 8 x 128 f16; q of 4 x 32 x 128.
  %pool_n = arith.constant 786432 : index
  %q_n = arith.constant 16384 : index
  %pool_flat = memref.alloc(%pool_n) : memref<?xf16>
  %q_flat = memref.alloc(%q_n) : memref<?xf16>
  %phase_kv = arith.constant 0.0 : f32
  %phase_q = arith.constant 1.3 : f32
  call @fill(%pool_flat, %phase_kv) : (memref<?xf16>, f32) -> ()
  call @fill(%q_flat, %phase_q) : (memref<?xf16>, f32) -> ()
  %pool = memref.expand_shape %pool_flat [[0, 1, 2, 3, 4]] output_shape [%c24, 2, 16, 8, 128]
      : memref<?xf16> into memref<?x2x16x8x128xf16>
  %q = memref.expand_shape %q_flat [[0, 1, 2]] output_shape [%c4, 32, 128]
      : memref<?xf16> into memref<?x32x128xf16>

  // kv_len = [0, 1, 37, 300]: 0, 1, 3 and 19 pages; page i of the batch is
  // pool page (7 i + 3) mod 24.
  %indptr = memref.alloc(%c5) : memref<?xi32>
  %last = memref.alloc(%c4) : memref<?xi32>
  %indices = memref.alloc(%c23) : memref<?xi32>
  %i0 = arith.constant 0 : i32
  %i1 = arith.constant 1 : i32
  %i4 = arith.constant 4 : i32
  %i5 = arith.constant 5 : i32
  %i12 = arith.constant 12 : i32
  %i23 = arith.constant 23 : i32
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  memref.store %i0, %indptr[%c0] : memref<?xi32>
  memref.store %i0, %indptr[%c1] : memref<?xi32>
  memref.store %i1, %indptr[%c2] : memref<?xi32>
  memref.store %i4, %indptr[%c3] : memref<?xi32>
  memref.store %i23, %indptr[%c4] : memref<?xi32>
  memref.store %i0, %last[%c0] : memref<?xi32>
  memref.store %i1, %last[%c1] : memref<?xi32>
  memref.store %i5, %last[%c2] : memref<?xi32>
  memref.store %i12, %last[%c3] : memref<?xi32>
  %c7 = arith.constant 7 : index
  scf.for %i = %c0 to %c23 step %c1 {
    %a = arith.muli %i, %c7 : index
    %b = arith.addi %a, %c3 : index
    %p = arith.remui %b, %c24 : index
    %pi = arith.index_cast %p : index to i32
    memref.store %pi, %indices[%i] : memref<?xi32>
  }

  %out = memref.alloc(%c4) : memref<?x32x128xf16>
  %lse = memref.alloc(%c4) : memref<?x32xf32>
  call @batch_decode(%q, %pool, %indptr, %indices, %last, %out, %lse)
      : (memref<?x32x128xf16>, memref<?x2x16x8x128xf16>, memref<?xi32>,
         memref<?xi32>, memref<?xi32>, memref<?x32x128xf16>, memref<?x32xf32>) -> ()

  // Print out[b, h, 0:8] (as f32) and the LSEs.
  %head = memref.alloc() : memref<4x32x8xf32>
  scf.for %b = %c0 to %c4 step %c1 {
    scf.for %h = %c0 to %c32 step %c1 {
      scf.for %d = %c0 to %c8 step %c1 {
        %v = memref.load %out[%b, %h, %d] : memref<?x32x128xf16>
        %f = arith.extf %v : f16 to f32
        memref.store %f, %head[%b, %h, %d] : memref<4x32x8xf32>
      }
    }
  }
  %head_u = memref.cast %head : memref<4x32x8xf32> to memref<*xf32>
  %lse_u = memref.cast %lse : memref<?x32xf32> to memref<*xf32>
  call @printMemrefF32(%head_u) : (memref<*xf32>) -> ()
  call @printMemrefF32(%lse_u) : (memref<*xf32>) -> ()
  return
}
