"""Context-parallel attention on torch.distributed.

Attention over a union of key sets is the merge of the attention states
over its parts (docs/Semantics.md, "Context parallelism"): each rank
attends to the keys it holds, producing a state (out, LSE), and the states
are merged -- kvir's merge kernels, over torch.distributed's collectives
(NCCL on GPUs, gloo on CPUs).

- `ContextParallelDecode`: each rank holds a contiguous span of each
  request's keys in its own paged cache (any of the decode wrappers'
  options); `run` attends to it, all-gathers the states and merges them
  (every rank gets the result), or with `head_split=True` exchanges them
  all-to-all so that each rank merges its share of the heads (vLLM's
  reduce-scatter form). Sinks join once, after the merge.
- `merge_across_ranks`: the merge step alone, for a rank's state that any
  kvir kernel computed (every cache layout and table form kvir has).
- `ring_prefill`: a long prompt split into consecutive chunks, one per rank
  (its query rows and their keys); the key chunks travel around the ring
  (send / receive overlapped with the attention of the chunk at hand), each
  rank attending its rows to every chunk at the chunk's global positions
  and merging the partial states as they arrive.
"""
import math

import numpy as np

from ._wrapping import _Executor, _backend, _state_buffers
from .merge import merge_state, merge_states
from .tensors import Arg, dtype_name
from .wrappers import BatchDecodeWithPagedKVCacheWrapper

__all__ = ["ContextParallelDecode", "merge_across_ranks", "ring_prefill"]


def _dist():
    import torch.distributed as dist
    if not dist.is_initialized():
        raise RuntimeError("kvir.distributed: torch.distributed is not "
                           "initialized (torch.distributed.init_process_group)")
    return dist


def _with_sinks(out, lse, sinks, lse_base, merge_args):
    """(out, lse) merged once with each head's sink: the state (0, sink /
    ln base) (docs/Semantics.md, "Sinks")."""
    import torch
    if sinks is None:
        return out, lse
    sinks = torch.as_tensor(sinks, dtype=torch.float32, device=lse.device)
    scale = 1.0 / math.log(2.0) if str(lse_base) == "2" else 1.0
    sink_lse = (sinks * scale).expand_as(lse).contiguous()
    return merge_state(out, lse, torch.zeros_like(out), sink_lse,
                       lse_base=lse_base, **merge_args)


class ContextParallelDecode:
    """Decode with each request's keys sharded over the ranks of `group`.

    Each rank plans with its own tables (the pages of its span of each
    request) and `kv_start` (the global index of its span's first key per
    request; needed with a window or ALiBi, which see global positions)
    and the requests' whole lengths `kv_len`; a rank may hold no key of a
    request (an empty shard, state (0, -inf))."""

    def __init__(self, group=None, kv_layout="NHD", head_split=False,
                 chip=None, cache_dir=None, backend="auto"):
        self.group, self.head_split = group, bool(head_split)
        self.kv_layout = kv_layout
        self.merge_args = {"chip": chip, "cache_dir": cache_dir,
                           "backend": backend}
        self.chip, self.cache_dir, self.backend = chip, cache_dir, backend
        self._local = None

    def plan(self, indptr, indices, last_page_len, num_qo_heads,
             num_kv_heads, head_dim, page_size, kv_len=None, kv_start=None,
             window_left=-1, logits_soft_cap=None, sm_scale=None,
             q_data_type="float16", kv_data_type=None, lse_base="2",
             alibi=False, sinks=None, block_tables=None, seq_lens=None):
        """The rank's tables: CSR (indptr, indices, last_page_len) or block
        tables (block_tables, seq_lens), over its cache in the
        constructor's kv_layout (NHD, HND, or vLLM's K and V pools)."""
        world = _dist().get_world_size(self.group)
        if self.head_split and num_qo_heads % world:
            raise ValueError(f"head_split: {num_qo_heads} query heads over "
                             f"{world} ranks; expected a multiple")
        self.lse_base, self.sinks = str(lse_base), sinks
        positioned = window_left is not None and window_left >= 0 or alibi
        if positioned and (kv_len is None or kv_start is None):
            raise ValueError("kv_len / kv_start: a window or ALiBi sees "
                             "global positions; give each request's whole "
                             "length and this rank's first key")
        # Without a window or ALiBi a state does not depend on where the
        # keys sit: the decode wrapper. With them, a prefill of one row per
        # request at the row's position among this rank's keys.
        self._local = _LocalDecode(
            self, indptr, indices, last_page_len, num_qo_heads, num_kv_heads,
            head_dim, page_size, kv_len, kv_start, window_left,
            logits_soft_cap, sm_scale, q_data_type, kv_data_type, alibi,
            positioned, block_tables, seq_lens)

    def run(self, q, paged_kv_cache, return_lse=False, k_scale=None,
            v_scale=None):
        """The merged (out, lse) of every rank's keys: [batch, H, D] (with
        head_split, this rank's H / world heads, in rank order)."""
        if self._local is None:
            raise RuntimeError("run() before plan()")
        out, lse = self._local.run(q, paged_kv_cache, k_scale, v_scale)
        out, lse = merge_across_ranks(out, lse, self.group, self.head_split,
                                      self.sinks, self.lse_base,
                                      **self.merge_args)
        return (out, lse) if return_lse else out


