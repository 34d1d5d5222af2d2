#!/usr/bin/env python3
"""Times kvir's decode and prefill kernels on a GPU and checks their results.

For each module directory (bench/gpu/timing_modules.sh) and shape, builds a
paged KV cache with torch (pages shuffled through the pool), plans the call
from the manifests (plan_launch.py; split-KV work list from kvir's runtime
library), launches through the CUDA driver on torch's current stream,
checks out and lse against a float64 reference computed with torch on the
GPU (the test suite's metric and tolerances), and times the launches with
CUDA events around a CUDA-graph replay of one call (10 warm-ups, median
of 30), so that Python's launch overhead is not timed. Reports GB/s for decode (KV bytes
once per KV head + q + out + lse) and TFLOP/s for prefill, each against the
roofs measured in the same run (1 GiB device copy; bf16 8192^3 matmul), and
torch's scaled_dot_product_attention on contiguous K/V with the same shapes.

  time_attention.py --runtime libkvir_runtime.so --modules DIR [--json FILE]
                    [--select REGEX] [--only NAME:SHAPE] [--iters N]
Module directories: decode_<f16|bf16>_g<group>[_<variant>] and
prefill_<f16|bf16>_<causal|none>.
"""
import argparse
import ctypes
import json
import math
import os
import re
import sys
import time

import torch
import torch.nn.functional as F

# kvir's Python package: python/ in the source tree, beside this script in
# a bundle (bundle.sh).
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [_here, os.path.join(_here, "..", "..", "python")]
from kvir.cuda_driver import Driver, DryDriver  # noqa: E402
from kvir.gpu import GpuLaunch  # noqa: E402
from kvir.plan_launch import Plan  # noqa: E402

DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16}
TOL = {"f16": 2e-3, "bf16": 1.6e-2}
PAGE, HKV, D = 16, 8, 128
# "cpu" with --dry-run: every step but the launches runs on the CPU, small
# shapes, no timing worth the name (tests this script without a GPU).
DEV = "cuda"


