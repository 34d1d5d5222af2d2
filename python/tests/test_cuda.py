"""The same calls on torch CUDA tensors: launched through the CUDA driver
on the tensors' current stream. Skipped without a CUDA device."""
import numpy as np
import pytest

import kvir
from conftest import TOLERANCE, paged_batch
from reference import attend, check, merge

torch = pytest.importorskip("torch", reason="python3-torch not installed")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device: the GPU path is tested on the CPU by "
                "test_gpu_path.py (emulated driver)", allow_module_level=True)


def cuda(a):
    return torch.from_numpy(np.ascontiguousarray(a)).cuda()


def test_decode_on_the_gpu(rng, cache):
    lens, hq, hk, d, page = [37, 1, 3000], 8, 2, 128, 16
    pool, indptr, indices, last, keys, values = paged_batch(
        rng, lens, page, hk, d, "float16")
    q = rng.uniform(-1, 1, (len(lens), hq, d)).astype(np.float16)
    w = kvir.BatchDecodeWithPagedKVCacheWrapper(cache_dir=cache)
    w.plan(cuda(indptr), cuda(indices), cuda(last), hq, hk, d, page)
    out, lse = w.run(cuda(q), cuda(pool), return_lse=True)
    torch.cuda.synchronize()
    assert out.is_cuda
    for b, n in enumerate(lens):
        ref_o, ref_lse = attend(q[b:b + 1], keys[b], values[b], [n - 1])
        check(out[b:b + 1].float().cpu().numpy(), lse[b:b + 1].cpu().numpy(),
              ref_o, ref_lse, TOLERANCE["f16"], 1e-3)


def test_ragged_prefill_on_the_gpu(rng, cache):
    qo = np.array([0, 40, 45], np.int32)
    kv = np.array([0, 40, 100], np.int32)
    q = rng.uniform(-1, 1, (45, 4, 64)).astype(np.float16)
    k = rng.uniform(-1, 1, (100, 2, 64)).astype(np.float16)
    v = rng.uniform(-1, 1, (100, 2, 64)).astype(np.float16)
    w = kvir.BatchPrefillWithRaggedKVCacheWrapper(cache_dir=cache)
    w.plan(cuda(qo), cuda(kv), 4, 2, 64, causal=True)
    out, lse = w.run(cuda(q), cuda(k), cuda(v), return_lse=True)
    torch.cuda.synchronize()
    for b in range(2):
        r0, r1, k0, k1 = qo[b], qo[b + 1], kv[b], kv[b + 1]
        n = k1 - k0
        ref_o, ref_lse = attend(q[r0:r1], k[k0:k1], v[k0:k1],
                                list(range(n - (r1 - r0), n)), causal=True)
        check(out[r0:r1].float().cpu().numpy(), lse[r0:r1].cpu().numpy(),
              ref_o, ref_lse, TOLERANCE["f16"], 2e-3)


def test_merge_states_on_the_gpu(rng, cache):
    v = rng.uniform(-1, 1, (9, 4, 2, 64)).astype(np.float16)
    s = rng.uniform(-3, 3, (9, 4, 2)).astype(np.float32)
    got_v, got_s = kvir.merge_states(cuda(v), cuda(s), cache_dir=cache)
    torch.cuda.synchronize()
    ref_v, ref_s = v[:, 0].astype(np.float64), s[:, 0].astype(np.float64)
    for i in range(1, 4):
        ref_v, ref_s = merge(ref_v, ref_s, v[:, i], s[:, i])
    check(got_v.float().cpu().numpy(), got_s.cpu().numpy(), ref_v, ref_s,
          TOLERANCE["f16"], 1e-5)


def test_mla_on_the_gpu(rng, cache):
    from test_mla_cascade import _mla_batch, _mla_reference
    heads, page, lens = 16, 64, [300, 7, 1]
    ckv, kpe, indptr, indices, keys = _mla_batch(rng, lens, page, 512, 64,
                                                 np.float16)
    q_nope = rng.uniform(-1, 1, (3, heads, 512)).astype(np.float16)
    q_pe = rng.uniform(-1, 1, (3, heads, 64)).astype(np.float16)
    w = kvir.BatchMLAPagedAttentionWrapper(cache_dir=cache)
    w.plan(cuda(np.arange(4, dtype=np.int32)), cuda(indptr), cuda(indices),
           cuda(np.array(lens, np.int32)), heads, 512, 64, page,
           q_data_type=torch.float16)
    out, lse = w.run(cuda(q_nope), cuda(q_pe), cuda(ckv), cuda(kpe),
                     return_lse=True)
    torch.cuda.synchronize()
    for b, n in enumerate(lens):
        ref_o, ref_lse = _mla_reference(q_nope[b:b + 1], q_pe[b:b + 1],
                                        keys[b][0], keys[b][1], [n - 1],
                                        False, 1 / np.sqrt(576))
        check(out[b:b + 1].float().cpu().numpy(), lse[b:b + 1].cpu().numpy(),
              ref_o, ref_lse, TOLERANCE["f16"], 2e-3)
