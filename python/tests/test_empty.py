"""Attention over an empty cache: every request without keys gives zeros and
LSE -inf, as FlashInfer's kernels do, whether the cache has pages or none at
all (a zero-page pool, an empty torch tensor whose data pointer is null),
on the emulator and on the GPU path with an emulated driver (whose TMA
launchers encode a tensor map over a pool of zero pages)."""
import numpy as np
import pytest

import kvir
from conftest import poisoned

torch = pytest.importorskip("torch")

BACKENDS = ["auto", "emulated_driver"]


def _tensor(array):
    return torch.from_numpy(np.ascontiguousarray(array))


def _poisoned(shape, dtype):
    return _tensor(poisoned(shape, dtype))


def _expect_empty(out, lse):
    out, lse = out.float().numpy(), lse.numpy()
    assert not np.isnan(out).any() and not np.isnan(lse).any()
    assert (out == 0).all()
    assert np.isneginf(lse).all()


def _tables(batch):
    return (_tensor(np.zeros(batch + 1, np.int32)),
            _tensor(np.zeros(0, np.int32)),
            _tensor(np.zeros(batch, np.int32)))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("pages", [0, 3])
def test_decode_over_no_keys(cache, backend, pages):
    batch, hq, hk, d, page = 3, 8, 2, 128, 16
    indptr, indices, last = _tables(batch)
    w = kvir.BatchDecodeWithPagedKVCacheWrapper(cache_dir=cache,
                                               backend=backend)
    w.plan(indptr, indices, last, hq, hk, d, page)
    q = _tensor(np.ones((batch, hq, d), np.float16))
    pool = _poisoned((pages, 2, page, hk, d), np.float16)
    out = _poisoned((batch, hq, d), np.float16)
    lse = _poisoned((batch, hq), np.float32)
    w.run(q, pool, out=out, lse=lse)
    _expect_empty(out, lse)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("causal", [False, True])
def test_paged_prefill_over_no_keys(cache, backend, causal):
    # Causal rows of requests without keys see nothing either (FlashInfer
    # aligns the causal mask to the end of the keys).
    hq, hk, d, page = 8, 2, 128, 16
    qo = _tensor(np.array([0, 0, 3, 4], np.int32))
    batch = 3
    indptr, indices, last = _tables(batch)
    w = kvir.BatchPrefillWithPagedKVCacheWrapper(cache_dir=cache,
                                                backend=backend)
    # Causal rows without keys sit before the first key: they see none.
    w.plan(qo, indptr, indices, last, hq, hk, d, page, causal=causal)
    q = _tensor(np.ones((4, hq, d), np.float16))
    pool = _tensor(np.zeros((0, 2, page, hk, d), np.float16))
    out = _poisoned((4, hq, d), np.float16)
    lse = _poisoned((4, hq), np.float32)
    w.run(q, pool, out=out, lse=lse)
    _expect_empty(out, lse)


@pytest.mark.parametrize("backend", BACKENDS)
def test_ragged_prefill_over_no_keys(cache, backend):
    hq, hk, d = 4, 2, 128
    qo = _tensor(np.array([0, 2, 5], np.int32))
    kv = _tensor(np.array([0, 0, 0], np.int32))
    w = kvir.BatchPrefillWithRaggedKVCacheWrapper(cache_dir=cache,
                                                 backend=backend)
    w.plan(qo, kv, hq, hk, d)
    q = _tensor(np.ones((5, hq, d), np.float16))
    k = _tensor(np.zeros((0, hk, d), np.float16))
    v = _tensor(np.zeros((0, hk, d), np.float16))
    out = _poisoned((5, hq, d), np.float16)
    lse = _poisoned((5, hq), np.float32)
    w.run(q, k, v, out=out, lse=lse)
    _expect_empty(out, lse)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("heads", [16, 64])
def test_mla_over_no_keys(cache, backend, heads):
    dc, dp, page, batch = 512, 64, 64, 2
    qo = _tensor(np.arange(batch + 1, dtype=np.int32))
    indptr, indices, _ = _tables(batch)
    w = kvir.BatchMLAPagedAttentionWrapper(cache_dir=cache, backend=backend)
    w.plan(qo, indptr, indices, _tensor(np.zeros(batch, np.int32)), heads,
           dc, dp, page, q_data_type=torch.bfloat16)
    qn = torch.ones((batch, heads, dc), dtype=torch.bfloat16)
    qp = torch.ones((batch, heads, dp), dtype=torch.bfloat16)
    ckv = torch.zeros((0, page, dc), dtype=torch.bfloat16)
    kpe = torch.zeros((0, page, dp), dtype=torch.bfloat16)
    out = torch.full((batch, heads, dc), float("nan"), dtype=torch.bfloat16)
    lse = torch.full((batch, heads), float("nan"), dtype=torch.float32)
    w.run(qn, qp, ckv, kpe, out=out, lse=lse)
    _expect_empty(out, lse)
