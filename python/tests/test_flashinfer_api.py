"""FlashInfer's spellings of the wrappers' arguments, as code written for
FlashInfer passes them (positional constructor arguments, backend names,
use_tensor_cores, CUDA-graph index buffers, the (k_cache, v_cache) pair,
strided q, data_type, o_data_type, run_return_lse / forward,
merge_state_in_place, MLA's longer kv_indptr and LSE base e), each result
against the float64 reference."""
import math

import numpy as np
import pytest

import kvir
from conftest import TOLERANCE, paged_batch, poisoned
from reference import attend, check, merge


def _pool_pair(pool):
    """FlashInfer's (k_cache, v_cache) of a [pages, 2, ...] pool."""
    return (np.ascontiguousarray(pool[:, 0]), np.ascontiguousarray(pool[:, 1]))


def _check_decode(q, out, lse, keys, values, lens, name="f16"):
    for b, n in enumerate(lens):
        ref_o, ref_lse = attend(q[b:b + 1], keys[b], values[b], [n - 1])
        check(out[b:b + 1], lse[b:b + 1], ref_o, ref_lse, TOLERANCE[name],
              1e-3)


def test_constructor_takes_flashinfer_positional_arguments(cache):
    w = kvir.BatchDecodeWithPagedKVCacheWrapper(None, "HND", False, True,
                                               cache_dir=cache)
    assert w.kv_layout == "hnd" and w.use_tensor_cores
    assert not w.is_cuda_graph_enabled
    for backend in ("fa2", "fa3", "auto"):
        assert kvir.BatchPrefillWithPagedKVCacheWrapper(
            None, "NHD", backend=backend).backend == "auto"
    with pytest.raises(ValueError, match=r"^backend: 'trtllm-gen', expected "
                                         r"'auto', 'emulated_driver' or "
                                         r"FlashInfer's 'fa2' / 'fa3'$"):
        kvir.BatchDecodeWithPagedKVCacheWrapper(backend="trtllm-gen")
    with pytest.raises(ValueError, match=r"^jit_args: "):
        kvir.BatchPrefillWithRaggedKVCacheWrapper(jit_args=["x"])
    with pytest.raises(ValueError, match=r"^paged_kv_indptr_buffer: "
                                         r"use_cuda_graph=True needs"):
        kvir.BatchDecodeWithPagedKVCacheWrapper(None, "NHD", True)


@pytest.mark.parametrize("layout", ["NHD", "HND"])
def test_decode_over_a_pool_pair(rng, cache, layout):
    lens = [37, 1, 100]
    pool, indptr, indices, last, keys, values = paged_batch(
        rng, lens, 16, 2, 64, "float16", layout)
    q = rng.uniform(-1, 1, (3, 8, 64)).astype(np.float16)
    w = kvir.BatchDecodeWithPagedKVCacheWrapper(None, layout, cache_dir=cache)
    w.plan(indptr, indices, last, 8, 2, 64, 16)
    out, lse = poisoned((3, 8, 64), np.float16), poisoned((3, 8), np.float32)
    w.run(q, _pool_pair(pool), out=out, lse=lse)
    _check_decode(q, out, lse, keys, values, lens)
    # The pair runs a kernel of its own: K and V pools (kv_storage split).
    assert w._pair_exec.spec["kv_storage"] == "split"
    with pytest.raises(ValueError, match=r"^v_cache: shape "):
        w.run(q, (pool[:, 0].copy(), pool[:-1, 1].copy()))


def test_paged_prefill_over_a_pool_pair_with_f32_output(rng, cache):
    # FlashInfer's o_data_type: an f32 output of f16 activations.
    lens, rows = [40, 9], [5, 9]
    pool, indptr, indices, last, keys, values = paged_batch(
        rng, lens, 8, 2, 128, "float16")
    qo = np.array([0, 5, 14], np.int32)
    q = rng.uniform(-1, 1, (14, 4, 128)).astype(np.float16)
    w = kvir.BatchPrefillWithPagedKVCacheWrapper(None, "NHD", cache_dir=cache)
    w.plan(qo, indptr, indices, last, 4, 2, 128, 8, causal=True,
           o_data_type="float32")
    out, lse = poisoned((14, 4, 128), np.float32), poisoned((14, 4),
                                                            np.float32)
    w.run(q, _pool_pair(pool), out=out, lse=lse)
    assert w.run(q, pool).dtype == np.float32
    for b, (n, r) in enumerate(zip(lens, rows)):
        r0 = qo[b]
        ref_o, ref_lse = attend(q[r0:r0 + r], keys[b], values[b],
                                list(range(n - r, n)), causal=True)
        check(out[r0:r0 + r], lse[r0:r0 + r], ref_o, ref_lse,
              TOLERANCE["f16"], 1e-3)


def test_strided_q_and_return_lse_spellings(rng, cache):
    lens = [20, 3]
    pool, indptr, indices, last, keys, values = paged_batch(
        rng, lens, 16, 2, 64, "float16")
    qkv = rng.uniform(-1, 1, (2, 8, 64)).astype(np.float16)
    q = qkv[:, :4]  # FlashInfer's q sliced from a fused qkv tensor
    assert not q.flags["C_CONTIGUOUS"]
    w = kvir.BatchDecodeWithPagedKVCacheWrapper(cache_dir=cache)
    w.plan(indptr, indices, last, 4, 2, 64, 16)
    out, lse = w.run_return_lse(q, pool)
    _check_decode(q, out, lse, keys, values, lens)
    for spelled in (w.forward_return_lse(q, pool),
                    w.run(q, pool, return_lse=True)):
        np.testing.assert_array_equal(spelled[0], out)
        np.testing.assert_array_equal(spelled[1], lse)
    np.testing.assert_array_equal(w.forward(q, pool), out)


