// RUN: kvir-opt %s --convert-linalg-to-loops --kv-lower-to-llvm | mlir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s

// Two keys with equal logits: o is the mean of their values (3 and 1 -> 2),
// lse = s + ln 2 with s = (1*1 + 1*1) / sqrt(2) = 1.41421, so 2.10736.
// CHECK: {{\[}}{{\[}}{{\[}}2, 1]]]
// CHECK: {{\[}}{{\[}}2.10736]]
!kvt = !kv.paged<page_size = 2, kv_heads = 1, head_dim = 2, head_dim_v = 2, dtype = f32, layout = nhd, storage = combined, table = csr>
func.func @main() {
  %pool = memref.alloc() : memref<2x2x2x1x2xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %f1 = arith.constant 1.0 : f32
  %f2 = arith.constant 2.0 : f32
  %f3 = arith.constant 3.0 : f32
  linalg.fill ins(%f1 : f32) outs(%pool : memref<2x2x2x1x2xf32>)
  // V of token 0 (page 0 slot 0) = 3, V of token 1 = 1 : keys equal -> mean = 2
  memref.store %f3, %pool[%c0, %c1, %c0, %c0, %c0] : memref<2x2x2x1x2xf32>
  %indptr = memref.alloc() : memref<2xi32>
  %indices = memref.alloc() : memref<1xi32>
  %last = memref.alloc() : memref<1xi32>
  %i0 = arith.constant 0 : i32
  %i1 = arith.constant 1 : i32
  %i2 = arith.constant 2 : i32
  memref.store %i0, %indptr[%c0] : memref<2xi32>
  memref.store %i1, %indptr[%c1] : memref<2xi32>
  memref.store %i0, %indices[%c0] : memref<1xi32>
  memref.store %i2, %last[%c0] : memref<1xi32>
  %q = memref.alloc() : memref<1x1x2xf32>
  linalg.fill ins(%f1 : f32) outs(%q : memref<1x1x2xf32>)
  %kv = kv.paged_view pools(%pool : memref<2x2x2x1x2xf32>) tables(%indptr, %indices, %last : memref<2xi32>, memref<1xi32>, memref<1xi32>) : !kvt
  %s = kv.decode %q, %kv : memref<1x1x2xf32>, !kvt -> !kv.state<1x1x2xf32, base = e>
  %o = memref.alloc() : memref<1x1x2xf32>
  %lse = memref.alloc() : memref<1x1xf32>
  kv.store_state %s, %o, %lse : !kv.state<1x1x2xf32, base = e>, memref<1x1x2xf32>, memref<1x1xf32>
  %ou = memref.cast %o : memref<1x1x2xf32> to memref<*xf32>
  %lu = memref.cast %lse : memref<1x1xf32> to memref<*xf32>
  call @printMemrefF32(%ou) : (memref<*xf32>) -> ()
  call @printMemrefF32(%lu) : (memref<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(memref<*xf32>)
