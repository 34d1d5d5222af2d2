"""BatchDecodeWithPagedKVCacheWrapper on numpy arrays (the emulator) against
the float64 reference."""
import numpy as np
import pytest

import kvir
from conftest import TOLERANCE, paged_batch, poisoned
from reference import attend, check


def _rope(opts):
    """The reference's (theta, scale) of FlashInfer's ROPE_LLAMA options."""
    if opts.get("pos_encoding_mode") != "ROPE_LLAMA":
        return None
    return opts.get("rope_theta", 1e4), 1.0 / opts.get("rope_scale", 1.0)


@pytest.mark.parametrize("dtype,layout,hq,hk,d,page,lens,opts", [
    ("float16", "NHD", 8, 2, 64, 16, [37, 1, 100], {}),
    ("float16", "HND", 4, 4, 128, 8, [9, 64], {"logits_soft_cap": 30.0}),
    ("float32", "NHD", 8, 1, 64, 4, [13, 29], {"sm_scale": 0.3}),
    ("float16", "NHD", 8, 2, 64, 16, [50, 0, 7], {"window_left": 20}),
    # FlashInfer's on-the-fly RoPE: positions divided by rope_scale.
    ("float16", "NHD", 8, 2, 64, 16, [70, 5], {"pos_encoding_mode": "ROPE_LLAMA",
                                              "rope_theta": 5e5,
                                              "rope_scale": 2.0}),
    # Long enough for the work schedule to split it (split-KV + merge).
    ("float16", "NHD", 4, 1, 64, 16, [2500], {}),
])
def test_decode_matches_reference(rng, cache, dtype, layout, hq, hk, d, page,
                                  lens, opts):
    pool, indptr, indices, last, keys, values = paged_batch(
        rng, lens, page, hk, d, dtype, layout)
    batch = len(lens)
    q = rng.uniform(-1, 1, (batch, hq, d)).astype(dtype)
    w = kvir.BatchDecodeWithPagedKVCacheWrapper(kv_layout=layout,
                                                cache_dir=cache)
    w.plan(indptr, indices, last, hq, hk, d, page, q_data_type=dtype,
           **opts)
    out = poisoned((batch, hq, d), dtype)
    lse = poisoned((batch, hq), np.float32)
    got, got_lse = w.run(q, pool, out=out, lse=lse, return_lse=True)
    assert got is out and got_lse is lse
    name = kvir.tensors.dtype_name(dtype)
    for b, n in enumerate(lens):
        ref_o, ref_lse = attend(
            q[b:b + 1], keys[b], values[b], [n - 1],
            window_left=opts.get("window_left", -1),
            soft_cap=opts.get("logits_soft_cap", 0.0),
            sm_scale=opts.get("sm_scale"), rope=_rope(opts))
        check(out[b:b + 1], lse[b:b + 1], ref_o, ref_lse, TOLERANCE[name],
              1e-3 if name != "f32" else 1e-5)


def test_split_kv_launches_the_split_kernels(rng, cache):
    pool, indptr, indices, last, keys, values = paged_batch(
        rng, [2500], 16, 1, 64, "float16")
    w = kvir.BatchDecodeWithPagedKVCacheWrapper(cache_dir=cache)
    w.plan(indptr, indices, last, 4, 1, 64, 16)
    w.run(rng.uniform(-1, 1, (1, 4, 64)).astype(np.float16), pool)
    import json
    launched = [l["kernel"] for l in json.loads(kvir.last_launches())]
    assert any("split" in k for k in launched), launched
    assert any(k.startswith("merge") for k in launched), launched


def test_run_allocates_outputs_of_the_query_kind(rng, cache):
    pool, indptr, indices, last, keys, values = paged_batch(
        rng, [5, 6], 16, 2, 64, "float16")
    w = kvir.BatchDecodeWithPagedKVCacheWrapper(cache_dir=cache)
    w.plan(indptr, indices, last, 2, 2, 64, 16)
    q = rng.uniform(-1, 1, (2, 2, 64)).astype(np.float16)
    out = w.run(q, pool)
    assert isinstance(out, np.ndarray) and out.dtype == np.float16
    ref_o, _ = attend(q[:1], keys[0], values[0], [4])
    assert np.abs(out[:1] - ref_o).max() < 2e-3
