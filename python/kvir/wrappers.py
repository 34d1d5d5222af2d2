"""FlashInfer-style attention wrappers over kvir's kernels.

`plan(...)` takes the batch's page tables and the problem's shape and
compiles (or finds in the cache) the kernels; `run(...)` executes them on
numpy arrays or torch CPU tensors (in kvir's emulator) or on torch CUDA
tensors (on the GPU, on the tensors' current stream). The names and
argument orders follow FlashInfer's Python API; LSEs are base 2 (as
FlashInfer's kernels compute and merge them) unless lse_base="e".
"""
import ctypes
import json
import os

import numpy as np

from . import _lib
from .compiler import compile as _compile
from .tensors import Arg, dtype_name, empty_like_arg, host_int_array, \
    same_device

_FLOATS = ("f16", "bf16", "f32")


def _layout(kv_layout):
    text = str(kv_layout).upper()
    if text not in ("NHD", "HND"):
        raise ValueError(f"kv_layout: '{kv_layout}', expected 'NHD' or 'HND'")
    return text.lower()


def _backend(backend):
    """How CPU data runs: "auto" (the emulator runs the spec's function) or
    "emulated_driver" (the GPU launch path, plan, work schedule and kernel
    parameters, with the emulator standing in for the CUDA driver: torch
    CPU tensors). CUDA tensors always run on the GPU."""
    if backend not in ("auto", "emulated_driver"):
        raise ValueError(f"backend: '{backend}', expected 'auto' or "
                         f"'emulated_driver'")
    return backend


def _options(spec, window_left, logits_soft_cap, sm_scale, lse_base,
             pos_encoding_mode, rope_scale=None, rope_theta=None):
    if pos_encoding_mode == "ROPE_LLAMA":
        # FlashInfer's on-the-fly RoPE (rotate-half pairs); its rope_scale
        # divides positions, kvir's scale multiplies them.
        rope = {"style": "rotate_half"}
        if rope_theta is not None:
            rope["theta"] = float(rope_theta)
        if rope_scale is not None:
            if not rope_scale > 0:
                raise ValueError(f"rope_scale: {rope_scale}, expected > 0")
            rope["scale"] = 1.0 / float(rope_scale)
        spec["rope"] = rope
    elif pos_encoding_mode not in (None, "NONE"):
        raise ValueError(f"pos_encoding_mode: '{pos_encoding_mode}', "
                         f"expected 'NONE' or 'ROPE_LLAMA'")
    if window_left is not None and window_left >= 0:
        spec["window_left"] = int(window_left)
    if logits_soft_cap:
        spec["logits_soft_cap"] = float(logits_soft_cap)
    if sm_scale is not None:
        spec["sm_scale"] = float(sm_scale)
    if str(lse_base) not in ("2", "e"):
        raise ValueError(f"lse_base: '{lse_base}', expected '2' or 'e'")
    spec["lse_base"] = str(lse_base)
    return spec


def _kv_dtype(q_dtype, kv_data_type):
    """The spec's kv_dtype: 'same', or an fp8 cache ('fp8_e4m3',
    'fp8_e5m2') read with per-tensor k_scale / v_scale."""
    if kv_data_type is None:
        return "same"
    kv = dtype_name(kv_data_type)
    if kv in ("fp8_e4m3", "fp8_e5m2"):
        return kv
    if kv != q_dtype:
        raise TypeError(f"kv_data_type: {kv} differs from q_data_type "
                        f"{q_dtype}; kvir caches hold the activation type or "
                        f"fp8 (float8_e4m3fn, float8_e5m2)")
    return "same"


def _pool_dtypes(spec):
    """The dtypes a cache argument of `spec` may have (fp8 caches as their
    bytes, too)."""
    kv = spec.get("kv_dtype", "same")
    return (spec["dtype"],) if kv == "same" else (kv, "u8", "i8")


