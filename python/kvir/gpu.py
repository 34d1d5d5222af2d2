"""Kernels on an NVIDIA GPU: the CUDA driver over ctypes, on torch tensors.

Nothing here needs LLVM, MLIR or the CUDA toolkit: a launch plan from the
manifests (kvir.plan_launch), the work schedule from libkvir_runtime.so and
the driver's libcuda.so.1.
"""
from collections import OrderedDict

from . import _lib
from .tensors import unwritten_buffer

_driver = []


def driver():
    """The process's CUDA driver (primary context, shared with torch)."""
    if not _driver:
        from .cuda_driver import Driver
        _driver.append(Driver())
    return _driver[0]


def chip_of(device):
    """kvir's chip name for a torch CUDA device."""
    import torch
    major, minor = torch.cuda.get_device_capability(device)
    chip = f"sm_{major}{minor}"
    return "sm_90a" if chip == "sm_90" else chip


_TORCH_DTYPES = {"f32": "float32", "i32": "int32", "f16": "float16",
                 "bf16": "bfloat16"}


class GpuLaunch:
    """The launches of `plan` for `tensors` ({plan argument: torch tensor},
    on `device`) and `scalars` ({plan argument: float}): its sizes from
    their shapes, the work schedule run on the
    host from `kv_lengths` (and a prefill's from `qo_indptr` too, the host
    copy of the tensor of that name, read from the tensor when not given),
    the schedule buffers and workspace allocated on the device."""

    def __init__(self, plan, tensors, kv_lengths=None, device="cuda",
                 drv=None, runtime=None, scalars=None, qo_indptr=None):
        import torch
        self.plan = plan
        self.drv = drv if drv is not None else driver()
        self.runtime = runtime
        self.shapes = {n: list(t.shape) for n, t in tensors.items()}
        self.scalars = scalars
        env = plan.sizes(self.shapes, scalars)
        keep = dict(tensors)
        for name, t in self._schedule(env, kv_lengths, qo_indptr,
                                      tensors).items():
            keep[name] = t.to(device)
        for name, a in plan.args.items():
            if a["role"] == "tensor_map":
                keep[name] = self._tensor_map(a["map"], tensors, device)
        # Fixed grids launch the split kernels (and take the workspace)
        # always.
        if plan.split(env) or plan.fixed_grids():
            for name, a in plan.args.items():
                if a["role"] == "workspace":
                    keep[name] = torch.empty(
                        plan.shape_of(name, env),
                        dtype=getattr(torch, _TORCH_DTYPES[a["dtype"]]),
                        device=device)
        if hasattr(self.drv, "track"):
            # An emulated driver must know the buffers kernels may touch.
            self.drv.track(keep.values())
        self.buffers = {n: (t.data_ptr(), list(t.shape), list(t.stride()))
                        for n, t in keep.items()}
        self.launches = plan.launches(self.buffers, env)
        # What the launches own (schedule, workspace, tensor maps); the
        # caller's tensors stay the caller's.
        self.keep = {n: t for n, t in keep.items() if n not in tensors}
        self.env = env

    def _schedule(self, env, kv_lengths, qo_indptr, tensors=None):
        """The work schedule's buffers ({argument: host tensor}) for a
        batch of `kv_lengths` (and a prefill's `qo_indptr`, read from the
        tensor of that name when not given); sets the schedule's sizes in
        `env`."""
        import torch
        s = self.plan.plan.get("schedule")
        if s is None:
            return {}
        if "qo_indptr" in s and qo_indptr is None:
            qo_indptr = [int(x) for x in tensors["qo_indptr"].cpu().tolist()]
        items, merge = self.plan.schedule(self.runtime or _lib.runtime(),
                                          kv_lengths, env, qo_indptr)
        fields = 5 if "qo_indptr" in s else 4
        return {s["items"]: torch.frombuffer(bytearray(items),
                                             dtype=torch.int32)
                .reshape(-1, fields),
                s["merge_indptr"]: torch.frombuffer(bytearray(merge),
                                                    dtype=torch.int32)}

    def refresh(self, kv_lengths, qo_indptr=None):
        """A new batch of the same shapes under fixed grids (CUDA graphs:
        FlashInfer's plan() before a replay): its work schedule written
        into this launch's own buffers, which the launches -- and a graph
        that captured them -- read; the launches themselves do not change
        (checked)."""
        from .plan_launch import PlanError
        if not self.plan.fixed_grids():
            raise PlanError("refresh: the plan's grids follow the schedule; "
                            "a new batch needs a new launch (compile with "
                            "graph_max_batch for fixed grids)")
        env = self.plan.sizes(self.shapes, self.scalars)
        for name, t in self._schedule(env, kv_lengths, qo_indptr).items():
            self.keep[name].copy_(t)
        if self.plan.launches(self.buffers, env) != self.launches:
            raise PlanError("refresh: the new batch changes the launches")
        self.env = env

    def _tensor_map(self, m, tensors, device):
        """Tensor map `m` over its source tensor, encoded on the host and
        copied to a 64-byte aligned device buffer (the kernel acquires it
        there)."""
        import torch
        from .plan_launch import PlanError
        src = tensors.get(m["of"])
        if src is None or not src.is_contiguous():
            raise PlanError(f"tensor map over '{m['of']}': needs that "
                            f"argument, row-major (contiguous)")
        data = self.drv.encode_tensor_map(m, src.data_ptr(), list(src.shape))
        out = torch.empty(16, dtype=torch.int64, device=device)
        out.copy_(torch.frombuffer(bytearray(data), dtype=torch.int64))
        if out.data_ptr() % 64:
            raise PlanError("a tensor map's buffer is not 64-byte aligned")
        return out

    def run(self, stream=0, first_dependent=False):
        """Launches the kernels on `stream`: those the plan marks as
        programmatic dependents of the kernel before them so, and with
        `first_dependent` the first too, where its chip's kernels wait for
        the grid before them (FlashInfer's enable_pdl: it overlaps the
        stream's previous kernel)."""
        for i, (kernel, grid, block, smem, params, dependent) in \
                enumerate(self.launches):
            if i == 0 and first_dependent:
                dependent = bool(self.plan.kernels[kernel].get(
                    "waits_for_previous_grid", False))
            self.drv.launch(self.plan.ptx, kernel, grid, block, smem, params,
                            stream, dependent=dependent)


