"""The GPU path without a GPU: wrappers with backend="emulated_driver" run
torch CPU tensors through kvir.gpu.GpuLaunch (the plan from the manifests,
the work schedule of libkvir_runtime.so, the kernel ABI's parameter bytes)
with kvir's emulator in the CUDA driver's place: each launch is checked
against its PTX entry, then run with those exact bytes. Numerics against
the float64 reference."""
import numpy as np
import pytest

import kvir
from conftest import TOLERANCE, paged_batch
from reference import attend, check, merge

torch = pytest.importorskip("torch", reason="python3-torch not installed")


def t(a):
    return torch.from_numpy(np.ascontiguousarray(a))


def nan(shape, dtype):
    return torch.full(shape, float("nan"), dtype=dtype)


class _DecodeBatch:
    """A paged f16 decode batch (head dim 64, pages of 16) through a decode
    wrapper on the emulated driver for `chip` (None: the default)."""

    def __init__(self, rng, cache, lens, hq, hk, chip=None):
        d, page = 64, 16
        self.lens = lens
        (self.pool, indptr, indices, last, self.keys,
         self.values) = paged_batch(rng, lens, page, hk, d, "float16")
        self.q = rng.uniform(-1, 1, (len(lens), hq, d)).astype(np.float16)
        self.w = kvir.BatchDecodeWithPagedKVCacheWrapper(
            cache_dir=cache, backend="emulated_driver", chip=chip)
        self.w.plan(t(indptr), t(indices), t(last), hq, hk, d, page)

    def run(self, **options):
        """Runs into NaN-poisoned outputs; checks them against the float64
        reference; returns the driver that launched the kernels."""
        hq, d = self.q.shape[1:]
        out = nan((len(self.lens), hq, d), torch.float16)
        lse = nan((len(self.lens), hq), torch.float32)
        self.w.run(t(self.q), t(self.pool), out=out, lse=lse, **options)
        for b, n in enumerate(self.lens):
            ref_o, ref_lse = attend(self.q[b:b + 1], self.keys[b],
                                    self.values[b], [n - 1])
            check(out[b:b + 1].float().numpy(), lse[b:b + 1].numpy(), ref_o,
                  ref_lse, TOLERANCE["f16"], 1e-3)
        return self.w._exec.last_driver


@pytest.mark.parametrize("lens,hq,hk", [([37, 1, 100], 8, 2),
                                        ([3000, 20], 4, 1)])
def test_decode(rng, cache, lens, hq, hk):
    _DecodeBatch(rng, cache, lens, hq, hk).run()


@pytest.mark.parametrize("chip,dependent", [("sm_90a", True),
                                             ("sm_80", False)])
def test_split_decode_launches_its_merge_as_a_dependent(rng, cache, chip,
                                                        dependent):
    # One long request splits: on sm_90a the plan launches the merge as a
    # programmatic dependent of the split kernel, and the emulator checks
    # that it touches nothing the split kernel wrote before its
    # griddepcontrol.wait; sm_80 has no griddepcontrol.
    drv = _DecodeBatch(rng, cache, [3000, 20], 4, 1, chip).run()
    names = [k for k, _, _ in drv.launches]
    assert len(names) == 2 and "_split_" in names[0]
    assert names[1].startswith("merge_")
    assert drv.dependent == [False, dependent]


@pytest.mark.parametrize("chip,first", [("sm_90a", True), ("sm_80", False)])
def test_enable_pdl_launches_the_first_kernel_as_a_dependent(rng, cache, chip,
                                                             first):
    # FlashInfer's enable_pdl: the call's first kernel may overlap the
    # stream's previous one where the chip's kernels wait for it (sm_90);
    # the emulator checks it against the grid launched before it (the
    # first call's; a first launch with nothing recorded before it runs
    # plainly).
    batch = _DecodeBatch(rng, cache, [37, 1, 100], 8, 2, chip)
    batch.run(enable_pdl=True)
    assert batch.run(enable_pdl=True).dependent[0] is first


def test_paged_prefill(rng, cache):
    hq, hk, d, page = 4, 2, 64, 16
    kv_lens, qo_lens = [40, 70], [40, 9]
    pool, indptr, indices, last, keys, values = paged_batch(
        rng, kv_lens, page, hk, d, "float16")
    qo = np.concatenate([[0], np.cumsum(qo_lens)]).astype(np.int32)
    q = rng.uniform(-1, 1, (int(qo[-1]), hq, d)).astype(np.float16)
    w = kvir.BatchPrefillWithPagedKVCacheWrapper(cache_dir=cache,
                                                 backend="emulated_driver")
    w.plan(t(qo), t(indptr), t(indices), t(last), hq, hk, d, page,
           causal=True)
    out, lse = w.run(t(q), t(pool), return_lse=True)
    for b in range(2):
        r0, r1, n = qo[b], qo[b + 1], kv_lens[b]
        ref_o, ref_lse = attend(q[r0:r1], keys[b], values[b],
                                list(range(n - (r1 - r0), n)), causal=True)
        check(out[r0:r1].float().numpy(), lse[r0:r1].numpy(), ref_o, ref_lse,
              TOLERANCE["f16"], 2e-3)


