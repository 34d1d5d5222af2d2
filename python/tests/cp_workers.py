"""The ranks of test_distributed.py: each process builds the same global
problem from a seed, keeps its shard, runs kvir.distributed over gloo and
checks its result against the float64 single-rank reference (an exception
fails the test through torch.multiprocessing.spawn)."""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

from conftest import TOLERANCE, vllm_pools  # noqa: E402
from reference import attend, check  # noqa: E402

def _init(rank, world, init_file):
    import torch.distributed as dist
    dist.init_process_group("gloo", init_method=f"file://{init_file}",
                            rank=rank, world_size=world)


def pack(keys, values, page, rng):
    """A paged NHD cache [pages, 2, page, Hk, D] holding each request's
    keys and values (pages in random order, a spare one, NaN in every slot
    no request owns) and its CSR tables."""
    hk, d = (keys[0].shape[1:] if keys else (1, 1))
    pages = [-(-len(k) // page) for k in keys]
    total = sum(pages) + 1
    order = rng.permutation(total).astype(np.int32)
    indptr = np.concatenate([[0], np.cumsum(pages)]).astype(np.int32)
    indices = order[:sum(pages)].copy()
    last = np.array([len(k) - (p - 1) * page if p else 0
                     for k, p in zip(keys, pages)], np.int32)
    pool = np.full((total, 2, page, hk, d), np.nan, np.float16)
    for b, (k, v) in enumerate(zip(keys, values)):
        tok = np.arange(len(k))
        pg = indices[indptr[b] + tok // page]
        pool[pg, 0, tok % page] = k
        pool[pg, 1, tok % page] = v
    return pool, indptr, indices, last


def spans(lengths, world, rng, empty_shard=False):
    """Each request cut into `world` consecutive spans of random lengths:
    [rank][request] -> (start, stop). `empty_shard`: the last rank holds
    nothing of request 0 (the rank before it keeps the rest)."""
    out = [[None] * len(lengths) for _ in range(world)]
    for b, n in enumerate(lengths):
        cuts = np.sort(rng.integers(0, n + 1, world - 1))
        bounds = np.concatenate([[0], cuts, [n]])
        if empty_shard and b == 0:
            bounds[-2] = n
        for r in range(world):
            out[r][b] = (int(bounds[r]), int(bounds[r + 1]))
    return out


def decode_rank(rank, world, init_file, cache, options):
    import torch
    import kvir
    _init(rank, world, init_file)
    rng = np.random.default_rng(options["seed"])
    lengths = options["lengths"]
    hq, hk, d, page = 8, 2, 64, 16
    keys = [rng.uniform(-1, 1, (n, hk, d)).astype(np.float16) for n in lengths]
    values = [rng.uniform(-1, 1, (n, hk, d)).astype(np.float16)
              for n in lengths]
    q = rng.uniform(-1, 1, (len(lengths), hq, d)).astype(np.float16)
    sinks = rng.uniform(-1, 2, hq).astype(np.float32) \
        if options.get("sinks") else None
    cut = spans(lengths, world, rng, options.get("empty_shard", False))[rank]
    my_keys = [keys[b][a:z] for b, (a, z) in enumerate(cut)]
    my_values = [values[b][a:z] for b, (a, z) in enumerate(cut)]
    layout = "vllm" if options.get("vllm") else "NHD"
    cp = kvir.distributed.ContextParallelDecode(
        kv_layout=layout, head_split=options.get("head_split", False),
        cache_dir=cache)
    window = options.get("window_left", -1)
    base = options.get("lse_base", "2")
    common = dict(kv_len=lengths, kv_start=[a for a, _ in cut],
                  window_left=window, logits_soft_cap=options.get("soft_cap"),
                  lse_base=base, alibi=options.get("alibi", False),
                  sinks=sinks)
    if options.get("vllm"):
        # vLLM's pools and block tables.
        kpool, vpool, tables, seq_lens = vllm_pools(
            my_keys, my_values, page, np.random.default_rng(100 + rank))
        cp.plan(None, None, None, hq, hk, d, page, block_tables=tables,
                seq_lens=seq_lens, **common)
        cache_args = (torch.from_numpy(kpool), torch.from_numpy(vpool))
    else:
        pool, indptr, indices, last = pack(my_keys, my_values, page,
                                           np.random.default_rng(100 + rank))
        cp.plan(indptr, indices, last, hq, hk, d, page, **common)
        cache_args = torch.from_numpy(pool)
    out, lse = cp.run(torch.from_numpy(q), cache_args, return_lse=True)
    heads = range(hq)
    if options.get("head_split"):
        share = hq // world
        heads = range(rank * share, (rank + 1) * share)
    slopes = [2 ** (-8 * (h + 1) / hq) for h in range(hq)]
    for b, n in enumerate(lengths):
        bias = None
        if options.get("alibi"):
            def bias(s, h, p, j):
                return s + slopes[h] * (j - p)
        ref_o, ref_lse = attend(q[b:b + 1], keys[b], values[b], [n - 1],
                                window_left=window,
                                soft_cap=options.get("soft_cap") or 0.0,
                                lse_base=base, score_mod=bias)
        if sinks is not None:
            ln = math.log(2.0) if base == "2" else 1.0
            natural = ref_lse[0] * ln
            total = np.exp(natural) + np.exp(sinks.astype(np.float64))
            ref_o = ref_o * (np.exp(natural) / total)[None, :, None]
            ref_lse = (np.log(total) / ln)[None]
        check(out[b:b + 1].numpy(), lse[b:b + 1].numpy(),
              ref_o[:, list(heads)], ref_lse[:, list(heads)],
              TOLERANCE["f16"], 1e-3)


def ring_rank(rank, world, init_file, cache, options):
    import torch
    import kvir
    _init(rank, world, init_file)
    rng = np.random.default_rng(options["seed"])
    n, hq, hk, d = options["length"], 4, 2, 64
    q = rng.uniform(-1, 1, (n, hq, d)).astype(np.float16)
    k = rng.uniform(-1, 1, (n, hk, d)).astype(np.float16)
    v = rng.uniform(-1, 1, (n, hk, d)).astype(np.float16)
    cuts = np.sort(rng.integers(0, n + 1, world - 1))
    bounds = np.concatenate([[0], cuts, [n]])
    a, z = int(bounds[rank]), int(bounds[rank + 1])
    causal = options["causal"]
    out, lse = kvir.distributed.ring_prefill(
        torch.from_numpy(q[a:z]), torch.from_numpy(k[a:z]),
        torch.from_numpy(v[a:z]), causal=causal, cache_dir=cache)
    if z == a:
        assert out.shape[0] == 0
        return
    ref_o, ref_lse = attend(q[a:z], k, v, list(range(a, z)), causal=causal)
    check(out.numpy(), lse.numpy(), ref_o, ref_lse, TOLERANCE["f16"], 1e-3)


def merge_rank(rank, world, init_file, cache, options):
    """A local state from a kernel the wrappers do not offer (an int8-group
    cache through kvir.compile), merged by merge_across_ranks."""
    import torch
    import kvir
    _init(rank, world, init_file)
    rng = np.random.default_rng(options["seed"])
    lengths, hq, hk, d, page, group = [90, 31], 4, 2, 64, 16, 16
    codes = [rng.integers(-127, 128, (n, 2, hk, d)).astype(np.int8)
             for n in lengths]
    scales = [rng.uniform(0.002, 0.02, (n, 2, hk, d // group)).astype(
        np.float16) for n in lengths]
    q = rng.uniform(-1, 1, (len(lengths), hq, d)).astype(np.float16)
    cut = spans(lengths, world, rng)[rank]
    # This rank's pages: codes and scales of its spans, pages in order.
    pages = [-(-(z - a) // page) for a, z in cut]
    indptr = np.concatenate([[0], np.cumsum(pages)]).astype(np.int32)
    total = int(indptr[-1]) + 1
    pool = np.zeros((total, 2, page, hk, d), np.int8)
    spool = np.full((total, 2, page, hk, d // group), np.nan, np.float16)
    for b, (a, z) in enumerate(cut):
        t = np.arange(z - a)
        pg, slot = indptr[b] + t // page, t % page
        pool[pg, :, slot] = codes[b][a:z]
        spool[pg, :, slot] = scales[b][a:z]
    indices = np.arange(total - 1, dtype=np.int32)
    last = np.array([(z - a) - (p - 1) * page if p else 0
                     for (a, z), p in zip(cut, pages)], np.int32)
    out = np.full((len(lengths), hq, d), np.nan, np.float16)
    lse = np.full((len(lengths), hq), np.nan, np.float32)
    spec = {"op": "decode", "num_qo_heads": hq, "num_kv_heads": hk,
            "head_dim": d, "page_size": page, "dtype": "f16",
            "kv_dtype": "int8", "quant_group": group}
    kernel = kvir.compile(spec, "sm_90a", cache)
    kernel.module().emulate("kvir_main", "sm_90a",
                            [("buffer", x.ctypes.data, list(x.shape))
                             for x in (q, pool, spool, indptr, indices, last,
                                       out, lse)])
    merged, merged_lse = kvir.distributed.merge_across_ranks(
        torch.from_numpy(out), torch.from_numpy(lse), cache_dir=cache)
    for b, n in enumerate(lengths):
        kv = codes[b].astype(np.float64) * np.repeat(
            scales[b].astype(np.float64), group, axis=-1)
        ref_o, ref_lse = attend(q[b:b + 1], kv[:, 0], kv[:, 1], [n - 1])
        check(merged[b:b + 1].numpy(), merged_lse[b:b + 1].numpy(), ref_o,
              ref_lse, TOLERANCE["f16"], 1e-3)
