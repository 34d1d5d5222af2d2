"""pytest setup: kvir from the source tree (python/), kernels cached in a
fresh directory per session, seeded inputs."""
import os
import sys
import zlib

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))


@pytest.fixture(scope="session")
def cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("kvir-cache"))


@pytest.fixture
def rng(request):
    # A seed per test, stable across runs.
    return np.random.default_rng(zlib.crc32(request.node.name.encode()))


TOLERANCE = {"f32": 1e-5, "f16": 2e-3, "bf16": 1.6e-2}


def poisoned(shape, dtype):
    """A NaN-filled output: a value the kernel did not write fails."""
    a = np.empty(shape, dtype=dtype)
    a.fill(np.nan)
    return a


def paged_batch(rng, lens, page_size, heads, dim, dtype, layout="NHD"):
    """A paged cache (pages in random order, one spare) holding requests of
    `lens` keys, with its CSR tables and each request's K and V; the slots
    no request owns are NaN."""
    pages = [-(-n // page_size) for n in lens]
    total = sum(pages) + 1
    order = rng.permutation(total).astype(np.int32)
    indptr = np.concatenate([[0], np.cumsum(pages)]).astype(np.int32)
    indices = order[:sum(pages)].copy()
    last = np.array([n - (p - 1) * page_size if p else 0
                     for n, p in zip(lens, pages)], np.int32)
    if layout == "NHD":
        pool = rng.uniform(-1, 1, (total, 2, page_size, heads, dim))
    else:
        pool = rng.uniform(-1, 1, (total, 2, heads, page_size, dim))
    # What no request owns (slots past kv_len, the spare page) is NaN: a
    # kernel that lets it into a result fails.
    owned = np.zeros((total, page_size), dtype=bool)
    for b, n in enumerate(lens):
        tok = np.arange(n)
        owned[indices[indptr[b] + tok // page_size], tok % page_size] = True
    slot_axis = 2 if layout == "NHD" else 3
    np.moveaxis(pool, slot_axis, 1)[~owned] = np.nan
    pool = pool.astype(dtype)
    keys, values = [], []
    for b, n in enumerate(lens):
        tok = np.arange(n)
        page = indices[indptr[b] + tok // page_size]
        slot = tok % page_size
        if layout == "NHD":
            k, v = pool[page, 0, slot], pool[page, 1, slot]
        else:
            k, v = pool[page, 0, :, slot], pool[page, 1, :, slot]
        keys.append(k)
        values.append(v)
    return pool, indptr, indices, last, keys, values


def vllm_pools(keys, values, page, rng):
    """vLLM's K [pages, Hk, D / 8, page, 8] and V [pages, Hk, D, page]
    pools of f16 (NaN where no request's token is) and block tables."""
    hk, d = keys[0].shape[1:]
    pages = [-(-len(k) // page) for k in keys]
    total = sum(pages) + 1
    order = rng.permutation(total)
    tables = np.zeros((len(keys), max(1, max(pages))), np.int32)
    kpool = np.full((total, hk, d // 8, page, 8), np.nan, np.float16)
    vpool = np.full((total, hk, d, page), np.nan, np.float16)
    used = 0
    for b, (k, v) in enumerate(zip(keys, values)):
        tables[b, :pages[b]] = order[used:used + pages[b]]
        used += pages[b]
        t = np.arange(len(k))
        pg, slot = tables[b, t // page], t % page
        kpool[pg, :, :, slot, :] = k.reshape(len(k), hk, d // 8, 8)
        vpool[pg, :, :, slot] = v
    return kpool, vpool, tables, np.array([len(k) for k in keys], np.int32)


def unowned_slots(total_pages, page_size, request_pages, lens):
    """[total_pages, page_size] True where no request's token is: request b
    holds its first lens[b] slots over its pages request_pages[b]. A test
    puts NaN there, so that a kernel letting them into a result fails."""
    owned = np.zeros((total_pages, page_size), dtype=bool)
    for pages, n in zip(request_pages, lens):
        tok = np.arange(n)
        owned[np.asarray(pages)[tok // page_size], tok % page_size] = True
    return ~owned
