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
from conftest import (TOLERANCE, paged_batch, poisoned, unowned_slots,
                      vllm_pools)
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
    assert [e.spec["kv_storage"] for e in w._execs.values()] == ["split"]
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


def _alibi_slopes(heads):
    """The ALiBi paper's slopes (FlashInfer's get_alibi_slopes)."""
    n = 2 ** int(math.floor(math.log2(heads)))
    return [2 ** (-8 * (h + 1) / n) if h < n
            else 2 ** (-4 * (2 * (h - n) + 1) / n) for h in range(heads)]


@pytest.mark.parametrize("packed", [False, True])
def test_paged_prefill_custom_mask(rng, cache, packed):
    # FlashInfer's custom mask: per request a qo_len x kv_len block,
    # concatenated (bool), or bit-packed per request (little bit order);
    # it replaces causal.
    lens, rows = [40, 9, 17], [5, 9, 1]
    pool, indptr, indices, last, keys, values = paged_batch(
        rng, lens, 8, 2, 64, "float16")
    qo = np.concatenate([[0], np.cumsum(rows)]).astype(np.int32)
    q = rng.uniform(-1, 1, (int(qo[-1]), 4, 64)).astype(np.float16)
    blocks = [rng.random((r, n)) < 0.6 for r, n in zip(rows, lens)]
    blocks[1][3] = False  # a row that sees nothing
    flat = np.concatenate([b.ravel() for b in blocks])
    mask_args = {"custom_mask": flat}
    if packed:
        mask_args = {"packed_custom_mask": np.concatenate(
            [np.packbits(b.ravel(), bitorder="little") for b in blocks])}
    w = kvir.BatchPrefillWithPagedKVCacheWrapper(cache_dir=cache)
    w.plan(qo, indptr, indices, last, 4, 2, 64, 8, causal=True,
           **mask_args)
    out = poisoned((int(qo[-1]), 4, 64), np.float16)
    lse = poisoned((int(qo[-1]), 4), np.float32)
    w.run(q, pool, out=out, lse=lse)
    for b, (n, r) in enumerate(zip(lens, rows)):
        r0 = qo[b]
        ref_o, ref_lse = attend(q[r0:r0 + r], keys[b], values[b],
                                list(range(n - r, n)), mask=blocks[b])
        check(out[r0:r0 + r], lse[r0:r0 + r], ref_o, ref_lse,
              TOLERANCE["f16"], 1e-3)
    with pytest.raises(ValueError, match=r"custom_mask: dtype bool, shape "
                                         r"\[10\], expected bool \["):
        w.plan(qo, indptr, indices, last, 4, 2, 64, 8, custom_mask=flat[:10])


def test_alibi_decode_and_prefill(rng, cache):
    lens = [30, 70]
    pool, indptr, indices, last, keys, values = paged_batch(
        rng, lens, 16, 2, 64, "float16")
    slopes = _alibi_slopes(6)

    def bias(s, h, p, j):
        return s + slopes[h] * (j - p)
    q = rng.uniform(-1, 1, (2, 6, 64)).astype(np.float16)
    w = kvir.BatchDecodeWithPagedKVCacheWrapper(cache_dir=cache)
    w.plan(indptr, indices, last, 6, 2, 64, 16, pos_encoding_mode="ALIBI")
    out, lse = w.run(q, pool, return_lse=True)
    for b, n in enumerate(lens):
        ref_o, ref_lse = attend(q[b:b + 1], keys[b], values[b], [n - 1],
                                score_mod=bias)
        check(out[b:b + 1], lse[b:b + 1], ref_o, ref_lse, TOLERANCE["f16"],
              1e-3)
    qo = np.array([0, 3, 10], np.int32)
    qp = rng.uniform(-1, 1, (10, 6, 64)).astype(np.float16)
    p = kvir.BatchPrefillWithPagedKVCacheWrapper(cache_dir=cache)
    p.plan(qo, indptr, indices, last, 6, 2, 64, 16, causal=True,
           pos_encoding_mode="ALIBI")
    out, lse = p.run(qp, pool, return_lse=True)
    for b, (n, r) in enumerate(zip(lens, [3, 7])):
        r0 = qo[b]
        ref_o, ref_lse = attend(qp[r0:r0 + r], keys[b], values[b],
                                list(range(n - r, n)), causal=True,
                                score_mod=bias)
        check(out[r0:r0 + r], lse[r0:r0 + r], ref_o, ref_lse,
              TOLERANCE["f16"], 1e-3)


