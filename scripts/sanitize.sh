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

KVIR_SANITIZE_BUILD="$BUILD" scripts/build-sanitize.sh kvir-opt \
  kvir-translate kvir-runner kvir-unit-tests kvir-emulator-tests kvir-fuzz ||
  exit 1

# See test/lit.cfg.py: LLVM's headers poison memory from kvir's side that
# the uninstrumented libLLVM then writes. The gtests check for leaks; lit
# sets its own options (no leak check of the test programs).
export ASAN_OPTIONS="allow_user_poisoning=0:detect_leaks=1"
export UBSAN_OPTIONS="print_stacktrace=1"
source "$ROOT/scripts/lib/counts.sh"
for suite in kvir-unit-tests kvir-emulator-tests; do
  log="$BUILD/$suite.log"
  read -r g_pass g_fail < <(gtest_sharded "$log" "$BUILD/bin/$suite")
  [ "$g_fail" -ne 0 ] && tail -n 40 "$log"
  report "$suite (sanitized)" "$g_pass" "$g_fail"
done

log="$BUILD/lit.log"
/usr/lib/llvm-22/bin/lit -sv "$BUILD/test" > "$log" 2>&1
read -r lit_pass lit_fail < <(lit_counts "$log")
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
