#!/usr/bin/env bash
# Writes replayable GPU test cases (bench/gpu/replay_cases.py) into a
# directory: runs the GPU tests matching a gtest filter with
# KVIR_DUMP_CASES, then compiles each case's source to PTX for its chip
# (kvir-opt --kv-to-ptx | kvir-translate), the same kernels the emulator ran.
#   prepare_cases.sh <out dir> [gtest filter]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${KVIR_BUILD_DIR:-$ROOT/build}"
out="$1"
filter="${2:-Matrix/*:States/*:GpuMlaAppend.*}"
rm -rf "$out"
mkdir -p "$out"
source "$ROOT/scripts/lib/counts.sh"
read -r p f < <(KVIR_DUMP_CASES="$out" gtest_sharded "$out.log" \
                "$BUILD/bin/kvir-gpu-tests" --gtest_filter="$filter")
echo "prepare_cases: $p tests passed, $f failed"
for dir in "$out"/*/; do
  read -r chip graph mma < <(/usr/bin/python3 -c '
import json, sys
c = json.load(open(sys.argv[1] + "/case.json"))
print(c["chip"], c["graph_max_batch"], c.get("mma", "auto"))' "$dir")
  "$BUILD/bin/kvir-opt" "$dir/source.mlir" \
      --kv-to-ptx="chip=$chip graph-max-batch=$graph mma=$mma" |
    "$BUILD/bin/kvir-translate" -o "$dir/ptx"
  mv "$dir/ptx/"*.ptx "$dir/kv_kernels.ptx"
  rm -rf "$dir/ptx"
done
