// RUN: kvir-opt %s -split-input-file | kvir-opt -split-input-file | FileCheck %s

// Every form of !kv.paged, !kv.ragged and !kv.state (and #kv.rope) prints in
// a form that parses back to the same type.

// Parameters may be given in any order; they print in declaration order and
// default-valued parameters (quant = none, quant_group = 0, layer = 0,
// pe_dim = 0) are elided.
// CHECK-LABEL: func.func @param_order
// CHECK-SAME: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr>)
func.func @param_order(%a: !kv.paged<table = csr, storage = combined, layout = nhd, dtype = f16, head_dim_v = 128, head_dim = 128, kv_heads = 8, page_size = 16, quant = none, quant_group = 0, layer = 0, pe_dim = 0>) {
  return
}

// -----

// CHECK-LABEL: func.func @storage_and_table
// CHECK-SAME: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 64, dtype = bf16, layout = nhd, storage = split, table = block_table>
// CHECK-SAME: !kv.paged<page_size = 1, kv_heads = 4, head_dim = 64, head_dim_v = 64, dtype = f32, layout = hnd, storage = combined, table = token_table>
// CHECK-SAME: !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f16, layout = nhd, storage = mla, table = token_offset, pe_dim = 64>
func.func @storage_and_table(
    %a: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 64, dtype = bf16, layout = nhd, storage = split, table = block_table>,
    %b: !kv.paged<page_size = 1, kv_heads = 4, head_dim = 64, head_dim_v = 64, dtype = f32, layout = hnd, storage = combined, table = token_table>,
    %c: !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f16, layout = nhd, storage = mla, table = token_offset, pe_dim = 64>) {
  return
}

// -----

// CHECK-LABEL: func.func @layouts
// CHECK-SAME: layout = hnd, storage = split, table = csr>
// CHECK-SAME: layout = vllm, storage = split, table = block_table>
// CHECK-SAME: layout = ppl0, storage = combined, table = token_table, layer = 3>
// CHECK-SAME: layout = ppl1, storage = combined, table = token_offset, layer = 1>
// CHECK-SAME: layout = ppl2, storage = combined, table = token_table>
// CHECK-SAME: layout = ppl3, storage = combined, table = token_table, layer = 31>
// CHECK-SAME: layout = llama, storage = split, table = token_offset>
func.func @layouts(
    %hnd: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = hnd, storage = split, table = csr>,
    %vllm: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = vllm, storage = split, table = block_table>,
    %ppl0: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = ppl0, storage = combined, table = token_table, layer = 3>,
    %ppl1: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = ppl1, storage = combined, table = token_offset, layer = 1>,
    %ppl2: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = ppl2, storage = combined, table = token_table, layer = 0>,
    %ppl3: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = ppl3, storage = combined, table = token_table, layer = 31>,
    %llama: !kv.paged<page_size = 2048, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = llama, storage = split, table = token_offset>) {
  return
}

// -----

// Affine layouts: k_map alone (combined storage reads K and V through it),
// and k_map with v_map for split storage.
// CHECK-LABEL: func.func @affine
// CHECK-SAME: layout = affine, storage = combined, table = csr, k_map = (d0, d1, d2, d3, d4) -> (d0, d1, d3, d2, d4)>
// CHECK-SAME: layout = affine, storage = split, table = block_table, k_map = (d0, d1, d2, d3, d4) -> (d0, d3, d4 floordiv 8, d2, d4 mod 8), v_map = (d0, d1, d2, d3, d4) -> (d0 * 16 + d2, d3, d4)>
func.func @affine(
    %a: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = affine, storage = combined, table = csr, k_map = (p, kv, s, h, d) -> (p, kv, h, s, d)>,
    %b: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = affine, storage = split, table = block_table, k_map = (p, kv, s, h, d) -> (p, h, d floordiv 8, s, d mod 8), v_map = (p, kv, s, h, d) -> (p * 16 + s, h, d)>) {
  return
}

// -----

// CHECK-LABEL: func.func @quant
// CHECK-SAME: dtype = f16, layout = ppl3, storage = combined, table = token_table, quant = int8_group, quant_group = 8, layer = 2>
// CHECK-SAME: dtype = bf16, layout = vllm, storage = split, table = block_table, quant = fp8_e4m3>
// CHECK-SAME: dtype = f32, layout = nhd, storage = mla, table = csr, quant = fp8_e5m2, pe_dim = 64>
func.func @quant(
    %int8: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = ppl3, storage = combined, table = token_table, quant = int8_group, quant_group = 8, layer = 2>,
    %e4m3: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = bf16, layout = vllm, storage = split, table = block_table, quant = fp8_e4m3>,
    %e5m2: !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f32, layout = nhd, storage = mla, table = csr, quant = fp8_e5m2, pe_dim = 64>) {
  return
}

// -----

// CHECK-LABEL: func.func @ragged
// CHECK-SAME: !kv.ragged<kv_heads = 8, head_dim = 192, head_dim_v = 128, dtype = bf16>
func.func @ragged(%a: !kv.ragged<dtype = bf16, kv_heads = 8, head_dim = 192, head_dim_v = 128>) {
  return
}

// -----

// CHECK-LABEL: func.func @states
// CHECK-SAME: !kv.state<?x32x128xf16, base = 2>
// CHECK-SAME: !kv.state<7x4x64xbf16, base = e>
// CHECK-SAME: !kv.state<0x1x1xf32, base = e>
// CHECK-SAME: !kv.state<?x32x128xf32, base = e, partitions = 8>
// CHECK-SAME: !kv.state<3x2x16xf16, base = 2, partitions = ?>
func.func @states(%a: !kv.state<?x32x128xf16, base = 2>,
                  %b: !kv.state<7x4x64xbf16, base = e>,
                  %c: !kv.state<0x1x1xf32, base = e>,
                  %d: !kv.state<?x32x128xf32, base = e, partitions = 8>,
                  %e: !kv.state<3x2x16xf16, base = 2, partitions = ?>) {
  return
}

// -----

// theta defaults to 1e4 and scale to 1; both always print.
// CHECK-LABEL: func.func @rope
// CHECK-SAME: a = #kv.rope<interleave, theta = 1.000000e+04, scale = 1.000000e+00>
// CHECK-SAME: b = #kv.rope<rotate_half, theta = 5.000000e+05, scale = 2.500000e-01>
// CHECK-SAME: c = #kv.rope<rotate_half, theta = 1.000000e+04, scale = 8.000000e+00>
func.func @rope() attributes {
    a = #kv.rope<interleave>,
    b = #kv.rope<rotate_half, scale = 0.25, theta = 5.0e5>,
    c = #kv.rope<rotate_half, scale = 8.0>} {
  return
}
