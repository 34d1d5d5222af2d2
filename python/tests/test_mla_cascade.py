"""BatchMLAPagedAttentionWrapper and MultiLevelCascadeAttentionWrapper
against the float64 reference (the emulator, and the GPU path with an
emulated driver)."""
import math

import numpy as np
import pytest

import kvir
from conftest import TOLERANCE, paged_batch, poisoned
from reference import attend, check


def _mla_batch(rng, lens, page, ckv_dim, kpe_dim, dtype):
    pages = [-(-n // page) for n in lens]
    total = sum(pages) + 1
    order = rng.permutation(total).astype(np.int32)
    indptr = np.concatenate([[0], np.cumsum(pages)]).astype(np.int32)
    indices = order[:sum(pages)].copy()
    ckv = rng.uniform(-1, 1, (total, page, ckv_dim)).astype(dtype)
    kpe = rng.uniform(-1, 1, (total, page, kpe_dim)).astype(dtype)
    keys = []
    for b, n in enumerate(lens):
        tok = np.arange(n)
        pg = indices[indptr[b] + tok // page]
        keys.append((ckv[pg, tok % page], kpe[pg, tok % page]))
    return ckv, kpe, indptr, indices, keys


def _mla_reference(q_nope, q_pe, ckv, kpe, positions, causal, sm_scale):
    # MLA is attention of one KV head whose keys are [ckv, kpe] and values
    # ckv: the dense reference with the concatenated head dims.
    q = np.concatenate([q_nope, q_pe], axis=-1).astype(np.float64)
    k = np.concatenate([ckv, kpe], axis=-1)[:, None].astype(np.float64)
    return attend(q, k, ckv[:, None], positions, causal=causal,
                  sm_scale=sm_scale)


@pytest.mark.parametrize("qo_lens,kv_lens,causal", [
    ([1, 1, 1], [100, 1, 700], False),   # decode, split-KV for the long one
    ([3, 1, 4], [30, 9, 64], True),      # several causal rows per request
    # More causal rows than keys: the first rows see none (0, LSE -inf).
    ([3, 5, 4], [2, 0, 64], True),
])
def test_mla(rng, cache, qo_lens, kv_lens, causal):
    heads, ckv_dim, kpe_dim, page = 16, 512, 64, 64
    dtype = np.float16
    ckv, kpe, indptr, indices, keys = _mla_batch(rng, kv_lens, page, ckv_dim,
                                                 kpe_dim, dtype)
    qo = np.concatenate([[0], np.cumsum(qo_lens)]).astype(np.int32)
    rows = int(qo[-1])
    q_nope = rng.uniform(-1, 1, (rows, heads, ckv_dim)).astype(dtype)
    q_pe = rng.uniform(-1, 1, (rows, heads, kpe_dim)).astype(dtype)
    scale = 1 / math.sqrt(192)  # DeepSeek's (qk_nope 128 + rope 64)
    w = kvir.BatchMLAPagedAttentionWrapper(cache_dir=cache)
    w.plan(qo, indptr, indices, np.array(kv_lens, np.int32), heads, ckv_dim,
           kpe_dim, page, causal=causal, sm_scale=scale, q_data_type=dtype)
    out = poisoned((rows, heads, ckv_dim), dtype)
    lse = poisoned((rows, heads), np.float32)
    w.run(q_nope, q_pe, ckv, kpe, out=out, lse=lse)
    for b, n in enumerate(kv_lens):
        r0, r1 = qo[b], qo[b + 1]
        ref_o, ref_lse = _mla_reference(
            q_nope[r0:r1], q_pe[r0:r1], keys[b][0], keys[b][1],
            list(range(n - (r1 - r0), n)), causal, scale)
        check(out[r0:r1], lse[r0:r1], ref_o, ref_lse, TOLERANCE["f16"], 2e-3)


@pytest.mark.parametrize("qo_lens,kv_lens,causal", [
    ([1, 1, 1], [100, 0, 700], False),
    ([3, 1, 4], [30, 9, 2], True),
])
@pytest.mark.parametrize("backend", ["auto", "emulated_driver"])
def test_mla_without_a_rotary_part(rng, cache, qo_lens, kv_lens, causal,
                                   backend):
    # FlashInfer's head_dim_kpe = 0: q_pe and the kpe cache are empty.
    heads, ckv_dim, page = 16, 512, 64
    ckv, kpe, indptr, indices, keys = _mla_batch(rng, kv_lens, page, ckv_dim,
                                                 0, np.float16)
    qo = np.concatenate([[0], np.cumsum(qo_lens)]).astype(np.int32)
    rows = int(qo[-1])
    q_nope = rng.uniform(-1, 1, (rows, heads, ckv_dim)).astype(np.float16)
    q_pe = np.zeros((rows, heads, 0), np.float16)
    w = kvir.BatchMLAPagedAttentionWrapper(cache_dir=cache, backend=backend)
    w.plan(qo, indptr, indices, np.array(kv_lens, np.int32), heads, ckv_dim,
           0, page, causal=causal, q_data_type=np.float16)
    out = poisoned((rows, heads, ckv_dim), np.float16)
    lse = poisoned((rows, heads), np.float32)
    if backend == "auto":
        w.run(q_nope, q_pe, ckv, kpe, out=out, lse=lse)
    else:
        # The GPU path runs torch tensors (the emulator as the driver).
        torch = pytest.importorskip("torch")
        t = torch.from_numpy
        w.run(t(q_nope), t(q_pe), t(ckv), t(kpe), out=t(out), lse=t(lse))
    for b, n in enumerate(kv_lens):
        r0, r1 = qo[b], qo[b + 1]
        ref_o, ref_lse = _mla_reference(
            q_nope[r0:r1], q_pe[r0:r1], keys[b][0], keys[b][1],
            list(range(n - (r1 - r0), n)), causal, 1 / math.sqrt(ckv_dim))
        check(out[r0:r1], lse[r0:r1], ref_o, ref_lse, TOLERANCE["f16"], 2e-3)


def test_mla_through_the_gpu_path(rng, cache):
    torch = pytest.importorskip("torch", reason="python3-torch not installed")
    heads, page, lens = 16, 64, [200, 5]
    ckv, kpe, indptr, indices, keys = _mla_batch(rng, lens, page, 512, 64,
                                                 np.float16)
    q_nope = rng.uniform(-1, 1, (2, heads, 512)).astype(np.float16)
    q_pe = rng.uniform(-1, 1, (2, heads, 64)).astype(np.float16)
    t = torch.from_numpy
    w = kvir.BatchMLAPagedAttentionWrapper(cache_dir=cache,
                                           backend="emulated_driver")
    w.plan(t(np.array([0, 1, 2], np.int32)), t(indptr), t(indices),
           t(np.array(lens, np.int32)), heads, 512, 64, page,
           q_data_type=torch.float16)
    out, lse = w.run(t(q_nope), t(q_pe), t(ckv), t(kpe), return_lse=True)
    for b, n in enumerate(lens):
        ref_o, ref_lse = _mla_reference(q_nope[b:b + 1], q_pe[b:b + 1],
                                        keys[b][0], keys[b][1], [n - 1],
                                        False, 1 / math.sqrt(576))
        check(out[b:b + 1].float().numpy(), lse[b:b + 1].numpy(), ref_o,
              ref_lse, TOLERANCE["f16"], 2e-3)


def test_mla_kv_len_must_fit_its_pages(cache):
    w = kvir.BatchMLAPagedAttentionWrapper(cache_dir=cache)
    with pytest.raises(ValueError, match=r"kv_len_arr\[1\] = 70 does not fit "
                                         r"the request's 1 pages of 64"):
        w.plan(np.array([0, 1, 2], np.int32), np.array([0, 1, 2], np.int32),
               np.array([0, 1], np.int32), np.array([5, 70], np.int32), 16,
               512, 64, 64)


def test_cascade(rng, cache):
    # Level 0: a shared prefix of 40 tokens for all 5 rows (one request);
    # level 1: two requests' own tokens (12 and 30), rows 2 and 3, causal.
    hq, hk, d, page = 8, 2, 64, 16
    pool, ip1, ix1, last1, keys1, values1 = paged_batch(
        rng, [40, 12, 30], page, hk, d, "float16")
    # The first request of that batch is the shared prefix.
    ip0, ix0, last0 = ip1[:2].copy(), ix1[:ip1[1]].copy(), last1[:1].copy()
    ipu = (ip1[1:] - ip1[1]).astype(np.int32)
    ixu, lastu = ix1[ip1[1]:].copy(), last1[1:].copy()
    q = rng.uniform(-1, 1, (5, hq, d)).astype(np.float16)
    w = kvir.MultiLevelCascadeAttentionWrapper(2, cache_dir=cache)
    w.plan([np.array([0, 5], np.int32), np.array([0, 2, 5], np.int32)],
           [ip0, ipu], [ix0, ixu], [last0, lastu], hq, hk, d, page,
           causal=True)
    out, lse = w.run(q, pool, return_lse=True)
    # The reference attends each row to the prefix then its own keys, with
    # positions counted over the concatenation (causal on the last level).
    for rows, own in [(range(0, 2), 1), (range(2, 5), 2)]:
        k = np.concatenate([keys1[0], keys1[own]])
        v = np.concatenate([values1[0], values1[own]])
        n = len(k)
        idx = list(rows)
        ref_o, ref_lse = attend(q[idx], k, v,
                                list(range(n - len(idx), n)), causal=True)
        check(out[idx], lse[idx], ref_o, ref_lse, TOLERANCE["f16"], 2e-3)
