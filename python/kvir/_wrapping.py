"""What kvir's FlashInfer-style wrappers share: argument and option
checks, the spec's executor per chip and device, page-table checks and
buffers, and the wrappers' common constructor (wrappers.py, merge.py)."""
import ctypes
import json
import os

import numpy as np

from . import _lib, torch_ops
from .compiler import compile as _compile
from .plan_launch import csr_lengths
from .tensors import (Arg, _is_torch, dtype_name, host_int_array,
                      is_traced, same_device, unwritten_buffer)

_FLOATS = ("f16", "bf16", "f32")


def _layout(kv_layout):
    """FlashInfer's NHD / HND, or vLLM's layout (its K and V pools)."""
    text = str(kv_layout).upper()
    if text not in ("NHD", "HND", "VLLM"):
        raise ValueError(f"kv_layout: '{kv_layout}', expected 'NHD', 'HND' "
                         f"or 'vllm'")
    return text.lower()


# FlashInfer's backend names: kvir compiles its own kernels for the chip
# (wgmma on sm_90a, mma.sync before it), whichever FlashInfer implementation
# the name picks there.
_FLASHINFER_BACKENDS = ("fa2", "fa3")


def _backend(backend):
    """How CPU data runs: "auto" (the emulator runs the spec's function) or
    "emulated_driver" (the GPU launch path, plan, work schedule and kernel
    parameters, with the emulator standing in for the CUDA driver: torch
    CPU tensors). CUDA tensors always run on the GPU. FlashInfer's "fa2" and
    "fa3" are taken as "auto"."""
    if backend in _FLASHINFER_BACKENDS:
        return "auto"
    if backend not in ("auto", "emulated_driver"):
        raise ValueError(f"backend: '{backend}', expected 'auto', "
                         f"'emulated_driver' or FlashInfer's 'fa2' / 'fa3'")
    return backend


def _input(x):
    """A read-only input as a contiguous buffer: a strided view (FlashInfer
    takes q sliced from a fused qkv tensor) is copied."""
    if hasattr(x, "is_contiguous") and not x.is_contiguous():
        return x.contiguous()
    if isinstance(x, np.ndarray) and not x.flags["C_CONTIGUOUS"]:
        return np.ascontiguousarray(x)
    return x


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
    elif pos_encoding_mode == "ALIBI":
        # FlashInfer's ALiBi: the paper's slopes, bias slope * (j - p).
        spec["alibi"] = "standard"
    elif pos_encoding_mode not in (None, "NONE"):
        raise ValueError(f"pos_encoding_mode: '{pos_encoding_mode}', "
                         f"expected 'NONE', 'ROPE_LLAMA' or 'ALIBI'")
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
    """The (k_scale, v_scale) arguments of an fp8 cache, or none (a 16-bit
    cache's scales are _Wrapper._executor's and _scale_output's)."""
    if spec.get("kv_dtype", "same") == "same":
        return []
    return [("k_scale", 1.0 if k_scale is None else float(k_scale)),
            ("v_scale", 1.0 if v_scale is None else float(v_scale))]


def _scale_output(spec, out, v_scale):
    """FlashInfer's v_scale on a 16-bit cache: the output times v_scale
    (an fp8 cache's kernel applies it)."""
    if spec.get("kv_dtype", "same") == "same" and \
            v_scale not in (None, 1.0):
        out *= float(v_scale)


def _f32_per_head(values, like, heads):
    """FlashInfer's per-head `sinks` ([num_qo_heads], any float dtype) as
    an f32 buffer on the device of Arg `like`."""
    if like.torch_device is not None or _is_torch(values):
        import torch
        t = torch.as_tensor(values).to(
            device=like.torch_device or "cpu", dtype=torch.float32)
        t = t.contiguous()
    else:
        t = np.ascontiguousarray(values, dtype=np.float32)
    if tuple(t.shape) != (heads,):
        raise ValueError(f"sinks: shape {list(t.shape)}, expected "
                         f"[{heads}] (one per query head)")
    return t


def _state_buffers(rows, heads, dim, dtype, device):
    """An attention state's out [rows, heads, dim] (torch `dtype`) and lse
    [rows, heads] (f32) on `device`, as unwritten_buffer makes them."""
    import torch
    return (unwritten_buffer((rows, heads, dim), dtype, device),
            unwritten_buffer((rows, heads), torch.float32, device))


