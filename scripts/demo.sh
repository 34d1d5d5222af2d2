#!/usr/bin/env bash
# The main job, end to end: compile a kv.decode module with kvir and run it on
# the CPU, then check the printed result against an independent float64 numpy
# reference.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${KVIR_BUILD_DIR:-$ROOT/build}"
LLVM_BIN=/usr/lib/llvm-22/bin
LIBS="/usr/lib/llvm-22/lib/libmlir_runner_utils.so,/usr/lib/llvm-22/lib/libmlir_c_runner_utils.so"
cd "$ROOT"

scripts/setup.sh
scripts/build.sh kvir-opt

echo
echo "== examples/decode.mlir: batch decode over a CSR-paged f16 cache (CPU pipeline)"
echo "\$ kvir-opt examples/decode.mlir --kv-lower-to-llvm | mlir-runner -e main ..."
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
"$BUILD/bin/kvir-opt" examples/decode.mlir --kv-lower-to-llvm |
  "$LLVM_BIN/mlir-runner" -e main --entry-point-result=void --shared-libs="$LIBS" |
  tee "$out"
echo
/usr/bin/python3 examples/decode_reference.py < "$out"
