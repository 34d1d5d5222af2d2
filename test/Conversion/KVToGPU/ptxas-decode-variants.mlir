// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: kvir-opt %s --kv-to-ptx=chip=sm_90a | kvir-translate -o %t
// RUN: %ptxas -arch=sm_90a -v %t/kv_kernels.ptx -o %t/kernels.cubin > %t/ptxas.txt 2>&1
// RUN: FileCheck %s --check-prefix=COUNT < %t/ptxas.txt
// RUN: FileCheck %s --check-prefix=CLEAN < %t/ptxas.txt
// RUN: FileCheck %s --check-prefix=PTX < %t/kv_kernels.ptx

// Decode kernels with attention variants: gpt-oss (sinks, a 128-key
// window, bf16, GQA 8), ALiBi beside a soft cap, and regions (a score_mod
// calling math.tanh and math.exp, a mask_mod reading a per-request table)
// compile to
// PTX that ptxas takes without spills, calling nothing: math ops in regions
// become polynomial approximations, not libdevice.
// The gpt-oss merge kernel takes the sinks; the other two share one.
// COUNT-DAG: Compiling entry function 'decode_{{.*}}_h64x8_d64_bf16_f32_split_
// COUNT-DAG: Compiling entry function 'decode_{{.*}}_h32x8_d128_f16_f32_split_
// COUNT-DAG: Compiling entry function 'decode_{{.*}}_h32x8_d128_f16_f32_split_
// COUNT-DAG: Compiling entry function 'merge_rows_h64_d64_bf16_base_e_
// COUNT-DAG: Compiling entry function 'merge_rows_h32_d128_f16_base_2_

// CLEAN-NOT: {{[1-9][0-9]* bytes spill}}
// CLEAN-NOT: error

// PTX-NOT: call
// PTX-NOT: __nv_

!oss = !kv.paged<page_size = 16, kv_heads = 8, head_dim = 64, head_dim_v = 64, dtype = bf16, layout = nhd, storage = combined, table = csr>
!soss = !kv.state<?x64x64xbf16, base = e>
func.func @gpt_oss(%q: memref<?x64x64xbf16>, %pool: memref<?x2x16x8x64xbf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>, %sinks: memref<64xf32>, %o: memref<?x64x64xbf16>, %l: memref<?x64xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x8x64xbf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !oss
  %s = kv.decode %q, %kv sinks(%sinks : memref<64xf32>) {window_left = 127 : i64} : memref<?x64x64xbf16>, !oss -> !soss
  kv.store_state %s, %o, %l : !soss, memref<?x64x64xbf16>, memref<?x64xf32>
  return
}

!p = !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x32x128xf16, base = 2>
func.func @alibi(%q: memref<?x32x128xf16>, %pool: memref<?x2x16x8x128xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>, %o: memref<?x32x128xf16>, %l: memref<?x32xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x8x128xf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !p
  %s = kv.decode %q, %kv {alibi, logits_soft_cap = 30.0 : f32} : memref<?x32x128xf16>, !p -> !s
  kv.store_state %s, %o, %l : !s, memref<?x32x128xf16>, memref<?x32xf32>
  return
}

func.func @regions(%q: memref<?x32x128xf16>, %pool: memref<?x2x16x8x128xf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: memref<?xi32>, %doc: memref<?x?xi32>, %o: memref<?x32x128xf16>, %l: memref<?x32xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x8x128xf16>) tables(%a, %b, %c : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !p
  %s = kv.decode %q, %kv score_mod {
  ^bb0(%x: f32, %r: index, %h: index, %p: index, %j: index):
    %cap = arith.constant 50.0 : f32
    %d = arith.divf %x, %cap : f32
    %t = math.tanh %d : f32
    %y = arith.mulf %cap, %t : f32
    %e = math.exp %t : f32
    %z = arith.addf %y, %e : f32
    kv.yield %z : f32
  } mask_mod {
  ^bb0(%r: index, %h: index, %p: index, %j: index):
    %dp = memref.load %doc[%r, %p] : memref<?x?xi32>
    %dj = memref.load %doc[%r, %j] : memref<?x?xi32>
    %same = arith.cmpi eq, %dp, %dj : i32
    kv.yield %same : i1
  } : memref<?x32x128xf16>, !p -> !s
  kv.store_state %s, %o, %l : !s, memref<?x32x128xf16>, memref<?x32xf32>
  return
}
