#!/usr/bin/env bash
# Builds kvir's tools and unit tests with AddressSanitizer and
# UndefinedBehaviorSanitizer (kvir's code; Debian's LLVM/MLIR libraries are
# not instrumented, kvir's code also for libFuzzer's coverage) into
# build-sanitize/, runs the unit tests, the emulator tests and the lit suite
# under them, then fuzzes for KVIR_FUZZ_SECONDS (150) with scripts/fuzz.sh.
# scripts/test.sh runs it last. Ends with "sanitizers: N passed, M failed".
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${KVIR_SANITIZE_BUILD:-$ROOT/build-sanitize}"
cd "$ROOT"
scripts/setup.sh || exit 1

cmake -G Ninja -S "$ROOT" -B "$BUILD" \
  -DCMAKE_BUILD_TYPE=Release -DKVIR_ENABLE_ASSERTIONS=ON \
  -DKVIR_ENABLE_SANITIZERS=ON -DKVIR_ENABLE_FUZZER=ON \
  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
  -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
  > /tmp/kvir-sanitize-cmake.log 2>&1 ||
  { tail -n 30 /tmp/kvir-sanitize-cmake.log; exit 1; }
ninja -C "$BUILD" kvir-opt kvir-translate kvir-runner kvir-unit-tests \
  kvir-emulator-tests kvir-fuzz || exit 1

# See test/lit.cfg.py: LLVM's headers poison memory from kvir's side that
# the uninstrumented libLLVM then writes. The gtests check for leaks; lit
# sets its own options (no leak check of the test programs).
export ASAN_OPTIONS="allow_user_poisoning=0:detect_leaks=1"
export UBSAN_OPTIONS="print_stacktrace=1"
passed=0
failed=0
report() {
  echo "== $1: $2 passed, $3 failed"
  passed=$((passed + $2))
  failed=$((failed + $3))
}
for suite in kvir-unit-tests kvir-emulator-tests; do
  log="$BUILD/$suite.log"
  "$BUILD/bin/$suite" --gtest_brief=1 > "$log" 2>&1
  rc=$?
  g_pass=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
  # --gtest_brief prints one "[  FAILED  ] Suite.Test (N ms)" line per
  # failed test and no failure summary.
  g_fail=$(grep -cE '^\[  FAILED  \] [A-Za-z_]' "$log")
  g_pass=${g_pass:-0}
  # A sanitizer report ends the run before gtest's summary.
  if [ $rc -ne 0 ] && [ "$g_fail" -eq 0 ]; then g_fail=1; fi
  [ "$g_fail" -ne 0 ] && tail -n 40 "$log"
  report "$suite (sanitized)" "$g_pass" "$g_fail"
done

log="$BUILD/lit.log"
/usr/lib/llvm-22/bin/lit -sv "$BUILD/test" > "$log" 2>&1
lit_pass=$(grep -E "^\s*(Passed|Expectedly Failed|Unsupported)\s*:" "$log" | awk -F: '{s += $2} END {print s + 0}')
lit_fail=$(grep -E "^\s*(Failed|Unexpectedly Passed|Unresolved|Timed Out)\s*:" "$log" | awk -F: '{s += $2} END {print s + 0}')
if [ "$lit_pass" -eq 0 ] && [ "$lit_fail" -eq 0 ]; then lit_fail=1; fi
[ "$lit_fail" -ne 0 ] && grep -E "^(FAIL|UNRESOLVED):" "$log"
report "lit (sanitized)" "$lit_pass" "$lit_fail"

fuzz_ok=0
KVIR_SANITIZE_BUILD="$BUILD" scripts/fuzz.sh "${KVIR_FUZZ_SECONDS:-150}" \
  > "$BUILD/fuzz-run.log" 2>&1 && fuzz_ok=1
grep -E "^(kvir-fuzz|fuzz):" "$BUILD/fuzz-run.log"
[ $fuzz_ok -eq 0 ] && tail -n 60 "$BUILD/fuzz-run.log"
report "fuzz (sanitized)" "$fuzz_ok" $((1 - fuzz_ok))

echo "sanitizers: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
