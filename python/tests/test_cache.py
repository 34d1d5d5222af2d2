"""kvir.compile's outputs and its on-disk cache; importing kvir loads no
native library."""
import json
import os
import subprocess
import sys

import pytest

import kvir

PYTHON_DIR = os.path.join(os.path.dirname(__file__), "..")
SPEC = {"op": "decode", "num_qo_heads": 8, "num_kv_heads": 2, "head_dim": 64,
        "page_size": 16, "dtype": "f16"}


def test_compile_writes_ptx_manifests_and_header(tmp_path):
    k = kvir.compile(SPEC, "sm_80", str(tmp_path))
    assert not k.from_cache
    files = k.files()
    assert "kv_kernels.ptx" in files and "kv_kernels.h" in files
    manifests = [json.load(open(os.path.join(k.directory, f)))
                 for f in files if f.endswith(".json") and
                 f != "kvir_entry.json" and not f.endswith(".program.json")]
    # kvir_main's chain of plans: the decode's one.
    program = json.load(open(os.path.join(k.directory,
                                          "kvir_main.program.json")))
    assert [s["op"] for s in program["steps"]] == ["kv.decode"]
    assert manifests and all(m["chip"] == "sm_80" for m in manifests)
    direct = [m for m in manifests if m["role"] == "direct"][0]
    # Bare pointers, then the buffers' dynamic extents.
    assert [p["abi"] for p in direct["params"]] == ["pointer"] * 7 + \
        ["i64"] * 7
    assert direct["num_params"] == 14
    assert ".target sm_80" in open(os.path.join(k.directory,
                                                "kv_kernels.ptx")).read()


def test_second_compile_comes_from_the_cache(tmp_path):
    first = kvir.compile(SPEC, "sm_90a", str(tmp_path))
    second = kvir.compile(dict(SPEC), "sm_90a", str(tmp_path))
    assert not first.from_cache and second.from_cache
    assert first.directory == second.directory
    other = kvir.compile(dict(SPEC, head_dim=128), "sm_90a", str(tmp_path))
    assert not other.from_cache and other.directory != first.directory


def test_an_entry_of_another_compiler_is_rebuilt(tmp_path):
    k = kvir.compile(SPEC, "sm_90a", str(tmp_path))
    meta_path = os.path.join(k.directory, "kvir_entry.json")
    meta = json.load(open(meta_path))
    meta["library"] = "0000000000000000"
    json.dump(meta, open(meta_path, "w"))
    again = kvir.compile(SPEC, "sm_90a", str(tmp_path))
    assert not again.from_cache


def _python(code, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([sys.executable, "-c", code], env=e, cwd=PYTHON_DIR,
                          capture_output=True, text=True)


def test_import_loads_no_native_library():
    r = _python("import kvir, kvir._lib as l\n"
                "assert l._capi is None and l._runtime is None\n"
                "maps = open('/proc/self/maps').read()\n"
                "assert 'libLLVM' not in maps and 'libMLIR' not in maps\n"
                "print('clean')")
    assert r.returncode == 0 and "clean" in r.stdout, r.stderr


def test_a_machine_without_the_compiler_runs_cached_kernels(tmp_path):
    kvir.compile(SPEC, "sm_90a", str(tmp_path))
    code = ("import kvir\n"
            f"k = kvir.compile({SPEC!r}, 'sm_90a', {str(tmp_path)!r})\n"
            "assert k.from_cache\n"
            "print(k.plan().plan['op'])\n"
            "try:\n"
            f"    kvir.compile(dict({SPEC!r}, head_dim=128), 'sm_90a', "
            f"{str(tmp_path)!r})\n"
            "except kvir.KvirError as e:\n"
            "    print('error:', e)\n")
    r = _python(code, {"KVIR_CAPI_LIBRARY": "/nonexistent/libKVIRCAPI.so"})
    assert r.returncode == 0, r.stderr
    assert "kv.decode" in r.stdout
    assert "error: cannot find libKVIRCAPI.so" in r.stdout, r.stdout


def test_spec_must_be_a_dict(tmp_path):
    with pytest.raises(TypeError, match="spec must be a dict"):
        kvir.compile("decode", "sm_90a", str(tmp_path))
