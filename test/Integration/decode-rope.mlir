// RUN: kvir-opt %s --convert-linalg-to-loops --kv-lower-to-llvm | mlir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s

// RoPE on the fly in kv.decode: the query is rotated at its position
// p = kv_len - 1 and key j at position j, so the logit depends on the
// relative position. D = 2 (one pair, frequency 1), scale = pi / 2.
// sm_scale = 1, kv_len = 2, q = (10, 0), K = (10, 0) at both positions
// (unrotated in the cache), V = (1, 1), (3, 5).
//
// With rope: q -> (10 cos(pi/2), 10 sin(pi/2)) = (0, 10); key 0 stays
// (10, 0), key 1 -> (0, 10). Logits 0 and 100: o = V1 = (3, 5),
// lse = 100 + ln(1 + e^-100) = 100.
// Without rope: logits 100 and 100: o = (2, 3), lse = 100 + ln 2 = 100.693.

// with rope
// CHECK: rank = 3 offset = 0 sizes = [1, 1, 2]
// CHECK-NEXT: {{\[\[\[}}3, 5]
// CHECK: rank = 2 offset = 0 sizes = [1, 1]
// CHECK-NEXT: {{\[\[}}100]
// without rope
// CHECK: rank = 3 offset = 0 sizes = [1, 1, 2]
// CHECK-NEXT: {{\[\[\[}}2, 3]
// CHECK: rank = 2 offset = 0 sizes = [1, 1]
// CHECK-NEXT: {{\[\[}}100.693]

!kvt = !kv.paged<page_size = 2, kv_heads = 1, head_dim = 2, head_dim_v = 2, dtype = f32, layout = nhd, storage = split, table = block_table>

memref.global "private" constant @k : memref<1x2x1x2xf32> = dense<[[[[10.0, 0.0]], [[10.0, 0.0]]]]>
memref.global "private" constant @v : memref<1x2x1x2xf32> = dense<[[[[1.0, 1.0]], [[3.0, 5.0]]]]>
memref.global "private" constant @block_table : memref<1x1xi32> = dense<[[0]]>
memref.global "private" constant @seq_lens : memref<1xi32> = dense<[2]>
memref.global "private" constant @q : memref<1x1x2xf32> = dense<[[[10.0, 0.0]]]>

func.func @main() {
  %k = memref.get_global @k : memref<1x2x1x2xf32>
  %v = memref.get_global @v : memref<1x2x1x2xf32>
  %bt = memref.get_global @block_table : memref<1x1xi32>
  %lens = memref.get_global @seq_lens : memref<1xi32>
  %q = memref.get_global @q : memref<1x1x2xf32>
  %kv = kv.paged_view pools(%k, %v : memref<1x2x1x2xf32>, memref<1x2x1x2xf32>) tables(%bt, %lens : memref<1x1xi32>, memref<1xi32>) : !kvt
  %o = memref.alloc() : memref<1x1x2xf32>
  %lse = memref.alloc() : memref<1x1xf32>
  %a = kv.decode %q, %kv {sm_scale = 1.0 : f32, rope = #kv.rope<interleave, scale = 1.57079633>} : memref<1x1x2xf32>, !kvt -> !kv.state<1x1x2xf32, base = e>
  kv.store_state %a, %o, %lse : !kv.state<1x1x2xf32, base = e>, memref<1x1x2xf32>, memref<1x1xf32>
  %u1 = memref.cast %o : memref<1x1x2xf32> to memref<*xf32>
  call @printMemrefF32(%u1) : (memref<*xf32>) -> ()
  %u2 = memref.cast %lse : memref<1x1xf32> to memref<*xf32>
  call @printMemrefF32(%u2) : (memref<*xf32>) -> ()
  %b = kv.decode %q, %kv {sm_scale = 1.0 : f32} : memref<1x1x2xf32>, !kvt -> !kv.state<1x1x2xf32, base = e>
  kv.store_state %b, %o, %lse : !kv.state<1x1x2xf32, base = e>, memref<1x1x2xf32>, memref<1x1xf32>
  %u3 = memref.cast %o : memref<1x1x2xf32> to memref<*xf32>
  call @printMemrefF32(%u3) : (memref<*xf32>) -> ()
  %u4 = memref.cast %lse : memref<1x1xf32> to memref<*xf32>
  call @printMemrefF32(%u4) : (memref<*xf32>) -> ()
  memref.dealloc %o : memref<1x1x2xf32>
  memref.dealloc %lse : memref<1x1xf32>
  return
}

func.func private @printMemrefF32(memref<*xf32>)
