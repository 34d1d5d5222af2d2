#!/usr/bin/env python3
"""Context-parallel attention with kvir over torch.distributed.

Launches WORLD processes (gloo on the CPU, each rank's kernels in kvir's
emulator; with CUDA devices and NCCL the same code runs on GPUs). Each rank
holds a contiguous span of every request's keys: a decode over the whole
cache is each rank's state, all-gathered and merged; a long prompt's causal
prefill is ring attention over its chunks. Both are checked against one
process's float64 attention over the whole cache.

  python3 examples/python/context_parallel.py [WORLD]      # 2 by default
"""
import math
import os
import sys
import tempfile

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.join(here, "..", "..", "python"))

HQ, HK, D, PAGE = 8, 2, 64, 16
LENGTHS = [1000, 70, 333]
PROMPT = 400


def attention(q, k, v, positions, causal):
    """float64 attention of rows q [n, HQ, D] at `positions` over k, v."""
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    out = np.zeros((len(q), HQ, D))
    for i, p in enumerate(positions):
        seen = np.arange(len(k)) <= p if causal else np.ones(len(k), bool)
        for h in range(HQ):
            s = k[seen, h // (HQ // HK)] @ q[i, h] / math.sqrt(D)
            w = np.exp(s - s.max())
            out[i, h] = w @ v[seen, h // (HQ // HK)] / w.sum()
    return out


def paged(keys, values):
    """One rank's NHD paged cache of its spans and its CSR tables."""
    pages = [-(-len(k) // PAGE) for k in keys]
    indptr = np.concatenate([[0], np.cumsum(pages)]).astype(np.int32)
    indices = np.arange(sum(pages), dtype=np.int32)
    last = np.array([len(k) - (p - 1) * PAGE if p else 0
                     for k, p in zip(keys, pages)], np.int32)
    pool = np.zeros((max(1, sum(pages)), 2, PAGE, HK, D), np.float16)
    for b, (k, v) in enumerate(zip(keys, values)):
        t = np.arange(len(k))
        pool[indices[indptr[b] + t // PAGE], 0, t % PAGE] = k
        pool[indices[indptr[b] + t // PAGE], 1, t % PAGE] = v
    return pool, indptr, indices, last


def rank_main(rank, world, init_file, cache):
    import torch
    import torch.distributed as dist
    import kvir
    dist.init_process_group("gloo", init_method=f"file://{init_file}",
                            rank=rank, world_size=world)
    rng = np.random.default_rng(1)  # every rank builds the same problem
    keys = [rng.uniform(-1, 1, (n, HK, D)).astype(np.float16)
            for n in LENGTHS]
    values = [rng.uniform(-1, 1, (n, HK, D)).astype(np.float16)
              for n in LENGTHS]
    q = rng.uniform(-1, 1, (len(LENGTHS), HQ, D)).astype(np.float16)

    # Decode: rank r holds keys [n r / world, n (r + 1) / world).
    spans = [(n * rank // world, n * (rank + 1) // world) for n in LENGTHS]
    pool, indptr, indices, last = paged(
        [k[a:z] for k, (a, z) in zip(keys, spans)],
        [v[a:z] for v, (a, z) in zip(values, spans)])
    cp = kvir.distributed.ContextParallelDecode(cache_dir=cache)
    cp.plan(indptr, indices, last, HQ, HK, D, PAGE, kv_len=LENGTHS,
            kv_start=[a for a, _ in spans])
    out = cp.run(torch.from_numpy(q), torch.from_numpy(pool)).numpy()
    worst = max(np.abs(out[b] - attention(q[b:b + 1], keys[b], values[b],
                                          [n - 1], False)[0]).max()
                for b, n in enumerate(LENGTHS))

    # Ring prefill of one prompt: rank r holds rows and keys of its chunk.
    pq = rng.uniform(-1, 1, (PROMPT, HQ, D)).astype(np.float16)
    pk = rng.uniform(-1, 1, (PROMPT, HK, D)).astype(np.float16)
    pv = rng.uniform(-1, 1, (PROMPT, HK, D)).astype(np.float16)
    a, z = PROMPT * rank // world, PROMPT * (rank + 1) // world
    rows, _ = kvir.distributed.ring_prefill(
        torch.from_numpy(pq[a:z]), torch.from_numpy(pk[a:z]),
        torch.from_numpy(pv[a:z]), causal=True, cache_dir=cache)
    ring_worst = np.abs(rows.numpy() - attention(pq[a:z], pk, pv,
                                                 range(a, z), True)).max()
    print(f"rank {rank}/{world}: decode max error {worst:.2e}, ring prefill "
          f"rows {a}..{z} max error {ring_worst:.2e}", flush=True)
    if not (worst < 2e-3 and ring_worst < 2e-3):
        raise SystemExit(f"rank {rank}: error above f16's 2e-3")


if __name__ == "__main__":
    import torch.multiprocessing as mp
    world = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    with tempfile.TemporaryDirectory() as tmp:
        mp.spawn(rank_main, args=(world, os.path.join(tmp, "init"),
                                  os.path.join(tmp, "kernels")),
                 nprocs=world, join=True)
    print(f"context-parallel decode and ring prefill on {world} ranks: ok")