def _fp8_scales(spec, k_scale, v_scale):
    """The (k_scale, v_scale) arguments of an fp8 cache, or none."""
    if spec.get("kv_dtype", "same") == "same":
        if k_scale not in (None, 1.0) or v_scale not in (None, 1.0):
            raise ValueError("k_scale / v_scale: the plan's cache is not fp8 "
                             "(plan with kv_data_type=float8_e4m3fn or "
                             "float8_e5m2)")
        return []
    return [("k_scale", 1.0 if k_scale is None else float(k_scale)),
            ("v_scale", 1.0 if v_scale is None else float(v_scale))]


class _Executor:
    """Compiles a spec per chip and runs it on one device's buffers."""

    def __init__(self, spec, chip, cache, views=None):
        """`views`: {plan argument: function} giving the view of a tensor
        the kernels read (the spec function's own view of its argument)."""
        self.spec, self.chip, self.cache = spec, chip, cache
        self.views = views or {}
        self.kernels = {}

    def kernel(self, device, torch_device=None):
        if self.chip:
            chip = self.chip
        elif device == "cuda":
            from .gpu import chip_of
            chip = chip_of(torch_device)
        else:
            # The emulator runs any chip's kernels: sm_90a unless $KVIR_CHIP.
            chip = os.environ.get("KVIR_CHIP", "sm_90a")
        if chip not in self.kernels:
            self.kernels[chip] = _compile(self.spec, chip, self.cache)
        return self.kernels[chip]

    def run(self, args, kv_lengths=None, backend="auto"):
        """`args`: (plan argument name, Arg, or a float for an f32 scalar)
        in the spec function's order."""
        buffers = [(n, a) for n, a in args if isinstance(a, Arg)]
        scalars = {n: a for n, a in args if not isinstance(a, Arg)}
        device = same_device([a for _, a in buffers])
        kernel = self.kernel(device, buffers[0][1].torch_device)
        self.last_kernel = kernel
        if device == "cpu" and backend == "auto":
            kernel.module().emulate(
                "kvir_main", kernel.chip,
                [("buffer", a.ptr, a.shape) if isinstance(a, Arg)
                 else ("f32", a) for _, a in args])
            return
        from .gpu import GpuLaunch
        tensors = {n: a.obj for n, a in buffers}
        for name, view in self.views.items():
            tensors[name] = view(tensors[name])
        if device == "cpu":
            # The GPU path (plan, schedule, kernel ABI) with the emulator
            # standing in for the CUDA driver.
            from .emulated_driver import EmulatedDriver
            if not all(hasattr(t, "data_ptr") for t in tensors.values()):
                raise TypeError("backend='emulated_driver' runs torch CPU "
                                "tensors (numpy arrays run in the emulator "
                                "with backend='auto')")
            drv = EmulatedDriver(kernel)
            try:
                GpuLaunch(kernel.plan(), tensors, kv_lengths, "cpu", drv,
                          scalars=scalars).run()
            finally:
                drv.release()
            return
        import torch
        dev = buffers[0][1].torch_device
        launch = GpuLaunch(kernel.plan(), tensors, kv_lengths, dev,
                           scalars=scalars)
        launch.run(torch.cuda.current_stream(dev).cuda_stream)


def _check_tables(fn, *args):
    """Calls a kvir_check_* of the runtime library; raises its message."""
    message = ctypes.create_string_buffer(512)
    f = getattr(_lib.runtime(), fn)
    f.restype = ctypes.c_int64
    if f(*args, message, ctypes.c_int64(len(message))) != 0:
        raise ValueError(message.value.decode(errors="replace"))


def _i32(array):
    import numpy as np
    a = np.ascontiguousarray(array, dtype=np.int32)
    return a, a.ctypes.data_as(ctypes.POINTER(ctypes.c_int32))


