#!/usr/bin/python3
"""Checks examples/decode.mlir's printed result against numpy in float64.

The inputs are recomputed from the formula the example uses (sin(0.37 i +
phase) rounded to f16) and the page table it builds; attention follows
docs/Semantics.md (GQA, sm_scale = 1/sqrt(128), LSE in base 2). Reads
mlir-runner's (or kvir-runner's) output on stdin and exits non-zero if the
error exceeds f16's tolerance (2e-3 relative on outputs, which are f16;
1e-3 on LSEs) or anything is NaN.

With --dtype bf16 it checks the same module with every f16 made bf16
(`sed s/f16/bf16/g examples/decode.mlir`): inputs rounded to bf16, outputs
within bf16's 1.6e-2.
"""
import argparse
import re
import sys

import numpy as np

PAGE, HQ, HKV, D = 16, 32, 8, 128
KV_LENS = [0, 1, 37, 300]
INDPTR = [0, 0, 1, 4, 23]
INDICES = [(7 * i + 3) % 24 for i in range(23)]


def to_bf16(x):
    """f32 -> bf16 (round to nearest even on the bits), as float64."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return r.astype(np.uint32).view(np.float32).astype(np.float64)


def fill(n, phase, dtype):
    i = np.arange(n, dtype=np.float32)
    x = (i * np.float32(0.37) + np.float32(phase)).astype(np.float32)
    s = np.sin(x).astype(np.float32)
    return to_bf16(s) if dtype == "bf16" else s.astype(np.float16).astype(np.float64)


def parse(text):
    blocks = re.split(r"Unranked Memref[^\n]*\n", text)[1:]
    out = []
    for block in blocks:
        nums = re.findall(r"-?inf|-?nan|-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", block)
        out.append(np.array([float(v) for v in nums]))
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dtype", choices=["f16", "bf16"], default="f16")
    dtype = parser.parse_args().dtype
    tol_text = "1.6e-2" if dtype == "bf16" else "2e-3"
    tol_o = float(tol_text)
    pool = fill(24 * 2 * PAGE * HKV * D, 0.0, dtype).reshape(24, 2, PAGE, HKV, D)
    q = fill(4 * HQ * D, 1.3, dtype).reshape(4, HQ, D)
    blocks = parse(sys.stdin.read())
    if len(blocks) != 2:
        print("expected two printed memrefs")
        return 1
    got_o = blocks[0].reshape(4, HQ, 8)
    got_lse = blocks[1].reshape(4, HQ)
    err_o = err_lse = 0.0
    for b in range(4):
        pages = INDICES[INDPTR[b]:INDPTR[b + 1]]
        n = KV_LENS[b]
        for h in range(HQ):
            if n == 0:
                ok = np.all(got_o[b, h] == 0) and np.isneginf(got_lse[b, h])
                err_o = max(err_o, 0.0 if ok else np.inf)
                continue
            g = h // (HQ // HKV)
            keys = np.array([pool[pages[t // PAGE], 0, t % PAGE, g] for t in range(n)])
            vals = np.array([pool[pages[t // PAGE], 1, t % PAGE, g] for t in range(n)])
            s = keys @ q[b, h] / np.sqrt(D)
            p = np.exp(s - s.max())
            o = (p @ vals / p.sum())[:8]
            lse2 = (s.max() + np.log(p.sum())) / np.log(2.0)
            err_o = max(err_o, np.max(np.abs(got_o[b, h] - o)) / max(np.max(np.abs(o)), 1e-3))
            err_lse = max(err_lse, abs(got_lse[b, h] - lse2))
    bad = np.isnan(got_o).any() or np.isnan(got_lse).any()
    print(f"max relative error of out vs float64 numpy: {err_o:.3e} (tolerance {tol_text})")
    print(f"max absolute error of lse vs float64 numpy: {err_lse:.3e} (tolerance 1e-3)")
    return 0 if (err_o <= tol_o and err_lse <= 1e-3 and not bad) else 1


if __name__ == "__main__":
    sys.exit(main())
