// A serving step over a FlashInfer-style paged KV cache: append the new
// tokens' K/V rows through the page table, then batch prefill (append
// attention) of the new query rows, causal with bottom-right alignment.
// 32 query heads over 8 KV heads (GQA group 4), head_dim 128, NHD pages of
// 16 tokens, f16 KV and output, LSE in base 2.
//
// @serving_step is what a framework calls; @main builds a batch of three
// requests with (new rows, keys after the append) = (7, 37), (64, 300) and
// (1, 1), whose pages are scattered through the pool, runs it and prints
// out[row, h, 0:8] for every row and head and all LSEs.
//
//   As GPU kernels (the append kernel, then the tensor-core prefill) in
//   kvir's emulator:
//     kvir-runner examples/prefill.mlir -e main ...
//   On the CPU (kv-to-loops):
//     kvir-opt examples/prefill.mlir --kv-lower-to-llvm | mlir-runner -e main ...
//   As PTX plus manifests:
//     kvir-opt examples/prefill.mlir --kv-to-ptx="chip=sm_90a" | kvir-translate -o out
//
// examples/prefill_reference.py recomputes the result in float64.

!cache = !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128,
                   dtype = f16, layout = nhd, storage = combined, table = csr>
!state = !kv.state<?x32x128xf16, base = 2>