def median_ms(fn, warmup, iters):
    if DEV == "cpu":
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1e3
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    times.sort()
    return times[len(times) // 2]


def timed_ms(fn, warmup, iters):
    """median_ms of one call of `fn` replayed from a CUDA graph, so that the
    events time the GPU work and not Python's launch overhead (ctypes
    marshalling, torch dispatch); eager calls where capture fails. Returns
    (ms, "graph" | "eager")."""
    if DEV == "cpu":
        return median_ms(fn, warmup, iters), "eager"
    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            fn()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn()
        torch.cuda.synchronize()
        return median_ms(graph.replay, warmup, iters), "graph"
    except Exception as e:  # noqa: BLE001
        print(f"  (no graph capture: {e!r}; timing eager calls)", flush=True)
        torch.cuda.synchronize()
        return median_ms(fn, warmup, iters), "eager"


def roofs(warmup, iters):
    n = 1 << 30
    a = torch.empty(n, dtype=torch.uint8, device=DEV)
    b = torch.empty_like(a)
    # Eager: 1 GiB dwarfs the launch overhead, and a captured copy becomes a
    # copy-engine memcpy node, slower than the kernel an eager copy runs.
    t = median_ms(lambda: b.copy_(a), warmup, iters)
    copy_gbs = 2 * n / (t * 1e-3) / 1e9
    del a, b
    m = torch.randn(8192, 8192, dtype=torch.bfloat16, device=DEV)
    t = median_ms(lambda: m @ m, warmup, iters)
    mm_tflops = 2 * 8192 ** 3 / (t * 1e-3) / 1e12
    return copy_gbs, mm_tflops


def paged_cache(lens, dtype, gen):
    """Pool [pages, 2, PAGE, HKV, D] with each request's pages scattered,
    and the CSR tables."""
    pages = [math.ceil(n / PAGE) for n in lens]
    total = sum(pages)
    perm = torch.randperm(max(1, total), generator=gen).tolist()
    indptr, indices, last = [0], [], []
    k = 0
    for n, p in zip(lens, pages):
        indices += perm[k:k + p]
        k += p
        indptr.append(indptr[-1] + p)
        last.append(n - (p - 1) * PAGE if p else 0)
    pool = torch.randn(max(1, total), 2, PAGE, HKV, D, generator=gen,
                       dtype=torch.float32).to(dtype).to(DEV)
    i32 = lambda v: torch.tensor(v if v else [0], dtype=torch.int32).to(DEV)
    return pool, i32(indptr), i32(indices), i32(last), indices, indptr


def gather_kv(pool, indices, indptr, r, n):
    ids = torch.tensor(indices[indptr[r]:indptr[r + 1]], device=DEV,
                       dtype=torch.long)
    kv = pool[ids]  # [p, 2, PAGE, HKV, D]
    k = kv[:, 0].reshape(-1, HKV, D)[:n]
    v = kv[:, 1].reshape(-1, HKV, D)[:n]
    return k, v


def reference(q, k, v, causal_offset):
    """float64 attention of q [rows, Hq, D] over k, v [n, HKV, D] (GQA);
    query row i sees keys j <= i + causal_offset (None: all). Returns
    (o [rows, Hq, D], lse base 2 [rows, Hq])."""
    g = q.shape[1] // k.shape[1]
    q64, k64, v64 = q.double(), k.double(), v.double()
    k64 = k64.repeat_interleave(g, dim=1)
    v64 = v64.repeat_interleave(g, dim=1)
    s = torch.einsum("rhd,nhd->hrn", q64, k64) / math.sqrt(D)
    if causal_offset is not None:
        rows, n = q.shape[0], k.shape[0]
        mask = (torch.arange(n, device=DEV)[None, :] >
                torch.arange(rows, device=DEV)[:, None] + causal_offset)
        s = s.masked_fill(mask[None], -math.inf)
    lse = torch.logsumexp(s, dim=-1)  # [h, rows]
    p = torch.exp(s - lse[..., None])
    o = torch.einsum("hrn,nhd->rhd", p, v64)
    return o, (lse / math.log(2)).transpose(0, 1)


def compare(out, lse, ref_o, ref_lse, tol, lse_tol=1e-3):
    o = out.double()
    err = (o - ref_o).abs().amax(-1)
    rel = err / ref_o.abs().amax(-1).clamp_min(1e-4)
    lse_err = (lse.double() - ref_lse).abs()
    bad = (rel > tol) | (lse_err > lse_tol) | torch.isnan(o).any(-1) | \
        torch.isnan(lse)
    rel = torch.nan_to_num(rel, nan=math.inf)
    lse_err = torch.nan_to_num(lse_err, nan=math.inf)
    return {"max_rel_err": rel.max().item(), "max_lse_err": lse_err.max().item(),
            "failures": int(bad.sum().item()), "pairs": bad.numel()}


class Runner:
    """A plan's launches on this script's device (kvir.gpu.GpuLaunch)."""

    def __init__(self, drv, runtime, plan):
        self.drv, self.runtime, self.plan = drv, runtime, plan

    def prepare(self, tensors, kv_lengths):
        self.launch = GpuLaunch(self.plan, tensors, kv_lengths, DEV, self.drv,
                                self.runtime)
        self.keep, self.env = self.launch.keep, self.launch.env

    def run(self):
        stream = torch.cuda.current_stream().cuda_stream if DEV == "cuda" else 0
        self.launch.run(stream)


def sdpa(q, k, v, causal):
    if not hasattr(F, "scaled_dot_product_attention"):  # torch < 2.0
        return None
    try:
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                              enable_gqa=True)
    except TypeError:
        g = q.shape[1] // k.shape[1]
        return F.scaled_dot_product_attention(
            q, k.repeat_interleave(g, 1), v.repeat_interleave(g, 1),
            is_causal=causal)


