"""Merging attention states: FlashInfer's merge_state, merge_state_in_place
and merge_states on kvir's merge kernels."""
import json

from ._wrapping import _FLOATS, _Executor, _backend
from .tensors import Arg, empty_like_arg

_merge_executors = {}


def _merge_executor(spec, chip, cache_dir, views=None):
    key = (json.dumps(spec, sort_keys=True), chip, cache_dir)
    if key not in _merge_executors:
        _merge_executors[key] = _Executor(spec, chip, cache_dir, views)
    return _merge_executors[key]


def merge_state(v_a, s_a, v_b, s_b, lse_base="2", chip=None, cache_dir=None,
                backend="auto"):
    """Merges attention states (v_a, s_a) and (v_b, s_b) of the same rows
    into (v, s): attention over the union of their keys."""
    va = Arg("v_a", v_a).check(_FLOATS)
    rows, heads, dim = (va.shape + [None, None, None])[:3]
    va.check(None, [rows, heads, dim])
    sa = Arg("s_a", s_a).check("f32", [rows, heads])
    vb = Arg("v_b", v_b).check(va.dtype, [rows, heads, dim])
    sb = Arg("s_b", s_b).check("f32", [rows, heads])
    v = empty_like_arg(va, [rows, heads, dim], va.dtype)
    s = empty_like_arg(va, [rows, heads], "f32")
    spec = {"op": "merge_state", "num_heads": heads, "head_dim": dim,
            "dtype": va.dtype, "lse_base": str(lse_base)}
    _merge_executor(spec, chip, cache_dir).run(
        [("in0_out", va), ("in0_lse", sa), ("in1_out", vb), ("in1_lse", sb),
         ("out", Arg("v", v)), ("lse", Arg("s", s))],
        backend=_backend(backend))
    return v, s


def merge_state_in_place(v, s, v_other, s_other, mask=None, lse_base="2",
                         chip=None, cache_dir=None, backend="auto"):
    """FlashInfer's merge_state_in_place: (v, s) becomes the merge of (v, s)
    and (v_other, s_other), in the rows where `mask` (bool [rows], or none:
    every row) is true."""
    merged_v, merged_s = merge_state(v, s, v_other, s_other, lse_base, chip,
                                     cache_dir, backend)
    if mask is None:
        v[...] = merged_v
        s[...] = merged_s
        return
    m = Arg("mask", mask)
    if m.dtype not in ("bool",) or m.shape != [Arg("s", s).shape[0]]:
        raise ValueError(f"mask: dtype {m.dtype}, shape {m.shape}, expected "
                         f"bool [{Arg('s', s).shape[0]}]")
    v[mask] = merged_v[mask]
    s[mask] = merged_s[mask]


def merge_states(v, s, lse_base="2", chip=None, cache_dir=None,
                 backend="auto"):
    """Merges the num_states states of each row: v [rows, num_states,
    heads, head_dim], s [rows, num_states, heads] -> ([rows, heads,
    head_dim], [rows, heads])."""
    va = Arg("v", v).check(_FLOATS)
    if len(va.shape) != 4:
        raise ValueError(f"v: shape {va.shape}, expected [seq_len, "
                         f"num_states, num_heads, head_dim]")
    rows, states, heads, dim = va.shape
    sa = Arg("s", s).check("f32", [rows, states, heads])
    vo = empty_like_arg(va, [rows, heads, dim], va.dtype)
    so = empty_like_arg(va, [rows, heads], "f32")
    spec = {"op": "merge_states", "num_heads": heads, "head_dim": dim,
            "dtype": va.dtype, "lse_base": str(lse_base)}
    # kvir's partitioned states are partition-major: the kernels read the
    # [rows, num_states, ...] buffers transposed.
    transposed = {"in_out": lambda t: t.transpose(0, 1),
                  "in_lse": lambda t: t.transpose(0, 1)}
    _merge_executor(spec, chip, cache_dir, transposed).run(
        [("in_out", va), ("in_lse", sa), ("out", Arg("v_out", vo)),
         ("lse", Arg("s_out", so))], backend=_backend(backend))
    return vo, so
