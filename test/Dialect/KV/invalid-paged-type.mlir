// RUN: kvir-opt %s -split-input-file -verify-diagnostics

// One test per rule of PagedType::verify (KVDialect.cpp).

// expected-error @below {{page_size must be positive, got 0}}
func.func @page_size(%a: !kv.paged<page_size = 0, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr>)

// -----

// expected-error @below {{kv_heads must be positive, got -1}}
func.func @kv_heads(%a: !kv.paged<page_size = 16, kv_heads = -1, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr>)

// -----

// expected-error @below {{head_dim and head_dim_v must be positive, got 128 and 0}}
func.func @head_dim_v(%a: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 0, dtype = f16, layout = nhd, storage = split, table = csr>)

// -----

// expected-error @below {{head_dim and head_dim_v must be positive, got -4 and 128}}
func.func @head_dim(%a: !kv.paged<page_size = 16, kv_heads = 8, head_dim = -4, head_dim_v = 128, dtype = f16, layout = nhd, storage = split, table = csr>)

// -----

// expected-error @below {{dtype must be f16, bf16 or f32, got 'i8'}}
func.func @dtype_int(%a: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = i8, layout = nhd, storage = combined, table = csr>)

// -----

// The storage type of a quantized cache is not its dtype.
// expected-error @below {{dtype must be f16, bf16 or f32, got 'f8E4M3FN'}}
func.func @dtype_fp8(%a: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f8E4M3FN, layout = nhd, storage = combined, table = csr, quant = fp8_e4m3>)

// -----

// expected-error @below {{combined storage needs head_dim == head_dim_v, got 192 and 128; use storage = split}}
func.func @combined_dims(%a: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 192, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr>)

// -----

// expected-error @below {{an MLA cache has one latent head, got kv_heads = 2}}
func.func @mla_heads(%a: !kv.paged<page_size = 64, kv_heads = 2, head_dim = 512, head_dim_v = 512, dtype = f16, layout = nhd, storage = mla, table = csr, pe_dim = 64>)

// -----

// expected-error @below {{an MLA cache needs pe_dim > 0 (the kpe width)}}
func.func @mla_pe_dim(%a: !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f16, layout = nhd, storage = mla, table = csr>)

// -----

// expected-error @below {{an MLA cache reads ckv as V: head_dim_v must equal head_dim, got 128 and 512}}
func.func @mla_dv(%a: !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 128, dtype = f16, layout = nhd, storage = mla, table = csr, pe_dim = 64>)

// -----

// expected-error @below {{an MLA cache is token-major: layout must be nhd, got hnd}}
func.func @mla_layout(%a: !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f16, layout = hnd, storage = mla, table = csr, pe_dim = 64>)

// -----

// expected-error @below {{int8_group quantization of MLA caches is not supported}}
func.func @mla_int8(%a: !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = f16, layout = nhd, storage = mla, table = csr, quant = int8_group, quant_group = 8, pe_dim = 64>)

// -----

// expected-error @below {{pe_dim is only meaningful with storage = mla}}
func.func @pe_dim_split(%a: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = split, table = csr, pe_dim = 64>)

// -----

// expected-error @below {{int8_group needs a quant_group that divides head_dim 128 and head_dim_v 128, got 0}}
func.func @int8_no_group(%a: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr, quant = int8_group>)

// -----

// expected-error @below {{int8_group needs a quant_group that divides head_dim 128 and head_dim_v 96, got 64}}
func.func @int8_group_dv(%a: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 96, dtype = f16, layout = nhd, storage = split, table = csr, quant = int8_group, quant_group = 64>)

// -----

// expected-error @below {{int8_group needs a quant_group that divides head_dim 128 and head_dim_v 128, got -8}}
func.func @int8_group_negative(%a: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr, quant = int8_group, quant_group = -8>)

// -----

// expected-error @below {{int8_group quantization is not supported with the vllm layout}}
func.func @int8_vllm(%a: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = vllm, storage = split, table = block_table, quant = int8_group, quant_group = 8>)

// -----

// expected-error @below {{quant_group is only meaningful with quant = int8_group}}
func.func @group_fp8(%a: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr, quant = fp8_e4m3, quant_group = 8>)

// -----

// expected-error @below {{quant_group is only meaningful with quant = int8_group}}
func.func @group_none(%a: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr, quant_group = 8>)

// -----

// expected-error @below {{OpenPPL layout ppl2 keeps K and V in one pool: storage must be combined}}
func.func @ppl_split(%a: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = ppl2, storage = split, table = token_table>)

// -----

// expected-error @below {{layer must be non-negative, got -1}}
func.func @ppl_layer(%a: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = ppl1, storage = combined, table = token_table, layer = -1>)

