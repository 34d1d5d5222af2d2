"""kvir's shared libraries over ctypes, loaded on first use.

libKVIRCAPI.so (the C API, include/kvir-c/KVIR.h) compiles and emulates;
it links LLVM and MLIR. libkvir_runtime.so (the split-KV work schedule,
plain C) is all a GPU run needs. Neither is loaded by `import kvir`, so a
machine with only a GPU driver, Python and torch runs cached kernels.

Search order: $KVIR_CAPI_LIBRARY / $KVIR_RUNTIME_LIBRARY; the install
prefix (<prefix>/lib, this package being <prefix>/lib/python3/dist-packages/
kvir); the source tree's build/lib (this package being python/kvir); a
bundle's lib/ beside the package.
"""
import ctypes
import os

_HERE = os.path.dirname(os.path.abspath(__file__))


class KvirError(RuntimeError):
    """A failure kvir reported (its message names what is wrong)."""


def _candidates(name, env):
    if os.environ.get(env):
        return [os.environ[env]]
    return [os.path.join(_HERE, "..", "..", "..", name),
            os.path.join(_HERE, "..", "..", "build", "lib", name),
            os.path.join(_HERE, "..", "lib", name)]


def _load(name, env):
    tried = []
    for path in _candidates(name, env):
        path = os.path.normpath(path)
        if os.path.exists(path):
            return ctypes.CDLL(path)
        tried.append(path)
    raise KvirError(f"cannot find {name} (set ${env}); looked at: "
                    + ", ".join(tried))


_capi = None
_runtime = None


def capi():
    """libKVIRCAPI.so with its prototypes."""
    global _capi
    if _capi is None:
        lib = _load("libKVIRCAPI.so", "KVIR_CAPI_LIBRARY")
        vp, cp, i64 = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int64
        for name, res, args in [
                ("kvir_last_error", cp, []),
                ("kvir_module_parse", vp, [cp]),
                ("kvir_module_from_spec", vp, [cp]),
                ("kvir_module_destroy", None, [vp]),
                ("kvir_module_to_string", vp, [vp]),
                ("kvir_free_string", None, [vp]),
                ("kvir_compile", ctypes.c_int, [vp, cp, cp]),
                ("kvir_emulate", ctypes.c_int,
                 [vp, cp, cp, ctypes.POINTER(CArg), i64]),
                ("kvir_last_launches_json", vp, []),
                ("kvir_emulator_load", ctypes.c_int, [vp, cp, cp]),
                ("kvir_emulator_register", None, [vp, ctypes.c_uint64]),
                ("kvir_emulator_unregister", None, [vp]),
                ("kvir_emulator_encode_tensor_map", ctypes.c_int,
                 [vp, ctypes.c_int, ctypes.c_uint, vp,
                  ctypes.POINTER(ctypes.c_uint64),
                  ctypes.POINTER(ctypes.c_uint64),
                  ctypes.POINTER(ctypes.c_uint),
                  ctypes.POINTER(ctypes.c_uint), ctypes.c_int, ctypes.c_int,
                  ctypes.c_int, ctypes.c_int]),
                ("kvir_emulator_can_check_dependent_launch", ctypes.c_int,
                 []),
                ("kvir_emulator_launch_ex", ctypes.c_int,
                 [cp, ctypes.POINTER(ctypes.c_uint32),
                  ctypes.POINTER(ctypes.c_uint32), ctypes.c_uint32,
                  ctypes.POINTER(ctypes.c_void_p), i64, ctypes.c_uint32])]:
            fn = getattr(lib, name)
            fn.restype = res
            fn.argtypes = args
        _capi = lib
    return _capi


def runtime():
    """libkvir_runtime.so (kvir_schedule_work), or the C API library, which
    carries the same functions."""
    global _runtime
    if _runtime is None:
        try:
            _runtime = _load("libkvir_runtime.so", "KVIR_RUNTIME_LIBRARY")
        except KvirError:
            _runtime = capi()
    return _runtime


def last_error():
    return capi().kvir_last_error().decode(errors="replace")


def take_string(ptr):
    """A C API string as str, freed."""
    if not ptr:
        return ""
    try:
        return ctypes.string_at(ptr).decode(errors="replace")
    finally:
        capi().kvir_free_string(ptr)


KVIR_ARG_BUFFER, KVIR_ARG_F32, KVIR_ARG_INDEX = 0, 1, 2


class CArg(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int),
                ("data", ctypes.c_void_p),
                ("rank", ctypes.c_int64),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("scalar", ctypes.c_double)]


class Module:
    """A kv module owned by the C API (its own MLIR context)."""

    def __init__(self, handle):
        self._handle = handle

    @classmethod
    def parse(cls, source):
        h = capi().kvir_module_parse(source.encode())
        if not h:
            raise KvirError(last_error())
        return cls(h)

    @classmethod
    def from_spec(cls, spec_json):
        h = capi().kvir_module_from_spec(spec_json.encode())
        if not h:
            raise KvirError(last_error())
        return cls(h)

    def __del__(self):
        if getattr(self, "_handle", None) and _capi is not None:
            _capi.kvir_module_destroy(self._handle)
            self._handle = None

    def __str__(self):
        return take_string(capi().kvir_module_to_string(self._handle))

    def compile(self, chip, out_dir):
        if capi().kvir_compile(self._handle, chip.encode(),
                               out_dir.encode()) != 0:
            raise KvirError(last_error())

    def emulate(self, func, chip, args):
        """Runs `func` with its kernels in the emulator. `args`: per
        argument ("buffer", address, shape) | ("f32", x) | ("index", n)."""
        arr = (CArg * max(1, len(args)))()
        keep = []
        for a, spec in zip(arr, args):
            if spec[0] == "buffer":
                shape = (ctypes.c_int64 * max(1, len(spec[2])))(*spec[2])
                keep.append(shape)
                a.kind, a.data, a.rank = KVIR_ARG_BUFFER, spec[1], len(spec[2])
                a.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
            else:
                a.kind = KVIR_ARG_F32 if spec[0] == "f32" else KVIR_ARG_INDEX
                a.scalar = float(spec[1])
        rc = capi().kvir_emulate(self._handle, func.encode(), chip.encode(),
                                 arr, len(args))
        if rc != 0:
            raise KvirError(last_error())


def last_launches():
    """The emulator's counters of the last emulated call (JSON text)."""
    return take_string(capi().kvir_last_launches_json())
