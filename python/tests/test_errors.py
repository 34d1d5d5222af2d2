"""Bad arguments get errors naming the argument and what was expected."""
import re

import numpy as np
import pytest

import kvir
from conftest import paged_batch


@pytest.fixture
def decode(rng, cache):
    pool, indptr, indices, last, _, _ = paged_batch(rng, [20, 3], 16, 2, 64,
                                                    "float16")
    w = kvir.BatchDecodeWithPagedKVCacheWrapper(cache_dir=cache)
    w.plan(indptr, indices, last, 4, 2, 64, 16)
    q = rng.uniform(-1, 1, (2, 4, 64)).astype(np.float16)
    return w, q, pool, (indptr, indices, last)


def test_wrong_dtype(decode):
    w, q, pool, _ = decode
    with pytest.raises(TypeError, match=r"^q: dtype f32, expected f16$"):
        w.run(q.astype(np.float32), pool)


def test_wrong_shape(decode):
    w, q, pool, _ = decode
    with pytest.raises(ValueError, match=r"paged_kv_cache: shape \[.*\], "
                                         r"expected \[\*, 2, 16, 2, 64\]"):
        w.run(q, np.ascontiguousarray(pool[:, :, :8]))


def test_not_contiguous(decode):
    # A strided q (FlashInfer's q sliced from a fused qkv tensor) is copied;
    # a strided cache is not (its copy would be the whole pool).
    w, q, pool, _ = decode
    wide = np.zeros((2, 4, 128), np.float16)
    wide[:, :, ::2] = q
    np.testing.assert_array_equal(w.run(wide[:, :, ::2], pool), w.run(q, pool))
    with pytest.raises(ValueError, match=r"^paged_kv_cache: not C-contiguous"):
        w.run(q, pool[::-1])


def test_misaligned(decode):
    w, q, pool, _ = decode
    raw = np.zeros(q.size + 8, np.float16)
    shifted = raw[1:1 + q.size].reshape(q.shape)
    assert shifted.ctypes.data % 16
    with pytest.raises(ValueError, match=r"^q: address 0x[0-9a-f]+ is not "
                                         r"16-byte aligned"):
        w.run(shifted, pool)


def test_not_an_array(decode):
    w, q, pool, _ = decode
    with pytest.raises(TypeError, match=r"^q: expected a numpy array or a "
                                        r"torch tensor, got list"):
        w.run(q.tolist(), pool)


def test_page_past_the_pool(rng, cache):
    pool, indptr, indices, last, _, _ = paged_batch(rng, [20, 3], 16, 2, 64,
                                                    "float16")
    indices = indices.copy()
    indices[1] = pool.shape[0] + 5
    w = kvir.BatchDecodeWithPagedKVCacheWrapper(cache_dir=cache)
    w.plan(indptr, indices, last, 4, 2, 64, 16)
    q = rng.uniform(-1, 1, (2, 4, 64)).astype(np.float16)
    with pytest.raises(ValueError, match=r"request 0: kv_indices\[1\] = "):
        w.run(q, pool)


def test_decreasing_qo_indptr(cache):
    w = kvir.BatchPrefillWithRaggedKVCacheWrapper(cache_dir=cache)
    with pytest.raises(ValueError, match=r"qo_indptr: expected \[batch \+ 1\] "
                                         r"non-decreasing row offsets"):
        w.plan(np.array([0, 5, 3], np.int32), np.array([0, 3, 6], np.int32),
               2, 2, 64, causal=True)


def test_run_before_plan():
    with pytest.raises(RuntimeError, match="run\\(\\) before plan\\(\\)"):
        kvir.BatchDecodeWithPagedKVCacheWrapper().run(None, None)


def test_bad_layout():
    with pytest.raises(ValueError, match="kv_layout: 'NDH', expected 'NHD', "
                                         "'HND' or 'vllm'"):
        kvir.BatchDecodeWithPagedKVCacheWrapper(kv_layout="NDH")