@pytest.mark.parametrize("chip", ["sm_90a", "sm_80"])
def test_skewed_prefill_cuts_its_long_tiles(rng, cache, chip):
    # One long causal prompt beside short appends: the host's work schedule
    # (kvir_schedule_prefill_work, from the wrapper's host copies of
    # qo_indptr and the kv lengths) cuts the prompt's query tiles that see
    # the most keys into chunks; the split kernel writes whole tiles final
    # and the cut tiles' partial states, the merge reduces those rows.
    hq, hk, d, page = 4, 1, 64, 16
    kv_lens, qo_lens = [1500, 40, 300], [1500, 3, 1]
    pool, indptr, indices, last, keys, values = paged_batch(
        rng, kv_lens, page, hk, d, "float16")
    qo = np.concatenate([[0], np.cumsum(qo_lens)]).astype(np.int32)
    q = rng.uniform(-1, 1, (int(qo[-1]), hq, d)).astype(np.float16)
    w = kvir.BatchPrefillWithPagedKVCacheWrapper(
        cache_dir=cache, backend="emulated_driver", chip=chip)
    w.plan(t(qo), t(indptr), t(indices), t(last), hq, hk, d, page,
           causal=True)
    out = nan((int(qo[-1]), hq, d), torch.float16)
    lse = nan((int(qo[-1]), hq), torch.float32)
    w.run(t(q), t(pool), out=out, lse=lse)
    names = [k for k, _, _ in w._exec.last_driver.launches]
    assert len(names) == 2 and "_split_" in names[0], names
    assert names[1].startswith("merge_rows"), names
    for b in range(3):
        r0, r1, n = qo[b], qo[b + 1], kv_lens[b]
        ref_o, ref_lse = attend(q[r0:r1], keys[b], values[b],
                                list(range(n - (r1 - r0), n)), causal=True)
        check(out[r0:r1].float().numpy(), lse[r0:r1].numpy(), ref_o, ref_lse,
              TOLERANCE["f16"], 2e-3)


def _two_batches(rng, first, second, page, hk, d):
    """Two batches of (kv_lens, qo_lens) in one pool (a CUDA graph's
    buffers stay where they were captured): the pool, and per batch its CSR
    tables, qo_indptr and each request's K and V."""
    lens = list(first[0]) + list(second[0])
    pool, indptr, indices, last, keys, values = paged_batch(
        rng, lens, page, hk, d, "float16")
    out = []
    for lo, (kv_lens, qo_lens) in [(0, first), (len(first[0]), second)]:
        hi = lo + len(kv_lens)
        out.append({
            "indptr": (indptr[lo:hi + 1] - indptr[lo]).astype(np.int32),
            "indices": indices[indptr[lo]:indptr[hi]].copy(),
            "last": last[lo:hi].copy(), "kv_lens": list(kv_lens),
            "qo": np.concatenate([[0], np.cumsum(qo_lens)]).astype(np.int32),
            "keys": keys[lo:hi], "values": values[lo:hi]})
    return pool, out