class _Executor:
    """Compiles a spec per chip and runs it on one device's buffers."""

    def __init__(self, spec, chip, cache, views=None):
        """`views`: {plan argument: function} giving the view of a tensor
        the kernels read (the spec function's own view of its argument)."""
        self.spec, self.chip, self.cache = spec, chip, cache
        self.views = views or {}
        self.kernels = {}
        # kvir::run's plan ids of this executor's calls (torch_ops).
        self.bindings = {}
        from .gpu import LaunchCache
        self.launches = LaunchCache()

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

    def run(self, args, kv_lengths=None, backend="auto", pdl=False,
            qo_indptr=None):
        """`args`: (plan argument name, Arg, or a float for an f32 scalar)
        in the spec function's order, ending with out and lse. On torch
        tensors, a call of the torch operator kvir::run (torch_ops).
        `kv_lengths` and `qo_indptr`: the batch's kv lengths and query row
        offsets on the host, for the GPU path's work schedule.
        `pdl`: on the GPU path, the call's first kernel is launched as a
        programmatic dependent of the stream's previous kernel where the
        chip's kernels wait for it (FlashInfer's enable_pdl)."""
        tensors = [a.obj for _, a in args if isinstance(a, Arg)]
        if torch_ops.available() and all(_is_torch(t) for t in tensors):
            torch_ops.call(self, args, kv_lengths, backend, pdl, qo_indptr)
        else:
            self.run_now(args, kv_lengths, backend, pdl, qo_indptr)

    def run_now(self, args, kv_lengths=None, backend="auto", pdl=False,
                qo_indptr=None):
        """Runs the kernels on `args` (run()'s) now."""
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
        from .gpu import launch_key
        # Fixed grids (graph_max_batch): a launch is kept across batches of
        # the same shapes, plan() rewriting its schedule (refresh), so the
        # key leaves the batch out.
        fixed = "graph_max_batch" in self.spec
        lengths, rows = (None, None) if fixed else (kv_lengths, qo_indptr)
        if device == "cpu":
            # The GPU path (plan, schedule, kernel ABI) with the emulator
            # standing in for the CUDA driver.
            from .emulated_driver import EmulatedDriver
            if not all(hasattr(t, "data_ptr") for t in tensors.values()):
                raise TypeError("backend='emulated_driver' runs torch CPU "
                                "tensors (numpy arrays run in the emulator "
                                "with backend='auto')")
            drv = EmulatedDriver(kernel)
            self.last_driver = drv
            try:
                build = lambda: GpuLaunch(kernel.plan(), tensors, kv_lengths,
                                          "cpu", drv, scalars=scalars,
                                          qo_indptr=qo_indptr)
                launch = self.launches.get(
                    launch_key(tensors, lengths, scalars, "cpu", 0, rows),
                    build) if fixed else build()
                if launch.drv is not drv:
                    # A kept launch (a graph's replay) on this call's driver.
                    launch.drv = drv
                    drv.track(list(tensors.values()) +
                              list(launch.keep.values()))
                launch.run(first_dependent=pdl)
            finally:
                drv.release()
            return
        import torch
        dev = buffers[0][1].torch_device
        stream = torch.cuda.current_stream(dev).cuda_stream
        launch = self.launches.get(
            launch_key(tensors, lengths, scalars, dev, stream, rows),
            lambda: GpuLaunch(kernel.plan(), tensors, kv_lengths, dev,
                              scalars=scalars, qo_indptr=qo_indptr),
            torch.cuda.is_current_stream_capturing())
        launch.run(stream, first_dependent=pdl)

    def refresh(self, kv_lengths, qo_indptr=None):
        """A new batch for the kept launches of a fixed-grid spec (plan()
        again under use_cuda_graph): each launch's work schedule rewritten
        in place, so that its kernels -- and a CUDA graph that captured
        them -- run the new batch."""
        for launch in self.launches.kept.values():
            launch.refresh(kv_lengths, qo_indptr)


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
        # numpy calls get numpy tables, torch calls torch tables.
        key = str(device_arg.torch_device or "numpy")
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
            if is_traced(device_arg.obj):
                # A tracer's tensors stand for this call only.
                return out
            self.copies[key] = out
        return self.copies[key]


