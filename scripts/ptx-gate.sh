#!/usr/bin/env bash
# The PTX gate: a refactor of the kernel layer proves itself neutral by
# compiling every kernel the GPU tests, the examples and the GPU benchmark
# build to the same PTX, manifests and C headers as before, for sm_80, sm_86
# and sm_90a (KVIR_GATE_CHIPS) and the chip each test compiled it for.
#   ptx-gate.sh collect   runs the GPU tests once with KVIR_COLLECT_MODULES
#                         (each kv module a test compiles, with its chip and
#                         graph-max-batch), adds examples/*.mlir and the
#                         timed benchmark modules: the gate's inputs (they
#                         are test inputs, so a lowering change leaves them);
#   ptx-gate.sh record    compiles every input for each chip with this
#                         build and records the digest of what kvir-translate
#                         wrote (or of the diagnostics, when a chip cannot
#                         take a module);
#   ptx-gate.sh check     compiles again and lists the inputs whose output
#                         changed; exits 1 if any did.
# KVIR_GATE_DIR (default build/ptx-gate) holds inputs and the record.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${KVIR_BUILD_DIR:-$ROOT/build}"
GATE="${KVIR_GATE_DIR:-$BUILD/ptx-gate}"
CHIPS="${KVIR_GATE_CHIPS:-sm_80 sm_86 sm_90a}"
cmd="${1:-}"

# digest_one MODULE CHIP: "<module> <chip> <digest>" of the module's output.
digest_one() {
  local module=$1 chip=$2 graph tmp out
  graph=$(sed -n '1s/.*graph-max-batch=\([0-9-]*\).*/\1/p' "$module")
  tmp=$(mktemp -d)
  if "$BUILD/bin/kvir-opt" "$module" \
       --kv-to-ptx="chip=$chip graph-max-batch=${graph:-0}" 2> "$tmp/diag" |
     "$BUILD/bin/kvir-translate" -o "$tmp/out" 2>> "$tmp/diag"; then
    out=$(cd "$tmp/out" && find . -type f | sort | xargs sha256sum | sha256sum)
  else
    # Locations name the module's path: digest the messages only.
    out="error:$(sed 's|^[^ ]*: ||' "$tmp/diag" | sha256sum)"
  fi
  echo "$(basename "$module") $chip ${out%% *}"
  rm -rf "$tmp"
}
export -f digest_one
export BUILD

# Every module for each of CHIPS and for the chip its test ran it on.
digest_all() {
  local m own
  for m in "$GATE"/modules/*.mlir; do
    own=$(sed -n '1s/.*chip=\([a-z0-9_]*\).*/\1/p' "$m")
    for chip in $(echo $CHIPS $own | tr ' ' '\n' | sort -u); do
      echo "$m $chip"
    done
  done | xargs -P "$(nproc)" -n 2 bash -c 'digest_one "$0" "$1"' | sort
}

case "$cmd" in
collect)
  rm -rf "$GATE/modules"
  mkdir -p "$GATE/modules"
  source "$ROOT/scripts/lib/counts.sh"
  read -r p f < <(KVIR_COLLECT_MODULES="$GATE/modules" \
                  gtest_sharded "$GATE/collect.log" "$BUILD/bin/kvir-gpu-tests")
  echo "GPU tests: $p passed, $f failed"
  # add_input PREFIX FILE: a module compiled without fixed grids.
  add_input() {
    { echo "// kvir-gate: chip=sm_90a graph-max-batch=0"; cat "$2"; } \
      > "$GATE/modules/$1_$(basename "$2")"
  }
  for m in "$ROOT"/examples/*.mlir; do add_input example "$m"; done
  bench=$(mktemp -d)
  "$ROOT/bench/gpu/timing_modules.sh" "$bench" sm_90a > /dev/null
  for m in "$bench"/*.mlir; do add_input bench "$m"; done
  rm -rf "$bench"
  echo "ptx-gate: $(ls "$GATE/modules" | wc -l) modules in $GATE/modules"
  ;;
record)
  digest_all > "$GATE/record.txt"
  echo "ptx-gate: recorded $(wc -l < "$GATE/record.txt") compilations" \
       "($(grep -c ' error:' "$GATE/record.txt" || true) rejected by a chip)"
  ;;
check)
  [ -f "$GATE/record.txt" ] || { echo "ptx-gate: no record; run record first"; exit 2; }
  digest_all > "$GATE/check.txt"
  if diff "$GATE/record.txt" "$GATE/check.txt" > "$GATE/diff.txt"; then
    echo "ptx-gate: $(wc -l < "$GATE/check.txt") compilations identical"
  else
    echo "ptx-gate: changed (module chip record -> now):"
    cat "$GATE/diff.txt"
    exit 1
  fi
  ;;
*)
  echo "usage: ptx-gate.sh collect | record | check" >&2
  exit 2
  ;;
esac