@pytest.mark.parametrize("chip", ["sm_90a", "sm_80"])
def test_cuda_graph_prefill_replans_and_replays(rng, cache, chip):
    # FlashInfer's CUDA-graph flow on the emulated driver: use_cuda_graph
    # with preallocated index buffers, plan and run a batch (the run a
    # graph captures), then plan another batch of the same size with fewer
    # rows and run again over the same buffers: the launches -- kernels,
    # grids and parameter bytes, what a captured graph replays -- are the
    # same (fixed grids), plan() rewrote the work schedule they read, and
    # the output is the new batch's; rows past its requests stay unwritten.
    hq, hk, d, page = 4, 1, 64, 16
    pool, batches = _two_batches(rng, ([1500, 40, 300], [1500, 3, 1]),
                                 ([60, 900, 2], [1, 700, 2]), page, hk, d)
    rows = int(batches[0]["qo"][-1])
    i32 = dict(dtype=torch.int32)
    w = kvir.BatchPrefillWithPagedKVCacheWrapper(
        use_cuda_graph=True, qo_indptr_buf=torch.zeros(4, **i32),
        paged_kv_indptr_buf=torch.zeros(4, **i32),
        paged_kv_indices_buf=torch.zeros(len(batches[0]["indices"]) +
                                         len(batches[1]["indices"]), **i32),
        paged_kv_last_page_len_buf=torch.zeros(3, **i32),
        cache_dir=cache, backend="emulated_driver", chip=chip)
    q = torch.from_numpy(
        rng.uniform(-1, 1, (rows, hq, d)).astype(np.float16))
    out = nan((rows, hq, d), torch.float16)
    lse = nan((rows, hq), torch.float32)
    captured = None
    for b in batches:
        w.plan(t(b["qo"]), t(b["indptr"]), t(b["indices"]), t(b["last"]), hq,
               hk, d, page, causal=True)
        out.fill_(float("nan"))
        lse.fill_(float("nan"))
        w.run(q, t(pool), out=out, lse=lse)
        drv = w._exec.last_driver
        launches = list(zip(drv.launches, drv.params))
        names = [k for (k, _, _), _ in launches]
        assert "_split_" in names[0] and names[1].startswith("merge_rows")
        if captured is None:
            captured = launches
        else:
            assert launches == captured, "the replay's launches changed"
        qo, n_rows = b["qo"], int(b["qo"][-1])
        for r in range(3):
            r0, r1, n = qo[r], qo[r + 1], b["kv_lens"][r]
            ref_o, ref_lse = attend(q[r0:r1].numpy(), b["keys"][r],
                                    b["values"][r],
                                    list(range(n - (r1 - r0), n)),
                                    causal=True)
            check(out[r0:r1].float().numpy(), lse[r0:r1].numpy(), ref_o,
                  ref_lse, TOLERANCE["f16"], 2e-3)
        assert torch.isnan(out[n_rows:].float()).all()
        assert torch.isnan(lse[n_rows:]).all()
    # A batch of more rows than the first plan's is refused, as FlashInfer
    # refuses it.
    b = batches[0]
    more = b["qo"].copy()
    more[-1] += 1
    with pytest.raises(ValueError, match="use_cuda_graph's first plan"):
        w.plan(t(more), t(b["indptr"]), t(b["indices"]), t(b["last"]), hq,
               hk, d, page, causal=True)


def test_cuda_graph_decode_replans_and_replays(rng, cache):
    # The decode wrapper's CUDA-graph flow: fixed grids for the buffers'
    # batch; a second batch of other lengths over the same buffers runs the
    # same launches (kernels, grids, parameter bytes) with its own schedule.
    hq, hk, d, page = 8, 2, 64, 16
    pool, batches = _two_batches(rng, ([37, 1, 100], [1, 1, 1]),
                                 ([3000, 20, 2], [1, 1, 1]), page, hk, d)
    i32 = dict(dtype=torch.int32)
    w = kvir.BatchDecodeWithPagedKVCacheWrapper(
        use_cuda_graph=True, paged_kv_indptr_buffer=torch.zeros(4, **i32),
        paged_kv_indices_buffer=torch.zeros(
            len(batches[0]["indices"]) + len(batches[1]["indices"]), **i32),
        paged_kv_last_page_len_buffer=torch.zeros(3, **i32),
        cache_dir=cache, backend="emulated_driver")
    q = torch.from_numpy(rng.uniform(-1, 1, (3, hq, d)).astype(np.float16))
    out, lse = nan((3, hq, d), torch.float16), nan((3, hq), torch.float32)
    captured = None
    for b in batches:
        w.plan(t(b["indptr"]), t(b["indices"]), t(b["last"]), hq, hk, d,
               page)
        out.fill_(float("nan"))
        lse.fill_(float("nan"))
        w.run(q, t(pool), out=out, lse=lse)
        drv = w._exec.last_driver
        launches = list(zip(drv.launches, drv.params))
        if captured is None:
            captured = launches
        else:
            assert launches == captured, "the replay's launches changed"
        for r, n in enumerate(b["kv_lens"]):
            ref_o, ref_lse = attend(q[r:r + 1].numpy(), b["keys"][r],
                                    b["values"][r], [n - 1])
            check(out[r:r + 1].float().numpy(), lse[r:r + 1].numpy(), ref_o,
                  ref_lse, TOLERANCE["f16"], 1e-3)
        # The kept launch reads this batch's schedule: the 3000-key request
        # is cut into chunks, the 37-key one is not. (A stale schedule
        # would still be right, only slow: kernels take the tokens from the
        # tables.)
        (launch,) = w._exec.launches.kept.values()
        merge = launch.keep["merge_indptr"].tolist()
        assert (merge[1] - merge[0] > 1) == (b["kv_lens"][0] == 3000)


