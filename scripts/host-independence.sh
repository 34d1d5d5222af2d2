#!/usr/bin/env bash
# The emulator gives the same bits on every host CPU (docs/Emulator.md,
# "The same results on every host"). Run by scripts/test.sh after the main
# suites, on an existing build:
#  1. the golden records of test/GPU/golden (the bytes of the outputs and
#     the counters of a fixed set of emulated programs) on this host's CPU;
#  2. on x86-64 hosts, everything again with every kvir JIT on baseline
#     x86-64 (KVIR_JIT_CPU=x86-64: SSE2, no F16C, FMA, AVX or AVX-512; Debian's
#     mlir-runner gets --mattr=-sse3): the lit tests that run code, the unit
#     and emulator gtests, the GPU tests of every decode and append
#     configuration (f16, bf16, fp8 and int8 caches, RoPE), the merges, the
#     decode variants and both differential sweeps' CI seeds, the golden
#     records once more, and the Python package's decode and fp8 tests.
# Ends with "host-independence: N passed, M failed".
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${KVIR_BUILD_DIR:-$ROOT/build}"
LLVM_BIN=/usr/lib/llvm-22/bin
cd "$ROOT"
source "$ROOT/scripts/lib/counts.sh"

# A gtest filter of the recorded tests: record files are named after the
# test with '/' written as '_', which '?' matches again.
golden_filter=$(ls test/GPU/golden/*.txt | sed 's|.*/||; s|\.txt$||; s|_|?|g' |
                paste -sd: -)
export KVIR_GOLDEN_DIR="$ROOT/test/GPU/golden"

# gtest_run NAME BINARY [ARGS...]: one gtest run, reported as NAME.
gtest_run() {
  local name=$1 bin=$2 log="$BUILD/host-independence-$1.log"
  shift 2
  read -r p f < <(gtest_sharded "$log" "$BUILD/bin/$bin" "$@")
  grep -E "^\[  FAILED|Failure|golden record" "$log" | head -n 20
  report "$name" "$p" "$f"
}

gtest_run golden-host kvir-gpu-tests --gtest_filter="$golden_filter"

if [ "$(uname -m)" = x86_64 ]; then
  export KVIR_JIT_CPU=x86-64
  log="$BUILD/host-independence-lit.log"
  "$LLVM_BIN/lit" -sv "$BUILD/test/Emulator" "$BUILD/test/Runner" \
      "$BUILD/test/Integration" "$BUILD/test/Codegen" "$BUILD/test/Target" \
      "$BUILD/test/Conversion" "$BUILD/test/CAPI" > "$log" 2>&1
  grep -E "^(FAIL|XPASS|UNRESOLVED|TIMEOUT):" "$log"
  read -r p f < <(lit_counts "$log")
  report baseline-lit "$p" "$f"
  gtest_run baseline-unit kvir-unit-tests
  gtest_run baseline-emulator kvir-emulator-tests
  gtest_run baseline-gpu kvir-gpu-tests --gtest_filter="Matrix/GpuDecode.*:Matrix/GpuAppend.*:States/*:Decode/GpuDecodeVariants.*:Sweep/*:$golden_filter"
  log="$BUILD/host-independence-python.log"
  rm -rf "$BUILD/kvir-cache-baseline"
  (cd python && KVIR_CAPI_LIBRARY="$BUILD/lib/libKVIRCAPI.so" \
     KVIR_RUNTIME_LIBRARY="$BUILD/lib/libkvir_runtime.so" \
     KVIR_CACHE_DIR="$BUILD/kvir-cache-baseline" \
     /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/test_decode.py \
       tests/test_fp8.py) > "$log" 2>&1
  rc=$?
  tail -n 3 "$log"
  read -r p f < <(pytest_counts "$log" "$rc")
  report baseline-python "$p" "$f"
  unset KVIR_JIT_CPU
else
  echo "host-independence: not an x86-64 host; the baseline x86-64 run is skipped"
fi

echo "host-independence: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
