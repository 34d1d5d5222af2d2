"""The CUDA driver API over ctypes: what kvir's GPU runners need.

libcuda is loaded at run time, so nothing here needs CUDA headers, a CUDA
toolkit or LLVM: the runners start on a bare GPU machine with the driver.
`DryDriver` stands in where no GPU exists: host memory, launches checked
against the PTX's entry signatures but not executed (the runners' own
logic is tested that way on the CPU).
"""
import ctypes
import re

CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
CU_JIT_ERROR_LOG_BUFFER = 5
CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6
CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6


class LaunchAttribute(ctypes.Structure):
    """CUlaunchAttribute (cuda.h, CUDA 12+): an id, padding to 8 bytes, a
    64-byte value union (8-byte aligned)."""
    class Value(ctypes.Union):
        _fields_ = [("bytes", ctypes.c_char * 64), ("value", ctypes.c_int),
                    ("align", ctypes.c_void_p)]
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4),
                ("value", Value)]


class LaunchConfig(ctypes.Structure):
    """CUlaunchConfig (cuda.h, CUDA 12+)."""
    _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3),
                ("shared_bytes", ctypes.c_uint), ("stream", ctypes.c_void_p),
                ("attrs", ctypes.POINTER(LaunchAttribute)),
                ("num_attrs", ctypes.c_uint)]


def dependent_launch_config(grid, block, dynamic_shared, stream):
    """cuLaunchKernelEx's config for a programmatic dependent launch (it
    may overlap the launch before it, whose completion the kernel waits
    for with griddepcontrol.wait), and the attribute it points to."""
    attr = LaunchAttribute()
    attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
    attr.value.value = 1
    config = LaunchConfig()
    config.grid[:] = [int(g) for g in grid]
    config.block[:] = [int(b) for b in block]
    config.shared_bytes = int(dynamic_shared)
    config.stream = ctypes.c_void_p(stream) if stream else None
    config.attrs = ctypes.pointer(attr)
    config.num_attrs = 1
    return config, attr


class CudaError(RuntimeError):
    pass


def tensor_map_arrays(m, address, shape):
    """cuTensorMapEncodeTiled's arguments for manifest tensor map `m` (a
    plan argument's "map") over a row-major buffer of `shape` at `address`:
    dims, byte strides, box and element strides, innermost first. A zero
    extent (a pool without pages, a batch without rows) is encoded as 1:
    the driver takes no empty tensor, and no copy reads such a map."""
    u64, u32 = ctypes.c_uint64, ctypes.c_uint
    rank = len(shape)
    dims = list(reversed([max(1, int(d)) for d in shape]))
    strides, stride = [], m["element_bytes"]
    for d in dims[:-1]:
        stride *= d
        strides.append(stride)
    return ((u64 * rank)(*dims), (u64 * max(1, rank - 1))(*strides),
            (u32 * rank)(*reversed(m["box"])), (u32 * rank)(*([1] * rank)))


def encode_tensor_map(fn, m, address, shape, what):
    """128 bytes of tensor map `m` over `shape` at `address`, encoded by
    `fn` (cuTensorMapEncodeTiled or the emulator's); fn's nonzero result
    raises through `what(rc)`."""
    buf = (ctypes.c_uint64 * 24)()  # 64-byte aligned 128 bytes within
    base = ctypes.addressof(buf)
    at = (base + 63) // 64 * 64
    dims, strides, box, unit = tensor_map_arrays(m, address, shape)
    rc = fn(ctypes.c_void_p(at), m["data_type"], len(shape),
            ctypes.c_void_p(address), dims, strides, box, unit,
            m["interleave"], m["swizzle"], m["l2_promotion"], m["oob_fill"])
    if rc != 0:
        what(rc)
    return ctypes.string_at(at, 128)


def ptx_entries(ptx):
    """{kernel name: number of .param entries} of a PTX module."""
    entries = {}
    for m in re.finditer(r"\.entry\s+(\w+)\s*\(([^)]*)\)", ptx):
        entries[m.group(1)] = len(re.findall(r"\.param\b", m.group(2)))
    return entries