func.func @serving_step(%q: memref<?x32x128xf16>, %qo_indptr: memref<?xi32>,
                        %k: memref<?x8x128xf16>, %v: memref<?x8x128xf16>,
                        %batch_indices: memref<?xi32>, %positions: memref<?xi32>,
                        %pool: memref<?x2x16x8x128xf16>,
                        %kv_indptr: memref<?xi32>, %kv_indices: memref<?xi32>,
                        %kv_last_page_len: memref<?xi32>,
                        %out: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x8x128xf16>)
      tables(%kv_indptr, %kv_indices, %kv_last_page_len
             : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !cache
  kv.append %k, %v, %batch_indices, %positions into %kv
      : memref<?x8x128xf16>, memref<?x8x128xf16>, memref<?xi32>, memref<?xi32>, !cache
  %s = kv.prefill %q, %qo_indptr, %kv {causal}
      : memref<?x32x128xf16>, memref<?xi32>, !cache -> !state
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

// dst[i] = values[i] for a short i32 list.
func.func @set(%dst: memref<?xi32>, %i: index, %value: i32) {
  memref.store %value, %dst[%i] : memref<?xi32>
  return
}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c24 = arith.constant 24 : index
  %c32 = arith.constant 32 : index
  %c72 = arith.constant 72 : index
  // 24 pages of 2 x 16 x 8 x 128 f16; 72 new rows of q (x 32 x 128) and of
  // k, v (x 8 x 128).
  %pool_n = arith.constant 786432 : index
  %q_n = arith.constant 294912 : index
  %kv_n = arith.constant 73728 : index
  %pool_flat = memref.alloc(%pool_n) : memref<?xf16>
  %q_flat = memref.alloc(%q_n) : memref<?xf16>
  %k_flat = memref.alloc(%kv_n) : memref<?xf16>
  %v_flat = memref.alloc(%kv_n) : memref<?xf16>
  %phase_pool = arith.constant 0.0 : f32
  %phase_q = arith.constant 1.3 : f32
  %phase_k = arith.constant 2.1 : f32
  %phase_v = arith.constant 0.7 : f32
  call @fill(%pool_flat, %phase_pool) : (memref<?xf16>, f32) -> ()
  call @fill(%q_flat, %phase_q) : (memref<?xf16>, f32) -> ()
  call @fill(%k_flat, %phase_k) : (memref<?xf16>, f32) -> ()
  call @fill(%v_flat, %phase_v) : (memref<?xf16>, f32) -> ()
  %pool = memref.expand_shape %pool_flat [[0, 1, 2, 3, 4]] output_shape [%c24, 2, 16, 8, 128]
      : memref<?xf16> into memref<?x2x16x8x128xf16>
  %q = memref.expand_shape %q_flat [[0, 1, 2]] output_shape [%c72, 32, 128]
      : memref<?xf16> into memref<?x32x128xf16>
  %k = memref.expand_shape %k_flat [[0, 1, 2]] output_shape [%c72, 8, 128]
      : memref<?xf16> into memref<?x8x128xf16>
  %v = memref.expand_shape %v_flat [[0, 1, 2]] output_shape [%c72, 8, 128]
      : memref<?xf16> into memref<?x8x128xf16>

  // Requests: kv_len 37, 300, 1 (3, 19, 1 pages) with 7, 64, 1 new rows:
  // qo_indptr = [0, 7, 71, 72]; page i of the batch is pool page
  // (7 i + 3) mod 24.
  %qo_indptr = memref.alloc(%c4) : memref<?xi32>
  %kv_indptr = memref.alloc(%c4) : memref<?xi32>
  %last = memref.alloc(%c3) : memref<?xi32>
  %c23 = arith.constant 23 : index
  %indices = memref.alloc(%c23) : memref<?xi32>
  %i0 = arith.constant 0 : i32
  %i1 = arith.constant 1 : i32
  %i3 = arith.constant 3 : i32
  %i5 = arith.constant 5 : i32
  %i7 = arith.constant 7 : i32
  %i12 = arith.constant 12 : i32
  %i22 = arith.constant 22 : i32
  %i23 = arith.constant 23 : i32
  %i71 = arith.constant 71 : i32
  %i72 = arith.constant 72 : i32
  call @set(%qo_indptr, %c0, %i0) : (memref<?xi32>, index, i32) -> ()
  call @set(%qo_indptr, %c1, %i7) : (memref<?xi32>, index, i32) -> ()
  call @set(%qo_indptr, %c2, %i71) : (memref<?xi32>, index, i32) -> ()
  call @set(%qo_indptr, %c3, %i72) : (memref<?xi32>, index, i32) -> ()
  call @set(%kv_indptr, %c0, %i0) : (memref<?xi32>, index, i32) -> ()
  call @set(%kv_indptr, %c1, %i3) : (memref<?xi32>, index, i32) -> ()
  call @set(%kv_indptr, %c2, %i22) : (memref<?xi32>, index, i32) -> ()
  call @set(%kv_indptr, %c3, %i23) : (memref<?xi32>, index, i32) -> ()
  call @set(%last, %c0, %i5) : (memref<?xi32>, index, i32) -> ()
  call @set(%last, %c1, %i12) : (memref<?xi32>, index, i32) -> ()
  call @set(%last, %c2, %i1) : (memref<?xi32>, index, i32) -> ()
  %c7 = arith.constant 7 : index
  scf.for %i = %c0 to %c23 step %c1 {
    %a = arith.muli %i, %c7 : index
    %b = arith.addi %a, %c3 : index
    %p = arith.remui %b, %c24 : index
    %pi = arith.index_cast %p : index to i32
    memref.store %pi, %indices[%i] : memref<?xi32>
  }
  // New row r of request b goes to token kv_len[b] - qo_len[b] + (r -
  // qo_indptr[b]): the request's last qo_len tokens.
  %batch_indices = memref.alloc(%c72) : memref<?xi32>
  %positions = memref.alloc(%c72) : memref<?xi32>
  %kv_lens = memref.alloc(%c3) : memref<?xi32>
  %i37 = arith.constant 37 : i32
  %i300 = arith.constant 300 : i32
  call @set(%kv_lens, %c0, %i37) : (memref<?xi32>, index, i32) -> ()
  call @set(%kv_lens, %c1, %i300) : (memref<?xi32>, index, i32) -> ()
  call @set(%kv_lens, %c2, %i1) : (memref<?xi32>, index, i32) -> ()
  scf.for %b = %c0 to %c3 step %c1 {
    %b1 = arith.addi %b, %c1 : index
    %lo32 = memref.load %qo_indptr[%b] : memref<?xi32>
    %hi32 = memref.load %qo_indptr[%b1] : memref<?xi32>
    %lo = arith.index_cast %lo32 : i32 to index
    %hi = arith.index_cast %hi32 : i32 to index
    %len32 = memref.load %kv_lens[%b] : memref<?xi32>
    %bi = arith.index_cast %b : index to i32
    scf.for %r = %lo to %hi step %c1 {
      %rel = arith.subi %r, %lo : index
      %n = arith.subi %hi, %lo : index
      %first = arith.subi %len32, %hi32 : i32
      %first2 = arith.addi %first, %lo32 : i32
      %rel32 = arith.index_cast %rel : index to i32
      %pos = arith.addi %first2, %rel32 : i32
      memref.store %bi, %batch_indices[%r] : memref<?xi32>
      memref.store %pos, %positions[%r] : memref<?xi32>
    }
  }

  %out = memref.alloc(%c72) : memref<?x32x128xf16>
  %lse = memref.alloc(%c72) : memref<?x32xf32>
  call @serving_step(%q, %qo_indptr, %k, %v, %batch_indices, %positions, %pool,
                     %kv_indptr, %indices, %last, %out, %lse)
      : (memref<?x32x128xf16>, memref<?xi32>, memref<?x8x128xf16>,
         memref<?x8x128xf16>, memref<?xi32>, memref<?xi32>,
         memref<?x2x16x8x128xf16>, memref<?xi32>, memref<?xi32>,
         memref<?xi32>, memref<?x32x128xf16>, memref<?x32xf32>) -> ()

  // Print out[r, h, 0:8] (as f32) and the LSEs.
  %head = memref.alloc() : memref<72x32x8xf32>
  scf.for %r = %c0 to %c72 step %c1 {
    scf.for %h = %c0 to %c32 step %c1 {
      scf.for %d = %c0 to %c8 step %c1 {
        %x = memref.load %out[%r, %h, %d] : memref<?x32x128xf16>
        %f = arith.extf %x : f16 to f32
        memref.store %f, %head[%r, %h, %d] : memref<72x32x8xf32>
      }
    }
  }
  %head_u = memref.cast %head : memref<72x32x8xf32> to memref<*xf32>
  %lse_u = memref.cast %lse : memref<?x32xf32> to memref<*xf32>
  call @printMemrefF32(%head_u) : (memref<*xf32>) -> ()
  call @printMemrefF32(%lse_u) : (memref<*xf32>) -> ()
  return
}