def test_score_and_mask_mods_on_the_wrappers(rng, cache):
    # Python score_mod / mask_mod traced into the wrappers' kernels; q_idx
    # is the row's position among the request's keys.
    torch = pytest.importorskip("torch")
    lens = [50, 9]
    pool, indptr, indices, last, keys, values = paged_batch(
        rng, lens, 16, 2, 64, "float16")
    temperature = torch.tensor([1.0, 0.5, 2.0, 1.5])

    def score_mod(score, b, h, q_idx, kv_idx):
        return score * temperature[h]

    def mask_mod(b, h, q_idx, kv_idx):
        return (q_idx - kv_idx) % 3 != 1
    temp = temperature.numpy().astype(np.float64)
    q = rng.uniform(-1, 1, (2, 4, 64)).astype(np.float16)
    w = kvir.BatchDecodeWithPagedKVCacheWrapper(cache_dir=cache)
    w.plan(indptr, indices, last, 4, 2, 64, 16, score_mod=score_mod,
           mask_mod=mask_mod)
    out, lse = w.run(torch.from_numpy(q), torch.from_numpy(pool),
                     return_lse=True)
    for b, n in enumerate(lens):
        keep = ((n - 1 - np.arange(n)) % 3 != 1)[None]
        ref_o, ref_lse = attend(q[b:b + 1], keys[b], values[b], [n - 1],
                                mask=keep,
                                score_mod=lambda s, h, p, j: s * temp[h])
        check(out[b:b + 1].numpy(), lse[b:b + 1].numpy(), ref_o, ref_lse,
              TOLERANCE["f16"], 1e-3)

    qo = np.array([0, 4, 6], np.int32)
    kv = np.array([0, 20, 27], np.int32)
    qr = rng.uniform(-1, 1, (6, 4, 64)).astype(np.float16)
    k = rng.uniform(-1, 1, (27, 2, 64)).astype(np.float16)
    v = rng.uniform(-1, 1, (27, 2, 64)).astype(np.float16)
    r = kvir.BatchPrefillWithRaggedKVCacheWrapper(cache_dir=cache)
    r.plan(qo, kv, 4, 2, 64, causal=True, score_mod=score_mod,
           mask_mod=mask_mod)
    out, lse = r.run(torch.from_numpy(qr), torch.from_numpy(k),
                     torch.from_numpy(v), return_lse=True)
    for b in range(2):
        n, rows = kv[b + 1] - kv[b], qo[b + 1] - qo[b]
        pos = np.arange(n - rows, n)
        keep = (pos[:, None] - np.arange(n)[None]) % 3 != 1
        ref_o, ref_lse = attend(qr[qo[b]:qo[b + 1]], k[kv[b]:kv[b + 1]],
                                v[kv[b]:kv[b + 1]], list(pos), causal=True,
                                mask=keep,
                                score_mod=lambda s, h, p, j: s * temp[h])
        check(out[qo[b]:qo[b + 1]].numpy(), lse[qo[b]:qo[b + 1]].numpy(),
              ref_o, ref_lse, TOLERANCE["f16"], 1e-3)


def test_decode_scales_on_a_16_bit_cache_and_draft_rows(rng, cache):
    # FlashInfer's k_scale / v_scale on an f16 cache: logits times k_scale,
    # the output times v_scale. q_len_per_req: several (causal) rows per
    # request, the last positions of its keys.
    lens = [40, 77]
    pool, indptr, indices, last, keys, values = paged_batch(
        rng, lens, 16, 2, 64, "float16")
    q = rng.uniform(-1, 1, (2, 8, 64)).astype(np.float16)
    w = kvir.BatchDecodeWithPagedKVCacheWrapper(cache_dir=cache)
    w.plan(indptr, indices, last, 8, 2, 64, 16)
    out, lse = w.run(q, pool, return_lse=True, k_scale=0.5, v_scale=3.0)
    for b, n in enumerate(lens):
        ref_o, ref_lse = attend(q[b:b + 1], keys[b] * 0.5, values[b], [n - 1])
        check(out[b:b + 1], lse[b:b + 1], 3.0 * ref_o, ref_lse,
              TOLERANCE["f16"], 1e-3)

    rows = 3
    qd = rng.uniform(-1, 1, (2 * rows, 8, 64)).astype(np.float16)
    d = kvir.BatchDecodeWithPagedKVCacheWrapper(cache_dir=cache)
    d.plan(indptr, indices, last, 8, 2, 64, 16, q_len_per_req=rows)
    out, lse = d.run(qd, pool, return_lse=True)
    for b, n in enumerate(lens):
        sl = slice(b * rows, (b + 1) * rows)
        ref_o, ref_lse = attend(qd[sl], keys[b], values[b],
                                list(range(n - rows, n)), causal=True)
        check(out[sl], lse[sl], ref_o, ref_lse, TOLERANCE["f16"], 1e-3)


