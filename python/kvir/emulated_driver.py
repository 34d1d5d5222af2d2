"""The CUDA driver's part played by kvir's emulator.

`EmulatedDriver` has cuda_driver.Driver's launch interface, but its
launches run the kernels of a compiled spec in kvir's emulator on host
memory. A GPU runner (kvir.gpu.GpuLaunch: the plan's sizes, the work
schedule, the parameter bytes of kvir's kernel ABI) driven through it is
checked end to end without a GPU: each launch is first checked against the
PTX entry the GPU would run (name, parameter count), then executed with the
exact parameter bytes, every access bounds-checked.
"""
import ctypes

from . import _lib
from .cuda_driver import check_entry, encode_tensor_map

# KVIR_LAUNCH_PROGRAMMATIC_DEPENDENT of kvir_emulator_launch_ex.
PROGRAMMATIC_DEPENDENT = 1


class EmulatedDriver:
    def __init__(self, kernel):
        """`kernel`: a kvir.Kernel whose kernels the launches name."""
        lib = _lib.capi()
        if lib.kvir_emulator_load(kernel.module()._handle, b"kvir_main",
                                  kernel.chip.encode()) != 0:
            raise _lib.KvirError(_lib.last_error())
        self.registered = []
        self.launches = []
        # Each launch's parameter bytes (what a captured CUDA graph keeps).
        self.params = []
        self.dependent = []

    def name(self):
        return "kvir emulator"

    def track(self, tensors):
        """Lets kernels access the memory of `tensors` (torch CPU)."""
        for t in tensors:
            nbytes = t.numel() * t.element_size()
            _lib.capi().kvir_emulator_register(t.data_ptr(), max(1, nbytes))
            self.registered.append(t.data_ptr())

    def release(self):
        for p in self.registered:
            _lib.capi().kvir_emulator_unregister(p)
        self.registered = []

    def encode_tensor_map(self, m, address, shape):
        """The emulator's 128-byte tensor map (cuTensorMapEncodeTiled's
        checks, its TMA copies' encoding)."""
        def fail(rc):
            raise _lib.KvirError(_lib.last_error())
        return encode_tensor_map(_lib.capi().kvir_emulator_encode_tensor_map,
                                 m, address, shape, fail)

    def launch(self, ptx, kernel, grid, block, dynamic_shared, params,
               stream=None, dependent=False):
        """`dependent`: a programmatic dependent of the launch before it
        (cuLaunchKernelEx's programmatic stream serialization); the
        emulator checks that the kernel touches nothing the previous grid
        wrote (or writes nothing it read) before griddepcontrol.wait. With
        no recorded grid before it (the process's first launch) there is
        nothing to check against: it runs as a plain launch."""
        check_entry(ptx, kernel, params)
        capi = _lib.capi()
        dependent = bool(dependent) and \
            capi.kvir_emulator_can_check_dependent_launch() == 1
        bufs = [ctypes.create_string_buffer(bytes(p), len(p)) for p in params]
        arr = (ctypes.c_void_p * max(1, len(bufs)))(
            *[ctypes.cast(b, ctypes.c_void_p) for b in bufs])
        u32x3 = ctypes.c_uint32 * 3
        rc = capi.kvir_emulator_launch_ex(
            kernel.encode(), u32x3(*[int(g) for g in grid]),
            u32x3(*[int(b) for b in block]), int(dynamic_shared), arr,
            len(params), PROGRAMMATIC_DEPENDENT if dependent else 0)
        if rc != 0:
            raise _lib.KvirError(_lib.last_error())
        self.launches.append((kernel, tuple(grid), tuple(block)))
        self.params.append([bytes(p) for p in params])
        self.dependent.append(dependent)

    def synchronize(self):
        pass
