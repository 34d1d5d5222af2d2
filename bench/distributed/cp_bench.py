#!/usr/bin/env python3
"""Context-parallel decode: what each rank reads and what the ranks send,
against one rank decoding the whole cache (emulator counters, no GPU).

For WORLD in 1, 2, 4 gloo processes each holding a contiguous 1 / WORLD of
every request's keys, one decode step of kvir.distributed's
ContextParallelDecode (all-gather form and head-split form): the global
bytes the rank's own kernels load and store (its attention and the merge
of the gathered states, emulator counters), and the bytes the collectives
move into the rank (the other ranks' states). Output as a markdown table.

  /usr/bin/python3 bench/distributed/cp_bench.py [--batch 4] [--kv-len 4096]
"""
import argparse
import json
import os
import sys
import tempfile

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "python"))

HQ, HK, D, PAGE = 32, 8, 128, 16


def launched_bytes():
    """Global bytes loaded + stored by the last emulated call."""
    import kvir
    launches = json.loads(kvir.last_launches())
    return sum(l["global_bytes_loaded"] + l["global_bytes_stored"] +
               l.get("tma_bytes_loaded", 0) + l.get("tma_bytes_stored", 0)
               for l in launches)


def rank_main(rank, world, init_file, cache, args, results):
    import torch
    import torch.distributed as dist
    import kvir
    dist.init_process_group("gloo", init_method=f"file://{init_file}",
                            rank=rank, world_size=world)
    rng = np.random.default_rng(3)
    n = args.kv_len
    local = n // world
    pages = -(-local // PAGE)
    pool = rng.uniform(-1, 1, (args.batch * pages, 2, PAGE, HK, D)).astype(
        np.float16)
    indptr = (np.arange(args.batch + 1) * pages).astype(np.int32)
    indices = np.arange(args.batch * pages, dtype=np.int32)
    last = np.full(args.batch, local - (pages - 1) * PAGE, np.int32)
    q = torch.from_numpy(rng.uniform(-1, 1, (args.batch, HQ, D)).astype(
        np.float16))
    row = {}
    for form, split in (("all-gather", False), ("head-split", True)):
        cp = kvir.distributed.ContextParallelDecode(head_split=split,
                                                    cache_dir=cache)
        cp.plan(indptr, indices, last, HQ, HK, D, PAGE)
        local_state = cp._local.run(q, torch.from_numpy(pool), None, None)
        attention = launched_bytes()
        cp.run(q, torch.from_numpy(pool))
        merge = launched_bytes()  # the merge is the last kernel run
        state = args.batch * HQ * (D * 2 + 4)  # f16 out + f32 lse
        received = state * (world - 1) // (world if split else 1)
        row[form] = (attention, merge, received)
        del local_state
    if rank == 0:
        results.put((world, row))
    dist.barrier()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--kv-len", type=int, default=4096)
    args = parser.parse_args()
    import torch.multiprocessing as mp
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    kv_bytes = args.batch * args.kv_len * HK * D * 2 * 2
    print(f"Context-parallel decode: batch {args.batch} x kv_len "
          f"{args.kv_len}, {HQ} query / {HK} KV heads, head dim {D}, f16, "
          f"pages of {PAGE}; KV {kv_bytes / 1e6:.1f} MB in all.\n")
    print("| ranks | form | rank's attention MB | rank's merge MB | "
          "received by the rank MB | rank's total / single-rank decode |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        cache = os.path.join(tmp, "kernels")
        single = None
        for world in (1, 2, 4):
            mp.start_processes(rank_main,
                               args=(world, os.path.join(tmp, f"i{world}"),
                                     cache, args, results),
                               nprocs=world, join=True, start_method="spawn")
            _, row = results.get()
            for form, (attention, merge, received) in row.items():
                if world == 1:
                    single = single or attention
                    if form == "head-split":
                        continue
                total = attention + merge + received
                print(f"| {world} | {form if world > 1 else 'one rank'} | "
                      f"{attention / 1e6:.2f} | "
                      f"{merge / 1e6 if world > 1 else 0:.3f} | "
                      f"{received / 1e6:.3f} | "
                      f"{(total if world > 1 else attention) / single:.3f} |")


if __name__ == "__main__":
    main()