def _plan_device(x):
    """Where plan() expects run() to execute: the device of its tables."""
    import sys
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor) and x.is_cuda:
        return "cuda", x.device
    return "cpu", None


class _BlockTableCheck:
    """A batch's block tables on the host, checked (kvir_check_block_table)
    against each pool size they are run with, once."""

    def __init__(self, block_tables, seq_lens, page_size):
        self.blocks = _i32(np.atleast_2d(block_tables))
        self.lens = _i32(seq_lens)
        self.page_size = int(page_size)
        self.checked = set()

    def __call__(self, num_pages):
        if num_pages in self.checked:
            return
        (blocks, pb), (lens, pl) = self.blocks, self.lens
        _check_tables("kvir_check_block_table", pb,
                      ctypes.c_int64(blocks.shape[1]), pl,
                      ctypes.c_int64(len(lens)),
                      ctypes.c_int64(self.page_size),
                      ctypes.c_int64(num_pages * self.page_size))
        self.checked.add(num_pages)


def _page_tables(indptr, indices, last_page_len, block_tables, seq_lens,
                 page_size):
    """A paged wrapper's tables: CSR (FlashInfer's indptr, indices,
    last_page_len) or block tables (FlashInfer's block_tables, seq_lens).
    Returns (the spec's table form, [(plan argument, table)], the check,
    each request's kv_len)."""
    if block_tables is not None or seq_lens is not None:
        if block_tables is None or seq_lens is None:
            raise ValueError("block_tables and seq_lens: give both")
        blocks = host_int_array("block_tables", block_tables)
        lens = host_int_array("seq_lens", seq_lens)
        if blocks.ndim != 2 or lens.shape != (blocks.shape[0],):
            raise ValueError(f"block_tables: shape {list(blocks.shape)}, "
                             f"seq_lens: shape {list(lens.shape)}, expected "
                             f"[batch, max_pages] and [batch]")
        return ("block_table",
                [("block_tables", block_tables), ("seq_lens", seq_lens)],
                _BlockTableCheck(blocks, lens, page_size),
                [int(n) for n in lens])
    ip = host_int_array("indptr", indptr)
    last = host_int_array("last_page_len", last_page_len)
    ind = host_int_array("indices", indices)
    if ip.ndim != 1 or len(ip) < 1 or last.shape != (len(ip) - 1,):
        raise ValueError(f"indptr: shape {list(ip.shape)} and "
                         f"last_page_len: shape {list(last.shape)}, "
                         f"expected [batch + 1] and [batch]")
    return ("csr",
            [("kv_indptr", indptr), ("kv_indices", indices),
             ("kv_last_page_len", last_page_len)],
            _CsrCheck(ip, ind, last, page_size),
            csr_lengths([int(x) for x in ip], [int(x) for x in last],
                        int(page_size)))


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


def _is_pool_pair(cache):
    """Whether a paged_kv_cache argument is FlashInfer's (k_cache, v_cache)
    pair rather than one [pages, 2, ...] tensor."""
    return isinstance(cache, (tuple, list))