class _Tables:
    """Index buffers given to plan(), with a device copy per device."""

    def __init__(self, named):
        self.named = [(n, x) for n, x in named]
        self.copies = {}

    def on(self, device_arg):
        key = str(device_arg.torch_device or "cpu")
        if key not in self.copies:
            out = []
            for n, x in self.named:
                if device_arg.torch_device is not None:
                    # The tables follow the query: torch on its device.
                    import torch
                    x = torch.as_tensor(x).to(device=device_arg.torch_device,
                                              dtype=torch.int32).contiguous()
                elif hasattr(x, "device") and not hasattr(x, "ctypes"):
                    x = x.to("cpu")
                out.append((n, Arg(n, x).check("i32")))
            self.copies[key] = out
        return self.copies[key]


def _plan_device(x):
    """Where plan() expects run() to execute: the device of its tables."""
    import sys
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor) and x.is_cuda:
        return "cuda", x.device
    return "cpu", None


class _CsrCheck:
    """A batch's CSR page tables on the host, checked (kvir_check_csr)
    against each pool size they are run with, once."""

    def __init__(self, indptr, indices, last_page_len, page_size):
        self.tables = [_i32(a) for a in (indptr, indices, last_page_len)]
        self.page_size = int(page_size)
        self.checked = set()

    def __call__(self, num_pages):
        if num_pages in self.checked:
            return
        (ip, pa), (ix, pb), (last, pc) = self.tables
        _check_tables("kvir_check_csr", pa, pb, ctypes.c_int64(len(ix)), pc,
                      ctypes.c_int64(len(last)),
                      ctypes.c_int64(self.page_size),
                      ctypes.c_int64(num_pages * self.page_size))
        self.checked.add(num_pages)


def _paged_cache(cache, spec, kv_layout):
    """The paged_kv_cache argument, checked against the plan's spec."""
    ps, hk, d = spec["page_size"], spec["num_kv_heads"], spec["head_dim"]
    inner = [ps, hk, d] if kv_layout == "nhd" else [hk, ps, d]
    return Arg("paged_kv_cache", cache).check(_pool_dtypes(spec),
                                              [None, 2] + inner)


def _csr_lengths(indptr, last, page_size):
    pages = indptr[1:] - indptr[:-1]
    import numpy as np
    return np.where(pages > 0, (pages - 1) * page_size + last, 0)


class _Wrapper:
    """What every wrapper is constructed with: FlashInfer's workspace buffer
    (accepted for its signature; kvir sizes its own workspace per plan),
    the cache layout, and kvir's chip (default: the device's), kernel cache
    and backend."""

    def __init__(self, float_workspace_buffer=None, kv_layout="NHD",
                 chip=None, cache_dir=None, backend="auto"):
        self.kv_layout = _layout(kv_layout)
        self.chip, self.cache_dir = chip, cache_dir
        self.backend = _backend(backend)
        self._exec = None

    def _planned(self):
        if self._exec is None:
            raise RuntimeError("run() before plan()")


