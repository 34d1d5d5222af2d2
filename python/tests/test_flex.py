"""kvir.flex_attention: FlexAttention's score_mod / mask_mod traced into
kv regions, against a float64 reference that evaluates the same Python
functions as FlexAttention defines them (scores scaled before score_mod,
masked scores -inf, fully masked rows 0 with LSE -inf, natural-log LSE),
on the emulator and on the GPU path with an emulated driver."""
import math

import pytest

import kvir
from conftest import TOLERANCE

torch = pytest.importorskip("torch")


def reference(q, k, v, score_mod=None, mask_mod=None, scale=None):
    """FlexAttention in float64: (out [B, Hq, L, Ev], lse [B, Hq, L])."""
    q, k, v = (t.double() for t in (q, k, v))
    B, Hq, L, E = q.shape
    Hk, S = k.shape[1], k.shape[2]
    scale = E ** -0.5 if scale is None else scale
    qi = torch.arange(L)[:, None]
    kj = torch.arange(S)[None, :]
    out = torch.zeros(B, Hq, L, v.shape[3], dtype=torch.float64)
    lse = torch.full((B, Hq, L), -math.inf, dtype=torch.float64)
    for b in range(B):
        for h in range(Hq):
            g = h // (Hq // Hk)
            s = scale * (q[b, h] @ k[b, g].T)
            tb, th = torch.tensor(b), torch.tensor(h)
            if score_mod is not None:
                s = score_mod(s, tb, th, qi, kj).double().expand(L, S)
            if mask_mod is not None:
                keep = mask_mod(tb, th, qi, kj).expand(L, S)
                s = torch.where(keep, s, torch.tensor(-math.inf,
                                                      dtype=torch.float64))
            for i in range(L):
                if torch.isinf(s[i]).all():
                    continue
                top = s[i].max()
                w = torch.exp(s[i] - top)
                out[b, h, i] = (w @ v[b, g]) / w.sum()
                lse[b, h, i] = top + torch.log(w.sum())
    return out, lse


def check(got, got_lse, ref, ref_lse, dtype):
    got, got_lse = got.double(), got_lse.double()
    assert not torch.isnan(got).any() and not torch.isnan(got_lse).any()
    rel = TOLERANCE[kvir.tensors.dtype_name(dtype)]
    row = ref.abs().amax(dim=-1, keepdim=True).clamp(min=1e-4)
    err = ((got - ref).abs() / row).max().item()
    assert err <= rel, f"max relative error {err} > {rel}"
    empty = torch.isinf(ref_lse)
    assert torch.equal(torch.isinf(got_lse), empty)
    assert (got[empty] == 0).all()
    assert (got_lse[~empty] - ref_lse[~empty]).abs().max().item() <= 1e-3


def tensors(B, Hq, Hk, L, S, E, dtype, seed, Ev=None):
    g = torch.Generator().manual_seed(seed)
    def rand(*shape):
        return (torch.rand(*shape, generator=g) * 2 - 1).to(dtype)
    return (rand(B, Hq, L, E), rand(B, Hk, S, E),
            rand(B, Hk, S, Ev or E))


def run(cache, q, k, v, **kwargs):
    out, lse = kvir.flex_attention(q, k, v, return_lse=True,
                                   cache_dir=cache, **kwargs)
    assert out.shape == (q.shape[0], q.shape[1], q.shape[2], v.shape[3])
    assert lse.shape == q.shape[:3]
    return out, lse


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_no_mods_is_attention(cache, dtype):
    q, k, v = tensors(2, 4, 2, 33, 70, 64, dtype, 1)
    out, lse = run(cache, q, k, v, enable_gqa=True, scale=0.2)
    check(out, lse, *reference(q, k, v, scale=0.2), dtype)