def _paged_cache(cache, spec, kv_layout):
    """The paged_kv_cache argument checked against the plan's spec: one
    pool [pages, 2, ...] as ("pool", Arg), or FlashInfer's (k_cache,
    v_cache) pair as ("k_pool", Arg), ("v_pool", Arg)."""
    ps, hk, d = spec["page_size"], spec["num_kv_heads"], spec["head_dim"]
    dv = spec.get("head_dim_v", d)

    def inner(dim):
        return [ps, hk, dim] if kv_layout == "nhd" else [hk, ps, dim]
    if kv_layout == "vllm":
        # vLLM's K [pages, Hk, D / x, page, x] (x: 16 bytes of elements)
        # and V [pages, Hk, Dv, page].
        if not _is_pool_pair(cache) or len(cache) != 2:
            raise ValueError("paged_kv_cache: vLLM's layout is a (k_cache, "
                             "v_cache) pair")
        kv = spec.get("kv_dtype", "same")
        x = 16 // (1 if kv != "same" else 4 if spec["dtype"] == "f32"
                   else 2)
        k = Arg("k_cache", cache[0]).check(_pool_dtypes(spec),
                                           [None, hk, d // x, ps, x])
        v = Arg("v_cache", cache[1]).check(_pool_dtypes(spec),
                                           [k.shape[0], hk, dv, ps])
        return [("k_pool", k), ("v_pool", v)]
    if not _is_pool_pair(cache):
        if dv != d:
            raise ValueError(f"paged_kv_cache: one pool holds K and V of one "
                             f"width; head_dim_vo {dv} != head_dim_qk {d} "
                             f"takes a (k_cache, v_cache) pair")
        return [("pool", Arg("paged_kv_cache", cache).check(
            _pool_dtypes(spec), [None, 2] + inner(d)))]
    if len(cache) != 2:
        raise ValueError(f"paged_kv_cache: a tuple of {len(cache)} tensors, "
                         f"expected (k_cache, v_cache)")
    k = Arg("k_cache", cache[0]).check(_pool_dtypes(spec), [None] + inner(d))
    v = Arg("v_cache", cache[1]).check(_pool_dtypes(spec),
                                       [k.shape[0]] + inner(dv))
    return [("k_pool", k), ("v_pool", v)]


class _Wrapper:
    """What every wrapper is constructed with: FlashInfer's workspace buffer
    (accepted for its signature; kvir sizes its own workspace per plan),
    the cache layout, FlashInfer's backend names, and kvir's chip (default:
    the device's) and kernel cache."""

    def __init__(self, float_workspace_buffer=None, kv_layout="NHD",
                 backend="auto", jit_args=None, chip=None, cache_dir=None):
        self.kv_layout = _layout(kv_layout)
        self.chip, self.cache_dir = chip, cache_dir
        self.backend = _backend(backend)
        if jit_args is not None:
            raise ValueError("jit_args: FlashInfer's JIT arguments; kvir "
                             "compiles from the plan's spec, pass None")
        self._exec = None
        self._execs = {}
        self._custom_mask = None
        self._positions = None
        self._captured = []

    @property
    def is_cuda_graph_enabled(self):
        return self._graph.on

    def _graph_tables(self, form, named, fixed_batch_name):
        """The plan's tables, copied into use_cuda_graph's buffers (CSR, as
        FlashInfer's are) when the wrapper has them."""
        if form != "csr" and self._graph.on:
            raise ValueError("block_tables: use_cuda_graph's buffers hold CSR "
                             "tables (indptr, indices, last_page_len)")
        return self._graph.fill(named, fixed_batch_name, self.batch)

    def _variants(self, spec, score_mod=None, mask_mod=None,
                  custom_mask=None, positions=None):
        """Adds the plan's variants to `spec`: score_mod / mask_mod traced
        (kvir.flex's tracer; their q_idx is the row's position kv_len -
        qo_len + i, a decode's kv_len - 1), a custom mask (prefill: the
        request's qo_len x kv_len blocks, bool, or bit-packed as uint8)."""
        from .flex import trace_variants
        self._captured = trace_variants(spec, score_mod, mask_mod)
        self._custom_mask = custom_mask
        self._positions = positions
        if positions is not None:
            spec["positions"] = True

    def _variant_args(self, like, sinks=None):
        """run()'s variant arguments on the device of Arg `like`, in the
        kernel's order: the custom mask, positions, the sinks (f32, one per
        query head), the captured tensors."""
        def on(x):
            if like.torch_device is not None:
                import torch
                return torch.as_tensor(x).to(like.torch_device)
            return x.to("cpu") if hasattr(x, "is_cuda") and x.is_cuda else x
        args = []
        if self._custom_mask is not None:
            args.append(("mask", Arg("custom_mask", on(self._custom_mask))))
        if self._positions is not None:
            args.append(("positions", Arg("positions", on(self._positions))))
        if sinks is not None:
            args.append(("sinks", Arg("sinks", _f32_per_head(
                sinks, like, self.spec["num_qo_heads"]))))
        return args + [(f"capture{i}", Arg(f"capture{i}", on(t)))
                       for i, t in enumerate(self._captured)]

    def _planned(self):
        if self._exec is None:
            raise RuntimeError("run() before plan()")

    def _adopt(self, spec, plan_device, qo_indptr=None):
        """plan()'s executor of `spec`. Under use_cuda_graph the spec's
        grids are fixed (graph_max_batch: the buffers' batch), and a plan of
        the same spec keeps the executors it had: their kept launches' work
        schedules are rewritten for this batch (self.kv_lengths and
        `qo_indptr`), which is what a CUDA graph captured from them replays
        (FlashInfer's plan() before graph.replay())."""
        if getattr(self, "_graph", None) is not None and self._graph.on:
            spec["graph_max_batch"] = max(1, self.batch)
            if self._exec is not None and self._exec.spec == spec:
                for executor in [self._exec] + list(self._execs.values()):
                    executor.refresh(self.kv_lengths, qo_indptr)
                return
        self._exec = _Executor(spec, self.chip, self.cache_dir)
        self._execs = {}
        self._exec.kernel(*plan_device)

    def _executor(self, pools=(), k_scale=None, q_scale=None, sinks=None,
                  window_left=None):
        """The plan's executor for the cache form of `pools` (_paged_cache:
        one pool, or K and V pools), FlashInfer's k_scale on a 16-bit cache
        and q_scale (the logits times them: sm_scale times the scales, a
        spec of its own per value; an fp8 cache's kernel takes k_scale)
        and run()'s sinks (a kernel with a sink argument)."""
        spec = self.spec
        if window_left is not None and \
                int(window_left) != spec.get("window_left", -1):
            raise ValueError(f"window_left: {window_left} at run(), "
                             f"{spec.get('window_left', -1)} at plan(); "
                             f"FlashInfer's run takes the plan's or None")
        if len(pools) > 1 and spec.get("kv_storage") != "split":
            spec = dict(spec, kv_storage="split")
        factor = 1.0 if q_scale is None else float(q_scale)
        if spec.get("kv_dtype", "same") == "same" and k_scale is not None:
            factor *= float(k_scale)
        if factor != 1.0:
            base = spec.get("sm_scale", spec["head_dim"] ** -0.5)
            spec = dict(spec, sm_scale=float(base) * factor)
        if sinks is not None:
            spec = dict(spec, sinks=True)
        if spec is self.spec:
            return self._exec
        key = json.dumps(spec, sort_keys=True)
        if key not in self._execs:
            self._execs[key] = _Executor(spec, self.chip, self.cache_dir)
        return self._execs[key]

    # FlashInfer's other spellings of run().
    def forward(self, *args, **kwargs):
        return self.run(*args, **kwargs)

    def run_return_lse(self, *args, **kwargs):
        return self.run(*args, **dict(kwargs, return_lse=True))

    def forward_return_lse(self, *args, **kwargs):
        return self.run_return_lse(*args, **kwargs)


class _GraphBuffers:
    """FlashInfer's use_cuda_graph mode: index buffers given at
    construction, which plan() fills with each batch's tables (a batch as
    large as they were made for) and run() reads."""

    def __init__(self, use_cuda_graph, **buffers):
        self.on = bool(use_cuda_graph)
        self.buffers = buffers
        if self.on:
            for name, b in buffers.items():
                if b is None:
                    raise ValueError(f"{name}: use_cuda_graph=True needs the "
                                     f"preallocated index buffers")

    def fill(self, named, fixed_batch_name, batch):
        """`named` [(plan argument, table)] copied into the buffers (same
        order as the constructor's), which stand for them whole -- the
        kernels read the entries the tables reach, and a captured graph's
        launches keep the buffers' shapes --, or as given outside graph
        mode."""
        if not self.on:
            return named
        bufs = list(self.buffers.items())
        fixed = int(bufs[0][1].shape[0]) - 1
        if batch != fixed:
            raise ValueError(f"{fixed_batch_name}: a batch of {batch}, but "
                             f"use_cuda_graph fixed it at {fixed} (the size "
                             f"of the buffers given at construction)")
        out = []
        for (arg, table), (bname, buf) in zip(named, bufs):
            data = host_int_array(arg, table)
            if data.shape[0] > buf.shape[0]:
                raise ValueError(f"{bname}: {buf.shape[0]} entries, the "
                                 f"batch's {arg} needs {data.shape[0]}")
            view = buf[:data.shape[0]]
            if hasattr(view, "copy_"):
                import torch
                view.copy_(torch.as_tensor(data, dtype=view.dtype))
            else:
                view[...] = data
            out.append((arg, buf))
        return out
