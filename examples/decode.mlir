// Batch decode over a FlashInfer-style paged KV cache, run on the CPU.
//
//   kvir-opt examples/decode.mlir --kv-lower-to-llvm |
//     mlir-runner -e main --entry-point-result=void \
//       --shared-libs=/usr/lib/llvm-22/lib/libmlir_runner_utils.so,/usr/lib/llvm-22/lib/libmlir_c_runner_utils.so
//
// Three requests with kv_len 5, 0 and 9 over pages of 4 tokens (CSR page
// table: kv_indptr = [0, 2, 2, 5], kv_indices = [3, 0, 4, 1, 2],
// kv_last_page_len = [1, 0, 1]); 4 query heads share 2 KV heads (GQA group
// 2); head_dim 8; f16 storage; the state's LSE is base 2 as FlashInfer's.
// The empty request prints zeros and -inf.

!cache = !kv.paged<page_size = 4, kv_heads = 2, head_dim = 8, head_dim_v = 8,
                   dtype = f16, layout = nhd, storage = combined, table = csr>
!state = !kv.state<3x4x8xf32, base = 2>

func.func private @printMemrefF32(memref<*xf32>)

// Fills a buffer with sin(0.37 * i + phase), i the linear element index.
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

memref.global "private" constant @kv_indptr : memref<4xi32> = dense<[0, 2, 2, 5]>
memref.global "private" constant @kv_indices : memref<5xi32> = dense<[3, 0, 4, 1, 2]>
memref.global "private" constant @kv_last_page_len : memref<3xi32> = dense<[1, 0, 1]>

func.func @main() {
  %pool_flat = memref.alloc() : memref<640xf16>          // 5 pages x 2 x 4 x 2 x 8
  %q_flat = memref.alloc() : memref<96xf16>              // 3 x 4 x 8
  %phase_kv = arith.constant 0.0 : f32
  %phase_q = arith.constant 1.3 : f32
  %pool_dyn = memref.cast %pool_flat : memref<640xf16> to memref<?xf16>
  %q_dyn = memref.cast %q_flat : memref<96xf16> to memref<?xf16>
  call @fill(%pool_dyn, %phase_kv) : (memref<?xf16>, f32) -> ()
  call @fill(%q_dyn, %phase_q) : (memref<?xf16>, f32) -> ()
  %pool = memref.expand_shape %pool_flat [[0, 1, 2, 3, 4]] output_shape [5, 2, 4, 2, 8]
      : memref<640xf16> into memref<5x2x4x2x8xf16>
  %q = memref.expand_shape %q_flat [[0, 1, 2]] output_shape [3, 4, 8]
      : memref<96xf16> into memref<3x4x8xf16>

  %indptr = memref.get_global @kv_indptr : memref<4xi32>
  %indices = memref.get_global @kv_indices : memref<5xi32>
  %last = memref.get_global @kv_last_page_len : memref<3xi32>

  %kv = kv.paged_view pools(%pool : memref<5x2x4x2x8xf16>)
      tables(%indptr, %indices, %last : memref<4xi32>, memref<5xi32>, memref<3xi32>) : !cache
  %s = kv.decode %q, %kv : memref<3x4x8xf16>, !cache -> !state

  %o = memref.alloc() : memref<3x4x8xf32>
  %lse = memref.alloc() : memref<3x4xf32>
  kv.store_state %s, %o, %lse : !state, memref<3x4x8xf32>, memref<3x4xf32>
  %o_u = memref.cast %o : memref<3x4x8xf32> to memref<*xf32>
  %lse_u = memref.cast %lse : memref<3x4xf32> to memref<*xf32>
  call @printMemrefF32(%o_u) : (memref<*xf32>) -> ()
  call @printMemrefF32(%lse_u) : (memref<*xf32>) -> ()
  return
}
