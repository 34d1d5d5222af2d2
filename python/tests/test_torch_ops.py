"""kvir's kernel calls as the torch operator kvir::run: registered with its
schema, recorded as one graph node by a tracer that runs nothing (torch.fx's
make_fx over fake tensors, the tracer under AOTAutograd and torch.compile),
and the traced graph, run on new tensors, matches the float64 reference.
torch.compile itself is tested where torch has it (2.0 on)."""
import numpy as np
import pytest

import kvir
from conftest import TOLERANCE, paged_batch, poisoned
from reference import attend, check, merge

torch = pytest.importorskip("torch")
from torch.fx.experimental.proxy_tensor import make_fx  # noqa: E402

LSE_TOL = 1e-3


def _t(array):
    return torch.from_numpy(np.ascontiguousarray(array))


def _nan(shape, dtype):
    return _t(poisoned(shape, dtype))


def _kvir_nodes(graph_module):
    return [n for n in graph_module.graph.nodes
            if n.op == "call_function" and "kvir" in str(n.target)]


class _Runs:
    """Counts the kernel runs (the emulator's or the GPU path's) of every
    kvir call while it is active."""

    def __init__(self, monkeypatch):
        self.count = 0
        real = kvir._wrapping._Executor.run_now

        def counted(executor, *args, **kwargs):
            self.count += 1
            return real(executor, *args, **kwargs)
        monkeypatch.setattr(kvir._wrapping._Executor, "run_now", counted)


def _trace(fn, *example):
    """fn traced over fake tensors: one kvir::run node per kernel call."""
    return make_fx(fn, tracing_mode="fake")(*example)


def test_the_operator_and_its_schema():
    ops = kvir.torch_ops.register()
    schema = str(ops.run.default._schema)
    assert schema == ("kvir::run(int plan, Tensor[] inputs, float[] scalars, "
                      "Tensor(a!) out, Tensor(b!) lse) -> ()")


def test_torch_calls_go_through_the_operator(rng, cache):
    pool, indptr, indices, last, keys, values = paged_batch(
        rng, [37, 5], 16, 2, 64, "float16")
    w = kvir.BatchDecodeWithPagedKVCacheWrapper(cache_dir=cache)
    w.plan(indptr, indices, last, 8, 2, 64, 16)
    q = rng.uniform(-1, 1, (2, 8, 64)).astype(np.float16)
    w.run(q, pool)          # numpy arrays: no torch operator
    assert not w._exec.bindings
    w.run(_t(q), _t(pool))  # torch tensors: one kvir::run plan id
    assert len(w._exec.bindings) == 1
    w.run(_t(q), _t(pool))
    assert len(w._exec.bindings) == 1


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_decode_traced(rng, cache, monkeypatch, dtype):
    lens, hq, hk, d, page = [37, 1, 100], 8, 2, 64, 16
    pool, indptr, indices, last, keys, values = paged_batch(
        rng, lens, page, hk, d, np.float32)
    tdt = getattr(torch, dtype)
    w = kvir.BatchDecodeWithPagedKVCacheWrapper(cache_dir=cache)
    w.plan(indptr, indices, last, hq, hk, d, page, q_data_type=dtype,
           logits_soft_cap=30.0)

    def step(q, cache_, out, lse):
        o, s = w.run(q, cache_, out=out, lse=lse, return_lse=True)
        return o * 2, s

    batch = len(lens)
    runs = _Runs(monkeypatch)
    example = (torch.zeros(batch, hq, d, dtype=tdt), _t(pool).to(tdt),
               torch.zeros(batch, hq, d, dtype=tdt),
               torch.zeros(batch, hq))
    graph = _trace(step, *example)
    assert runs.count == 0, "tracing ran kernels"
    assert len(_kvir_nodes(graph)) == 1
    # The graph on new inputs: out and lse poisoned, written whole.
    q = rng.uniform(-1, 1, (batch, hq, d))
    out, lse = _nan((batch, hq, d), np.float32).to(tdt), \
        _nan((batch, hq), np.float32)
    twice, got_lse = graph(_t(q).to(tdt), _t(pool).to(tdt), out, lse)
    assert runs.count == 1
    q_seen = _t(q).to(tdt).double().numpy()
    for b, n in enumerate(lens):
        k = torch.from_numpy(keys[b]).to(tdt).double().numpy()
        v = torch.from_numpy(values[b]).to(tdt).double().numpy()
        ref_o, ref_lse = attend(q_seen[b:b + 1], k, v, [n - 1],
                                soft_cap=30.0)
        check(out[b:b + 1].double().numpy(), lse[b:b + 1].numpy(), ref_o,
              ref_lse, TOLERANCE[kvir.tensors.dtype_name(dtype)], LSE_TOL)
        check(twice[b:b + 1].double().numpy() / 2, got_lse[b:b + 1].numpy(),
              ref_o, ref_lse, TOLERANCE[kvir.tensors.dtype_name(dtype)],
              LSE_TOL)
    # The trace left nothing of its fake tensors in the wrapper: an eager
    # call gives the graph's result.
    again = w.run(_t(q).to(tdt), _t(pool).to(tdt))
    assert torch.equal(again, out)


