"""fp8 KV caches (FlashInfer's kv_data_type=float8_e4m3fn / float8_e5m2
with k_scale / v_scale): the cache given as its bytes, against the float64
reference on the decoded values."""
import numpy as np
import pytest

import kvir
from conftest import TOLERANCE, paged_batch
from reference import attend, check, fp8_values


def _fp8_cache(rng, shape, kind):
    """Random fp8 bytes of magnitude at most 2, and their values."""
    values = fp8_values(kind)
    usable = np.nonzero(np.abs(values) <= 2)[0].astype(np.uint8)
    data = rng.choice(usable, size=shape)
    return data, values[data]


@pytest.mark.parametrize("kind,op", [("fp8_e4m3", "decode"),
                                     ("fp8_e5m2", "decode"),
                                     ("fp8_e4m3", "prefill")])
def test_fp8_cache(rng, cache, kind, op):
    hq, hk, d, page, lens = 8, 2, 128, 16, [45, 3]
    # The page tables and reference keys of a cache of bytes.
    pool_f, indptr, indices, last, _, _ = paged_batch(rng, lens, page, hk, d,
                                                      "float32")
    pool, decoded = _fp8_cache(rng, pool_f.shape, kind)
    pool[np.isnan(pool_f)] = 0x7F  # NaN in both formats: unowned slots
    k_scale, v_scale = 0.75, 1.5
    qo_lens = [1, 1] if op == "decode" else [5, 3]
    qo = np.concatenate([[0], np.cumsum(qo_lens)]).astype(np.int32)
    q = rng.uniform(-1, 1, (int(qo[-1]), hq, d)).astype(np.float16)
    if op == "decode":
        w = kvir.BatchDecodeWithPagedKVCacheWrapper(cache_dir=cache)
        w.plan(indptr, indices, last, hq, hk, d, page,
               kv_data_type=kind.replace("fp8_e4m3", "float8_e4m3fn")
               .replace("fp8_e5m2", "float8_e5m2"))
    else:
        w = kvir.BatchPrefillWithPagedKVCacheWrapper(cache_dir=cache)
        w.plan(qo, indptr, indices, last, hq, hk, d, page, causal=True,
               kv_data_type=kind)
    out, lse = w.run(q, pool, return_lse=True, k_scale=k_scale,
                     v_scale=v_scale)
    for b, n in enumerate(lens):
        tok = np.arange(n)
        pg = indices[indptr[b] + tok // page]
        k = decoded[pg, 0, tok % page] * k_scale
        v = decoded[pg, 1, tok % page] * v_scale
        r0, r1 = qo[b], qo[b + 1]
        ref_o, ref_lse = attend(q[r0:r1], k, v,
                                list(range(n - (r1 - r0), n)),
                                causal=op == "prefill")
        # The prefill's tensor cores read the keys converted to f16.
        check(out[r0:r1], lse[r0:r1], ref_o, ref_lse, TOLERANCE["f16"],
              2e-3 if op == "decode" else 4e-3)
