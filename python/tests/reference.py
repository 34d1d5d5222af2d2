"""An independent float64 reference for kvir's Python API tests: attention
and state merging written from docs/Semantics.md, nothing shared with kvir.
"""
import math

import numpy as np


def rotate_half(x, positions, theta, scale):
    """RoPE on the last axis of x [n, ..., D] at `positions` [n]: pairs
    (i, i + D/2) turned by position * scale * theta^(-2i / D)."""
    x = np.asarray(x, dtype=np.float64)
    half = x.shape[-1] // 2
    freq = theta ** (-2.0 * np.arange(half) / x.shape[-1])
    angle = np.asarray(positions, dtype=np.float64)[:, None] * scale * freq
    shape = (len(positions),) + (1,) * (x.ndim - 2) + (half,)
    c, s = np.cos(angle).reshape(shape), np.sin(angle).reshape(shape)
    a, b = x[..., :half], x[..., half:]
    return np.concatenate([a * c - b * s, a * s + b * c], axis=-1)


def attend(q, k, v, positions, causal=False, window_left=-1, soft_cap=0.0,
           sm_scale=None, lse_base="2", rope=None, mask=None, score_mod=None):
    """q [n, Hq, D] rows at `positions` of a request with keys k [m, Hk, D]
    and values v [m, Hk, Dv]: (o [n, Hq, Dv], lse [n, Hq]) in float64.
    `rope`: (theta, scale) of rotate-half RoPE on q and k. `mask`: [n, m]
    bool, keys a row may see. `score_mod(s, h, p, j)`: the logits s [m] of
    head h's row at position p, keys j [m], modified (ALiBi and score_mod
    come before the soft cap, as docs/Semantics.md orders the variants)."""
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    if rope is not None:
        q = rotate_half(q, positions, *rope)
        k = rotate_half(k, np.arange(len(k)), *rope)
    n, hq, d = q.shape
    m, hk, dv = v.shape
    scale = 1.0 / math.sqrt(d) if sm_scale is None else sm_scale
    o = np.zeros((n, hq, dv))
    lse = np.full((n, hq), -np.inf)
    for i in range(n):
        p = positions[i]
        keys = np.arange(m)
        visible = np.ones(m, dtype=bool)
        if causal:
            visible &= keys <= p
        if window_left >= 0:
            visible &= keys >= p - window_left
        if mask is not None:
            visible &= np.asarray(mask[i], dtype=bool)
        if not visible.any():
            continue
        for h in range(hq):
            g = h // (hq // hk)
            s = scale * (k[visible, g] @ q[i, h])
            if score_mod is not None:
                s = np.asarray(score_mod(s, h, p, keys[visible]),
                               dtype=np.float64)
            if soft_cap > 0:
                s = soft_cap * np.tanh(s / soft_cap)
            top = s.max()
            w = np.exp(s - top)
            o[i, h] = (w @ v[visible, g]) / w.sum()
            natural = top + math.log(w.sum())
            lse[i, h] = natural / math.log(2) if lse_base == "2" else natural
    return o, lse


def merge(o_a, l_a, o_b, l_b, lse_base="2"):
    """The merge of two states (float64), per docs/Semantics.md."""
    base = 2.0 if lse_base == "2" else math.e
    o_a, l_a, o_b, l_b = (np.asarray(a, dtype=np.float64)
                          for a in (o_a, l_a, o_b, l_b))
    m = np.maximum(l_a, l_b)
    safe = np.where(np.isfinite(m), m, 0.0)
    w_a = np.where(np.isfinite(l_a), base ** (l_a - safe), 0.0)
    w_b = np.where(np.isfinite(l_b), base ** (l_b - safe), 0.0)
    total = w_a + w_b
    empty = total == 0
    denom = np.where(empty, 1.0, total)
    o = (w_a[..., None] * o_a + w_b[..., None] * o_b) / denom[..., None]
    o[empty] = 0.0
    lse = np.where(empty, -np.inf,
                   safe + np.log(np.where(empty, 1.0, total)) / math.log(base))
    return o, lse


def check(got_o, got_lse, ref_o, ref_lse, rel, lse_tol):
    """Output within `rel` of the reference (relative to each row's largest
    magnitude), LSE within `lse_tol`; NaN never passes; empty rows exact."""
    got_o = np.asarray(got_o, dtype=np.float64)
    got_lse = np.asarray(got_lse, dtype=np.float64)
    assert not np.isnan(got_o).any(), "NaN in the output"
    assert not np.isnan(got_lse).any(), "NaN in the LSE"
    empty = np.isinf(ref_lse)
    assert (got_lse[empty] == -np.inf).all(), "an empty row's LSE is not -inf"
    assert (got_o[empty] == 0).all(), "an empty row's output is not 0"
    scale = np.maximum(np.abs(ref_o).max(axis=-1), 1e-4)
    err = (np.abs(got_o - ref_o).max(axis=-1) / scale)[~empty]
    assert err.size == 0 or err.max() <= rel, f"output error {err.max():.3g}"
    lerr = np.abs(got_lse[~empty] - ref_lse[~empty])
    assert lerr.size == 0 or lerr.max() <= lse_tol, \
        f"LSE error {lerr.max():.3g}"


def fp8_values(kind):
    """The float64 value of each of the 256 fp8 bytes (NaN where the format
    has NaN): e4m3fn (bias 7, no infinities) or e5m2 (bias 15)."""
    exp_bits, bias = (4, 7) if kind == "fp8_e4m3" else (5, 15)
    man_bits = 7 - exp_bits
    values = np.empty(256)
    for b in range(256):
        sign = -1.0 if b & 0x80 else 1.0
        e = (b >> man_bits) & ((1 << exp_bits) - 1)
        m = b & ((1 << man_bits) - 1)
        if kind == "fp8_e4m3" and e == 15 and m == 7:
            values[b] = np.nan
        elif kind == "fp8_e5m2" and e == 31:
            values[b] = np.nan if m else sign * np.inf
        elif e == 0:
            values[b] = sign * m / (1 << man_bits) * 2.0 ** (1 - bias)
        else:
            values[b] = sign * (1 + m / (1 << man_bits)) * 2.0 ** (e - bias)
    return values