def check_entry(ptx, kernel, params):
    """Fails unless `ptx` has entry `kernel` taking len(params) parameters
    (what a launch on a GPU would find out the hard way)."""
    entries = ptx_entries(ptx)
    if kernel not in entries:
        raise CudaError(f"the PTX has no kernel {kernel}")
    if entries[kernel] != len(params):
        raise CudaError(f"{kernel}: {len(params)} parameters passed, the "
                        f"PTX entry takes {entries[kernel]}")


class Driver:
    def __init__(self, use_primary_context=True):
        self.lib = ctypes.CDLL("libcuda.so.1")
        self.check(self.lib.cuInit(0), "cuInit")
        dev = ctypes.c_int()
        self.check(self.lib.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
        self.device = dev.value
        ctx = ctypes.c_void_p()
        # The primary context is the one torch's runtime uses: buffers and
        # streams are shared with it.
        self.check(self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev),
                   "cuDevicePrimaryCtxRetain")
        self.check(self.lib.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
        self.context = ctx
        self.modules = {}

    def check(self, rc, what):
        if rc != 0:
            msg = ctypes.c_char_p()
            self.lib.cuGetErrorString(rc, ctypes.byref(msg))
            raise CudaError(f"{what}: CUDA error {rc} "
                            f"({msg.value.decode() if msg.value else '?'})")

    def name(self):
        buf = ctypes.create_string_buffer(256)
        self.check(self.lib.cuDeviceGetName(buf, 256, self.device),
                   "cuDeviceGetName")
        return buf.value.decode()

    def sm_count(self):
        v = ctypes.c_int()
        self.check(self.lib.cuDeviceGetAttribute(
            ctypes.byref(v), CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            self.device), "cuDeviceGetAttribute")
        return v.value

    def load_ptx(self, ptx):
        """The module of `ptx` (JIT-compiled by the driver; cached)."""
        if ptx in self.modules:
            return self.modules[ptx]
        mod = ctypes.c_void_p()
        log = ctypes.create_string_buffer(1 << 16)
        opts = (ctypes.c_int * 2)(CU_JIT_ERROR_LOG_BUFFER,
                                  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
        vals = (ctypes.c_void_p * 2)(ctypes.cast(log, ctypes.c_void_p),
                                     ctypes.c_void_p(len(log)))
        rc = self.lib.cuModuleLoadDataEx(ctypes.byref(mod),
                                         ctypes.c_char_p(ptx.encode()), 2,
                                         opts, vals)
        if rc != 0:
            self.check(rc, "cuModuleLoadDataEx: " + log.value.decode())
        self.modules[ptx] = (mod, {})
        return self.modules[ptx]

    def function(self, ptx, kernel, dynamic_shared):
        mod, funcs = self.load_ptx(ptx)
        if kernel not in funcs:
            f = ctypes.c_void_p()
            self.check(self.lib.cuModuleGetFunction(
                ctypes.byref(f), mod, kernel.encode()),
                "cuModuleGetFunction " + kernel)
            funcs[kernel] = f
        f = funcs[kernel]
        if dynamic_shared > 48 * 1024:
            self.check(self.lib.cuFuncSetAttribute(
                f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                int(dynamic_shared)), "cuFuncSetAttribute " + kernel)
        return f

    def launch(self, ptx, kernel, grid, block, dynamic_shared, params,
               stream=None, dependent=False):
        """Launches `kernel` with `params`: a list of bytes objects, one per
        kernel parameter (its exact bytes). `dependent`: as a programmatic
        dependent of the launch before it (cuLaunchKernelEx, where the
        driver has it; a plain launch otherwise)."""
        f = self.function(ptx, kernel, dynamic_shared)
        bufs = [ctypes.create_string_buffer(p, len(p)) for p in params]
        arr = (ctypes.c_void_p * max(1, len(bufs)))(
            *[ctypes.cast(b, ctypes.c_void_p) for b in bufs])
        if dependent and hasattr(self.lib, "cuLaunchKernelEx"):
            # (The config points to the attribute, which must outlive the
            # call: hold both.)
            config, attribute = dependent_launch_config(
                grid, block, dynamic_shared, stream)
            self.check(self.lib.cuLaunchKernelEx(
                ctypes.byref(config), f, arr, None),
                "cuLaunchKernelEx " + kernel)
            return
        self.check(self.lib.cuLaunchKernel(
            f, *[ctypes.c_uint(int(g)) for g in grid],
            *[ctypes.c_uint(int(b)) for b in block],
            ctypes.c_uint(int(dynamic_shared)), ctypes.c_void_p(stream),
            arr, None), "cuLaunchKernel " + kernel)

    def encode_tensor_map(self, m, address, shape):
        """The 128 bytes of a CUtensorMap (cuTensorMapEncodeTiled)."""
        fn = self.lib.cuTensorMapEncodeTiled
        return encode_tensor_map(
            fn, m, address, shape,
            lambda rc: self.check(rc, "cuTensorMapEncodeTiled"))

    def alloc(self, nbytes):
        p = ctypes.c_uint64()
        self.check(self.lib.cuMemAlloc_v2(ctypes.byref(p),
                                          ctypes.c_size_t(max(16, nbytes))),
                   "cuMemAlloc")
        return p.value

    def free(self, ptr):
        self.check(self.lib.cuMemFree_v2(ctypes.c_uint64(ptr)), "cuMemFree")

    def upload(self, ptr, data):
        if data:
            self.check(self.lib.cuMemcpyHtoD_v2(
                ctypes.c_uint64(ptr), ctypes.c_char_p(bytes(data)),
                ctypes.c_size_t(len(data))), "cuMemcpyHtoD")

    def download(self, ptr, nbytes):
        buf = ctypes.create_string_buffer(nbytes)
        if nbytes:
            self.check(self.lib.cuMemcpyDtoH_v2(buf, ctypes.c_uint64(ptr),
                                                ctypes.c_size_t(nbytes)),
                       "cuMemcpyDtoH")
        return buf.raw

    def synchronize(self):
        self.check(self.lib.cuCtxSynchronize(), "cuCtxSynchronize")


class DryDriver:
    """No GPU: memory on the host, launches checked against the PTX's entry
    signatures (name and parameter count) and otherwise skipped."""

    def __init__(self):
        self.memory = {}
        self.next = 1 << 40
        self.launches = []
        self.dependent = []

    def name(self):
        return "dry run (no GPU)"

    def sm_count(self):
        return 132

    def launch(self, ptx, kernel, grid, block, dynamic_shared, params,
               stream=None, dependent=False):
        check_entry(ptx, kernel, params)
        if any(int(g) <= 0 for g in grid) or any(int(b) <= 0 for b in block):
            raise CudaError(f"{kernel}: empty grid {grid} or block {block}")
        if dependent:
            dependent_launch_config(grid, block, dynamic_shared, stream)
        self.launches.append((kernel, tuple(grid), tuple(block)))
        self.dependent.append(bool(dependent))

    def encode_tensor_map(self, m, address, shape):
        """Zeros in place of a map (nothing reads it), its arguments formed
        as the driver's would be."""
        tensor_map_arrays(m, address, shape)
        return bytes(128)

    def alloc(self, nbytes):
        ptr = self.next
        self.next += (max(16, nbytes) + 255) // 256 * 256
        self.memory[ptr] = bytearray(max(16, nbytes))
        return ptr

    def free(self, ptr):
        del self.memory[ptr]

    def upload(self, ptr, data):
        self.memory[ptr][:len(data)] = data

    def download(self, ptr, nbytes):
        return bytes(self.memory[ptr][:nbytes])

    def synchronize(self):
        pass
