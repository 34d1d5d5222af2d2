#!/usr/bin/env bash
# Fuzzes kvir's parser, verifiers and pipelines with libFuzzer (tools/
# kvir-fuzz) for a bounded time, in the ASan + UBSan build (build-sanitize/,
# configured with KVIR_ENABLE_FUZZER).
#
#   scripts/fuzz.sh [SECONDS]     default 150 (KVIR_FUZZ_SECONDS)
#
# 1. Seeds: every lit input of test/ and the examples, split at `// -----` like
#    -split-input-file does (so the lit tests made of earlier findings are
#    replayed first).
# 2. Fuzzes for SECONDS, one input at most KVIR_FUZZ_TIMEOUT seconds (60;
#    the largest seed, a matrix of prefill kernels, takes up to 20 s in this
#    build): any crash, sanitizer report, hang, pass leaving invalid IR or pipeline
#    failing silently stops the run, saves the input under
#    build-sanitize/fuzz-artifacts/ and fails the script.
# The corpus grows in build-sanitize/fuzz-corpus/ from run to run: run it for
# hours with e.g. `scripts/fuzz.sh 14400`. docs/Reliability.md says how to
# replay a saved input and turn it into a lit test.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${KVIR_SANITIZE_BUILD:-$ROOT/build-sanitize}"
SECONDS_TO_RUN="${1:-${KVIR_FUZZ_SECONDS:-150}}"
TIMEOUT="${KVIR_FUZZ_TIMEOUT:-60}"
cd "$ROOT"

scripts/setup.sh > /dev/null || exit 1
KVIR_SANITIZE_BUILD="$BUILD" scripts/build-sanitize.sh kvir-fuzz || exit 1

seeds="$BUILD/fuzz-seeds"
corpus="$BUILD/fuzz-corpus"
artifacts="$BUILD/fuzz-artifacts"
rm -rf "$seeds"
mkdir -p "$seeds" "$corpus" "$artifacts"
find test examples -name '*.mlir' | sort | while read -r file; do
  base=$(echo "$file" | tr '/' '_')
  awk -v out="$seeds/$base" '
    BEGIN { n = 0; f = out "." n }
    /^\/\/ -----/ { close(f); n++; f = out "." n; next }
    { print > f }' "$file"
done
# JSON specs (kvir_module_from_spec, kvir.compile) are fuzzed too.
cp test/Fuzz/specs/*.json "$seeds/"
echo "kvir-fuzz: $(ls "$seeds" | wc -l) seed inputs"

export ASAN_OPTIONS="allow_user_poisoning=0:detect_leaks=0"
export UBSAN_OPTIONS="print_stacktrace=1"
log="$BUILD/fuzz.log"
"$BUILD/bin/kvir-fuzz" "$corpus" "$seeds" \
  -max_total_time="$SECONDS_TO_RUN" -timeout="$TIMEOUT" \
  -rss_limit_mb=6144 -max_len=16384 -print_final_stats=1 \
  -artifact_prefix="$artifacts/" > "$log" 2>&1
rc=$?
grep -E "^(stat::number_of_executed_units|stat::peak_rss_mb|stat::new_units_added)" "$log"
if [ $rc -ne 0 ]; then
  tail -n 80 "$log"
  # A digest that survives a shortened CI log: the report's key lines and
  # the input that triggered it, each line prefixed with "fuzz: ".
  grep -E "runtime error|ERROR: |SUMMARY: |^kvir-fuzz: " "$log" | head -n 8 |
    sed 's/^/fuzz: report: /'
  input=$(ls -t "$artifacts"/crash-* "$artifacts"/timeout-* \
            "$artifacts"/oom-* 2>/dev/null | head -n 1)
  if [ -n "$input" ]; then
    echo "fuzz: input $input:"
    head -c 3000 "$input" | sed 's/^/fuzz: | /'
    echo
  fi
  echo "fuzz: FAILED (input saved in $artifacts/; replay with" \
       "KVIR_FUZZ_VERBOSE=1 $BUILD/bin/kvir-fuzz <file>)"
  exit 1
fi
echo "fuzz: passed, $(grep -oE 'number_of_executed_units: [0-9]+' "$log" | grep -oE '[0-9]+') inputs in ${SECONDS_TO_RUN} s, corpus $(ls "$corpus" | wc -l) files"
