# Sourced by scripts/test.sh and scripts/sanitize.sh: one way to count a
# suite's results and to add them up.
passed=0
failed=0

# report NAME PASSED FAILED: prints a suite's line and adds it up.
report() {
  echo "== $1: $2 passed, $3 failed"
  passed=$((passed + $2))
  failed=$((failed + $3))
}

# gtest_counts LOG RC: "PASSED FAILED" of a --gtest_brief run that exited
# with RC. --gtest_brief prints one "[  FAILED  ] Suite.Test (N ms)" line per
# failed test and no failure summary; a crash or a sanitizer report ends the
# run before any summary (a failure even with no FAILED line); a run that
# passed nothing and failed nothing counts as a failure.
gtest_counts() {
  local log=$1 rc=$2 pass fail
  pass=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
  pass=${pass:-0}
  fail=$(grep -cE '^\[  FAILED  \] [A-Za-z_]' "$log" || true)
  if [ "$rc" -ne 0 ] && [ "$fail" -eq 0 ]; then fail=1; fi
  if [ "$pass" -eq 0 ] && [ "$fail" -eq 0 ]; then fail=1; fi
  echo "$pass $fail"
}

# gtest_sharded LOG BINARY [ARGS...]: runs a gtest binary as one shard per
# core (GTEST_TOTAL_SHARDS; the tests are independent processes' worth of
# work, compile-bound, and share no files), each shard to LOG.N, all of them
# then to LOG; prints "PASSED FAILED" summed over the shards.
gtest_sharded() {
  local log=$1 bin=$2 shards i p f rc pass=0 fail=0
  shift 2
  shards=${KVIR_TEST_SHARDS:-$(nproc)}
  local pids=()
  for ((i = 0; i < shards; i++)); do
    GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i \
      "$bin" --gtest_brief=1 "$@" > "$log.$i" 2>&1 &
    pids+=($!)
  done
  : > "$log"
  for ((i = 0; i < shards; i++)); do
    wait "${pids[$i]}"
    rc=$?
    # A filter can leave a shard nothing to run.
    if [ "$rc" -eq 0 ] && grep -q '^\[==========\] 0 tests from' "$log.$i"; then
      p=0 f=0
    else
      read -r p f < <(gtest_counts "$log.$i" "$rc")
    fi
    pass=$((pass + p))
    fail=$((fail + f))
    cat "$log.$i" >> "$log"
    rm -f "$log.$i"
  done
  if [ "$pass" -eq 0 ] && [ "$fail" -eq 0 ]; then fail=1; fi
  echo "$pass $fail"
}

# summary_counts LOG NAME: "PASSED FAILED" of a script that ends with
# "NAME: N passed, M failed" (scripts/sanitize.sh, host-independence.sh);
# no such line counts as one failure.
summary_counts() {
  local log=$1 name=$2 pass fail
  pass=$(sed -n "s/^$name: \([0-9]*\) passed, \([0-9]*\) failed/\1/p" "$log")
  fail=$(sed -n "s/^$name: \([0-9]*\) passed, \([0-9]*\) failed/\2/p" "$log")
  if [ -z "$pass" ]; then
    pass=0
    fail=1
  fi
  echo "$pass $fail"
}

# lit_counts LOG: "PASSED FAILED" of a `lit -sv` log (unsupported tests count
# as passed; a run with no result counts as a failure).
lit_counts() {
  local log=$1 pass fail
  pass=$(grep -E "^\s*(Passed|Expectedly Failed|Unsupported)\s*:" "$log" | awk -F: '{s += $2} END {print s + 0}')
  fail=$(grep -E "^\s*(Failed|Unexpectedly Passed|Unresolved|Timed Out)\s*:" "$log" | awk -F: '{s += $2} END {print s + 0}')
  if [ "$pass" -eq 0 ] && [ "$fail" -eq 0 ]; then fail=1; fi
  echo "$pass $fail"
}

# pytest_counts LOG RC: "PASSED FAILED" of a pytest -q run that exited with
# RC (skipped tests count as passed, as lit's unsupported ones; errors as
# failed; a failing run with no count, or no result at all, as a failure).
pytest_counts() {
  local log=$1 rc=$2 line pass fail
  line=$(grep -E "^(=+ )?[0-9]+ (passed|failed|skipped|error)" "$log" | tail -1)
  pass=$(echo "$line" | grep -oE "[0-9]+ (passed|skipped)" | awk '{s += $1} END {print s + 0}')
  fail=$(echo "$line" | grep -oE "[0-9]+ (failed|errors?)" | awk '{s += $1} END {print s + 0}')
  if [ "$rc" -ne 0 ] && [ "$fail" -eq 0 ]; then fail=1; fi
  if [ "$pass" -eq 0 ] && [ "$fail" -eq 0 ]; then fail=1; fi
  echo "$pass $fail"
}
