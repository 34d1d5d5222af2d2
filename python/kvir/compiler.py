"""kvir.compile: a spec to PTX + manifests, cached on disk.

The cache key is the spec (canonical JSON), the chip and the spec format's
version; an entry also records the compiler library it was built with and
is rebuilt when another library compiles (a machine without the compiler,
a GPU machine running cached kernels, takes the entry as it is).
"""
import hashlib
import json
import os
import shutil
import tempfile
import time

from . import _lib
from ._lib import KvirError

SPEC_VERSION = 1
_ENTRY = "kvir_entry.json"

# The kv op whose launch plan a spec's kernels carry. (A cascade's kernels
# carry several plans, its positions', levels' and merge's: Kernel.plan()
# has no single one; kvir.gpu.ProgramLaunch runs the chain.)
PLAN_OPS = {"decode": "kv.decode", "prefill": "kv.prefill",
            "mla_decode": "kv.mla_decode", "cascade": "kv.cascade",
            "merge_state": "kv.merge", "merge_states": "kv.merge_partitions"}


def cache_dir(path=None):
    """The kernel cache: `path`, $KVIR_CACHE_DIR, or ~/.cache/kvir."""
    if path:
        return path
    if os.environ.get("KVIR_CACHE_DIR"):
        return os.environ["KVIR_CACHE_DIR"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(
        os.path.expanduser("~"), ".cache")
    return os.path.join(base, "kvir")


_fingerprint = []


def _library_fingerprint():
    """A hash of libKVIRCAPI.so, or None when this machine has none."""
    if not _fingerprint:
        try:
            lib = _lib.capi()
            h = hashlib.sha256(open(lib._name, "rb").read()).hexdigest()[:16]
        except (KvirError, OSError):
            h = None
        _fingerprint.append(h)
    return _fingerprint[0]


class Kernel:
    """A compiled spec: PTX, manifests and header in `directory`; the kv
    module for the emulator on demand."""

    def __init__(self, spec, chip, directory, from_cache, compile_seconds):
        self.spec = spec
        self.chip = chip
        self.directory = directory
        self.from_cache = from_cache
        self.compile_seconds = compile_seconds
        self._module = None
        self._plan = None

    @property
    def op(self):
        return self.spec["op"]

    def module(self):
        """The spec's kv module (needs libKVIRCAPI.so)."""
        if self._module is None:
            self._module = _lib.Module.from_spec(json.dumps(self.spec))
        return self._module

    def plan(self):
        """The launch plan of the kernels (kvir.plan_launch.Plan)."""
        if self._plan is None:
            from .plan_launch import Plan, PlanError
            if self.op == "cascade":
                raise PlanError("a cascade runs several plans: launch it "
                                "with kvir.gpu.ProgramLaunch(kernel, args)")
            self._plan = Plan(self.directory, PLAN_OPS[self.op])
        return self._plan

    def files(self):
        return sorted(os.listdir(self.directory))

    def __repr__(self):
        return (f"kvir.Kernel({self.op}, chip={self.chip}, "
                f"{'cached' if self.from_cache else 'compiled'} in "
                f"{self.compile_seconds:.3f} s, {self.directory})")


def spec_key(spec, chip):
    text = json.dumps({"spec": spec, "chip": chip, "version": SPEC_VERSION},
                      sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def compile(spec, chip="sm_90a", cache=None):
    """Compiles `spec` (a dict: "op" and its shapes, dtypes and options; see
    docs/Frameworks.md) for `chip`, or takes it from the cache."""
    if not isinstance(spec, dict):
        raise TypeError(f"kvir.compile: spec must be a dict, got "
                        f"{type(spec).__name__}")
    if spec.get("op") not in PLAN_OPS:
        raise KvirError(f"spec: 'op' must be one of {sorted(PLAN_OPS)}, got "
                        f"{spec.get('op')!r}")
    start = time.perf_counter()
    root = cache_dir(cache)
    entry = os.path.join(root, spec_key(spec, chip))
    meta_path = os.path.join(entry, _ENTRY)
    if os.path.exists(meta_path):
        meta = json.load(open(meta_path))
        fingerprint = _library_fingerprint()
        if fingerprint is None or meta.get("library") == fingerprint:
            return Kernel(spec, chip, entry, True,
                          time.perf_counter() - start)
    module = _lib.Module.from_spec(json.dumps(spec))
    os.makedirs(root, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".build-", dir=root)
    try:
        module.compile(chip, tmp)
        with open(os.path.join(tmp, _ENTRY), "w") as f:
            json.dump({"spec": spec, "chip": chip, "version": SPEC_VERSION,
                       "library": _library_fingerprint()}, f, indent=1,
                      sort_keys=True)
        if os.path.exists(entry):
            shutil.rmtree(entry, ignore_errors=True)
        try:
            os.replace(tmp, entry)
        except OSError:
            # Another process put the same entry there first: use it.
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    kernel = Kernel(spec, chip, entry, False, time.perf_counter() - start)
    kernel._module = module
    return kernel