class BatchDecodeWithPagedKVCacheWrapper(_Wrapper):
    """Decode (one query row per request) over a paged KV cache in CSR page
    tables: FlashInfer's BatchDecodeWithPagedKVCacheWrapper."""

    def plan(self, indptr, indices, last_page_len, num_qo_heads,
             num_kv_heads, head_dim, page_size, pos_encoding_mode="NONE",
             window_left=-1, logits_soft_cap=None, q_data_type="float16",
             kv_data_type=None, sm_scale=None, rope_scale=None,
             rope_theta=None, lse_base="2"):
        dtype = dtype_name(q_data_type)
        spec = _options({"op": "decode", "num_qo_heads": int(num_qo_heads),
                         "num_kv_heads": int(num_kv_heads),
                         "head_dim": int(head_dim),
                         "page_size": int(page_size), "dtype": dtype,
                         "kv_layout": self.kv_layout},
                        window_left, logits_soft_cap, sm_scale, lse_base,
                        pos_encoding_mode, rope_scale, rope_theta)
        if _kv_dtype(dtype, kv_data_type) != "same":
            spec["kv_dtype"] = _kv_dtype(dtype, kv_data_type)
        ip = host_int_array("indptr", indptr)
        last = host_int_array("last_page_len", last_page_len)
        ind = host_int_array("indices", indices)
        if ip.ndim != 1 or len(ip) < 1 or last.shape != (len(ip) - 1,):
            raise ValueError(f"indptr: shape {list(ip.shape)} and "
                             f"last_page_len: shape {list(last.shape)}, "
                             f"expected [batch + 1] and [batch]")
        self.batch = len(ip) - 1
        self.page_size = int(page_size)
        self._check = _CsrCheck(ip, ind, last, page_size)
        self.kv_lengths = [int(n) for n in
                           _csr_lengths(ip, last, self.page_size)]
        self._tables = _Tables([("kv_indptr", indptr),
                                ("kv_indices", indices),
                                ("kv_last_page_len", last_page_len)])
        self.spec = spec
        self._exec = _Executor(spec, self.chip, self.cache_dir)
        self._exec.kernel(*_plan_device(indptr))

    def run(self, q, paged_kv_cache, out=None, lse=None, return_lse=False,
            k_scale=None, v_scale=None):
        self._planned()
        s = self.spec
        hq, d = s["num_qo_heads"], s["head_dim"]
        qa = Arg("q", q).check(s["dtype"], [self.batch, hq, d])
        pool = _paged_cache(paged_kv_cache, s, self.kv_layout)
        self._check(pool.shape[0])
        scales = _fp8_scales(s, k_scale, v_scale)
        if out is None:
            out = empty_like_arg(qa, [self.batch, hq, d], s["dtype"])
        if lse is None:
            lse = empty_like_arg(qa, [self.batch, hq], "f32")
        oa = Arg("out", out).check(s["dtype"], [self.batch, hq, d])
        la = Arg("lse", lse).check("f32", [self.batch, hq])
        args = [("q", qa), ("pool", pool)] + self._tables.on(qa) + scales + \
            [("out", oa), ("lse", la)]
        self._exec.run(args, self.kv_lengths, self.backend)
        return (out, lse) if return_lse else out


class _PrefillBase(_Wrapper):

    def _spec(self, kind, qo_indptr, num_qo_heads, num_kv_heads, head_dim_qk,
              head_dim_vo, causal, pos_encoding_mode, sm_scale, window_left,
              logits_soft_cap, q_data_type, kv_data_type, lse_base,
              rope_scale, rope_theta):
        dtype = dtype_name(q_data_type)
        kv_dtype = _kv_dtype(dtype, kv_data_type)
        qo = host_int_array("qo_indptr", qo_indptr)
        if qo.ndim != 1 or len(qo) < 1 or qo[0] != 0 or \
                (qo[1:] < qo[:-1]).any():
            raise ValueError("qo_indptr: expected [batch + 1] non-decreasing "
                             "row offsets starting at 0")
        self.batch, self.nnz = len(qo) - 1, int(qo[-1])
        self._qo = qo
        spec = {"op": "prefill", "kv": kind,
                "num_qo_heads": int(num_qo_heads),
                "num_kv_heads": int(num_kv_heads),
                "head_dim": int(head_dim_qk), "dtype": dtype,
                "causal": bool(causal)}
        if kv_dtype != "same":
            spec["kv_dtype"] = kv_dtype
        if head_dim_vo is not None and int(head_dim_vo) != int(head_dim_qk):
            spec["head_dim_v"] = int(head_dim_vo)
        return _options(spec, window_left, logits_soft_cap, sm_scale,
                        lse_base, pos_encoding_mode, rope_scale, rope_theta)

    def _check_rows(self, kv_lengths):
        a, pa = _i32(self._qo)
        b, pb = _i32(kv_lengths)
        _check_tables("kvir_check_query_rows", pa, ctypes.c_int64(self.nnz),
                      pb, ctypes.c_int64(self.batch),
                      ctypes.c_int64(1 if self.spec["causal"] else 0))

    def _outputs(self, qa, out, lse):
        s = self.spec
        hq, dv = s["num_qo_heads"], s.get("head_dim_v", s["head_dim"])
        if out is None:
            out = empty_like_arg(qa, [self.nnz, hq, dv], s["dtype"])
        if lse is None:
            lse = empty_like_arg(qa, [self.nnz, hq], "f32")
        return (out, lse, Arg("out", out).check(s["dtype"], [self.nnz, hq, dv]),
                Arg("lse", lse).check("f32", [self.nnz, hq]))