def merge_across_ranks(out, lse, group=None, head_split=False, sinks=None,
                       lse_base="2", chip=None, cache_dir=None,
                       backend="auto"):
    """The merge of every rank's state (out [rows, H, D], lse [rows, H], in
    base `lse_base`) of the same rows over its own keys: what
    ContextParallelDecode does after its local decode, for a state any kvir
    kernel computed (any cache layout or table form, a kv module's). All
    ranks get the merged [rows, H, D]; with `head_split` each gets its H /
    world heads (rank order). `sinks` (per head) join once, after the
    merge."""
    import torch
    dist = _dist()
    world, rank = dist.get_world_size(group), dist.get_rank(group)
    merge_args = {"chip": chip, "cache_dir": cache_dir, "backend": backend}
    heads = out.shape[1]
    if head_split:
        if heads % world:
            raise ValueError(f"head_split: {heads} heads over {world} ranks; "
                             f"expected a multiple")
        share = heads // world
        send_o = [t.contiguous() for t in out.split(share, dim=1)]
        send_l = [t.contiguous() for t in lse.split(share, dim=1)]
        recv_o = [torch.empty_like(t) for t in send_o]
        recv_l = [torch.empty_like(t) for t in send_l]
        _all_to_all(dist, recv_o, send_o, group)
        _all_to_all(dist, recv_l, send_l, group)
        if sinks is not None:
            sinks = torch.as_tensor(sinks, dtype=torch.float32)[
                rank * share:(rank + 1) * share]
    else:
        recv_o = [torch.empty_like(out) for _ in range(world)]
        recv_l = [torch.empty_like(lse) for _ in range(world)]
        dist.all_gather(recv_o, out.contiguous(), group=group)
        dist.all_gather(recv_l, lse.contiguous(), group=group)
    out, lse = merge_states(torch.stack(recv_o, dim=1).contiguous(),
                            torch.stack(recv_l, dim=1).contiguous(),
                            lse_base=lse_base, **merge_args)
    return _with_sinks(out, lse, sinks, lse_base, merge_args)


def _all_to_all(dist, recv, send, group):
    """recv[s] = rank s's send[this rank], by point-to-point messages (gloo
    has no all_to_all) batched into one group, which NCCL needs to pair each
    rank's sends with its receives without deadlock."""
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    ops = []
    for peer in range(world):
        if peer == rank:
            recv[peer].copy_(send[peer])
            continue
        g = _global(dist, group, peer)
        ops.append(dist.P2POp(dist.isend, send[peer].contiguous(), g, group))
        ops.append(dist.P2POp(dist.irecv, recv[peer], g, group))
    for p in dist.batch_isend_irecv(ops) if ops else []:
        p.wait()


