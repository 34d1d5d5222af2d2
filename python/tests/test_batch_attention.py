"""FlashInfer's BatchAttention: a serving step's mixed batch -- one-row
decodes beside long prefill chunks, an empty request -- in one launch on
the work schedule (and the merge of the tiles it cut), against the
float64 reference with NaN-poisoned pools (past kv_len) and outputs."""
import numpy as np
import pytest

import kvir
from conftest import TOLERANCE, paged_batch
from reference import attend, check

torch = pytest.importorskip("torch", reason="python3-torch not installed")


def t(a):
    return torch.from_numpy(np.ascontiguousarray(a))


def _step(rng, kv_lens, qo_lens, hq, hk, d, page):
    pool, indptr, indices, last, keys, values = paged_batch(
        rng, kv_lens, page, hk, d, "float16")
    qo = np.concatenate([[0], np.cumsum(qo_lens)]).astype(np.int32)
    q = rng.uniform(-1, 1, (int(qo[-1]), hq, d)).astype(np.float16)
    return pool, indptr, indices, np.array(kv_lens, np.int32), qo, q, keys, \
        values


def _check_step(out, lse, q, qo, kv_lens, keys, values, causal):
    for b, n in enumerate(kv_lens):
        r0, r1 = qo[b], qo[b + 1]
        if r0 == r1:
            continue
        ref_o, ref_lse = attend(q[r0:r1], keys[b], values[b],
                                list(range(n - (r1 - r0), n)), causal=causal)
        check(out[r0:r1].float().numpy(), lse[r0:r1].numpy(), ref_o,
              ref_lse, TOLERANCE["f16"], 2e-3)


@pytest.mark.parametrize("chip", ["sm_90a", "sm_80"])
def test_mixed_step_is_one_launch(rng, cache, chip):
    # Two prefill chunks over cached keys, decodes of 1-900 keys, a request
    # without rows and one without keys, GQA 4, causal: the GPU path
    # (emulated driver) launches one attention kernel and the merge.
    hq, hk, d, page = 8, 2, 64, 16
    kv_lens = [1200, 1, 300, 900, 0, 37, 520, 5]
    qo_lens = [700, 1, 1, 1, 0, 1, 200, 1]
    pool, indptr, indices, lens, qo, q, keys, values = _step(
        rng, kv_lens, qo_lens, hq, hk, d, page)
    w = kvir.BatchAttention(cache_dir=cache, backend="emulated_driver",
                            chip=chip)
    w.plan(t(qo), t(indptr), t(indices), t(lens), hq, hk, d, d, page,
           causal=True, q_data_type=torch.float16)
    rows = int(qo[-1])
    out = torch.full((rows, hq, d), float("nan"), dtype=torch.float16)
    lse = torch.full((rows, hq), float("nan"), dtype=torch.float32)
    got_out, got_lse = w.run(t(q), t(pool), out=out, lse=lse)
    assert got_out is out and got_lse is lse
    names = [k for k, _, _ in w._prefill._exec.last_driver.launches]
    assert names[0].startswith("prefill_"), names
    assert len(names) == 1 or (len(names) == 2 and
                               names[1].startswith("merge_rows")), names
    _check_step(out, lse, q, qo, kv_lens, keys, values, True)


def test_mixed_step_in_the_emulator(rng, cache):
    # The same API on CPU tensors in the emulator (backend auto), not
    # causal, with a soft cap; outputs allocated by run().
    hq, hk, d, page = 4, 1, 64, 8
    kv_lens, qo_lens = [3, 90, 1, 40], [1, 33, 1, 2]
    pool, indptr, indices, lens, qo, q, keys, values = _step(
        rng, kv_lens, qo_lens, hq, hk, d, page)
    w = kvir.BatchAttention(cache_dir=cache)
    w.plan(t(qo), t(indptr), t(indices), t(lens), hq, hk, d, d, page,
           q_data_type=torch.float16)
    out, lse = w.run(t(q), t(pool))
    _check_step(out, lse, q, qo, kv_lens, keys, values, False)


def test_kv_len_arr_must_fit_the_pages(cache):
    w = kvir.BatchAttention(cache_dir=cache)
    qo = np.array([0, 1, 2], np.int32)
    indptr = np.array([0, 2, 3], np.int32)
    with pytest.raises(ValueError, match=r"kv_len_arr\[0\] = 33 does not "
                                         r"fit its 2 pages of 16"):
        w.plan(t(qo), t(indptr), t(np.arange(3, dtype=np.int32)),
               t(np.array([33, 4], np.int32)), 4, 1, 64, 64, 16)
    with pytest.raises(ValueError, match=r"kv_len_arr\[1\] = 0 does not "
                                         r"fit its 1 pages of 16"):
        w.plan(t(qo), t(indptr), t(np.arange(3, dtype=np.int32)),
               t(np.array([20, 0], np.int32)), 4, 1, 64, 64, 16)