def test_decode_plan_data_type_is_kv_data_type(cache):
    w = kvir.BatchDecodeWithPagedKVCacheWrapper(cache_dir=cache)
    w.plan(np.array([0, 1], np.int32), np.array([0], np.int32),
           np.array([3], np.int32), 8, 2, 64, 16, data_type="float8_e4m3fn")
    assert w.spec["kv_dtype"] == "fp8_e4m3"


def test_cuda_graph_buffers(rng, cache):
    # use_cuda_graph: plan() fills the buffers given at construction; the
    # batch is fixed by their size.
    lens = [37, 5, 60]
    pool, indptr, indices, last, keys, values = paged_batch(
        rng, lens, 16, 2, 64, "float16")
    indptr_buf = np.zeros(4, np.int32)
    indices_buf = np.full(64, -1, np.int32)
    last_buf = np.zeros(3, np.int32)
    w = kvir.BatchDecodeWithPagedKVCacheWrapper(
        None, "NHD", True, False, indptr_buf, indices_buf, last_buf,
        cache_dir=cache)
    assert w.is_cuda_graph_enabled
    w.plan(indptr, indices, last, 8, 2, 64, 16)
    np.testing.assert_array_equal(indptr_buf, indptr)
    np.testing.assert_array_equal(indices_buf[:len(indices)], indices)
    np.testing.assert_array_equal(last_buf, last)
    q = rng.uniform(-1, 1, (3, 8, 64)).astype(np.float16)
    out, lse = w.run(q, pool, return_lse=True)
    _check_decode(q, out, lse, keys, values, lens)
    with pytest.raises(ValueError, match=r"^indptr: a batch of 2, but "
                                         r"use_cuda_graph fixed it at 3"):
        w.plan(indptr[:3], indices, last[:2], 8, 2, 64, 16)


@pytest.mark.parametrize("masked", [False, True])
def test_merge_state_in_place(rng, cache, masked):
    rows, heads, dim = 6, 4, 64
    v = rng.uniform(-1, 1, (rows, heads, dim)).astype(np.float16)
    s = rng.uniform(-5, 5, (rows, heads)).astype(np.float32)
    v_other = rng.uniform(-1, 1, (rows, heads, dim)).astype(np.float16)
    s_other = rng.uniform(-5, 5, (rows, heads)).astype(np.float32)
    mask = np.array([True, False, True, True, False, True]) if masked \
        else None
    ref_v, ref_s = merge(v, s, v_other, s_other)
    if masked:
        ref_v[~mask], ref_s[~mask] = v[~mask], s[~mask]
    kvir.merge_state_in_place(v, s, v_other, s_other, mask, cache_dir=cache)
    check(v, s, ref_v, ref_s, TOLERANCE["f16"], 1e-5)


def test_mla_longer_indptr_and_lse_base_e(rng, cache):
    heads, dc, dp, page = 16, 512, 64, 64
    lens = [70, 3]
    pages = [-(-n // page) for n in lens]
    total = sum(pages) + 1
    indices = rng.permutation(total).astype(np.int32)[:sum(pages)].copy()
    # Buffers sized for a batch of 4, as FlashInfer's CUDA-graph mode keeps
    # them: entries past the batch are ignored.
    indptr = np.array([0, pages[0], sum(pages), 99, 99], np.int32)
    kv_len = np.array(lens + [7, 7], np.int32)
    ckv = rng.uniform(-1, 1, (total, page, dc)).astype(np.float16)
    kpe = rng.uniform(-1, 1, (total, page, dp)).astype(np.float16)
    qn = rng.uniform(-1, 1, (2, heads, dc)).astype(np.float16)
    qp = rng.uniform(-1, 1, (2, heads, dp)).astype(np.float16)
    scale = 1 / math.sqrt(192)
    w = kvir.BatchMLAPagedAttentionWrapper(None, False, cache_dir=cache)
    w.plan(np.array([0, 1, 2], np.int32), indptr, indices, kv_len, heads, dc,
           dp, page, False, scale, np.float16, np.float16)
    out, lse = w.run(qn, qp, ckv, kpe, return_lse=True,
                     return_lse_base_on_e=True, ckv_scale=None)
    for b, n in enumerate(lens):
        tok = np.arange(n)
        pg = indices[indptr[b] + tok // page]
        k = np.concatenate([ckv[pg, tok % page], kpe[pg, tok % page]], -1)
        q = np.concatenate([qn[b:b + 1], qp[b:b + 1]], -1)
        ref_o, ref_lse = attend(q, k[:, None], ckv[pg, tok % page][:, None],
                                [n - 1], sm_scale=scale, lse_base="e")
        check(out[b:b + 1], lse[b:b + 1], ref_o, ref_lse, TOLERANCE["f16"],
              1e-3)
    with pytest.raises(ValueError, match=r"^ckv_scale: 2.0; kvir's MLA"):
        w.run(qn, qp, ckv, kpe, ckv_scale=2.0)


def test_cascade_constructor_takes_use_cuda_graph(cache):
    w = kvir.MultiLevelCascadeAttentionWrapper(2, None, "NHD", False,
                                              cache_dir=cache)
    assert len(w.levels) == 2 and not w.levels[0].is_cuda_graph_enabled