class BatchPrefillWithPagedKVCacheWrapper(_PrefillBase):
    """Prefill / append (query rows per request in qo_indptr) over a paged
    KV cache: FlashInfer's BatchPrefillWithPagedKVCacheWrapper."""

    def plan(self, qo_indptr, paged_kv_indptr, paged_kv_indices,
             paged_kv_last_page_len, num_qo_heads, num_kv_heads, head_dim_qk,
             page_size, head_dim_vo=None, causal=False,
             pos_encoding_mode="NONE", sm_scale=None, window_left=-1,
             logits_soft_cap=None, q_data_type="float16", kv_data_type=None,
             rope_scale=None, rope_theta=None, lse_base="2"):
        spec = self._spec("paged", qo_indptr, num_qo_heads, num_kv_heads,
                          head_dim_qk, head_dim_vo, causal, pos_encoding_mode,
                          sm_scale, window_left, logits_soft_cap, q_data_type,
                          kv_data_type, lse_base, rope_scale, rope_theta)
        spec["page_size"] = int(page_size)
        spec["kv_layout"] = self.kv_layout
        self.spec = spec
        ip = host_int_array("paged_kv_indptr", paged_kv_indptr)
        last = host_int_array("paged_kv_last_page_len", paged_kv_last_page_len)
        if ip.shape != (self.batch + 1,) or last.shape != (self.batch,):
            raise ValueError(f"paged_kv_indptr: shape {list(ip.shape)}, "
                             f"paged_kv_last_page_len: shape "
                             f"{list(last.shape)}, expected "
                             f"[{self.batch + 1}] and [{self.batch}] (one "
                             f"request per qo_indptr entry)")
        self._check = _CsrCheck(
            ip, host_int_array("paged_kv_indices", paged_kv_indices), last,
            page_size)
        self._check_rows(_csr_lengths(ip, last, int(page_size)))
        self._tables = _Tables([("qo_indptr", qo_indptr),
                                ("kv_indptr", paged_kv_indptr),
                                ("kv_indices", paged_kv_indices),
                                ("kv_last_page_len", paged_kv_last_page_len)])
        self._exec = _Executor(spec, self.chip, self.cache_dir)
        self._exec.kernel(*_plan_device(qo_indptr))

    def run(self, q, paged_kv_cache, out=None, lse=None, return_lse=False,
            k_scale=None, v_scale=None):
        self._planned()
        s = self.spec
        qa = Arg("q", q).check(s["dtype"], [self.nnz, s["num_qo_heads"],
                                            s["head_dim"]])
        pool = _paged_cache(paged_kv_cache, s, self.kv_layout)
        self._check(pool.shape[0])
        scales = _fp8_scales(s, k_scale, v_scale)
        out, lse, oa, la = self._outputs(qa, out, lse)
        t = self._tables.on(qa)
        args = [("q", qa), t[0], ("pool", pool)] + t[1:] + scales + \
            [("out", oa), ("lse", la)]
        self._exec.run(args, backend=self.backend)
        return (out, lse) if return_lse else out


