# -*- Python -*-
import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "KVIR"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Inputs", "Unit", "Install"]

# ptxas is part of CUDA, not of Debian: tests that need it are gated on it.
import shutil
ptxas = shutil.which("ptxas") or ("/usr/local/cuda/bin/ptxas" if os.path.exists("/usr/local/cuda/bin/ptxas") else None)
if ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))
# CUDA's driver header, beside the ptxas found above: the C headers' copies
# of its launch structures are checked against it where it is installed.
cuda_include = os.path.join(os.path.dirname(os.path.dirname(ptxas)), "include") if ptxas else None
if cuda_include and os.path.exists(os.path.join(cuda_include, "cuda.h")):
    config.available_features.add("cuda-header")
    config.substitutions.append(("%cuda_include", cuda_include))
# Built with ASan + UBSan (scripts/sanitize.sh): kvir's code is
# instrumented, Debian's LLVM is not. LLVM's headers poison allocator memory
# from kvir's side that libLLVM's code then writes, which ASan would report:
# user poisoning is ignored. Leaks are not checked here: kvir-runner runs
# test programs whose own buffers may outlive them (the gtests check kvir's
# code for leaks).
if config.kvir_sanitizers:
    config.available_features.add("sanitizers")
    config.environment["ASAN_OPTIONS"] = "allow_user_poisoning=0:detect_leaks=0"
    config.environment["UBSAN_OPTIONS"] = "print_stacktrace=1"
# A C compiler checks kvir-translate's headers.
cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
if cc:
    config.available_features.add("cc")
    config.substitutions.append(("%cc", cc))
# The runtime library C callers of generated kernels link (C++ inside).
config.substitutions.append(
    ("%kvir_runtime",
     os.path.join(config.kvir_obj_root, "lib", "libKVIRRuntime.a")
     + " -lstdc++"))
# The GPU runners of bench/gpu (Debian's python3 with numpy; the python3
# first on PATH may lack numpy) and the shared runtime library they load.
config.substitutions.append(("%python", "/usr/bin/python3"))
config.substitutions.append(
    ("%kvir_bench_gpu", os.path.join(config.kvir_src_root, "bench", "gpu")))
config.substitutions.append(
    ("%libkvir_runtime_so",
     os.path.join(config.kvir_obj_root, "lib", "libkvir_runtime" + config.shlib_ext)))
config.substitutions.append(("%kvir_obj_root", config.kvir_obj_root))
# The C API (include/kvir-c, libKVIRCAPI.so) for C programs.
config.substitutions.append(
    ("%kvir_capi",
     "-I" + os.path.join(config.kvir_src_root, "include") + " "
     + os.path.join(config.kvir_obj_root, "lib", "libKVIRCAPI" + config.shlib_ext)
     + " -Wl,-rpath," + os.path.join(config.kvir_obj_root, "lib")))
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.kvir_obj_root, "test")

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

runner_libs = ",".join(
    os.path.join(config.mlir_lib_dir, lib + config.shlib_ext)
    for lib in ["libmlir_runner_utils", "libmlir_c_runner_utils"]
)
config.substitutions.append(("%mlir_runner_libs", runner_libs))

# The JIT's CPU (docs/Emulator.md): kvir's tools read KVIR_JIT_CPU.
# Debian's mlir-runner takes no CPU name; for the baseline x86-64 run of
# scripts/test.sh it gets every x86 extension past SSE2 turned off
# (-sse3 takes SSSE3, SSE4, AVX*, F16C and FMA with it).
llvm_config.with_system_environment(["KVIR_JIT_CPU"])
runner_args = []
if os.environ.get("KVIR_JIT_CPU") == "x86-64":
    runner_args = ["--mattr=-sse3"]
tools = [
    "kvir-opt",
    "kvir-runner",
    "kvir-translate",
    ToolSubst("mlir-runner", unresolved="fatal", extra_args=runner_args),
]
llvm_config.add_tool_substitutions(tools, [config.kvir_tools_dir, config.llvm_tools_dir])
