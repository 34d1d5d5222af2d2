"""kvir.distributed over gloo: 2 and 4 CPU processes, each running its
rank's kernels in the emulator (tests/cp_workers.py), checked against the
float64 single-rank reference."""
import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

import cp_workers  # noqa: E402

if not dist.is_available() or not dist.is_gloo_available():
    pytest.skip("torch.distributed with gloo is not available",
                allow_module_level=True)


def spawn(worker, world, tmp_path, cache, options):
    mp.spawn(worker, args=(world, str(tmp_path / "init"), cache, options),
             nprocs=world, join=True)


@pytest.mark.parametrize("world", [2, 4])
def test_decode_uneven_and_empty_shards(tmp_path, cache, world):
    # GQA (8 query heads over 2), soft cap, base-2 LSEs, all-gather.
    spawn(cp_workers.decode_rank, world, tmp_path, cache,
          {"seed": 7 + world, "lengths": [300, 45, 2], "soft_cap": 20.0,
           "empty_shard": True})


def test_decode_over_vllm_pools_with_window(tmp_path, cache):
    # vLLM's layout and block tables on each rank (its DCP shards), global
    # positions for the window.
    spawn(cp_workers.decode_rank, 2, tmp_path, cache,
          {"seed": 17, "lengths": [150, 33], "vllm": True,
           "window_left": 60, "empty_shard": True})


def test_decode_window_alibi_sinks_head_split(tmp_path, cache):
    # Global positions (window, ALiBi), sinks joined once after the merge,
    # base-e LSEs, each rank merging its share of the heads.
    spawn(cp_workers.decode_rank, 4, tmp_path, cache,
          {"seed": 11, "lengths": [200, 70], "window_left": 90,
           "alibi": True, "sinks": True, "lse_base": "e",
           "head_split": True})


@pytest.mark.parametrize("world,causal", [(2, True), (4, True), (2, False)])
def test_ring_prefill(tmp_path, cache, world, causal):
    spawn(cp_workers.ring_rank, world, tmp_path, cache,
          {"seed": 13 + world, "length": 150, "causal": causal})


def test_merge_across_ranks_of_an_int8_group_cache(tmp_path, cache):
    # Any kvir kernel's local state (here an int8-group cache the wrappers
    # do not take) merged across 2 ranks.
    spawn(cp_workers.merge_rank, 2, tmp_path, cache, {"seed": 19})