class BatchPrefillWithRaggedKVCacheWrapper(_PrefillBase):
    """Prefill over ragged (contiguous per request) K and V:
    FlashInfer's BatchPrefillWithRaggedKVCacheWrapper."""

    def plan(self, qo_indptr, kv_indptr, num_qo_heads, num_kv_heads,
             head_dim_qk, head_dim_vo=None, causal=False,
             pos_encoding_mode="NONE", sm_scale=None, window_left=-1,
             logits_soft_cap=None, q_data_type="float16", kv_data_type=None,
             rope_scale=None, rope_theta=None, lse_base="2"):
        self.spec = self._spec("ragged", qo_indptr, num_qo_heads,
                               num_kv_heads, head_dim_qk, head_dim_vo, causal,
                               pos_encoding_mode, sm_scale, window_left,
                               logits_soft_cap, q_data_type, kv_data_type,
                               lse_base, rope_scale, rope_theta)
        kv = host_int_array("kv_indptr", kv_indptr)
        if kv.shape != (self.batch + 1,) or kv[0] != 0 or \
                (kv[1:] < kv[:-1]).any():
            raise ValueError(f"kv_indptr: expected [{self.batch + 1}] "
                             f"non-decreasing key offsets starting at 0")
        self.nnz_kv = int(kv[-1])
        self._check_rows(kv[1:] - kv[:-1])
        self._tables = _Tables([("qo_indptr", qo_indptr),
                                ("kv_indptr", kv_indptr)])
        self._exec = _Executor(self.spec, self.chip, self.cache_dir)
        self._exec.kernel(*_plan_device(qo_indptr))

    def run(self, q, k, v, out=None, lse=None, return_lse=False):
        self._planned()
        s = self.spec
        hq, hk, d = s["num_qo_heads"], s["num_kv_heads"], s["head_dim"]
        dv = s.get("head_dim_v", d)
        qa = Arg("q", q).check(s["dtype"], [self.nnz, hq, d])
        ka = Arg("k", k).check(s["dtype"], [None, hk, d])
        va = Arg("v", v).check(s["dtype"], [ka.shape[0], hk, dv])
        if ka.shape[0] < self.nnz_kv:
            raise ValueError(f"k: {ka.shape[0]} rows, kv_indptr reaches "
                             f"{self.nnz_kv}")
        out, lse, oa, la = self._outputs(qa, out, lse)
        t = self._tables.on(qa)
        args = [("q", qa), t[0], ("k", ka), ("v", va), t[1],
                ("out", oa), ("lse", la)]
        self._exec.run(args, backend=self.backend)
        return (out, lse) if return_lse else out


