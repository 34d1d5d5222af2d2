"""BatchPrefillWithPagedKVCacheWrapper and BatchPrefillWithRaggedKVCache-
Wrapper on numpy arrays and torch CPU tensors (the emulator) against the
float64 reference."""
import numpy as np
import pytest

import kvir
from conftest import TOLERANCE, paged_batch, poisoned
from reference import attend, check
from test_decode import _rope


def _rows(rng, qo_lens, hq, d, dtype):
    qo_indptr = np.concatenate([[0], np.cumsum(qo_lens)]).astype(np.int32)
    q = rng.uniform(-1, 1, (int(qo_indptr[-1]), hq, d)).astype(dtype)
    return q, qo_indptr


def _check_requests(out, lse, q, qo_indptr, keys, values, name, opts):
    for b in range(len(keys)):
        r0, r1 = qo_indptr[b], qo_indptr[b + 1]
        n = len(keys[b])
        ref_o, ref_lse = attend(
            q[r0:r1], keys[b], values[b], [n - (r1 - r0) + i
                                           for i in range(r1 - r0)],
            causal=opts.get("causal", False),
            window_left=opts.get("window_left", -1),
            soft_cap=opts.get("logits_soft_cap", 0.0),
            sm_scale=opts.get("sm_scale"), rope=_rope(opts))
        check(out[r0:r1], lse[r0:r1], ref_o, ref_lse, TOLERANCE[name],
              1e-5 if name == "f32" else 2e-3)


@pytest.mark.parametrize("dtype,layout,hq,hk,d,page,kv_lens,qo_lens,opts", [
    ("float16", "NHD", 4, 2, 64, 16, [40, 17], [40, 5], {"causal": True}),
    ("float16", "HND", 8, 2, 128, 8, [33, 70], [3, 20],
     {"causal": True, "window_left": 12}),
    ("float16", "NHD", 2, 2, 64, 4, [9, 30], [9, 1],
     {"logits_soft_cap": 20.0, "sm_scale": 0.2}),
    ("float32", "NHD", 4, 1, 64, 16, [21, 48], [4, 16], {"causal": True}),
    ("float16", "NHD", 4, 2, 128, 16, [50, 33], [10, 33],
     {"causal": True, "pos_encoding_mode": "ROPE_LLAMA", "rope_scale": 4.0}),
    # More causal rows than keys (the first rows see none: 0, LSE -inf),
    # across a 64-row tile, with a window and RoPE at negative positions.
    ("float16", "NHD", 4, 2, 64, 16, [5, 0, 40], [20, 3, 70],
     {"causal": True}),
    ("float16", "HND", 8, 2, 128, 8, [17, 3], [90, 4],
     {"causal": True, "window_left": 9, "pos_encoding_mode": "ROPE_LLAMA"}),
])
def test_paged_prefill_matches_reference(rng, cache, dtype, layout, hq, hk,
                                         d, page, kv_lens, qo_lens, opts):
    pool, indptr, indices, last, keys, values = paged_batch(
        rng, kv_lens, page, hk, d, dtype, layout)
    q, qo_indptr = _rows(rng, qo_lens, hq, d, dtype)
    w = kvir.BatchPrefillWithPagedKVCacheWrapper(kv_layout=layout,
                                                 cache_dir=cache)
    w.plan(qo_indptr, indptr, indices, last, hq, hk, d, page,
           q_data_type=dtype, **opts)
    out = poisoned(q.shape, dtype)
    lse = poisoned(q.shape[:2], np.float32)
    w.run(q, pool, out=out, lse=lse)
    _check_requests(out, lse, q, qo_indptr, keys, values,
                    kvir.tensors.dtype_name(dtype), opts)