def test_merge_states_reads_strided_views(rng, cache):
    # kvir's partitioned states are partition-major: the kernel takes the
    # [rows, states, ...] buffers transposed, its row stride an extent
    # parameter the launcher fills from the tensor's view.
    rows, states, heads, dim = 6, 3, 2, 64
    v = rng.uniform(-1, 1, (rows, states, heads, dim)).astype(np.float16)
    s = rng.uniform(-3, 3, (rows, states, heads)).astype(np.float32)
    got_v, got_s = kvir.merge_states(t(v), t(s), cache_dir=cache,
                                     backend="emulated_driver")
    ref_v, ref_s = v[:, 0].astype(np.float64), s[:, 0].astype(np.float64)
    for i in range(1, states):
        ref_v, ref_s = merge(ref_v, ref_s, v[:, i], s[:, i])
    check(got_v.float().numpy(), got_s.numpy(), ref_v, ref_s,
          TOLERANCE["f16"], 1e-5)


def test_merge_state(rng, cache):
    v_a, v_b = (rng.uniform(-1, 1, (5, 4, 128)).astype(np.float16)
                for _ in range(2))
    s_a, s_b = (rng.uniform(-3, 3, (5, 4)).astype(np.float32)
                for _ in range(2))
    v, s = kvir.merge_state(t(v_a), t(s_a), t(v_b), t(s_b), cache_dir=cache,
                            backend="emulated_driver")
    ref_v, ref_s = merge(v_a, s_a, v_b, s_b)
    check(v.float().numpy(), s.numpy(), ref_v, ref_s, TOLERANCE["f16"], 1e-5)


