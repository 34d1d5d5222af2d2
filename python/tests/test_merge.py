"""merge_state / merge_states against the float64 reference."""
import numpy as np
import pytest

import kvir
from conftest import TOLERANCE
from reference import check, merge


@pytest.mark.parametrize("dtype,base", [("float16", "2"), ("float32", "e")])
def test_merge_state(rng, cache, dtype, base):
    rows, heads, dim = 7, 4, 64
    v_a = rng.uniform(-1, 1, (rows, heads, dim)).astype(dtype)
    v_b = rng.uniform(-1, 1, (rows, heads, dim)).astype(dtype)
    s_a = rng.uniform(-5, 5, (rows, heads)).astype(np.float32)
    s_b = rng.uniform(-5, 5, (rows, heads)).astype(np.float32)
    # Empty states: one side, and both (the result is empty too).
    s_a[1, :] = -np.inf
    v_a[1, :] = 0
    s_a[2, 0] = s_b[2, 0] = -np.inf
    v_a[2, 0] = v_b[2, 0] = 0
    v, s = kvir.merge_state(v_a, s_a, v_b, s_b, lse_base=base,
                            cache_dir=cache)
    ref_v, ref_s = merge(v_a, s_a, v_b, s_b, lse_base=base)
    name = kvir.tensors.dtype_name(dtype)
    check(v, s, ref_v, ref_s, TOLERANCE[name], 1e-5)


def test_merge_states(rng, cache):
    rows, states, heads, dim = 5, 3, 2, 128
    v = rng.uniform(-1, 1, (rows, states, heads, dim)).astype(np.float16)
    s = rng.uniform(-4, 4, (rows, states, heads)).astype(np.float32)
    s[0, 1, :] = -np.inf
    v[0, 1, :] = 0
    got_v, got_s = kvir.merge_states(v, s, cache_dir=cache)
    ref_v, ref_s = v[:, 0].astype(np.float64), s[:, 0].astype(np.float64)
    for i in range(1, states):
        ref_v, ref_s = merge(ref_v, ref_s, v[:, i], s[:, i])
    check(got_v, got_s, ref_v, ref_s, TOLERANCE["f16"], 1e-5)