@pytest.mark.parametrize("spec,message", [
    ({"op": "decode", "num_qo_heads": 4, "head_dim": 64, "page_size": 16,
      "dtype": "f16", "pages": 3}, "spec: unknown field 'pages'"),
    ({"op": "decode", "num_qo_heads": 4, "head_dim": 64, "dtype": "f16"},
     "spec: 'page_size' is required"),
    ({"op": "decode", "num_qo_heads": 4, "head_dim": 64, "page_size": 16,
      "dtype": "f64"}, "spec: 'dtype' must be one of"),
    ({"op": "prefill", "num_qo_heads": 4, "head_dim": 64, "page_size": 16,
      "dtype": "f16", "window_left": -3}, "spec: 'window_left' must be -1"),
    ({"op": "decode", "num_qo_heads": 4, "head_dim": 64, "page_size": 16,
      "dtype": "f16", "causal": True}, "spec: 'causal' applies to prefills"),
    ({"op": "mla_decode", "num_heads": 16, "head_dim_ckv": 512,
      "head_dim_kpe": 64, "page_size": 64, "dtype": "bf16", "causal": True},
     "spec: 'causal' needs 'rows'"),
    ({"op": "mla_decode", "num_heads": 16, "head_dim_ckv": 512,
      "page_size": 64, "dtype": "bf16"}, "spec: 'head_dim_kpe' is required"),
    ({"op": "decode", "num_qo_heads": 4, "head_dim": 128, "head_dim_v": 64,
      "page_size": 16, "dtype": "f16"},
     "spec: 'head_dim_v' must equal 'head_dim' for a paged cache of K and V "
     "pages in one pool (FlashInfer's layout; 'kv_storage': 'split' gives K "
     "and V pools of their own widths)"),
    ({"op": "decode", "num_qo_heads": 4, "head_dim": 128, "page_size": 16,
      "dtype": "f16", "kv_storage": "two"},
     "spec: 'kv_storage' must be one of 'combined', 'split', got 'two'"),
    ({"op": "prefill", "kv": "ragged", "num_qo_heads": 4, "head_dim": 64,
      "dtype": "f16", "kv_storage": "split"},
     "spec: unknown field 'kv_storage'"),
    ({"op": "decode", "num_qo_heads": 4, "head_dim": 64, "page_size": 16,
      "dtype": "f16", "custom_mask": "bool"},
     "spec: 'custom_mask' applies to prefills"),
    ({"op": "decode", "num_qo_heads": 4, "head_dim": 64, "page_size": 16,
      "dtype": "f16", "captures": "memref<4xf32>"},
     "spec: 'captures' must be an array of strings"),
    ({"op": "decode", "num_qo_heads": 4, "head_dim": 64, "page_size": 16,
      "dtype": "f16", "quant_group": 8},
     "spec: 'quant_group' (the dims per int8 scale) goes with 'kv_dtype': "
     "'int8', and only with it"),
    ({"op": "decode", "num_qo_heads": 4, "head_dim": 64, "page_size": 16,
      "dtype": "f16", "kv_dtype": "int8", "quant_group": 24},
     "spec: 'quant_group' must be positive and divide the head dims"),
    ({"op": "decode", "num_qo_heads": 4, "head_dim": 64, "page_size": 16,
      "dtype": "f16", "positions": True},
     "spec: 'positions' applies to prefills"),
    ({"op": "prefill", "num_qo_heads": 4, "head_dim": 64, "page_size": 16,
      "dtype": "f16", "topk": 8}, "spec: 'topk' applies to decodes"),
    ({"op": "decode", "num_qo_heads": 4, "head_dim": 64, "page_size": 16,
      "dtype": "f16", "layer": 2},
     "spec: 'layer' applies to OpenPPL's layouts (ppl0..ppl3)"),
    ({"op": "decode", "num_qo_heads": 4, "head_dim": 64, "page_size": 16,
      "dtype": "f16", "kv_layout": "ppl1", "layer": -1},
     "spec: 'layer' must be >= 0, got -1"),
    ({"op": "decode", "num_qo_heads": 4, "head_dim": 64, "page_size": 16,
      "dtype": "f16", "kv_layout": "ppl2", "kv_storage": "split"},
     "spec: 'kv_layout' ppl2 is OpenPPL's one pool of K and V: "
     "'kv_storage': 'combined'"),
    ({"op": "decode", "num_qo_heads": 4, "head_dim": 64, "page_size": 16,
      "dtype": "f16", "kv_layout": "llama"},
     "spec: 'kv_layout' llama is Llama's K and V pools"),
    ({"op": "decode", "num_qo_heads": 4, "head_dim": 64, "page_size": 16,
      "dtype": "f16", "table": "token_list"},
     "spec: 'table' must be one of 'csr', 'block_table', 'token_table', "
     "'token_offset', got 'token_list'"),
    ({"op": "mla_decode", "num_heads": 16, "head_dim_ckv": 512,
      "head_dim_kpe": 64, "page_size": 64, "dtype": "bf16",
      "table": "token_table"},
     "spec: 'table' must be one of 'csr', 'block_table', got 'token_table'"),
    ({"op": "decode", "num_qo_heads": 4, "head_dim": 64, "page_size": 16,
      "dtype": "f16", "rope": {"style": "rotate_half", "factor": 8.0}},
     "spec: rope: Llama 3.1's scaling takes 'factor', 'low_freq_factor', "
     "'high_freq_factor' and 'original_max_position' together"),
    ({"op": "decode", "num_qo_heads": 4, "head_dim": 64, "page_size": 16,
      "dtype": "f16", "kv_layout": "vllm"},
     "spec: 'kv_layout' vllm is vLLM's K and V pools: 'kv_storage': "
     "'split', and no int8 groups"),
    ({"op": "decode", "num_qo_heads": 4, "head_dim": 60, "page_size": 16,
      "dtype": "f16", "kv_layout": "vllm", "kv_storage": "split"},
     "spec: 'kv_layout' vllm splits the head dim in chunks of 8 elements (16 "
     "bytes); head_dim 60 is not a multiple"),
    ({"op": "decode", "num_qo_heads": 4, "head_dim": 64, "page_size": 16,
      "dtype": "f16", "index_dtype": "i16"},
     "spec: 'index_dtype' must be one of 'i32', 'i64', got 'i16'"),
    ({"op": "cascade", "num_qo_heads": 4, "head_dim": 64, "page_size": 16,
      "dtype": "f16"}, "spec: 'levels' is required (a positive integer)"),
    ({"op": "cascade", "levels": 2, "num_qo_heads": 4, "head_dim": 64,
      "page_size": 16, "dtype": "f16", "custom_mask": "bool"},
     "spec: 'custom_mask' applies to prefills (a decode's or a cascade's "
     "mask is a mask_mod)"),
    ({"op": "prefill", "num_qo_heads": 4, "head_dim": 64, "page_size": 16,
      "dtype": "f16", "graph_max_batch": 0},
     "spec: 'graph_max_batch' must be positive (the fixed grids' most "
     "requests), got 0"),
    ({"op": "decode", "num_qo_heads": 4, "head_dim": 64, "page_size": 16,
      "dtype": "f16", "graph_max_batch": "8"},
     "spec: 'graph_max_batch' must be an integer"),
    ({"op": "decode", "num_qo_heads": 4, "head_dim": 64, "page_size": 16,
      "dtype": "f16", "alibi": "paper"},
     "spec: 'alibi' must be one of 'none', 'standard', 'slopes', got "
     "'paper'"),
])
def test_bad_spec(cache, spec, message):
    with pytest.raises(kvir.KvirError, match="^" + re.escape(message)):
        kvir.compile(spec, "sm_90a", cache)


