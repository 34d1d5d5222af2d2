"""Arguments of kvir's Python API: numpy arrays and torch tensors, checked.

Every check names the argument and what was expected. CPU data (numpy, or
torch CPU tensors) runs in kvir's emulator; torch CUDA tensors run on the
GPU. kvir's kernels read 16-byte vectors: buffers must be contiguous and
16-byte aligned.
"""
import sys

# kvir's element types and their numpy / torch names.
_NAMES = {"float16": "f16", "half": "f16", "f16": "f16",
          "bfloat16": "bf16", "bf16": "bf16",
          "float32": "f32", "float": "f32", "f32": "f32",
          "int32": "i32", "i32": "i32",
          # fp8 caches: torch's dtypes, or their bytes as uint8 / int8.
          "float8_e4m3fn": "fp8_e4m3", "fp8_e4m3": "fp8_e4m3",
          "float8_e5m2": "fp8_e5m2", "fp8_e5m2": "fp8_e5m2",
          "uint8": "u8", "int8": "i8"}
_NUMPY = {"f16": "float16", "f32": "float32", "i32": "int32"}


def dtype_name(dtype):
    """kvir's name for a numpy / torch dtype or a name ("float16", ...)."""
    text = dtype if isinstance(dtype, str) else str(dtype).replace("torch.",
                                                                   "")
    if not isinstance(dtype, str) and not text.startswith("bfloat16"):
        try:
            import numpy as np
            text = np.dtype(dtype).name
        except TypeError:
            pass
    if text in _NAMES:
        return _NAMES[text]
    raise TypeError(f"unsupported dtype {dtype!r}: expected float16, "
                    f"bfloat16, float32 or (for caches) float8_e4m3fn, "
                    f"float8_e5m2")


def _is_torch(x):
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def is_traced(x):
    """Whether `x` is a tracer's stand-in for a tensor (torch.compile's or
    make_fx's fake tensors, functionalization's wrappers): a torch.Tensor
    subclass with no storage of its own to keep."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor) and \
        type(x) not in (torch.Tensor, torch.nn.Parameter)


class Arg:
    """A buffer argument: where it lives and what it holds."""

    def __init__(self, name, x):
        self.name, self.obj = name, x
        if _is_torch(x):
            if x.device.type not in ("cpu", "cuda"):
                raise ValueError(f"{name}: a tensor on {x.device}; kvir runs "
                                 f"CUDA tensors on the GPU and CPU tensors "
                                 f"in its emulator")
            self.device = x.device.type
            self.torch_device = x.device
            self.shape = [int(d) for d in x.shape]
            self.dtype = _NAMES.get(str(x.dtype).replace("torch.", ""),
                                    str(x.dtype))
            if not x.is_contiguous():
                raise ValueError(f"{name}: strides {tuple(x.stride())} are not "
                                 f"contiguous; pass {name}.contiguous()")
            try:
                self.ptr = x.data_ptr()
            except RuntimeError:
                # A tracer's fake tensor (torch.compile's): no storage. The
                # operator kvir::run checks the real tensor it runs on.
                self.ptr = None
        else:
            import numpy as np
            if not isinstance(x, np.ndarray):
                raise TypeError(f"{name}: expected a numpy array or a torch "
                                f"tensor, got {type(x).__name__}")
            self.device = "cpu"
            self.torch_device = None
            self.shape = list(x.shape)
            self.dtype = _NAMES.get(x.dtype.name, x.dtype.name)
            if not x.flags["C_CONTIGUOUS"]:
                raise ValueError(f"{name}: not C-contiguous (strides "
                                 f"{x.strides}); pass "
                                 f"numpy.ascontiguousarray({name})")
            if not x.flags["WRITEABLE"]:
                raise ValueError(f"{name}: read-only array; kvir needs a "
                                 f"writable buffer")
            self.ptr = x.ctypes.data
        size = 1
        for d in self.shape:
            size *= d
        if size and self.ptr is not None and self.ptr % 16:
            raise ValueError(f"{name}: address {self.ptr:#x} is not 16-byte "
                             f"aligned (kvir's kernels read 16-byte vectors)")

    def check(self, dtype=None, shape=None):
        """Checks the dtype (a kvir name or a tuple of them) and `shape`
        (ints, or None for any extent)."""
        if dtype is not None:
            allowed = dtype if isinstance(dtype, tuple) else (dtype,)
            if self.dtype not in allowed:
                raise TypeError(f"{self.name}: dtype {self.dtype}, expected "
                                f"{' or '.join(allowed)}")
        if shape is not None:
            ok = len(shape) == len(self.shape) and all(
                e is None or e == g for e, g in zip(shape, self.shape))
            if not ok:
                want = "[" + ", ".join("*" if e is None else str(e)
                                       for e in shape) + "]"
                raise ValueError(f"{self.name}: shape {self.shape}, expected "
                                 f"{want}")
        return self


def same_device(args):
    """The device every argument is on ('cpu' or 'cuda'), or an error
    naming the first that differs from the first argument."""
    first = args[0]
    for a in args[1:]:
        if a.device != first.device or (
                a.device == "cuda" and a.torch_device != first.torch_device):
            raise ValueError(f"{a.name}: on {a.torch_device or a.device}, but "
                             f"{first.name} is on "
                             f"{first.torch_device or first.device}; kvir runs "
                             f"a call on one device")
    return first.device


def unwritten_buffer(shape, dtype, device):
    """A torch buffer the kernels are to write whole: on the CPU (the
    emulator) filled with NaN, or -1 for integers, so that anything left
    unwritten shows; unfilled on a GPU."""
    import torch
    if torch.device(device).type == "cpu":
        fill = float("nan") if dtype.is_floating_point else -1
        return torch.full(shape, fill, dtype=dtype, device=device)
    return torch.empty(shape, dtype=dtype, device=device)


def empty_like_arg(like, shape, dtype):
    """A new buffer of `shape` and kvir `dtype` of the kind of `like`."""
    if _is_torch(like.obj):
        import torch
        tdt = {"f16": torch.float16, "bf16": torch.bfloat16,
               "f32": torch.float32, "i32": torch.int32}[dtype]
        return torch.empty(shape, dtype=tdt, device=like.obj.device)
    import numpy as np
    if dtype not in _NUMPY:
        raise TypeError(f"{like.name}: numpy has no {dtype}; pass torch CPU "
                        f"tensors for bfloat16")
    return np.empty(shape, dtype=_NUMPY[dtype])


def host_int_array(name, x):
    """An int64 numpy copy of index data (numpy, torch CPU or CUDA)."""
    import numpy as np
    if _is_torch(x):
        x = x.detach().to("cpu").numpy()
    if not isinstance(x, np.ndarray):
        x = np.asarray(x)
    if x.dtype.kind not in "iu":
        raise TypeError(f"{name}: dtype {x.dtype}, expected int32")
    return x.astype(np.int64)