class BatchMLAPagedAttentionWrapper(_Wrapper):
    """MLA decode (DeepSeek's latent cache: ckv and kpe pages shared by all
    heads), one or several query rows per request: FlashInfer's
    BatchMLAPagedAttentionWrapper. Tables are CSR over pages with each
    request's kv_len."""

    def __init__(self, float_workspace_buffer=None, chip=None,
                 cache_dir=None, backend="auto"):
        super().__init__(float_workspace_buffer, "NHD", chip, cache_dir,
                         backend)

    def plan(self, qo_indptr, kv_indptr, kv_indices, kv_len_arr, num_heads,
             head_dim_ckv, head_dim_kpe, page_size, causal=False,
             sm_scale=None, q_data_type="bfloat16", kv_data_type=None,
             lse_base="2"):
        dtype = dtype_name(q_data_type)
        if _kv_dtype(dtype, kv_data_type) != "same":
            raise TypeError(f"kv_data_type: {dtype_name(kv_data_type)}: "
                            f"kvir has no MLA kernel over fp8 caches")
        qo = host_int_array("qo_indptr", qo_indptr)
        ip = host_int_array("kv_indptr", kv_indptr)
        lens = host_int_array("kv_len_arr", kv_len_arr)
        if qo.ndim != 1 or len(qo) < 1 or qo[0] != 0 or \
                (qo[1:] < qo[:-1]).any():
            raise ValueError("qo_indptr: expected [batch + 1] non-decreasing "
                             "row offsets starting at 0")
        self.batch, self.nnz = len(qo) - 1, int(qo[-1])
        if ip.shape != (self.batch + 1,) or lens.shape != (self.batch,):
            raise ValueError(f"kv_indptr: shape {list(ip.shape)}, kv_len_arr: "
                             f"shape {list(lens.shape)}, expected "
                             f"[{self.batch + 1}] and [{self.batch}]")
        pages = ip[1:] - ip[:-1]
        bad = (lens < 0) | (lens > pages * page_size) | \
            ((pages > 0) & (lens <= (pages - 1) * page_size))
        if bad.any():
            b = int(bad.nonzero()[0][0])
            raise ValueError(f"kv_len_arr[{b}] = {int(lens[b])} does not fit "
                             f"the request's {int(pages[b])} pages of "
                             f"{page_size} tokens")
        # kvir's CSR tables give the last page's fill instead of kv_len.
        last = np.where(pages > 0, lens - (pages - 1) * page_size, 0)
        self._last = last.astype(np.int32)
        rows = bool((qo[1:] - qo[:-1] != 1).any())
        if causal and not rows:
            causal = False  # one row per request sees all its keys anyway
        self.rows = rows
        spec = _options({"op": "mla_decode", "num_heads": int(num_heads),
                         "head_dim_ckv": int(head_dim_ckv),
                         "head_dim_kpe": int(head_dim_kpe),
                         "page_size": int(page_size), "dtype": dtype,
                         "rows": rows, "causal": bool(causal)},
                        -1, None, sm_scale, lse_base, "NONE")
        self.spec = spec
        self.page_size = int(page_size)
        self.kv_lengths = [int(n) for n in lens]
        if rows:
            a, pa = _i32(qo)
            b, pb = _i32(lens)
            _check_tables("kvir_check_query_rows", pa,
                          ctypes.c_int64(self.nnz), pb,
                          ctypes.c_int64(self.batch),
                          ctypes.c_int64(1 if causal else 0))
        self._check = _CsrCheck(ip, host_int_array("kv_indices", kv_indices),
                                last, page_size)
        named = [("kv_indptr", kv_indptr), ("kv_indices", kv_indices),
                 ("kv_last_page_len", self._last)]
        if rows:
            named.insert(0, ("qo_indptr", qo_indptr))
        self._tables = _Tables(named)
        self._exec = _Executor(spec, self.chip, self.cache_dir)
        self._exec.kernel(*_plan_device(qo_indptr))

    def run(self, q_nope, q_pe, ckv_cache, kpe_cache, out=None, lse=None,
            return_lse=False):
        self._planned()
        s = self.spec
        h, dc, dp, ps = (s["num_heads"], s["head_dim_ckv"], s["head_dim_kpe"],
                         s["page_size"])
        rows = self.nnz if self.rows else self.batch
        qn = Arg("q_nope", q_nope).check(s["dtype"], [rows, h, dc])
        qp = Arg("q_pe", q_pe).check(s["dtype"], [rows, h, dp])
        ckv = Arg("ckv_cache", ckv_cache).check(s["dtype"], [None, ps, dc])
        kpe = Arg("kpe_cache", kpe_cache).check(s["dtype"],
                                               [ckv.shape[0], ps, dp])
        self._check(ckv.shape[0])
        if out is None:
            out = empty_like_arg(qn, [rows, h, dc], s["dtype"])
        if lse is None:
            lse = empty_like_arg(qn, [rows, h], "f32")
        oa = Arg("out", out).check(s["dtype"], [rows, h, dc])
        la = Arg("lse", lse).check("f32", [rows, h])
        t = self._tables.on(qn)
        args = [("q_nope", qn), ("q_pe", qp)] + t[:1 if self.rows else 0] + \
            [("ckv_pool", ckv), ("kpe_pool", kpe)] + \
            t[1 if self.rows else 0:] + [("out", oa), ("lse", la)]
        self._exec.run(args, None if self.rows else self.kv_lengths,
                       self.backend)
        return (out, lse) if return_lse else out


