#!/usr/bin/python3
"""Checks examples/prefill.mlir's printed result against numpy in float64.

Recomputes the inputs from the formula the example uses (sin(0.37 i +
phase) rounded to f16) and its page table, applies the append (each new
row's K and V become the request's last tokens), then attends causally with
bottom-right alignment as docs/Semantics.md states (GQA, sm_scale =
1/sqrt(128), LSE in base 2). Reads kvir-runner's (or mlir-runner's) output
on stdin and exits non-zero if the error exceeds f16's tolerance (2e-3
relative on outputs, 1e-3 on LSEs) or anything is NaN.
"""
import re
import sys

import numpy as np

PAGE, HQ, HKV, D, PAGES = 16, 32, 8, 128, 24
QO_LENS = [7, 64, 1]
KV_LENS = [37, 300, 1]
KV_INDPTR = [0, 3, 22, 23]
INDICES = [(7 * i + 3) % PAGES for i in range(23)]


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
    rows = sum(QO_LENS)
    pool = fill(PAGES * 2 * PAGE * HKV * D, 0.0).reshape(PAGES, 2, PAGE, HKV, D)
    q = fill(rows * HQ * D, 1.3).reshape(rows, HQ, D)
    k_new = fill(rows * HKV * D, 2.1).reshape(rows, HKV, D)
    v_new = fill(rows * HKV * D, 0.7).reshape(rows, HKV, D)
    blocks = parse(sys.stdin.read())
    if len(blocks) != 2:
        print("expected two printed memrefs")
        return 1
    got_o = blocks[0].reshape(rows, HQ, 8)
    got_lse = blocks[1].reshape(rows, HQ)
    err_o = err_lse = 0.0
    row0 = 0
    for b, (qo, n) in enumerate(zip(QO_LENS, KV_LENS)):
        pages = INDICES[KV_INDPTR[b]:KV_INDPTR[b + 1]]
        keys = np.array([pool[pages[t // PAGE], 0, t % PAGE] for t in range(n)])
        vals = np.array([pool[pages[t // PAGE], 1, t % PAGE] for t in range(n)])
        # The append: the request's last qo tokens are its new rows.
        keys[n - qo:] = k_new[row0:row0 + qo]
        vals[n - qo:] = v_new[row0:row0 + qo]
        for i in range(qo):
            visible = n - qo + i + 1
            for h in range(HQ):
                g = h // (HQ // HKV)
                s = keys[:visible, g] @ q[row0 + i, h] / np.sqrt(D)
                p = np.exp(s - s.max())
                o = (p @ vals[:visible, g] / p.sum())[:8]
                lse2 = (s.max() + np.log(p.sum())) / np.log(2.0)
                got = got_o[row0 + i, h]
                err_o = max(err_o, np.max(np.abs(got - o)) / max(np.max(np.abs(o)), 1e-3))
                err_lse = max(err_lse, abs(got_lse[row0 + i, h] - lse2))
        row0 += qo
    bad = np.isnan(got_o).any() or np.isnan(got_lse).any()
    print(f"max relative error of out vs float64 numpy: {err_o:.3e} (tolerance 2e-3)")
    print(f"max absolute error of lse vs float64 numpy: {err_lse:.3e} (tolerance 1e-3)")
    return 0 if (err_o <= 2e-3 and err_lse <= 1e-3 and not bad) else 1


if __name__ == "__main__":
    sys.exit(main())
