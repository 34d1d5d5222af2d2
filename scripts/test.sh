#!/usr/bin/env bash
# Builds kvir and runs every test suite: lit (dialect, conversions, CPU
# integration, emulator kernels), the gtests (kv-to-loops and the GPU
# kernels in the emulator against an independent double-precision reference,
# seeded random sweeps among them; the emulator against PTX models), the
# Python package's pytest suite, the same emulated results on a baseline
# x86-64 CPU (scripts/host-independence.sh), an install +
# find_package(KVIR) consumer, the installed Python package, the C and C++
# example engines against the
# installed kvir, the demo, and scripts/sanitize.sh
# (the suites under ASan + UBSan, then scripts/fuzz.sh).
# Exits non-zero on any failure and ends with a one-line summary.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${KVIR_BUILD_DIR:-$ROOT/build}"
LLVM_BIN=/usr/lib/llvm-22/bin
cd "$ROOT"

source "$ROOT/scripts/lib/counts.sh"
finish() {
  echo "summary: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit $?
}

scripts/setup.sh || { echo "setup failed"; failed=1; finish; }
if ! scripts/build.sh all; then
  echo "build failed"
  failed=$((failed + 1))
  finish
fi

# lit
log="$BUILD/lit.log"
"$LLVM_BIN/lit" -sv "$BUILD/test" 2>&1 | tee "$log" | grep -E "^(FAIL|XPASS|UNRESOLVED|TIMEOUT):|\*\*\*\*" || true
read -r lit_pass lit_fail < <(lit_counts "$log")
report lit "$lit_pass" "$lit_fail"

# gtest suites
for suite in kvir-unit-tests kvir-emulator-tests kvir-gpu-tests; do
  log="$BUILD/$suite.log"
  if [ ! -x "$BUILD/bin/$suite" ]; then
    echo "missing test binary $suite"
    report "$suite" 0 1
    continue
  fi
  # One shard per core: the GPU suite is compile-bound and takes minutes.
  read -r g_pass g_fail < <(gtest_sharded "$log" "$BUILD/bin/$suite")
  grep -E "^\[  FAILED|Failure" "$log" | head -n 30
  [ "$g_fail" -ne 0 ] && tail -n 30 "$log"
  report "$suite" "$g_pass" "$g_fail"
done

# The Python package (python/kvir, ctypes over libKVIRCAPI.so): pytest
# against the float64 reference in the emulator and through the GPU launch
# path with an emulated driver; the CUDA tests skip without a device.
export KVIR_CAPI_LIBRARY="$BUILD/lib/libKVIRCAPI.so"
export KVIR_RUNTIME_LIBRARY="$BUILD/lib/libkvir_runtime.so"
log="$BUILD/pytest.log"
rm -rf "$BUILD/kvir-cache"
(cd python && KVIR_CACHE_DIR="$BUILD/kvir-cache" /usr/bin/python3 -m pytest -q -rs -p no:cacheprovider tests) 2>&1 | tee "$log" | tail -n 15
rc=${PIPESTATUS[0]}
read -r py_pass py_fail < <(pytest_counts "$log" "$rc")
report python "$py_pass" "$py_fail"
unset KVIR_CAPI_LIBRARY KVIR_RUNTIME_LIBRARY

# The same bits on every host CPU: the golden records, then the suites once
# more on baseline x86-64 (scripts/host-independence.sh, docs/Emulator.md).
log="$BUILD/host-independence.log"
scripts/host-independence.sh 2>&1 | tee "$log" | grep -vE "^== "
read -r h_pass h_fail < <(summary_counts "$log" host-independence)
grep -q "^host-independence: " "$log" || tail -n 30 "$log"
report host-independence "$h_pass" "$h_fail"

# Install, then build and run a consumer through find_package(KVIR).
install_ok=0
rm -rf "$BUILD/install" "$BUILD/consumer" "$BUILD/engines"
if cmake --install "$BUILD" --prefix "$BUILD/install" > "$BUILD/install.log" 2>&1 &&
   cmake -G Ninja -S test/Install/consumer -B "$BUILD/consumer" \
     -DCMAKE_CXX_COMPILER=clang++-22 -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
     -DKVIR_DIR="$BUILD/install/lib/cmake/kvir" >> "$BUILD/install.log" 2>&1 &&
   ninja -C "$BUILD/consumer" >> "$BUILD/install.log" 2>&1 &&
   "$BUILD/consumer/kvir-consumer"; then
  install_ok=1
else
  tail -n 30 "$BUILD/install.log"
fi
report install "$install_ok" $((1 - install_ok))

# The installed Python package (finding the installed library) runs the
# FlashInfer-shaped example and the context-parallel one (two gloo
# processes) against their float64 references.
py_ok=0
log="$BUILD/install-python.log"
if PYTHONPATH="$BUILD/install/lib/python3/dist-packages" /usr/bin/python3 -c \
     "import kvir, sys; sys.exit(not kvir.__file__.startswith('$BUILD/install'))" > "$log" 2>&1 &&
   PYTHONPATH="$BUILD/install/lib/python3/dist-packages" \
     KVIR_CACHE_DIR="$BUILD/kvir-cache-install" \
     /usr/bin/python3 examples/python/batch_decode.py >> "$log" 2>&1 &&
   PYTHONPATH="$BUILD/install/lib/python3/dist-packages" \
     /usr/bin/python3 examples/python/context_parallel.py 2 >> "$log" 2>&1; then
  py_ok=1
  tail -n 3 "$log"
else
  tail -n 30 "$log"
fi
report install-python "$py_ok" $((1 - py_ok))

# The C and C++ example engines, built against the installed kvir: typed
# launchers of the generated headers through the driver table, with kvir's
# emulator standing in for the GPU here; each checks a float64 reference.
engines_ok=0
log="$BUILD/engines.log"
if cmake -G Ninja -S examples/engines -B "$BUILD/engines" \
     -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
     -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
     -DKVIR_DIR="$BUILD/install/lib/cmake/kvir" > "$log" 2>&1 &&
   ninja -C "$BUILD/engines" >> "$log" 2>&1 &&
   "$BUILD/engines/decode_engine" examples/decode.mlir >> "$log" 2>&1 &&
   "$BUILD/engines/serving_engine" examples/prefill.mlir >> "$log" 2>&1; then
  engines_ok=1
  grep -E "error vs|dependent launches" "$log"
else
  tail -n 30 "$log"
fi
report engines "$engines_ok" $((1 - engines_ok))

# The README's quick start must stay true: the demo compiles, ptxases and
# emulates a kernel and checks it against numpy.
demo_ok=0
if scripts/demo.sh > "$BUILD/demo.log" 2>&1; then
  demo_ok=1
else
  tail -n 30 "$BUILD/demo.log"
fi
report demo "$demo_ok" $((1 - demo_ok))

# The same tools and tests with ASan + UBSan, then a bounded fuzzing run
# (docs/Reliability.md). KVIR_SKIP_SANITIZE=1 skips them while iterating.
if [ "${KVIR_SKIP_SANITIZE:-0}" != 1 ]; then
  log="$BUILD/sanitize.log"
  scripts/sanitize.sh 2>&1 | tee "$log" | grep -E "^(==|kvir-fuzz|fuzz)"
  read -r s_pass s_fail < <(summary_counts "$log" sanitizers)
  grep -q "^sanitizers: " "$log" || tail -n 40 "$log"
  report sanitizers "$s_pass" "$s_fail"
fi

finish