def test_fp8_decode_passes_its_scales(rng, cache):
    from reference import fp8_values
    values = fp8_values("fp8_e4m3")
    usable = np.nonzero(np.abs(values) <= 2)[0].astype(np.uint8)
    pool_f, indptr, indices, last, _, _ = paged_batch(rng, [300, 9], 16, 2,
                                                      64, "float32")
    pool = rng.choice(usable, size=pool_f.shape)
    pool[np.isnan(pool_f)] = 0x7F  # NaN: the slots no request owns
    q = rng.uniform(-1, 1, (2, 8, 64)).astype(np.float16)
    w = kvir.BatchDecodeWithPagedKVCacheWrapper(cache_dir=cache,
                                                backend="emulated_driver")
    w.plan(t(indptr), t(indices), t(last), 8, 2, 64, 16,
           kv_data_type="float8_e4m3fn")
    out, lse = w.run(t(q), t(pool), return_lse=True, k_scale=0.5,
                     v_scale=2.0)
    for b, n in enumerate([300, 9]):
        tok = np.arange(n)
        pg = indices[indptr[b] + tok // 16]
        ref_o, ref_lse = attend(q[b:b + 1], values[pool[pg, 0, tok % 16]] * 0.5,
                                values[pool[pg, 1, tok % 16]] * 2.0, [n - 1])
        check(out[b:b + 1].float().numpy(), lse[b:b + 1].numpy(), ref_o,
              ref_lse, TOLERANCE["f16"], 2e-3)


@pytest.mark.parametrize("backend", ["emulated_driver", "auto"])
def test_ragged_prefill_copies_by_tma(rng, cache, backend):
    # sm_90a's ragged prefill of head dim 128: the producer copies whole
    # K/V tiles and the query tile by TMA. The plan's tensor maps are encoded on the host (the
    # GPU path: the driver's encoder, here the emulator's; the emulator's
    # own host code: its cuTensorMapEncodeTiled) and copied to the device.
    hq, hk, d = 4, 2, 128
    kv_lens, qo_lens = [200, 70], [200, 9]
    qo = np.concatenate([[0], np.cumsum(qo_lens)]).astype(np.int32)
    kv = np.concatenate([[0], np.cumsum(kv_lens)]).astype(np.int32)
    q = rng.uniform(-1, 1, (int(qo[-1]), hq, d)).astype(np.float16)
    k = rng.uniform(-1, 1, (int(kv[-1]), hk, d)).astype(np.float16)
    v = rng.uniform(-1, 1, (int(kv[-1]), hk, d)).astype(np.float16)
    w = kvir.BatchPrefillWithRaggedKVCacheWrapper(cache_dir=cache,
                                                  backend=backend)
    w.plan(t(qo), t(kv), hq, hk, d, causal=True)
    out, lse = w.run(t(q), t(k), t(v), return_lse=True)
    plan = w._exec.last_kernel.plan()
    maps = {n: a["map"] for n, a in plan.args.items()
            if a["role"] == "tensor_map"}
    # K and V: 64 keys of one head, one 64-column block; the query: 128 / 2
    # rows of the group's 2 heads.
    assert {m["of"]: m["box"] for m in maps.values()} == {
        "k": [64, 1, 64], "v": [64, 1, 64], "q": [64, 2, 64]}
    assert all(m["swizzle_bytes"] == 128 for m in maps.values())
    for b in range(2):
        r0, r1, n = qo[b], qo[b + 1], kv_lens[b]
        ref_o, ref_lse = attend(q[r0:r1], k[kv[b]:kv[b + 1]],
                                v[kv[b]:kv[b + 1]],
                                list(range(n - (r1 - r0), n)), causal=True)
        check(out[r0:r1].float().numpy(), lse[r0:r1].numpy(), ref_o, ref_lse,
              TOLERANCE["f16"], 2e-3)


def test_launch_cache_reuses_a_call_over_the_same_buffers():
    # A CUDA graph captures a call's launches only: the launch (schedule on
    # the device) must come from a run before capture, over the same
    # buffers.
    torch = pytest.importorskip("torch")
    from kvir.gpu import LaunchCache, launch_key
    q, out = torch.zeros(4, 8), torch.zeros(4, 8)
    built = []

    def build():
        built.append(object())
        return built[-1]
    cache = LaunchCache(size=2)

    def key(tensors, lens=(5, 7), scalars=None, stream=0):
        return launch_key(tensors, lens, scalars, "cuda:0", stream)
    first = cache.get(key({"q": q, "out": out}), build)
    assert cache.get(key({"out": out, "q": q}), build, capturing=True) \
        is first
    # Anything a launch's parameters depend on is a new launch.
    for other in [key({"q": q, "out": torch.zeros(4, 8)}),
                  key({"q": q, "out": out}, lens=(5, 8)),
                  key({"q": q, "out": out.view(8, 4)}),
                  key({"q": q, "out": out}, scalars={"k_scale": 2.0}),
                  key({"q": q, "out": out}, stream=1)]:
        with pytest.raises(RuntimeError, match="run it once before"):
            cache.get(other, build, capturing=True)
    cache.get(key({"q": q, "out": out}, stream=1), build)
    cache.get(key({"q": q, "out": out}, stream=2), build)
    # The least recently used fell out of a cache of two.
    assert len(built) == 3
    cache.get(key({"q": q, "out": out}), build)
    assert len(built) == 4


def test_cuda_launch_structures_match_cuda_h(tmp_path):
    # kvir.cuda_driver's ctypes copies of CUlaunchAttribute / CUlaunchConfig
    # (cuLaunchKernelEx) against cuda.h, where CUDA is installed (it is not
    # a Debian package).
    import ctypes
    import os
    import shutil
    import subprocess
    include = "/usr/local/cuda/include"
    cc = shutil.which("cc")
    if not (os.path.exists(os.path.join(include, "cuda.h")) and cc):
        pytest.skip("no CUDA header or C compiler")
    src = tmp_path / "abi.c"
    src.write_text(
        "#include <cuda.h>\n#include <stddef.h>\n#include <stdio.h>\n"
        "int main(void) {\n"
        "  printf(\"%zu %zu %zu %zu %zu %zu %zu %zu %zu\\n\",\n"
        "         sizeof(CUlaunchAttribute), offsetof(CUlaunchAttribute, value),\n"
        "         sizeof(CUlaunchConfig), offsetof(CUlaunchConfig, blockDimX),\n"
        "         offsetof(CUlaunchConfig, sharedMemBytes),\n"
        "         offsetof(CUlaunchConfig, hStream),\n"
        "         offsetof(CUlaunchConfig, attrs),\n"
        "         offsetof(CUlaunchConfig, numAttrs),\n"
        "         (size_t)CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION);\n"
        "  return 0;\n}\n")
    exe = tmp_path / "abi"
    subprocess.run([cc, "-I" + include, str(src), "-o", str(exe)], check=True)
    got = [int(x) for x in subprocess.run(
        [str(exe)], capture_output=True, text=True, check=True).stdout.split()]
    from kvir.cuda_driver import (
        CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION as serialization,
        LaunchAttribute, LaunchConfig)
    assert got == [ctypes.sizeof(LaunchAttribute), LaunchAttribute.value.offset,
                   ctypes.sizeof(LaunchConfig), LaunchConfig.block.offset,
                   LaunchConfig.shared_bytes.offset, LaunchConfig.stream.offset,
                   LaunchConfig.attrs.offset, LaunchConfig.num_attrs.offset,
                   serialization]
