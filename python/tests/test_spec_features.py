"""The spec's dialect features beyond FlashInfer's wrappers, compiled with
kvir.compile and run in the emulator on numpy buffers, against the float64
reference: int8-group caches, split K/V pools of their own widths,
prefill positions, decode top-k selection, sinks, ALiBi slopes and Llama
3.1's RoPE scaling, a cascade over concatenated levels."""
import math

import numpy as np
import pytest

import kvir
from conftest import TOLERANCE, paged_batch, poisoned, unowned_slots
from reference import attend, check


def emulate(cache, spec, *buffers):
    """Runs the spec's kvir_main on `buffers` (in its argument order)."""
    kernel = kvir.compile(spec, "sm_90a", cache)
    kernel.module().emulate("kvir_main", "sm_90a",
                            [("buffer", b.ctypes.data, list(b.shape))
                             for b in buffers])


def csr(lens, page):
    pages = [-(-n // page) for n in lens]
    indptr = np.concatenate([[0], np.cumsum(pages)]).astype(np.int32)
    last = np.array([n - (p - 1) * page if p else 0
                     for n, p in zip(lens, pages)], np.int32)
    return indptr, last


@pytest.mark.parametrize("group", [8, 16])
def test_int8_group_decode(rng, cache, group):
    # Codes and one f16 scale per `group` dims (OpenPPL's layout): the
    # reference reads code * scale.
    lens, page, hk, d, hq = [45, 3], 16, 2, 64, 8
    indptr, last = csr(lens, page)
    pages = int(indptr[-1]) + 1
    indices = rng.permutation(pages).astype(np.int32)[:int(indptr[-1])].copy()
    codes = rng.integers(-127, 128, (pages, 2, page, hk, d)).astype(np.int8)
    scales = rng.uniform(0.002, 0.02,
                         (pages, 2, page, hk, d // group)).astype(np.float16)
    values = codes.astype(np.float64) * np.repeat(
        scales.astype(np.float64), group, axis=-1)
    q = rng.uniform(-1, 1, (2, hq, d)).astype(np.float16)
    out = poisoned((2, hq, d), np.float16)
    lse = poisoned((2, hq), np.float32)
    spec = {"op": "decode", "num_qo_heads": hq, "num_kv_heads": hk,
            "head_dim": d, "page_size": page, "dtype": "f16",
            "kv_dtype": "int8", "quant_group": group}
    emulate(cache, spec, q, codes, scales, indptr, indices, last, out, lse)
    for b, n in enumerate(lens):
        tok = np.arange(n)
        pg = indices[indptr[b] + tok // page]
        k, v = values[pg, 0, tok % page], values[pg, 1, tok % page]
        ref_o, ref_lse = attend(q[b:b + 1], k, v, [n - 1])
        check(out[b:b + 1], lse[b:b + 1], ref_o, ref_lse, TOLERANCE["f16"],
              1e-3)


def test_prefill_positions_over_split_pools(rng, cache):
    # Rows at positions of their own (a chunked prefill's), causal, over K
    # and V pools of their own widths (head dim 128, value dim 64).
    lens, page, hk, d, dv, hq = [60, 20], 16, 2, 128, 64, 4
    indptr, last = csr(lens, page)
    pages = int(indptr[-1]) + 1
    indices = rng.permutation(pages).astype(np.int32)[:int(indptr[-1])].copy()
    kpool = rng.uniform(-1, 1, (pages, page, hk, d)).astype(np.float16)
    vpool = rng.uniform(-1, 1, (pages, page, hk, dv)).astype(np.float16)
    spare = unowned_slots(pages, page, [indices[indptr[b]:indptr[b + 1]]
                                        for b in range(2)], lens)
    kpool[spare] = vpool[spare] = np.nan
    qo = np.array([0, 3, 5], np.int32)
    positions = np.array([10, 33, 59, 4, 19], np.int32)
    q = rng.uniform(-1, 1, (5, hq, d)).astype(np.float16)
    out = poisoned((5, hq, dv), np.float16)
    lse = poisoned((5, hq), np.float32)
    spec = {"op": "prefill", "num_qo_heads": hq, "num_kv_heads": hk,
            "head_dim": d, "head_dim_v": dv, "page_size": page,
            "dtype": "f16", "kv_storage": "split", "causal": True,
            "positions": True}
    emulate(cache, spec, q, qo, kpool, vpool, indptr, indices, last,
            positions, out, lse)
    for b, n in enumerate(lens):
        tok = np.arange(n)
        pg = indices[indptr[b] + tok // page]
        r0, r1 = qo[b], qo[b + 1]
        ref_o, ref_lse = attend(q[r0:r1], kpool[pg, tok % page],
                                vpool[pg, tok % page],
                                list(positions[r0:r1]), causal=True)
        check(out[r0:r1], lse[r0:r1], ref_o, ref_lse, TOLERANCE["f16"], 1e-3)


def test_decode_topk_sinks_and_alibi_slopes(rng, cache):
    # Top-k lists (with -1 padding), per-head sinks joining the denominator
    # (and the LSE), per-head ALiBi slopes: slope * (j - p).
    lens, page, hk, d, hq, topk = [90, 12], 16, 1, 64, 4, 16
    pool, indptr, indices, last, keys, values = paged_batch(
        rng, lens, page, hk, d, "float16")
    lists = np.full((2, topk), -1, np.int32)
    lists[0, :12] = rng.choice(90, 12, replace=False)
    lists[1, 3:8] = rng.choice(12, 5, replace=False)
    sinks = rng.uniform(-1, 3, hq).astype(np.float32)
    slopes = rng.uniform(0.01, 0.2, hq).astype(np.float32)
    q = rng.uniform(-1, 1, (2, hq, d)).astype(np.float16)
    out = poisoned((2, hq, d), np.float16)
    lse = poisoned((2, hq), np.float32)
    spec = {"op": "decode", "num_qo_heads": hq, "num_kv_heads": hk,
            "head_dim": d, "page_size": page, "dtype": "f16",
            "topk": topk, "sinks": True, "alibi": "slopes",
            "lse_base": "e"}
    emulate(cache, spec, q, pool, indptr, indices, last, lists, sinks,
            slopes, out, lse)
    for b, n in enumerate(lens):
        chosen = np.zeros((1, n), bool)
        chosen[0, lists[b][lists[b] >= 0]] = True
        ref_o, ref_lse = attend(
            q[b:b + 1], keys[b], values[b], [n - 1], lse_base="e",
            mask=chosen,
            score_mod=lambda s, h, p, j: s + slopes[h] * (j - p))
        # A sink: one more term e^(sink) in the denominator, no value.
        total = np.exp(ref_lse[0]) + np.exp(sinks.astype(np.float64))
        ref_o = ref_o * (np.exp(ref_lse[0]) / total)[None, :, None]
        check(out[b:b + 1], lse[b:b + 1], ref_o, np.log(total)[None],
              TOLERANCE["f16"], 1e-3)


def _llama31(inv_freq, factor, low, high, original):
    """Llama 3.1's scaled frequencies (docs: kv.rope's description)."""
    out = []
    for f in inv_freq:
        w = 2 * math.pi / f
        if w < original / high:
            out.append(f)
        elif w > original / low:
            out.append(f / factor)
        else:
            s = (original / w - low) / (high - low)
            out.append((1 - s) * f / factor + s * f)
    return np.array(out)


def test_llama31_rope_prefill(rng, cache):
    # Rotate-half RoPE on q and each key at its position, the frequencies
    # scaled as Llama 3.1 scales them (small original_max_position so that
    # all three bands occur at head dim 64).
    lens, hq, d = [40, 7], 2, 64
    theta, factor, low, high, original = 500000.0, 8.0, 1.0, 4.0, 64.0
    qo = np.array([0, 5, 12], np.int32)
    kv = np.array([0, 40, 47], np.int32)
    q = rng.uniform(-1, 1, (12, hq, d)).astype(np.float16)
    k = rng.uniform(-1, 1, (47, hq, d)).astype(np.float16)
    v = rng.uniform(-1, 1, (47, hq, d)).astype(np.float16)
    out = poisoned((12, hq, d), np.float16)
    lse = poisoned((12, hq), np.float32)
    spec = {"op": "prefill", "kv": "ragged", "num_qo_heads": hq,
            "head_dim": d, "dtype": "f16", "causal": True,
            "rope": {"style": "rotate_half", "theta": theta,
                     "factor": factor, "low_freq_factor": low,
                     "high_freq_factor": high,
                     "original_max_position": original}}
    emulate(cache, spec, q, qo, k, v, kv, out, lse)
    freq = _llama31(theta ** (-2.0 * np.arange(d // 2) / d), factor, low,
                    high, original)

    def rotate(x, positions):
        x = x.astype(np.float64)
        angle = np.asarray(positions, np.float64)[:, None] * freq
        c, s = np.cos(angle)[:, None], np.sin(angle)[:, None]
        a, b = x[..., :d // 2], x[..., d // 2:]
        return np.concatenate([a * c - b * s, a * s + b * c], axis=-1)
    for b, n in enumerate(lens):
        r0, r1 = qo[b], qo[b + 1]
        pos = list(range(n - (r1 - r0), n))
        kb = rotate(k[kv[b]:kv[b + 1]], range(n))
        ref_o, ref_lse = attend(rotate(q[r0:r1], pos), kb, v[kv[b]:kv[b + 1]],
                                pos, causal=True)
        # q and K are rotated into f16 before the products: f16's bound.
        check(out[r0:r1], lse[r0:r1], ref_o, ref_lse, TOLERANCE["f16"],
              TOLERANCE["f16"] * 4)


def test_vllm_layout_with_i64_block_tables(rng, cache):
    # vLLM's pools (K [pages, Hk, D / 8, page, 8], V [pages, Hk, D, page])
    # read through i64 block tables (OpenPPL's index type).
    lens, page, hk, d, hq = [50, 17], 16, 2, 64, 4
    pages = [-(-n // page) for n in lens]
    total = sum(pages) + 2
    order = rng.permutation(total)
    tables = np.full((2, max(pages)), -1, np.int64)
    tables[0, :pages[0]] = order[:pages[0]]
    tables[1, :pages[1]] = order[pages[0]:sum(pages)]
    kpool = rng.uniform(-1, 1, (total, hk, d // 8, page, 8)).astype(
        np.float16)
    vpool = rng.uniform(-1, 1, (total, hk, d, page)).astype(np.float16)
    spare = unowned_slots(total, page, [tables[b, :pages[b]]
                                        for b in range(2)], lens)
    np.moveaxis(kpool, 3, 1)[spare] = np.nan
    np.moveaxis(vpool, 3, 1)[spare] = np.nan
    seq_lens = np.array(lens, np.int64)
    q = rng.uniform(-1, 1, (2, hq, d)).astype(np.float16)
    out = poisoned((2, hq, d), np.float16)
    lse = poisoned((2, hq), np.float32)
    spec = {"op": "decode", "num_qo_heads": hq, "num_kv_heads": hk,
            "head_dim": d, "page_size": page, "dtype": "f16",
            "kv_layout": "vllm", "kv_storage": "split",
            "table": "block_table", "index_dtype": "i64"}
    emulate(cache, spec, q, kpool, vpool, tables, seq_lens, out, lse)
    for b, n in enumerate(lens):
        tok = np.arange(n)
        pg, slot = tables[b, tok // page], tok % page
        k = kpool[pg, :, :, slot, :].reshape(n, hk, d)
        v = vpool[pg, :, :, slot]
        ref_o, ref_lse = attend(q[b:b + 1], k, v, [n - 1])
        check(out[b:b + 1], lse[b:b + 1], ref_o, ref_lse, TOLERANCE["f16"],
              1e-3)


def _cascade_case(rng, prefix=37):
    """A 2-level cascade over one paged pool: level 0 one shared prefix for
    all rows, level 1 each request's own keys (tokens laid out prefix
    first, each level's requests starting on a page; NaN elsewhere).
    Returns the spec function's arguments in order and a check of its
    outputs against the float64 reference, where causal and the window see
    positions in the concatenation."""
    page, hq, hk, d = 8, 4, 2, 64
    own = [20, 9, 30]
    rows = [3, 1, 5]
    levels_keys = [[prefix], own]
    tables = []
    total = prefix + sum(own)
    kall = rng.uniform(-1, 1, (total, hk, d)).astype(np.float16)
    vall = rng.uniform(-1, 1, (total, hk, d)).astype(np.float16)
    offsets, cursor = [], 0
    for lens in levels_keys:
        level = []
        for n in lens:
            p = -(-n // page)
            level.append((cursor, n))
            cursor += p
        offsets.append(level)
    pool = np.full((cursor + 1, 2, page, hk, d), np.nan, np.float16)
    starts = [0] + list(np.cumsum([prefix] + own)[:-1])
    flat = 0
    for level in offsets:
        for first_page, n in level:
            t = np.arange(n)
            pool[first_page + t // page, 0, t % page] = kall[starts[flat] + t]
            pool[first_page + t // page, 1, t % page] = vall[starts[flat] + t]
            flat += 1
    qo0 = np.array([0, sum(rows)], np.int32)
    qo1 = np.concatenate([[0], np.cumsum(rows)]).astype(np.int32)
    for level in offsets:
        indptr = np.concatenate([[0], np.cumsum(
            [-(-n // page) for _, n in level])]).astype(np.int32)
        indices = np.concatenate([np.arange(fp, fp + -(-n // page))
                                  for fp, n in level]).astype(np.int32)
        last = np.array([n - (-(-n // page) - 1) * page for _, n in level],
                        np.int32)
        tables.append((indptr, indices, last))
    q = rng.uniform(-1, 1, (sum(rows), hq, d)).astype(np.float16)
    out = poisoned((sum(rows), hq, d), np.float16)
    lse = poisoned((sum(rows), hq), np.float32)
    spec = {"op": "cascade", "levels": 2, "num_qo_heads": hq,
            "num_kv_heads": hk, "head_dim": d, "page_size": page,
            "dtype": "f16", "causal": True, "window_left": 30}
    args = [q, qo0, qo1, pool, *tables[0], *tables[1], out, lse]

    def check_outputs(out, lse):
        for b, r in enumerate(rows):
            r0, r1 = qo1[b], qo1[b + 1]
            own_keys = slice(starts[1 + b], starts[1 + b] + own[b])
            keys = np.concatenate([kall[:prefix], kall[own_keys]])
            values = np.concatenate([vall[:prefix], vall[own_keys]])
            n = prefix + own[b]
            ref_o, ref_lse = attend(q[r0:r1], keys, values,
                                    list(range(n - r, n)), causal=True,
                                    window_left=30)
            check(out[r0:r1], lse[r0:r1], ref_o, ref_lse, TOLERANCE["f16"],
                  1e-3)
    return spec, args, check_outputs


def test_cascade_over_concatenated_levels(rng, cache):
    # Level 0: one shared prefix for all rows; level 1: each request's own
    # keys. Causal and the window see positions in the concatenation.
    spec, args, check_outputs = _cascade_case(rng)
    emulate(cache, spec, *args)
    check_outputs(args[-2], args[-1])


@pytest.mark.parametrize("prefix", [37, 700])
def test_cascade_through_the_gpu_path(rng, cache, prefix):
    # The cascade's chain of plans (positions, two levels, their merge) as
    # kvir.gpu runs it from the manifests' description of kvir_main: its
    # buffers between plans, each level's schedule from its own tables, the
    # kernel ABI; the emulator stands in for the CUDA driver. A prefix of
    # 700 keys is cut into chunks (the split kernel and its merge).
    torch = pytest.importorskip("torch")
    from kvir.emulated_driver import EmulatedDriver
    from kvir.gpu import ProgramLaunch
    spec, args, check_outputs = _cascade_case(rng, prefix)
    kernel = kvir.compile(spec, "sm_90a", cache)
    tensors = [torch.from_numpy(a) for a in args]
    drv = EmulatedDriver(kernel)
    try:
        ProgramLaunch(kernel, tensors, "cpu", drv).run()
    finally:
        drv.release()
    launched = [k for k, _, _ in drv.launches]
    assert launched[0].startswith("cascade_positions"), launched
    assert launched[-1].startswith("merge2"), launched
    assert any("_split_" in k for k in launched) == (prefix > 256), launched
    check_outputs(tensors[-2].numpy(), tensors[-1].numpy())


def _ppl_pool(layout, store):
    """OpenPPL's cache_layout `layout` of store [L, 2, T, H, D]."""
    order = {"ppl0": (2, 0, 1, 3, 4), "ppl1": (0, 2, 1, 3, 4),
             "ppl2": (0, 1, 2, 3, 4), "ppl3": (0, 1, 3, 2, 4)}[layout]
    return np.ascontiguousarray(store.transpose(order))


@pytest.mark.parametrize("layout,table,index", [
    ("ppl0", "token_table", "i32"), ("ppl1", "token_offset", "i64"),
    ("ppl2", "token_table", "i64"), ("ppl3", "token_offset", "i32")])
@pytest.mark.parametrize("op", ["decode", "prefill"])
def test_openppl_layouts(rng, cache, layout, table, index, op):
    # Layer 1 of 2 over a token axis: each request's tokens through its
    # cachestarts (a token offset per page, cache_mode 1, or one per
    # request, cache_mode 0). Every token no request owns, and all of layer
    # 0, is NaN.
    lens, page, hk, d, hq, layers = [37, 0, 20], 8, 2, 64, 4, 2
    pages = [-(-n // page) for n in lens]
    tokens = (sum(pages) + 2) * page
    store = np.full((layers, 2, tokens, hk, d), np.nan)
    itype = np.int32 if index == "i32" else np.int64
    if table == "token_table":
        ids = rng.permutation(tokens // page)[:sum(pages)]
        starts = np.zeros((len(lens), max(pages)), itype)
        for b in range(len(lens)):
            first = sum(pages[:b])
            starts[b, :pages[b]] = ids[first:first + pages[b]] * page
        token_of = [starts[b][np.arange(n) // page] + np.arange(n) % page
                    for b, n in enumerate(lens)]
    else:
        # Contiguous rows, at offsets that are no multiple of the page.
        starts = np.array([3, 3 + lens[0] + 5, 3 + lens[0] + 9], itype)
        token_of = [starts[b] + np.arange(n) for b, n in enumerate(lens)]
    for b, n in enumerate(lens):
        store[1, :, token_of[b]] = rng.uniform(-1, 1, (n, 2, hk, d))
    store = store.astype(np.float16)
    pool = _ppl_pool(layout, store)
    kv_lens = np.array(lens, itype)
    spec = {"op": op, "num_qo_heads": hq, "num_kv_heads": hk,
            "head_dim": d, "page_size": page, "dtype": "f16",
            "kv_layout": layout, "layer": 1, "table": table,
            "index_dtype": index}
    qo_lens = [1] * 3 if op == "decode" else [5, 0, 20]
    rows = sum(qo_lens)
    q = rng.uniform(-1, 1, (rows, hq, d)).astype(np.float16)
    out = poisoned((rows, hq, d), np.float16)
    lse = poisoned((rows, hq), np.float32)
    if op == "decode":
        emulate(cache, spec, q, pool, starts, kv_lens, out, lse)
    else:
        spec["causal"] = True
        qo = np.concatenate([[0], np.cumsum(qo_lens)]).astype(itype)
        emulate(cache, spec, q, qo, pool, starts, kv_lens, out, lse)
    row = 0
    for b, n in enumerate(lens):
        k = store[1, 0, token_of[b]]
        v = store[1, 1, token_of[b]]
        r = slice(row, row + qo_lens[b])
        ref_o, ref_lse = attend(q[r], k, v,
                                list(range(n - qo_lens[b], n)), causal=True)
        check(out[r], lse[r], ref_o, ref_lse, TOLERANCE["f16"], 1e-3)
        row += qo_lens[b]


def test_llama_layout(rng, cache):
    # Llama's K and V pools [max_batch, max_seq, H, D] read through token
    # offsets (a request's row: cachestarts[b] = b * max_seq).
    lens, max_seq, hk, d, hq = [30, 7], 64, 1, 128, 8
    kpool = np.full((3, max_seq, hk, d), np.nan, np.float16)
    vpool = np.full((3, max_seq, hk, d), np.nan, np.float16)
    starts = np.array([2 * max_seq, 0], np.int32)
    for b, n in enumerate(lens):
        row = starts[b] // max_seq
        kpool[row, :n] = rng.uniform(-1, 1, (n, hk, d))
        vpool[row, :n] = rng.uniform(-1, 1, (n, hk, d))
    q = rng.uniform(-1, 1, (2, hq, d)).astype(np.float16)
    out = poisoned((2, hq, d), np.float16)
    lse = poisoned((2, hq), np.float32)
    spec = {"op": "decode", "num_qo_heads": hq, "num_kv_heads": hk,
            "head_dim": d, "page_size": max_seq, "dtype": "f16",
            "kv_layout": "llama", "kv_storage": "split",
            "table": "token_offset"}
    emulate(cache, spec, q, kpool, vpool, starts, np.array(lens, np.int32),
            out, lse)
    for b, n in enumerate(lens):
        row = starts[b] // max_seq
        ref_o, ref_lse = attend(q[b:b + 1], kpool[row, :n], vpool[row, :n],
                                [n - 1])
        check(out[b:b + 1], lse[b:b + 1], ref_o, ref_lse, TOLERANCE["f16"],
              1e-3)


def test_int8_groups_in_an_openppl_cache(rng, cache):
    # OpenPPL's int8 cache: codes and one f16 scale per 16 dims, both in
    # cache_layout 3 (the scales with D / 16 in place of D), layer 0 of 1.
    lens, page, hk, d, hq, group = [19, 40], 4, 2, 64, 4, 16
    tokens = 72
    codes = np.zeros((1, 2, tokens, hk, d), np.int8)
    scales = np.full((1, 2, tokens, hk, d // group), np.nan, np.float16)
    starts = np.array([0, 24], np.int32)
    for b, n in enumerate(lens):
        t = starts[b] + np.arange(n)
        codes[0, :, t] = rng.integers(-127, 128, (n, 2, hk, d))
        scales[0, :, t] = rng.uniform(0.002, 0.02, (n, 2, hk, d // group))
    q = rng.uniform(-1, 1, (2, hq, d)).astype(np.float16)
    out = poisoned((2, hq, d), np.float16)
    lse = poisoned((2, hq), np.float32)
    spec = {"op": "decode", "num_qo_heads": hq, "num_kv_heads": hk,
            "head_dim": d, "page_size": page, "dtype": "f16",
            "kv_dtype": "int8", "quant_group": group, "kv_layout": "ppl3",
            "table": "token_offset"}
    emulate(cache, spec, q, _ppl_pool("ppl3", codes),
            _ppl_pool("ppl3", scales), starts, np.array(lens, np.int32), out,
            lse)
    values = codes.astype(np.float64) * np.repeat(
        scales.astype(np.float64), group, axis=-1)
    for b, n in enumerate(lens):
        t = starts[b] + np.arange(n)
        ref_o, ref_lse = attend(q[b:b + 1], values[0, 0, t], values[0, 1, t],
                                [n - 1])
        check(out[b:b + 1], lse[b:b + 1], ref_o, ref_lse, TOLERANCE["f16"],
              1e-3)


def test_openppl_decode_through_the_gpu_path(rng, cache):
    # The spec's launch plan run as kvir.gpu runs it (sizes from the
    # tensors, the work schedule from kv_lengths, the kernel ABI), the
    # emulator standing in for the CUDA driver; one request is long enough
    # to be split.
    torch = pytest.importorskip("torch")
    from kvir.emulated_driver import EmulatedDriver
    from kvir.gpu import GpuLaunch
    lens, page, hk, d, hq = [3000, 9], 16, 1, 64, 4
    pages = [-(-n // page) for n in lens]
    tokens = (sum(pages) + 1) * page
    store = np.full((1, 2, tokens, hk, d), np.nan)
    ids = rng.permutation(tokens // page)[:sum(pages)]
    starts = np.zeros((2, max(pages)), np.int32)
    starts[0, :pages[0]] = ids[:pages[0]] * page
    starts[1, :pages[1]] = ids[pages[0]:] * page
    token_of = [starts[b][np.arange(n) // page] + np.arange(n) % page
                for b, n in enumerate(lens)]
    for b, n in enumerate(lens):
        store[0, :, token_of[b]] = rng.uniform(-1, 1, (n, 2, hk, d))
    store = store.astype(np.float16)
    spec = {"op": "decode", "num_qo_heads": hq, "num_kv_heads": hk,
            "head_dim": d, "page_size": page, "dtype": "f16",
            "kv_layout": "ppl2", "table": "token_table"}
    kernel = kvir.compile(spec, "sm_90a", cache)
    q = rng.uniform(-1, 1, (2, hq, d)).astype(np.float16)
    t = torch.from_numpy
    out, lse = t(poisoned((2, hq, d), np.float16)), \
        t(poisoned((2, hq), np.float32))
    tensors = {"q": t(q), "pool": t(_ppl_pool("ppl2", store)),
               "cachestarts": t(starts),
               "kv_lens": t(np.array(lens, np.int32)), "out": out,
               "lse": lse}
    drv = EmulatedDriver(kernel)
    try:
        launch = GpuLaunch(kernel.plan(), tensors, lens, "cpu", drv)
        launch.run()
    finally:
        drv.release()
    assert any("merge" in k for k, _, _ in drv.launches), drv.launches
    for b, n in enumerate(lens):
        ref_o, ref_lse = attend(q[b:b + 1], store[0, 0, token_of[b]],
                                store[0, 1, token_of[b]], [n - 1])
        check(out[b:b + 1].numpy(), lse[b:b + 1].numpy(), ref_o, ref_lse,
              TOLERANCE["f16"], 1e-3)


def _mla_cache(rng, lens, page, dc, dp):
    """An MLA cache (ckv, kpe pools) over CSR tables, NaN where no request's
    token is, and each request's (ckv, kpe) rows."""
    indptr, last = csr(lens, page)
    pages = int(indptr[-1]) + 1
    indices = rng.permutation(pages).astype(np.int32)[:int(indptr[-1])].copy()
    ckv = rng.uniform(-1, 1, (pages, page, dc)).astype(np.float16)
    kpe = rng.uniform(-1, 1, (pages, page, dp)).astype(np.float16)
    spare = unowned_slots(pages, page, [indices[indptr[b]:indptr[b + 1]]
                                        for b in range(len(lens))], lens)
    ckv[spare] = kpe[spare] = np.nan
    rows = []
    for b, n in enumerate(lens):
        tok = np.arange(n)
        pg = indices[indptr[b] + tok // page]
        rows.append((ckv[pg, tok % page], kpe[pg, tok % page]))
    return ckv, kpe, indptr, indices, last, rows


@pytest.mark.parametrize("multi_row", [False, True])
def test_sparse_mla_with_sinks_and_alibi(rng, cache, multi_row):
    # DeepSeek-V3.2's sparse MLA: each query row attends the keys of its
    # top-k list (-1 pads), here with sinks and the paper's ALiBi slopes;
    # several causal rows per request with `rows`.
    lens, page, h, dc, dp, topk = [300, 20], 64, 16, 512, 64, 32
    qo_lens = [2, 3] if multi_row else [1, 1]
    ckv, kpe, indptr, indices, last, keys = _mla_cache(rng, lens, page, dc,
                                                       dp)
    qo = np.concatenate([[0], np.cumsum(qo_lens)]).astype(np.int32)
    nrows = int(qo[-1])
    lists = np.full((nrows, topk), -1, np.int32)
    for b, n in enumerate(lens):
        for i in range(qo_lens[b]):
            p = n - qo_lens[b] + i
            pick = rng.choice(p + 1, min(p + 1, topk - 3), replace=False)
            lists[qo[b] + i, :len(pick)] = pick
    q_nope = rng.uniform(-1, 1, (nrows, h, dc)).astype(np.float16)
    q_pe = rng.uniform(-1, 1, (nrows, h, dp)).astype(np.float16)
    sinks = rng.uniform(-1, 3, h).astype(np.float32)
    out = poisoned((nrows, h, dc), np.float16)
    lse = poisoned((nrows, h), np.float32)
    scale = 1 / math.sqrt(192)
    spec = {"op": "mla_decode", "num_heads": h, "head_dim_ckv": dc,
            "head_dim_kpe": dp, "page_size": page, "dtype": "f16",
            "sm_scale": scale, "topk": topk, "sinks": True,
            "alibi": "standard", "lse_base": "e"}
    buffers = [q_nope, q_pe, ckv, kpe, indptr, indices, last, lists, sinks,
               out, lse]
    if multi_row:
        spec.update(rows=True, causal=True)
        buffers.insert(2, qo)
    emulate(cache, spec, *buffers)
    slopes = 2.0 ** (-8.0 * (np.arange(h) + 1) / h)
    for b, n in enumerate(lens):
        r = slice(qo[b], qo[b + 1])
        chosen = np.zeros((qo_lens[b], n), bool)
        for i, row in enumerate(lists[r]):
            chosen[i, row[row >= 0]] = True
        qcat = np.concatenate([q_nope[r], q_pe[r]], axis=-1)
        kcat = np.concatenate(keys[b], axis=-1)[:, None]
        ref_o, ref_lse = attend(
            qcat, kcat, keys[b][0][:, None],
            list(range(n - qo_lens[b], n)), causal=multi_row,
            sm_scale=scale, lse_base="e", mask=chosen,
            score_mod=lambda s, hh, p, j: s + slopes[hh] * (j - p))
        total = np.exp(ref_lse) + np.exp(sinks.astype(np.float64))[None]
        ref_o = ref_o * (np.exp(ref_lse) / total)[..., None]
        check(out[r], lse[r], ref_o, np.log(total), TOLERANCE["f16"], 1e-3)


def test_a_function_kvir_gpu_cannot_replay_says_why(rng, cache, tmp_path):
    # A decode in a loop of the function's own: the manifests describe it
    # by the reason, which ProgramLaunch raises; a cascade has no single
    # plan for GpuLaunch.
    torch = pytest.importorskip("torch")
    from kvir.gpu import ProgramLaunch
    from kvir.plan_launch import PlanError
    kvt = ("!kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, "
           "head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, "
           "table = csr>")
    text = f"""
func.func @kvir_main(%n: index, %q: memref<?x8x64xf16>,
    %pool: memref<?x2x16x2x64xf16>, %ip: memref<?xi32>, %ix: memref<?xi32>,
    %last: memref<?xi32>, %o: memref<?x8x64xf16>, %lse: memref<?x8xf32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %kv = kv.paged_view pools(%pool : memref<?x2x16x2x64xf16>)
      tables(%ip, %ix, %last : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      : {kvt}
  scf.for %i = %c0 to %n step %c1 {{
    %s = kv.decode %q, %kv : memref<?x8x64xf16>, {kvt}
        -> !kv.state<?x8x64xf16, base = 2>
    kv.store_state %s, %o, %lse : !kv.state<?x8x64xf16, base = 2>,
        memref<?x8x64xf16>, memref<?x8xf32>
  }}
  return
}}"""
    kvir.Module.parse(text).compile("sm_80", str(tmp_path))

    class Compiled:
        directory = str(tmp_path)
    with pytest.raises(PlanError, match="kvir.gpu cannot run 'kvir_main': "
                                        "it launches kernels in a loop"):
        ProgramLaunch(Compiled(), [], "cpu")
    spec, args, _ = _cascade_case(rng)
    kernel = kvir.compile(spec, "sm_90a", cache)
    with pytest.raises(PlanError, match="takes 12 arguments, got 11"):
        ProgramLaunch(kernel, [torch.from_numpy(a) for a in args[:-1]], "cpu")
    with pytest.raises(PlanError, match="kvir.gpu.ProgramLaunch"):
        kernel.plan()