def _global(dist, group, rank):
    """The global rank of `group`'s rank `rank` (what isend / irecv take)."""
    if group is None:
        return rank
    return dist.distributed_c10d._get_global_rank(group, rank)


class _LocalDecode:
    """One rank's share of a context-parallel decode: its keys' state."""

    def __init__(self, cp, indptr, indices, last_page_len, num_qo_heads,
                 num_kv_heads, head_dim, page_size, kv_len, kv_start,
                 window_left, logits_soft_cap, sm_scale, q_data_type,
                 kv_data_type, alibi, positioned, block_tables, seq_lens):
        self.positioned = positioned
        self.wrapper = None
        tables = {"block_tables": block_tables, "seq_lens": seq_lens}
        if not positioned:
            self.wrapper = BatchDecodeWithPagedKVCacheWrapper(
                kv_layout=cp.kv_layout, chip=cp.chip, cache_dir=cp.cache_dir,
                backend=cp.backend)
            self.wrapper.plan(indptr, indices, last_page_len, num_qo_heads,
                              num_kv_heads, head_dim, page_size,
                              logits_soft_cap=logits_soft_cap,
                              q_data_type=q_data_type,
                              kv_data_type=kv_data_type, sm_scale=sm_scale,
                              lse_base=cp.lse_base, **tables)
            return
        from .wrappers import BatchPrefillWithPagedKVCacheWrapper
        batch = len(np.asarray(seq_lens if seq_lens is not None
                               else last_page_len))
        # The row sits at global position kv_len - 1, which is this rank's
        # key index kv_len - 1 - kv_start.
        self.positions = (np.asarray(kv_len, np.int64) - 1 -
                          np.asarray(kv_start, np.int64)).astype(np.int32)
        self.wrapper = BatchPrefillWithPagedKVCacheWrapper(
            kv_layout=cp.kv_layout, chip=cp.chip, cache_dir=cp.cache_dir,
            backend=cp.backend)
        self.wrapper.plan(np.arange(batch + 1, dtype=np.int32), indptr,
                          indices, last_page_len, num_qo_heads, num_kv_heads,
                          head_dim, page_size, window_left=window_left,
                          logits_soft_cap=logits_soft_cap, sm_scale=sm_scale,
                          q_data_type=q_data_type, kv_data_type=kv_data_type,
                          lse_base=cp.lse_base,
                          pos_encoding_mode="ALIBI" if alibi else "NONE",
                          positions=self.positions, **tables)

    def run(self, q, cache, k_scale, v_scale):
        """This rank's state (_state_buffers: NaN-filled on the CPU)."""
        import torch
        q = torch.as_tensor(q)
        spec = self.wrapper.spec
        out, lse = _state_buffers(q.shape[0], q.shape[1],
                                  spec.get("head_dim_v", spec["head_dim"]),
                                  q.dtype, q.device)
        return self.wrapper.run(q, cache, out=out, lse=lse, return_lse=True,
                                k_scale=k_scale, v_scale=v_scale)


