#!/usr/bin/env python3
"""A FlashInfer-shaped batch decode with kvir: plan once, run, check.

On a machine with a CUDA device and torch, the tensors live on the GPU and
the kernels run there (CUDA driver, current stream); elsewhere they are
numpy arrays and the same kernels run in kvir's emulator. The result is
compared with a float64 reference either way.

  python3 examples/python/batch_decode.py          # from the source tree
  PYTHONPATH=<prefix>/lib/python3/dist-packages python3 batch_decode.py
"""
import math
import os
import sys
import time

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.join(here, "..", "..", "python"))
import kvir  # noqa: E402

try:
    import torch
    on_gpu = torch.cuda.is_available()
except ImportError:
    on_gpu = False

num_qo_heads, num_kv_heads, head_dim, page_size = 32, 8, 128, 16
kv_lens = [700, 33, 1, 2100]
rng = np.random.default_rng(7)

# The paged cache in FlashInfer's NHD layout and its CSR page tables.
pages = [-(-n // page_size) for n in kv_lens]
kv_indptr = np.concatenate([[0], np.cumsum(pages)]).astype(np.int32)
kv_indices = rng.permutation(sum(pages)).astype(np.int32)
kv_last_page_len = np.array([n - (p - 1) * page_size
                             for n, p in zip(kv_lens, pages)], np.int32)
cache = rng.uniform(-1, 1, (sum(pages), 2, page_size, num_kv_heads,
                            head_dim)).astype(np.float16)
q = rng.uniform(-1, 1, (len(kv_lens), num_qo_heads,
                        head_dim)).astype(np.float16)


def device(a):
    return torch.from_numpy(a).cuda() if on_gpu else a


wrapper = kvir.BatchDecodeWithPagedKVCacheWrapper(kv_layout="NHD")
start = time.perf_counter()
wrapper.plan(device(kv_indptr), device(kv_indices), device(kv_last_page_len),
             num_qo_heads, num_kv_heads, head_dim, page_size,
             q_data_type="float16")
planned = time.perf_counter() - start
out, lse = wrapper.run(device(q), device(cache), return_lse=True)
if on_gpu:
    torch.cuda.synchronize()
    out, lse = out.cpu().numpy(), lse.cpu().numpy()

kernel = wrapper._exec.last_kernel
print(f"kvir: {kernel.op} for {kernel.chip} "
      f"({'from the cache' if kernel.from_cache else 'compiled'}: plan took "
      f"{planned:.2f} s), ran on {'the GPU' if on_gpu else 'the emulator'}")

# float64 reference: softmax(q k^T / sqrt(D)) v per request and head.
worst = 0.0
for b, n in enumerate(kv_lens):
    tok = np.arange(n)
    page = kv_indices[kv_indptr[b] + tok // page_size]
    k = cache[page, 0, tok % page_size].astype(np.float64)
    v = cache[page, 1, tok % page_size].astype(np.float64)
    for h in range(num_qo_heads):
        g = h // (num_qo_heads // num_kv_heads)
        s = k[:, g] @ q[b, h].astype(np.float64) / math.sqrt(head_dim)
        w = np.exp(s - s.max())
        ref = w @ v[:, g] / w.sum()
        ref_lse = (s.max() + math.log(w.sum())) / math.log(2)
        err = np.abs(out[b, h] - ref).max() / max(np.abs(ref).max(), 1e-4)
        worst = max(worst, err)
        assert abs(lse[b, h] - ref_lse) < 1e-3, (b, h)
print(f"max relative error vs float64: {worst:.2e} (f16 tolerance 2e-3)")
sys.exit(0 if worst <= 2e-3 else 1)