def test_causal_soft_cap_and_alibi_captures(cache):
    # Fewer query rows than keys: FlexAttention's q_idx counts from 0, so
    # its causal mask_mod compares q_idx + (S - L) with kv_idx.
    B, Hq, Hk, L, S, E = 2, 4, 2, 37, 100, 64
    q, k, v = tensors(B, Hq, Hk, L, S, E, torch.float16, 2)
    slopes = torch.tensor([0.5, 0.25, 0.125, 0.0625])

    def causal(b, h, q_idx, kv_idx):
        return q_idx + (S - L) >= kv_idx

    def soft_cap_alibi(score, b, h, q_idx, kv_idx):
        return 20.0 * torch.tanh(score / 20.0) + \
            slopes[h] * (kv_idx - q_idx - (S - L))
    mask = kvir.create_block_mask(causal, None, None, L, S)
    out, lse = run(cache, q, k, v, score_mod=soft_cap_alibi,
                   block_mask=mask, enable_gqa=True)
    check(out, lse, *reference(q, k, v, soft_cap_alibi, causal),
          torch.float16)


def test_document_mask_with_fully_masked_rows(cache):
    # Packed documents (an int32 capture) and-ed with causal; a document id
    # of -1 marks padding rows, which see nothing (0, LSE -inf).
    B, H, L, E = 2, 2, 96, 64
    q, k, v = tensors(B, H, H, L, L, E, torch.bfloat16, 3)
    doc = torch.zeros(B, L, dtype=torch.int32)
    doc[0, 30:] = 1
    doc[0, 70:] = 2
    doc[1, 50:] = 1
    doc[1, 90:] = -1

    def document(b, h, q_idx, kv_idx):
        same = doc[b, q_idx] == doc[b, kv_idx]
        return same & (q_idx >= kv_idx) & (doc[b, q_idx] >= 0)
    out, lse = run(cache, q, k, v,
                   block_mask=kvir.create_block_mask(document, B, None, L, L))
    ref, ref_lse = reference(q, k, v, mask_mod=document)
    assert torch.isinf(ref_lse[1, :, 90:]).all()
    check(out, lse, ref, ref_lse, torch.bfloat16)