def ring_prefill(q, k, v, group=None, causal=True, sm_scale=None,
                 logits_soft_cap=None, lse_base="2", chip=None,
                 cache_dir=None, backend="auto"):
    """Ring attention over one prompt split into consecutive chunks, one per
    rank of `group` in rank order: this rank's query rows q [L, Hq, D] and
    their keys k, v [L, Hk, D] (L may differ between ranks; the rows sit at
    the chunk's global positions). Returns this rank's rows' (out [L, Hq,
    D], lse [L, Hq]) over the whole prompt's keys (causal: those at or
    before each row)."""
    import torch
    dist = _dist()
    world, rank = dist.get_world_size(group), dist.get_rank(group)
    L, hq, d = q.shape
    hk = k.shape[1]
    dev = q.device
    # Every chunk's length and offset.
    lengths = [torch.zeros(1, dtype=torch.int64, device=dev)
               for _ in range(world)]
    dist.all_gather(lengths, torch.tensor([k.shape[0]], dtype=torch.int64,
                                          device=dev), group=group)
    lengths = [int(t) for t in lengths]
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    dtype = dtype_name(q.dtype)
    spec = {"op": "prefill", "kv": "ragged", "num_qo_heads": int(hq),
            "num_kv_heads": int(hk), "head_dim": int(d), "dtype": dtype,
            "causal": bool(causal), "positions": True,
            "lse_base": str(lse_base)}
    if sm_scale is not None:
        spec["sm_scale"] = float(sm_scale)
    if logits_soft_cap:
        spec["logits_soft_cap"] = float(logits_soft_cap)
    executor = _Executor(spec, chip, cache_dir)
    merge_args = {"chip": chip, "cache_dir": cache_dir, "backend": backend}
    # The running state in f32 (each merge would round a 16-bit one again),
    # rounded once at the end.
    out = torch.zeros((L, hq, d), dtype=torch.float32, device=dev)
    lse = torch.full((L, hq), -math.inf, dtype=torch.float32, device=dev)
    q = q.contiguous()
    chunk = (k.contiguous(), v.contiguous())
    row_positions = np.arange(offsets[rank], offsets[rank] + L)
    after = _global(dist, group, (rank + 1) % world)
    before = _global(dist, group, (rank - 1) % world)
    for step in range(world):
        source = (rank - step) % world
        # Pass the chunk at hand on while attending to it (one batch of
        # sends and receives, which NCCL pairs without deadlock).
        pending = []
        if step + 1 < world:
            n = lengths[(source - 1) % world]
            incoming = (torch.empty((n, hk, d), dtype=k.dtype, device=dev),
                        torch.empty((n, hk, d), dtype=v.dtype, device=dev))
            ops = [dist.P2POp(dist.isend, t, after, group) for t in chunk]
            ops += [dist.P2POp(dist.irecv, t, before, group)
                    for t in incoming]
            pending = dist.batch_isend_irecv(ops)
        # A chunk after every row (causal) is skipped: no key is visible.
        if lengths[source] and L and not (causal and source > rank):
            part_out, part_lse = _attend_chunk(
                executor, q, chunk, row_positions - offsets[source], backend)
            out, lse = merge_state(out, lse, part_out.float(), part_lse,
                                   lse_base=lse_base, **merge_args)
        for p in pending:
            p.wait()
        if step + 1 < world:
            chunk = incoming
    return out.to(q.dtype), lse


def _attend_chunk(executor, q, chunk, positions, backend):
    """The state of rows q at `positions` (among the chunk's keys) over the
    chunk: a ragged prefill of one request."""
    import torch
    L, hq, _ = q.shape
    k, v = chunk
    dev = q.device
    out, lse = _state_buffers(L, hq, v.shape[2], q.dtype, dev)
    index = torch.tensor([0, L], dtype=torch.int32, device=dev)
    kv_index = torch.tensor([0, k.shape[0]], dtype=torch.int32, device=dev)
    pos = torch.as_tensor(np.asarray(positions), dtype=torch.int32,
                          device=dev)
    executor.run([("q", Arg("q", q)), ("qo_indptr", Arg("qo_indptr", index)),
                  ("k", Arg("k", k)), ("v", Arg("v", v)),
                  ("kv_indptr", Arg("kv_indptr", kv_index)),
                  ("positions", Arg("positions", pos)),
                  ("out", Arg("out", out)), ("lse", Arg("lse", lse))],
                 [int(k.shape[0])], backend=_backend(backend),
                 qo_indptr=[0, L])
    return out, lse