def decode_case(drv, runtime, mdir, dtype_name, group, lens, args, gen):
    dtype = DTYPES[dtype_name]
    hq = HKV * group
    batch = len(lens)
    pool, indptr, indices, last, idx_list, indptr_list = paged_cache(
        lens, dtype, gen)
    q = torch.randn(batch, hq, D, generator=gen).to(dtype).to(DEV)
    out = torch.full((batch, hq, D), math.nan, dtype=dtype, device=DEV)
    lse = torch.full((batch, hq), math.nan, dtype=torch.float32, device=DEV)
    runner = Runner(drv, runtime, Plan(mdir, "kv.decode"))
    runner.prepare({"q": q, "pool": pool, "kv_indptr": indptr,
                    "kv_indices": indices, "kv_last_page_len": last,
                    "out": out, "lse": lse}, lens)
    runner.run()
    drv.synchronize()
    checks = []
    ref_o = torch.empty(batch, hq, D, dtype=torch.float64, device=DEV)
    ref_l = torch.empty(batch, hq, dtype=torch.float64, device=DEV)
    for r, n in enumerate(lens):
        k, v = gather_kv(pool, idx_list, indptr_list, r, n)
        o, l = reference(q[r:r + 1], k, v, None)
        ref_o[r], ref_l[r] = o[0], l[0]
    check = compare(out, lse, ref_o, ref_l, TOL[dtype_name])
    t, mode = timed_ms(runner.run, args.warmup, args.iters)
    tokens = sum(lens)
    nbytes = tokens * HKV * D * 2 * 2 + batch * hq * D * 2 * 2 + batch * hq * 4
    row = {"op": "decode", "dtype": dtype_name, "group": group,
           "batch": batch, "kv_len": max(lens), "skewed": len(set(lens)) > 1,
           "kernels": [l[0] for l in runner.launch.launches],
           "time_us": t * 1e3, "gbs": nbytes / (t * 1e-3) / 1e9,
           "timing": mode, **check}
    if len(set(lens)) == 1:
        # The peer on contiguous K/V of the same bytes.
        kc = torch.randn(batch, HKV, lens[0], D, generator=gen).to(dtype).to(DEV)
        vc = torch.randn_like(kc)
        qc = q.reshape(batch, hq, 1, D)
        row["sdpa_us"] = timed_ms(lambda: sdpa(qc, kc, vc, False),
                                  args.warmup, args.iters)[0] * 1e3
    return row