@pytest.mark.parametrize("dtype,hq,hk,d,dv,kv_lens,qo_lens,opts", [
    ("float16", 4, 2, 64, 64, [40, 17, 3], [40, 5, 3], {"causal": True}),
    ("float16", 8, 8, 128, 128, [64, 10], [64, 10], {}),
    ("float16", 4, 4, 128, 64, [30, 12], [30, 6],
     {"causal": True, "window_left": 7}),
    ("float16", 4, 2, 64, 64, [3, 50, 0], [30, 70, 2], {"causal": True}),
])
def test_ragged_prefill_matches_reference(rng, cache, dtype, hq, hk, d, dv,
                                          kv_lens, qo_lens, opts):
    q, qo_indptr = _rows(rng, qo_lens, hq, d, dtype)
    kv_indptr = np.concatenate([[0], np.cumsum(kv_lens)]).astype(np.int32)
    k = rng.uniform(-1, 1, (int(kv_indptr[-1]), hk, d)).astype(dtype)
    v = rng.uniform(-1, 1, (int(kv_indptr[-1]), hk, dv)).astype(dtype)
    w = kvir.BatchPrefillWithRaggedKVCacheWrapper(cache_dir=cache)
    w.plan(qo_indptr, kv_indptr, hq, hk, d, head_dim_vo=dv,
           q_data_type=dtype, **opts)
    out = poisoned((q.shape[0], hq, dv), dtype)
    lse = poisoned(q.shape[:2], np.float32)
    w.run(q, k, v, out=out, lse=lse)
    keys = [k[kv_indptr[b]:kv_indptr[b + 1]] for b in range(len(kv_lens))]
    values = [v[kv_indptr[b]:kv_indptr[b + 1]] for b in range(len(kv_lens))]
    _check_requests(out, lse, q, qo_indptr, keys, values, "f16", opts)


def test_bfloat16_through_torch_cpu_tensors(rng, cache):
    torch = pytest.importorskip("torch", reason="python3-torch not installed")
    q, qo_indptr = _rows(rng, [12, 20], 4, 64, np.float32)
    kv_indptr = np.array([0, 12, 32], np.int32)
    k = rng.uniform(-1, 1, (32, 2, 64)).astype(np.float32)
    v = rng.uniform(-1, 1, (32, 2, 64)).astype(np.float32)
    tq, tk, tv = (torch.from_numpy(a).to(torch.bfloat16) for a in (q, k, v))
    w = kvir.BatchPrefillWithRaggedKVCacheWrapper(cache_dir=cache)
    w.plan(torch.from_numpy(qo_indptr), torch.from_numpy(kv_indptr), 4, 2,
           64, causal=True, q_data_type=torch.bfloat16)
    out, lse = w.run(tq, tk, tv, return_lse=True)
    assert out.dtype == torch.bfloat16 and out.device.type == "cpu"
    keys = [tk.float().numpy()[kv_indptr[b]:kv_indptr[b + 1]]
            for b in range(2)]
    values = [tv.float().numpy()[kv_indptr[b]:kv_indptr[b + 1]]
              for b in range(2)]
    _check_requests(out.float().numpy(), lse.numpy(), tq.float().numpy(),
                    qo_indptr, keys, values, "bf16", {"causal": True})


@pytest.mark.parametrize("chip", ["sm_90a", "sm_80"])
def test_more_causal_rows_than_keys_on_the_gpu_path(rng, cache, chip):
    # The GPU launch path (plan, schedule, kernel ABI) with the emulator as
    # the driver: wgmma on sm_90a, mma.sync on sm_80.
    torch = pytest.importorskip("torch", reason="python3-torch not installed")
    kv_lens, qo_lens = [9, 0, 100], [80, 2, 130]
    pool, indptr, indices, last, keys, values = paged_batch(
        rng, kv_lens, 16, 2, 128, np.float16)
    q, qo_indptr = _rows(rng, qo_lens, 8, 128, np.float16)
    t = torch.from_numpy
    w = kvir.BatchPrefillWithPagedKVCacheWrapper(
        cache_dir=cache, chip=chip, backend="emulated_driver")
    w.plan(t(qo_indptr), t(indptr), t(indices), t(last), 8, 2, 128, 16,
           causal=True)
    out = t(poisoned(q.shape, np.float16))
    lse = t(poisoned(q.shape[:2], np.float32))
    w.run(t(q), t(pool), out=out, lse=lse)
    _check_requests(out.numpy(), lse.numpy(), q, qo_indptr, keys, values,
                    "f16", {"causal": True})