def test_bad_region_text_is_located(cache):
    # A score_mod's text that does not parse: the module's line and column.
    spec = {"op": "decode", "num_qo_heads": 4, "head_dim": 64,
            "page_size": 16, "dtype": "f16",
            "score_mod": "    %t0 = arith.mulf %score, %nope : f32\n"
                         "    kv.yield %t0 : f32"}
    with pytest.raises(kvir.KvirError, match=r"input.mlir:\d+:\d+: "
                                             r"use of undeclared SSA value"):
        kvir.compile(spec, "sm_90a", cache)


def test_no_kernel_for_the_chip_says_why(cache):
    # f32 prefills run on the decode kernel, which reads paged caches only:
    # a ragged one has no kernel, and the compiler names the op and why.
    spec = {"op": "prefill", "kv": "ragged", "num_qo_heads": 4,
            "head_dim": 64, "dtype": "f32"}
    with pytest.raises(kvir.KvirError) as e:
        kvir.compile(spec, "sm_90a", cache)
    assert "input.mlir:3:8: 'kv.prefill' op has no GPU kernel: ragged KV of " \
        "type f32" in str(e.value), str(e.value)


def test_unknown_chip(cache):
    spec = {"op": "merge_state", "num_heads": 2, "head_dim": 64,
            "dtype": "f16"}
    with pytest.raises(kvir.KvirError, match="unknown chip 'sm_70'"):
        kvir.compile(spec, "sm_70", cache)


def test_parse_error_has_a_location():
    with pytest.raises(kvir.KvirError, match=r"input.mlir:1:\d+: "):
        kvir.Module.parse("func.func @f( {")


def test_torch_tensor_on_another_device(decode):
    torch = pytest.importorskip("torch", reason="python3-torch not installed")
    w, q, pool, _ = decode
    meta = torch.empty((2, 4, 64), dtype=torch.float16, device="meta")
    with pytest.raises(ValueError, match=r"^q: a tensor on meta; kvir runs "
                                         r"CUDA tensors on the GPU"):
        w.run(meta, torch.from_numpy(pool))


def test_torch_strides(decode):
    torch = pytest.importorskip("torch", reason="python3-torch not installed")
    w, q, pool, _ = decode
    t = torch.from_numpy(pool).transpose(2, 3)
    with pytest.raises(ValueError, match=r"^paged_kv_cache: strides "
                                         r"\(4096, 2048, 64, 128, 1\) are not "
                                         r"contiguous; pass "
                                         r"paged_kv_cache.contiguous\(\)"):
        w.run(torch.from_numpy(q), t)