def prefill_case(drv, runtime, mdir, dtype_name, causal, batch, n, args, gen):
    dtype = DTYPES[dtype_name]
    hq = 32
    lens = [n] * batch
    pool, indptr, indices, last, idx_list, indptr_list = paged_cache(
        lens, dtype, gen)
    q = torch.randn(batch * n, hq, D, generator=gen).to(dtype).to(DEV)
    qo = torch.arange(0, batch * n + 1, n, dtype=torch.int32).to(DEV)
    out = torch.full((batch * n, hq, D), math.nan, dtype=dtype, device=DEV)
    lse = torch.full((batch * n, hq), math.nan, dtype=torch.float32,
                     device=DEV)
    runner = Runner(drv, runtime, Plan(mdir, "kv.prefill"))
    runner.prepare({"q": q, "qo_indptr": qo, "pool": pool,
                    "kv_indptr": indptr, "kv_indices": indices,
                    "kv_last_page_len": last, "out": out, "lse": lse}, lens)
    runner.run()
    drv.synchronize()
    worst = {"max_rel_err": 0.0, "max_lse_err": 0.0, "failures": 0, "pairs": 0}
    for r in range(batch):
        k, v = gather_kv(pool, idx_list, indptr_list, r, n)
        rows = slice(r * n, (r + 1) * n)
        for h0 in range(0, hq, 8):  # 8 heads at a time bounds the memory
            hs = slice(h0, h0 + 8)
            kv_heads = slice(h0 // (hq // HKV), (h0 + 8) // (hq // HKV))
            o, l = reference(q[rows, hs], k[:, kv_heads], v[:, kv_heads],
                             0 if causal else None)
            c = compare(out[rows, hs], lse[rows, hs], o, l, TOL[dtype_name])
            worst["max_rel_err"] = max(worst["max_rel_err"], c["max_rel_err"])
            worst["max_lse_err"] = max(worst["max_lse_err"], c["max_lse_err"])
            worst["failures"] += c["failures"]
            worst["pairs"] += c["pairs"]
    t, mode = timed_ms(runner.run, args.warmup, args.iters)
    pairs = batch * (n * (n + 1) // 2 if causal else n * n)
    flops = 4 * pairs * hq * D
    row = {"op": "prefill", "dtype": dtype_name, "causal": causal,
           "batch": batch, "qo_len": n, "kv_len": n,
           "kernels": [l[0] for l in runner.launch.launches],
           "time_us": t * 1e3, "tflops": flops / (t * 1e-3) / 1e12,
           "timing": mode, **worst}
    qc = q.reshape(batch, n, hq, D).transpose(1, 2).contiguous()
    kc = torch.randn(batch, HKV, n, D, generator=gen).to(dtype).to(DEV)
    vc = torch.randn_like(kc)
    row["sdpa_us"] = timed_ms(lambda: sdpa(qc, kc, vc, causal), args.warmup,
                              args.iters)[0] * 1e3
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runtime", required=True)
    ap.add_argument("--modules", required=True)
    ap.add_argument("--json")
    ap.add_argument("--only", help="run one case: decode_f16_g4:16x8192")
    ap.add_argument("--select", default=".*",
                    help="regex over the module directory names to time")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args()
    global DEV
    if args.dry_run:
        DEV = "cpu"
        drv = DryDriver()
    else:
        torch.cuda.init()
        torch.zeros(1, device=DEV)
        drv = Driver()
    runtime = ctypes.CDLL(os.path.abspath(args.runtime))
    gen = torch.Generator().manual_seed(1234)
    result = {"device": drv.name(), "sms": drv.sm_count(),
              "torch": torch.__version__, "cuda": torch.version.cuda,
              "rows": []}
    if not args.only and not args.dry_run:
        copy_gbs, mm = roofs(args.warmup, args.iters)
        result["copy_gbs"], result["matmul_tflops"] = copy_gbs, mm
        print(f"# {drv.name()} ({drv.sm_count()} SMs): copy {copy_gbs:.0f} "
              f"GB/s, bf16 matmul {mm:.0f} TFLOP/s", flush=True)
    decode_shapes = {"1x32768": [32768], "16x8192": [8192] * 16,
                     "64x2048": [2048] * 64, "256x512": [512] * 256,
                     "64x16384skew": [16384] + [512] * 63,
                     "16x32768skew": [32768] + [1024] * 15}
    prefill_shapes = {"1x512": (1, 512), "1x2048": (1, 2048),
                      "1x8192": (1, 8192), "16x512": (16, 512),
                      "4x2048": (4, 2048)}
    if args.dry_run:
        decode_shapes = {"1x300": [300], "3x40skew": [40, 1, 17]}
        prefill_shapes = {"1x70": (1, 70), "2x33": (2, 33)}
    jobs = []
    for name in sorted(os.listdir(args.modules)):
        mdir = os.path.join(args.modules, name)
        if not os.path.isdir(mdir) or not re.fullmatch(args.select, name):
            continue
        m = re.fullmatch(r"decode_(f16|bf16)_g(\d+)(_\w+)?", name)
        if m:
            for shape, lens in decode_shapes.items():
                jobs.append((name, shape, lambda mdir=mdir, m=m, lens=lens:
                             decode_case(drv, runtime, mdir, m.group(1),
                                         int(m.group(2)), lens, args, gen)))
        m = re.fullmatch(r"prefill_(f16|bf16)_(causal|none)", name)
        if m:
            for shape, (b, n) in prefill_shapes.items():
                jobs.append((name, shape, lambda mdir=mdir, m=m, b=b, n=n:
                             prefill_case(drv, runtime, mdir, m.group(1),
                                          m.group(2) == "causal", b, n, args,
                                          gen)))
    for name, shape, job in jobs:
        if args.only and args.only != f"{name}:{shape}":
            continue
        try:
            row = job()
        except Exception as e:  # report and go on: one failure must not
            row = {"module": name, "shape": shape, "error": repr(e)}  # hide the rest
            print(f"ERROR {name} {shape}: {e!r}", flush=True)
            result["rows"].append(row)
            continue
        row["module"], row["shape"] = name, shape
        result["rows"].append(row)
        if args.json:  # after every row: a timeout keeps what was measured
            json.dump(result, open(args.json, "w"), indent=1)
        perf = (f"{row['gbs']:.0f} GB/s" if "gbs" in row
                else f"{row['tflops']:.1f} TFLOP/s")
        peer = (f", sdpa {row['sdpa_us']:.1f} us" if "sdpa_us" in row else "")
        print(f"{'FAIL' if row['failures'] else 'ok'} {name} {shape}: "
              f"{row['time_us']:.1f} us, {perf}{peer}; max rel err "
              f"{row['max_rel_err']:.2e}, lse {row['max_lse_err']:.1e}, "
              f"{row['failures']} failing; {len(row['kernels'])} launches",
              flush=True)
    if args.json:
        json.dump(result, open(args.json, "w"), indent=1)


if __name__ == "__main__":
    main()