// -----

// expected-error @below {{layer is only meaningful with the OpenPPL layouts}}
func.func @layer_nhd(%a: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr, layer = 2>)

// -----

// expected-error @below {{layout vllm needs storage = split}}
func.func @vllm_combined(%a: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = vllm, storage = combined, table = block_table>)

// -----

// expected-error @below {{layout llama needs storage = split}}
func.func @llama_combined(%a: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = llama, storage = combined, table = token_offset>)

// -----

// f16: 8 elements per 16 bytes.
// expected-error @below {{the vllm K layout packs 8 elements per 16 bytes; head_dim 12 is not a multiple}}
func.func @vllm_pack_f16(%a: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 12, head_dim_v = 12, dtype = f16, layout = vllm, storage = split, table = block_table>)

// -----

// fp8 storage: 16 elements per 16 bytes, whatever the activation dtype.
// expected-error @below {{the vllm K layout packs 16 elements per 16 bytes; head_dim 8 is not a multiple}}
func.func @vllm_pack_fp8(%a: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 8, head_dim_v = 8, dtype = f32, layout = vllm, storage = split, table = block_table, quant = fp8_e5m2>)

// -----

// expected-error @below {{layout = affine needs k_map}}
func.func @affine_no_map(%a: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = affine, storage = combined, table = csr>)

// -----

// expected-error @below {{k_map must map the 5 logical dims (page, kv, slot, head, dim) with no symbols, got affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>}}
func.func @affine_k_dims(%a: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = affine, storage = combined, table = csr, k_map = (a, b, c, d) -> (a, b, c, d)>)

// -----

// expected-error @below {{k_map must map the 5 logical dims (page, kv, slot, head, dim) with no symbols, got affine_map<(d0, d1, d2, d3, d4)[s0] -> (d0 + s0, d1, d2, d3, d4)>}}
func.func @affine_k_symbols(%a: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = affine, storage = combined, table = csr, k_map = (a, b, c, d, e)[s] -> (a + s, b, c, d, e)>)

// -----

// expected-error @below {{v_map must map the 5 logical dims (page, kv, slot, head, dim) with no symbols, got affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d2, d3, d4)>}}
func.func @affine_v_dims(%a: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = affine, storage = split, table = csr, k_map = (a, b, c, d, e) -> (a, c, d, e), v_map = (a, b, c, d, e, f) -> (a, c, d, e)>)

// -----

// expected-error @below {{combined storage reads K and V through k_map; v_map needs storage = split}}
func.func @affine_v_combined(%a: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = affine, storage = combined, table = csr, k_map = (a, b, c, d, e) -> (a, b, c, d, e), v_map = (a, b, c, d, e) -> (a, b, c, d, e)>)

// -----

// expected-error @below {{k_map and v_map need layout = affine}}
func.func @map_nhd(%a: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr, k_map = (a, b, c, d, e) -> (a, b, c, d, e)>)

// -----

// expected-error @below {{k_map and v_map need layout = affine}}
func.func @v_map_hnd(%a: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = hnd, storage = split, table = csr, v_map = (a, b, c, d, e) -> (a, d, c, e)>)

// -----

// expected-error @below {{k_map divides by 0 (floordiv, ceildiv and mod need a positive divisor), in affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2 floordiv 0, d3, d4)>}}
func.func @map_floordiv_zero(%a: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = affine, storage = combined, table = csr, k_map = (a, b, c, d, e) -> (a, b, c floordiv 0, d, e)>)

// -----

// expected-error @below {{v_map divides by -2 (floordiv, ceildiv and mod need a positive divisor)}}
func.func @map_mod_negative(%a: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = affine, storage = split, table = csr, k_map = (a, b, c, d, e) -> (a, c, d, e), v_map = (a, b, c, d, e) -> (a, c, d, e mod -2)>)

// -----

// expected-error @below {{head dims are at most 1024 (the widest any model uses is 576), got 1048576}}
func.func @huge_head_dim(%a: !kv.paged<page_size = 16, kv_heads = 8, head_dim = 1048576, head_dim_v = 1048576, dtype = f16, layout = nhd, storage = combined, table = csr>)

// -----

// expected-error @below {{page_size is at most 65536 and kv_heads at most 1024, got 16 and 4096}}
func.func @many_heads(%a: !kv.paged<page_size = 16, kv_heads = 4096, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr>)

// -----

// expected-error @below {{page_size is at most 65536 and kv_heads at most 1024, got 1048576 and 8}}
func.func @huge_page(%a: !kv.paged<page_size = 1048576, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr>)