def test_where_bias_table_and_bool_capture(cache):
    # A relative-position bias table (f32, 3 indices), torch.where, a bool
    # tensor capture, integer // and %, minimum / clamp.
    B, H, L, S, E = 1, 2, 40, 40, 64
    q, k, v = tensors(B, H, H, L, S, E, torch.float16, 4, Ev=128)
    g = torch.Generator().manual_seed(5)
    bias = torch.rand(H, L, S, generator=g) - 0.5
    keep_head = torch.tensor([True, False])

    def score_mod(score, b, h, q_idx, kv_idx):
        biased = score + bias[h, q_idx, kv_idx]
        near = torch.minimum(q_idx - kv_idx, kv_idx - q_idx) > -8
        damped = torch.where(near, biased, biased * 0.5 - 1.0)
        return torch.where(keep_head[h], damped,
                           torch.clamp(score, -1.0, 1.0)) + (kv_idx % 5) / 4

    def mask_mod(b, h, q_idx, kv_idx):
        return (kv_idx // 8) <= (q_idx // 8) + 1
    out, lse = run(cache, q, k, v, score_mod=score_mod,
                   block_mask=kvir.create_block_mask(mask_mod, None, None, L,
                                                     S))
    check(out, lse, *reference(q, k, v, score_mod, mask_mod), torch.float16)


def test_gpu_path_names_the_captures(cache):
    # The GPU launch path (plan, manifests, kernel ABI) with the emulator as
    # the driver: the captures reach the kernel as capture0, capture1.
    B, H, L, E = 2, 2, 48, 64
    q, k, v = tensors(B, H, H, L, L, E, torch.float16, 6)
    temperature = torch.tensor([1.5, 0.5])
    doc = (torch.arange(L) // 20).to(torch.int32)

    def score_mod(score, b, h, q_idx, kv_idx):
        return score * temperature[h]

    def mask_mod(b, h, q_idx, kv_idx):
        return (doc[q_idx] == doc[kv_idx]) & (q_idx >= kv_idx)
    out, lse = run(cache, q, k, v, score_mod=score_mod,
                   block_mask=kvir.create_block_mask(mask_mod, None, None, L,
                                                     L),
                   backend="emulated_driver")
    check(out, lse, *reference(q, k, v, score_mod, mask_mod), torch.float16)


def _line_of(fn, text):
    import inspect
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def test_untraceable_code_names_the_line(cache):
    q, k, v = tensors(1, 2, 2, 16, 16, 64, torch.float16, 7)

    def branches(score, b, h, q_idx, kv_idx):
        if score > 0:  # data-dependent control flow
            return score
        return -score
    line = _line_of(branches, "if score > 0")
    with pytest.raises(kvir.TraceError,
                       match=rf"test_flex.py:{line}: Python control flow on "
                             rf"a traced value"):
        run(cache, q, k, v, score_mod=branches)

    def sine(score, b, h, q_idx, kv_idx):
        return torch.sin(score)
    line = _line_of(sine, "torch.sin")
    with pytest.raises(kvir.TraceError,
                       match=rf"test_flex.py:{line}: torch.sin is not among "
                             rf"the operations"):
        run(cache, q, k, v, score_mod=sine)

    table = torch.zeros(4, 16)

    def sliced(b, h, q_idx, kv_idx):
        return table[h][q_idx] > 0
    with pytest.raises(kvir.TraceError, match=r"a tensor of 2 dimensions "
                                              r"indexed with 1 values"):
        run(cache, q, k, v,
            block_mask=kvir.create_block_mask(sliced, None, None, 16, 16))


def test_bad_arguments(cache):
    q, k, v = tensors(1, 4, 2, 16, 16, 64, torch.float16, 8)
    with pytest.raises(ValueError, match=r"enable_gqa=True"):
        kvir.flex_attention(q, k, v, cache_dir=cache)
    with pytest.raises(ValueError, match=r"^block_mask: made for"):
        kvir.flex_attention(q, k, v, enable_gqa=True, cache_dir=cache,
                            block_mask=kvir.create_block_mask(
                                lambda b, h, i, j: i >= j, None, None, 8, 16))


def test_f32_and_more_query_rows_than_keys(cache):
    # f32 runs on the decode kernel's rows; with L > S the first rows'
    # positions S - L + q_idx are negative, and a causal-from-the-top mask
    # (kv_idx <= q_idx) still sees q_idx as FlexAttention counts it.
    q, k, v = tensors(2, 2, 2, 20, 50, 64, torch.float32, 11)

    def score_mod(score, b, h, q_idx, kv_idx):
        return score + 0.01 * (kv_idx - q_idx)

    def mask_mod(b, h, q_idx, kv_idx):
        return q_idx + 30 >= kv_idx
    out, lse = run(cache, q, k, v, score_mod=score_mod,
                   block_mask=kvir.create_block_mask(mask_mod, None, None, 20,
                                                     50))
    check(out, lse, *reference(q, k, v, score_mod, mask_mod), torch.float32)

    q, k, v = tensors(1, 2, 2, 50, 20, 64, torch.float16, 12)

    def top_left_causal(b, h, q_idx, kv_idx):
        return kv_idx <= q_idx
    out, lse = run(cache, q, k, v,
                   block_mask=kvir.create_block_mask(top_left_causal, None,
                                                     None, 50, 20))
    check(out, lse, *reference(q, k, v, mask_mod=top_left_causal),
          torch.float16)


def test_tracer_keeps_booleans_unsigned_bytes_and_live_captures(cache):
    # A boolean where (prefix-LM), ~ on an integer (-x - 1), uint8 captures
    # read unsigned, a capture read and dropped (not a kernel argument).
    q, k, v = tensors(1, 2, 2, 24, 24, 64, torch.float16, 9)
    weight = torch.tensor([200, 3, 50, 255], dtype=torch.uint8)
    unused = torch.ones(2)

    def score_mod(score, b, h, q_idx, kv_idx):
        dropped = unused[h]  # noqa: F841
        return score + weight[kv_idx % 4] / 256.0 + (~kv_idx) / 64.0

    def prefix_lm(b, h, q_idx, kv_idx):
        return torch.where(kv_idx < 6, True, q_idx >= kv_idx)
    spec = {}
    captured = kvir.flex.trace_variants(spec, score_mod, prefix_lm)
    assert spec["captures"] == ["memref<4xi8>"] and len(captured) == 1
    out, lse = run(cache, q, k, v, score_mod=score_mod,
                   block_mask=kvir.create_block_mask(prefix_lm, None, None,
                                                     24, 24))
    check(out, lse, *reference(q, k, v, score_mod, prefix_lm), torch.float16)