class MultiLevelCascadeAttentionWrapper:
    """Cascade attention over `num_levels` levels of one paged cache, as
    FlashInfer's MultiLevelCascadeAttentionWrapper: level l groups the
    query rows into requests by qo_indptr_arr[l] and reads the pages of
    its tables; shared-prefix levels are attended without a mask, the last
    level causally, and the states merged (kvir's merge kernel). Each level
    is a BatchPrefillWithPagedKVCacheWrapper."""

    def __init__(self, num_levels, float_workspace_buffer=None,
                 kv_layout="NHD", chip=None, cache_dir=None, backend="auto"):
        if int(num_levels) < 1:
            raise ValueError(f"num_levels: {num_levels}, expected >= 1")
        self.levels = [BatchPrefillWithPagedKVCacheWrapper(
            kv_layout=kv_layout, chip=chip, cache_dir=cache_dir,
            backend=backend) for _ in range(int(num_levels))]
        self.chip, self.cache_dir, self.backend = chip, cache_dir, backend

    def plan(self, qo_indptr_arr, paged_kv_indptr_arr, paged_kv_indices_arr,
             paged_kv_last_page_len, num_qo_heads, num_kv_heads, head_dim,
             page_size, causal=False, sm_scale=None, logits_soft_cap=None,
             q_data_type="float16", kv_data_type=None, lse_base="2"):
        n = len(self.levels)
        for name, arr in [("qo_indptr_arr", qo_indptr_arr),
                          ("paged_kv_indptr_arr", paged_kv_indptr_arr),
                          ("paged_kv_indices_arr", paged_kv_indices_arr),
                          ("paged_kv_last_page_len", paged_kv_last_page_len)]:
            if len(arr) != n:
                raise ValueError(f"{name}: {len(arr)} levels, expected {n}")
        rows = {int(host_int_array("qo_indptr_arr", q)[-1])
                for q in qo_indptr_arr}
        if len(rows) != 1:
            raise ValueError(f"qo_indptr_arr: the levels cover {sorted(rows)} "
                             f"rows; every level groups the same rows")
        for level, wrapper in enumerate(self.levels):
            wrapper.plan(qo_indptr_arr[level], paged_kv_indptr_arr[level],
                         paged_kv_indices_arr[level],
                         paged_kv_last_page_len[level], num_qo_heads,
                         num_kv_heads, head_dim, page_size,
                         causal=causal and level == n - 1, sm_scale=sm_scale,
                         logits_soft_cap=logits_soft_cap,
                         q_data_type=q_data_type, kv_data_type=kv_data_type,
                         lse_base=lse_base)
        self.lse_base = str(lse_base)

    def run(self, q, paged_kv_cache, out=None, lse=None, return_lse=False):
        o, s = self.levels[0].run(q, paged_kv_cache, return_lse=True)
        for wrapper in self.levels[1:]:
            o_l, s_l = wrapper.run(q, paged_kv_cache, return_lse=True)
            o, s = merge_state(o, s, o_l, s_l, lse_base=self.lse_base,
                               chip=self.chip, cache_dir=self.cache_dir,
                               backend=self.backend)
        if out is not None:
            out[...] = o
            o = out
        if lse is not None:
            lse[...] = s
            s = lse
        return (o, s) if return_lse else o


# Aliases under the names without FlashInfer's "Wrapper" suffix.
BatchDecodeWithPagedKVCache = BatchDecodeWithPagedKVCacheWrapper
BatchPrefillWithPagedKVCache = BatchPrefillWithPagedKVCacheWrapper
BatchPrefillWithRaggedKVCache = BatchPrefillWithRaggedKVCacheWrapper

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