def test_paged_prefill_value_dim_of_its_own(rng, cache):
    # head_dim_vo != head_dim_qk: K and V pools of their own widths.
    lens, rows, page, hk = [30, 12], [4, 12], 8, 2
    pages = [-(-n // page) for n in lens]
    indptr = np.concatenate([[0], np.cumsum(pages)]).astype(np.int32)
    indices = np.arange(sum(pages), dtype=np.int32)
    last = np.array([n - (p - 1) * page for n, p in zip(lens, pages)],
                    np.int32)
    kc = rng.uniform(-1, 1, (sum(pages), page, hk, 128)).astype(np.float16)
    vc = rng.uniform(-1, 1, (sum(pages), page, hk, 64)).astype(np.float16)
    spare = unowned_slots(sum(pages), page, [indices[indptr[b]:indptr[b + 1]]
                                             for b in range(2)], lens)
    kc[spare] = vc[spare] = np.nan
    qo = np.array([0, 4, 16], np.int32)
    q = rng.uniform(-1, 1, (16, 4, 128)).astype(np.float16)
    w = kvir.BatchPrefillWithPagedKVCacheWrapper(cache_dir=cache)
    w.plan(qo, indptr, indices, last, 4, hk, 128, page, head_dim_vo=64,
           causal=True)
    out, lse = w.run(q, (kc, vc), return_lse=True)
    for b, (n, r) in enumerate(zip(lens, rows)):
        tok = np.arange(n)
        pg = indices[indptr[b] + tok // page]
        ref_o, ref_lse = attend(q[qo[b]:qo[b + 1]], kc[pg, tok % page],
                                vc[pg, tok % page], list(range(n - r, n)),
                                causal=True)
        check(out[qo[b]:qo[b + 1]], lse[qo[b]:qo[b + 1]], ref_o, ref_lse,
              TOLERANCE["f16"], 1e-3)
    with pytest.raises(ValueError, match=r"takes a \(k_cache, v_cache\) "
                                         r"pair"):
        w.run(q, np.zeros((2, 2, page, hk, 128), np.float16))


def test_decode_and_prefill_over_vllm_pools_with_block_tables(rng, cache):
    lens = [41, 7, 100]
    keys = [rng.uniform(-1, 1, (n, 2, 64)).astype(np.float16) for n in lens]
    values = [rng.uniform(-1, 1, (n, 2, 64)).astype(np.float16)
              for n in lens]
    kpool, vpool, tables, seq_lens = vllm_pools(keys, values, 16, rng)
    q = rng.uniform(-1, 1, (3, 8, 64)).astype(np.float16)
    w = kvir.BatchDecodeWithPagedKVCacheWrapper(kv_layout="vllm",
                                               cache_dir=cache)
    w.plan(None, None, None, 8, 2, 64, 16, block_tables=tables,
           seq_lens=seq_lens)
    out, lse = w.run(q, (kpool, vpool), return_lse=True)
    _check_decode(q, out, lse, keys, values, lens)

    qo = np.array([0, 3, 4, 9], np.int32)
    qp = rng.uniform(-1, 1, (9, 8, 64)).astype(np.float16)
    p = kvir.BatchPrefillWithPagedKVCacheWrapper(kv_layout="vllm",
                                                cache_dir=cache)
    p.plan(qo, None, None, None, 8, 2, 64, 16, causal=True,
           block_tables=tables, seq_lens=seq_lens)
    out, lse = p.run(qp, (kpool, vpool), return_lse=True)
    for b, n in enumerate(lens):
        r = qo[b + 1] - qo[b]
        ref_o, ref_lse = attend(qp[qo[b]:qo[b + 1]], keys[b], values[b],
                                list(range(n - r, n)), causal=True)
        check(out[qo[b]:qo[b + 1]], lse[qo[b]:qo[b + 1]], ref_o, ref_lse,
              TOLERANCE["f16"], 1e-3)
    with pytest.raises(ValueError, match=r"vLLM's layout is a \(k_cache, "
                                         r"v_cache\) pair"):
        w.run(q, kpool)


def _with_sinks(ref_o, ref_lse, sinks):
    """A state (LSE base 2) with each head's sink logit (natural units)
    joining the denominator: (o, lse) of FlashInfer's sinks."""
    natural = ref_lse * math.log(2)
    total = np.exp(natural) + np.exp(np.asarray(sinks, np.float64))[None]
    return ref_o * (np.exp(natural) / total)[..., None], \
        np.log(total) / math.log(2)


def test_run_sinks_q_scale_and_window_left(rng, cache):
    # FlashInfer's run(..., q_scale=, sinks=, window_left=): the logits
    # times q_scale, one sink logit per query head in each row's softmax
    # denominator, window_left the plan's. torch sinks in bf16, as GPT-OSS
    # keeps them; decode, paged and ragged prefill.
    torch = pytest.importorskip("torch")
    t = torch.from_numpy
    lens, qo_lens, hq, hk, d = [40, 9], [5, 9], 8, 2, 64
    pool, indptr, indices, last, keys, values = paged_batch(
        rng, lens, 16, hk, d, "float16")
    sinks = torch.from_numpy(rng.uniform(-1, 3, hq)).to(torch.bfloat16)
    sink_values = sinks.double().numpy()
    q = rng.uniform(-1, 1, (2, hq, d)).astype(np.float16)
    w = kvir.BatchDecodeWithPagedKVCacheWrapper(cache_dir=cache)
    w.plan(t(indptr), t(indices), t(last), hq, hk, d, 16, window_left=20)
    out, lse = w.run(t(q), t(pool), return_lse=True, q_scale=0.5,
                     sinks=sinks, window_left=20)
    for b, n in enumerate(lens):
        ref = attend(q[b:b + 1], keys[b], values[b], [n - 1], window_left=20,
                     sm_scale=0.5 / math.sqrt(d))
        ref_o, ref_lse = _with_sinks(*ref, sink_values)
        check(out[b:b + 1].numpy(), lse[b:b + 1].numpy(), ref_o, ref_lse,
              TOLERANCE["f16"], 1e-3)
    with pytest.raises(ValueError, match="window_left: 7 at run"):
        w.run(t(q), t(pool), window_left=7)

    qo = np.array([0, 5, 14], np.int32)
    qp = rng.uniform(-1, 1, (14, hq, d)).astype(np.float16)
    p = kvir.BatchPrefillWithPagedKVCacheWrapper(cache_dir=cache)
    p.plan(t(qo), t(indptr), t(indices), t(last), hq, hk, d, 16, causal=True)
    out = t(poisoned((14, hq, d), np.float16))
    lse = t(poisoned((14, hq), np.float32))
    p.run(t(qp), t(pool), out=out, lse=lse, sinks=sinks, k_scale=2.0)
    kv = np.array([0, 40, 49], np.int32)
    k = np.concatenate(keys).astype(np.float16)
    v = np.concatenate(values).astype(np.float16)
    r = kvir.BatchPrefillWithRaggedKVCacheWrapper(cache_dir=cache)
    r.plan(t(qo), t(kv), hq, hk, d, causal=True)
    rout, rlse = r.run(t(qp), t(k), t(v), return_lse=True, sinks=sinks,
                       q_scale=2.0, v_scale=0.5)
    for b, n in enumerate(lens):
        rows = slice(qo[b], qo[b + 1])
        ref = attend(qp[rows], keys[b], values[b],
                     list(range(n - qo_lens[b], n)), causal=True,
                     sm_scale=2.0 / math.sqrt(d))
        ref_o, ref_lse = _with_sinks(*ref, sink_values)
        check(out[rows].numpy(), lse[rows].numpy(), ref_o, ref_lse,
              TOLERANCE["f16"], 1e-3)
        check(rout[rows].numpy(), rlse[rows].numpy(), 0.5 * ref_o, ref_lse,
              TOLERANCE["f16"], 1e-3)