class ProgramLaunch:
    """The launches of a function that runs several plans (a cascade's
    positions, levels and merge) from its description in the manifests
    (`<function>.program.json`): `args` are the function's arguments in
    order (torch tensors; floats for f32 scalars), the buffers it
    allocates between plans are made here (on the CPU NaN-filled, so that
    a value no kernel wrote shows), and each run of a plan is a GpuLaunch
    over its bindings, its work schedule's host inputs read from its
    tables as the manifest says (device tables are copied to the host, as
    the function itself reads them)."""

    def __init__(self, kernel, args, device="cuda", drv=None, runtime=None,
                 function="kvir_main"):
        import json
        import os
        from .plan_launch import Plan, PlanError
        path = os.path.join(kernel.directory, f"{function}.program.json")
        if not os.path.exists(path):
            raise PlanError(f"{kernel.directory} describes no function "
                            f"'{function}'")
        program = json.load(open(path))
        if "error" in program:
            raise PlanError(f"kvir.gpu cannot run '{function}': "
                            f"{program['error']}")
        if len(args) != len(program["args"]):
            raise PlanError(f"'{function}' takes {len(program['args'])} "
                            f"arguments, got {len(args)}")
        self.temps = [self._temp(t, args, device) for t in program["temps"]]
        self.steps = []
        plans = {}  # a plan run twice (levels alike) is read once
        for step in program["steps"]:
            if step["plan"] not in plans:
                plans[step["plan"]] = Plan(kernel.directory, name=step["plan"])
            plan = plans[step["plan"]]
            tensors, scalars = {}, {}
            for name, src in step["args"].items():
                if "value" in src:
                    value = src["value"]
                elif "temp" in src:
                    value = self.temps[src["temp"]]
                else:
                    value = args[src["arg"]]
                if plan.args[name]["role"] == "scalar":
                    scalars[name] = float(value)
                else:
                    tensors[name] = value
            env = plan.sizes({n: list(t.shape) for n, t in tensors.items()},
                             scalars)
            lengths, rows = plan.host_inputs(tensors, env)
            self.steps.append(GpuLaunch(plan, tensors, lengths, device, drv,
                                        runtime, scalars, rows))

    @staticmethod
    def _temp(t, args, device):
        import torch
        shape = [d if isinstance(d, int) else int(args[d["arg"]].shape[
            d["axis"]]) for d in t["shape"]]
        return unwritten_buffer(
            shape, getattr(torch, _TORCH_DTYPES[t["dtype"]]), device)

    def run(self, stream=0, first_dependent=False):
        """Every plan's launches on `stream`, in the function's order."""
        for i, step in enumerate(self.steps):
            step.run(stream, first_dependent and i == 0)


class LaunchCache:
    """The GpuLaunches of recent calls, by what their parameters depend on
    (launch_key): a call repeated over the same buffers -- a decode step,
    a CUDA graph's capture after its warm-up run -- launches without
    planning, scheduling or copying anything to the device, which a stream
    being captured must not do."""

    def __init__(self, size=8):
        self.size = size
        self.kept = OrderedDict()

    def get(self, key, build, capturing=False):
        """The launch kept under `key`, or `build()`'s (not while a stream
        is capturing: it copies the schedule to the device)."""
        if key in self.kept:
            self.kept.move_to_end(key)
            return self.kept[key]
        if capturing:
            raise RuntimeError(
                "kvir: this call's launch is not planned yet; run it once "
                "before capturing a CUDA graph (torch.cuda.graph's warm-up) "
                "so that its schedule is on the device")
        launch = build()
        self.kept[key] = launch
        if len(self.kept) > self.size:
            self.kept.popitem(last=False)
        return launch


def launch_key(tensors, kv_lengths, scalars, device, stream, qo_indptr=None):
    """What a GpuLaunch's parameters depend on: each tensor's address,
    shape and strides (tensor maps encode them), the batch's kv lengths and
    query row offsets (the schedule), the scalars, the device and the
    stream (the workspace is the stream's)."""
    def values(xs):
        return None if xs is None else tuple(int(n) for n in xs)
    return (tuple((n, t.data_ptr(), tuple(t.shape), tuple(t.stride()))
                  for n, t in sorted(tensors.items())),
            values(kv_lengths), values(qo_indptr),
            tuple(sorted((scalars or {}).items())), str(device), int(stream))
