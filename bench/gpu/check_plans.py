#!/usr/bin/env python3
"""Plans calls of kvir-translate's manifests without a GPU.

For each module directory and batch of kv lengths: evaluates the plan's
sizes, runs its work schedule through libkvir_runtime.so, builds the
launches exactly as time_attention.py does on a GPU (plan_launch.py), and
checks each against the PTX (the kernel exists, the parameter count of its
.entry matches). Prints one line per launch, for FileCheck:

  <module> <op> <lens>: <direct|split> <kernel> grid [x, y, z] block [...]

  check_plans.py --runtime libkvir_runtime.so DIR:OP:LEN,LEN,...  ...
OP is decode or prefill (prefill: qo_len = kv_len per request); heads and
head dim come from the plan's q, page size and KV heads from its pool.
"""
import argparse
import ctypes
import os
import sys

# kvir's Python package: python/ in the source tree, beside this script in
# a bundle (bundle.sh).
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [_here, os.path.join(_here, "..", "..", "python")]
from kvir.cuda_driver import DryDriver  # noqa: E402
from kvir.plan_launch import Plan, PlanError  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runtime", required=True)
    ap.add_argument("calls", nargs="+")
    args = ap.parse_args()
    runtime = ctypes.CDLL(os.path.abspath(args.runtime))
    drv = DryDriver()
    bad = 0
    for call in args.calls:
        mdir, op, lens_text = call.rsplit(":", 2)
        lens = [int(x) for x in lens_text.split(",")]
        plan = Plan(mdir, "kv." + op)
        q = plan.args["q"]
        heads, dim = q["shape"][1], q["shape"][2]
        pool = plan.args["pool"]["shape"]
        page, kv_heads = pool[-3], pool[-2]
        pages = [-(-n // page) for n in lens]
        batch, nnz = len(lens), (len(lens) if op == "decode" else sum(lens))
        shapes = {"q": [nnz, heads, dim], "qo_indptr": [batch + 1],
                  "pool": [sum(pages)] + pool[1:], "kv_indptr": [batch + 1],
                  "kv_indices": [sum(pages)], "kv_last_page_len": [batch]}
        try:
            env = plan.sizes(shapes)
            qo = [0]
            for n in (lens if op != "decode" else [1] * batch):
                qo.append(qo[-1] + n)
            sched = plan.schedule(runtime, lens, env, qo)
            buffers = {}
            for name, a in plan.args.items():
                if a["role"] in ("input", "output", "schedule") or (
                        a["role"] == "workspace" and plan.split(env)):
                    buffers[name] = (drv.alloc(16), plan.shape_of(name, env))
            # Tensor maps over their (row-major) sources, as the GPU path
            # encodes them.
            for name, a in plan.args.items():
                if a["role"] == "tensor_map":
                    m = a["map"]
                    src = buffers[m["of"]]
                    ptr = drv.alloc(128)
                    drv.upload(ptr, drv.encode_tensor_map(m, src[0], src[1]))
                    buffers[name] = (ptr, plan.shape_of(name, env))
            for kernel, grid, block, smem, params, dependent in \
                    plan.launches(buffers, env):
                drv.launch(plan.ptx, kernel, grid, block, smem, params,
                           dependent=dependent)
                print(f"{os.path.basename(mdir)} {op} {lens_text}: "
                      f"{'split' if plan.split(env) else 'direct'} {kernel} "
                      f"grid {grid} block {block}"
                      + (f" items {env['num_work']}" if sched else "")
                      + (" dependent" if dependent else ""))
        except (PlanError, RuntimeError) as e:
            bad += 1
            print(f"FAIL {call}: {e}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
