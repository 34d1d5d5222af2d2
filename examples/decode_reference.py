#!/usr/bin/python3
"""Checks examples/decode.mlir's printed result against numpy in float64.

The inputs are recomputed from the formula the example uses (sin(0.37 i +
phase) rounded to f16) and the page table it declares; attention follows
DESIGN.md section 2. Reads mlir-runner's output on stdin; exits non-zero if
the max relative error exceeds the f32-output tolerance.
"""
import re
import sys

import numpy as np

PAGE, HKV, HQ, D = 4, 2, 4, 8
INDPTR, INDICES, LAST = [0, 2, 2, 5], [3, 0, 4, 1, 2], [1, 0, 1]


def fill(n, phase):
    i = np.arange(n, dtype=np.float32)
    x = (i * np.float32(0.37) + np.float32(phase)).astype(np.float32)
    return np.sin(x).astype(np.float16).astype(np.float64)


def parse(text):
    blocks = re.split(r"Unranked Memref[^\n]*\n", text)[1:]
    out = []
    for block in blocks:
        nums = re.findall(r"-?inf|-?nan|-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", block)
        out.append(np.array([float(v) for v in nums]))
    return out


def main():
    pool = fill(5 * 2 * PAGE * HKV * D, 0.0).reshape(5, 2, PAGE, HKV, D)
    q = fill(3 * HQ * D, 1.3).reshape(3, HQ, D)
    got_o, got_lse = parse(sys.stdin.read())
    got_o, got_lse = got_o.reshape(3, HQ, D), got_lse.reshape(3, HQ)
    worst = 0.0
    for b in range(3):
        pages = INDICES[INDPTR[b]:INDPTR[b + 1]]
        n = len(pages)
        kv_len = PAGE * (n - 1) + LAST[b] if n else 0
        for h in range(HQ):
            if kv_len == 0:
                ok = np.all(got_o[b, h] == 0) and np.all(np.isneginf(got_lse[b, h]))
                worst = max(worst, 0.0 if ok else np.inf)
                continue
            keys = np.array([pool[pages[t // PAGE], 0, t % PAGE, h // 2] for t in range(kv_len)])
            vals = np.array([pool[pages[t // PAGE], 1, t % PAGE, h // 2] for t in range(kv_len)])
            s = keys @ q[b, h] / np.sqrt(D)
            p = np.exp(s - s.max())
            o = p @ vals / p.sum()
            lse2 = (s.max() + np.log(p.sum())) / np.log(2.0)
            err = np.max(np.abs(got_o[b, h] - o)) / max(np.max(np.abs(o)), 1e-6)
            worst = max(worst, err, abs(got_lse[b, h] - lse2) / abs(lse2))
    print(f"max relative error vs float64 numpy reference: {worst:.3e} (tolerance 1e-5)")
    return 0 if worst <= 1e-5 else 1


if __name__ == "__main__":
    sys.exit(main())