def test_prefill_and_merge_traced_as_one_graph(rng, cache, monkeypatch):
    # A cascade by hand: a causal paged prefill over each request's own
    # keys, a ragged prefill over a shared prefix, merged -- three kvir::run
    # nodes in one graph.
    qo, lens, prefix = [3, 5], [9, 21], 40
    hq, hk, d, page = 4, 2, 64, 8
    pool, indptr, indices, last, keys, values = paged_batch(
        rng, lens, page, hk, d, np.float16)
    qo_indptr = np.array([0, 3, 8], np.int32)
    shared_k = rng.uniform(-1, 1, (prefix, hk, d)).astype(np.float16)
    shared_v = rng.uniform(-1, 1, (prefix, hk, d)).astype(np.float16)
    paged = kvir.BatchPrefillWithPagedKVCacheWrapper(cache_dir=cache)
    paged.plan(qo_indptr, indptr, indices, last, hq, hk, d, page,
               causal=True)
    ragged = kvir.BatchPrefillWithRaggedKVCacheWrapper(cache_dir=cache)
    ragged.plan(np.array([0, 8], np.int32), np.array([0, prefix], np.int32),
                hq, hk, d)

    def step(q, pool_, k, v):
        o_own, s_own = paged.run(q, pool_, return_lse=True)
        o_pre, s_pre = ragged.run(q, k, v, return_lse=True)
        return kvir.merge_state(o_pre, s_pre, o_own, s_own)

    runs = _Runs(monkeypatch)
    graph = _trace(step, torch.zeros(8, hq, d, dtype=torch.float16),
                   _t(pool), _t(shared_k), _t(shared_v))
    assert runs.count == 0
    assert len(_kvir_nodes(graph)) == 3
    q = rng.uniform(-1, 1, (8, hq, d)).astype(np.float16)
    got_o, got_lse = graph(_t(q), _t(pool), _t(shared_k), _t(shared_v))
    assert runs.count == 3
    for b in range(2):
        rows = slice(qo_indptr[b], qo_indptr[b + 1])
        positions = list(range(lens[b] - qo[b], lens[b]))
        o_own, s_own = attend(q[rows], keys[b], values[b], positions,
                              causal=True)
        o_pre, s_pre = attend(q[rows], shared_k, shared_v,
                              [prefix] * qo[b])
        ref_o, ref_lse = merge(o_pre, s_pre, o_own, s_own)
        check(got_o[rows].double().numpy(), got_lse[rows].numpy(), ref_o,
              ref_lse, TOLERANCE["f16"], LSE_TOL)


def test_flex_attention_traced(rng, cache, monkeypatch):
    B, H, L, S, E = 2, 4, 6, 30, 64

    def attention(q, k, v, bias):
        # A captured tensor is the graph's input, as torch.compile lifts
        # the tensors a function closes over.
        def score_mod(score, b, h, q_idx, kv_idx):
            return score + bias[h] * (kv_idx - q_idx)
        return kvir.flex_attention(q, k, v, score_mod=score_mod,
                                   cache_dir=cache)

    def rand(*shape):
        return torch.from_numpy(rng.uniform(-1, 1, shape).astype(np.float16))
    runs = _Runs(monkeypatch)
    graph = _trace(attention, rand(B, H, L, E), rand(B, H, S, E),
                   rand(B, H, S, E), rand(H).float())
    assert runs.count == 0
    assert len(_kvir_nodes(graph)) == 1
    q, k, v, bias = rand(B, H, L, E), rand(B, H, S, E), rand(B, H, S, E), \
        rand(H).float()
    got = graph(q, k, v, bias)
    assert runs.count == 1
    slopes = bias.double().numpy()
    for b in range(B):
        ref_o, _ = attend(
            q[b].transpose(0, 1).numpy(), k[b].transpose(0, 1).numpy(),
            v[b].transpose(0, 1).numpy(), list(range(S - L, S)),
            lse_base="e",
            score_mod=lambda s, h, p, j: s + slopes[h] * (j - (p - S + L)))
        check(got[b].transpose(0, 1).double().numpy(),
              np.zeros((L, H)), ref_o, np.zeros((L, H)), TOLERANCE["f16"],
              LSE_TOL)


def test_a_graph_of_a_replaced_plan_says_so(rng, cache):
    pool, indptr, indices, last, keys, values = paged_batch(
        rng, [10], 16, 1, 64, "float16")
    w = kvir.BatchDecodeWithPagedKVCacheWrapper(cache_dir=cache)
    w.plan(indptr, indices, last, 4, 1, 64, 16)
    q = torch.zeros(1, 4, 64, dtype=torch.float16)
    graph = _trace(lambda q_, p_: w.run(q_, p_), q, _t(pool))
    w.plan(indptr, indices, last, 4, 1, 64, 16)
    import gc
    gc.collect()
    with pytest.raises(RuntimeError, match="no longer exists"):
        graph(q, _t(pool))


@pytest.mark.skipif(not hasattr(torch, "compile"),
                    reason=f"torch.compile needs torch >= 2.0; this torch is "
                           f"{torch.__version__}")
def test_decode_under_torch_compile(rng, cache):
    pool, indptr, indices, last, keys, values = paged_batch(
        rng, [37, 5], 16, 2, 64, "float16")
    w = kvir.BatchDecodeWithPagedKVCacheWrapper(cache_dir=cache)
    w.plan(indptr, indices, last, 8, 2, 64, 16)
    step = torch.compile(lambda q_, p_: w.run(q_, p_, return_lse=True),
                         backend="aot_eager")
    q = rng.uniform(-1, 1, (2, 8, 64)).astype(np.float16)
    out, lse = step(_t(q), _t(pool))
    for b, n in enumerate([37, 5]):
        ref_o, ref_lse = attend(q[b:b + 1], keys[b], values[b], [n - 1])
        check(out[b:b + 1].double().numpy(), lse[b:b + 1].numpy(), ref_o,
              ref_lse, TOLERANCE["f16"], LSE_TOL)
