"""Kernels on an NVIDIA GPU: the CUDA driver over ctypes, on torch tensors.

Nothing here needs LLVM, MLIR or the CUDA toolkit: a launch plan from the
manifests (kvir.plan_launch), the work schedule from libkvir_runtime.so and
the driver's libcuda.so.1.
"""
from . import _lib

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
    host from `kv_lengths`, the schedule buffers and workspace allocated on
    the device."""

    def __init__(self, plan, tensors, kv_lengths=None, device="cuda",
                 drv=None, runtime=None, scalars=None):
        import torch
        self.plan = plan
        self.drv = drv if drv is not None else driver()
        shapes = {n: list(t.shape) for n, t in tensors.items()}
        env = plan.sizes(shapes, scalars)
        sched = plan.schedule(runtime or _lib.runtime(), kv_lengths, env)
        keep = dict(tensors)
        if sched is not None:
            s = plan.plan["schedule"]
            items = torch.frombuffer(bytearray(sched[0]), dtype=torch.int32)
            merge = torch.frombuffer(bytearray(sched[1]), dtype=torch.int32)
            keep[s["items"]] = items.reshape(-1, 4).to(device)
            keep[s["merge_indptr"]] = merge.to(device)
        for name, a in plan.args.items():
            if a["role"] == "tensor_map":
                keep[name] = self._tensor_map(a["map"], tensors, device)
        if plan.split(env):
            for name, a in plan.args.items():
                if a["role"] == "workspace":
                    keep[name] = torch.empty(
                        plan.shape_of(name, env),
                        dtype=getattr(torch, _TORCH_DTYPES[a["dtype"]]),
                        device=device)
        if hasattr(self.drv, "track"):
            # An emulated driver must know the buffers kernels may touch.
            self.drv.track(keep.values())
        buffers = {n: (t.data_ptr(), list(t.shape), list(t.stride()))
                   for n, t in keep.items()}
        self.launches = plan.launches(buffers, env)
        self.keep = keep
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

    def run(self, stream=0):
        for kernel, grid, block, smem, params in self.launches:
            self.drv.launch(self.plan.ptx, kernel, grid, block, smem, params,
                            stream)
