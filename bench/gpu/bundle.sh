#!/usr/bin/env bash
# Builds what a bare GPU machine (driver, python3 with numpy and torch; no
# LLVM/MLIR) needs to run bench/gpu/run_device.sh, into <bundle dir>:
#   cases/     replayable GPU test cases (prepare_cases.sh), those up to
#              KVIR_CASE_KB (default 1000) KB plus the MLA and tensor-core
#              decode and prefill cases named below, to stay within what can be carried;
#   modules/   the timed decode/prefill modules (timing_modules.sh);
#   lib/       libkvir_runtime.so (kvir_schedule_work; libc/libstdc++ only);
#   kvir/      the Python package (python/kvir); batch_decode.py, its example,
#              with its kernels in kvir-cache/;
#   *.py, run_device.sh.
# KVIR_CASE_FILTER overrides prepare_cases.sh's gtest filter.
#   bundle.sh <bundle dir> [chip]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="$1"
chip="${2:-sm_90a}"
max_kb="${KVIR_CASE_KB:-1000}"
extras="Matrix_GpuMla.MatchesReference_H16CausalRowsUnsplitCsrP32F16.0
Matrix_GpuMla.MatchesReference_H16UnsplitCsrP64BF16Base2.0
Matrix_GpuTensorCoreDecode.MatchesReference_D128Dv256TokenTableFixedGridF16.1
Matrix_GpuTensorCoreDecode.MatchesReference_Fp8E4M3D256Dv128NhdSplitCsrG4F16.0
GpuMlaAppend.ThenCausalRowsCsrF16.0
Matrix_GpuPrefill.MatchesReference_TwoRowTilesPerWarpCausalNhdCsrP16D64G4F16.0
Matrix_GpuPrefill.MatchesReference_PositionsRaggedD64G2BF16Sm90a.0
Matrix_GpuPrefill.MatchesReference_CausalPackedMaskNhdCsrP1D64G8BF16.0"
rm -rf "$out"
mkdir -p "$out/cases" "$out/lib"
all="$(mktemp -d)"
trap 'rm -rf "$all"' EXIT
"$ROOT/bench/gpu/prepare_cases.sh" "$all" ${KVIR_CASE_FILTER:+"$KVIR_CASE_FILTER"} >/dev/null
for dir in "$all"/*/; do
  name="$(basename "$dir")"
  kb="$(du -sk "$dir" | cut -f1)"
  if [ "$kb" -le "$max_kb" ] || grep -qx "$name" <<<"$extras"; then
    cp -r "$dir" "$out/cases/$name"
  fi
done
"$ROOT/bench/gpu/timing_modules.sh" "$out/modules" "$chip" >/dev/null
cp "${KVIR_BUILD_DIR:-$ROOT/build}/lib/libkvir_runtime.so" "$out/lib/"
cp "$ROOT"/bench/gpu/*.py "$ROOT"/bench/gpu/*.cu "$ROOT/bench/gpu/run_device.sh" \
  "$out/"
# kvir's Python package (its GPU path needs no LLVM: kernels come from the
# bundle's manifests or the package's cache).
mkdir -p "$out/kvir"
cp "$ROOT"/python/kvir/*.py "$out/kvir/"
# The Python example and its kernels, compiled here into the bundle's
# kernel cache (running it here also checks it in the emulator).
cp "$ROOT/examples/python/batch_decode.py" "$out/"
KVIR_CACHE_DIR="$out/kvir-cache" KVIR_CHIP="$chip" \
  KVIR_CAPI_LIBRARY="${KVIR_BUILD_DIR:-$ROOT/build}/lib/libKVIRCAPI.so" \
  /usr/bin/python3 "$ROOT/examples/python/batch_decode.py" > /dev/null
echo "$(ls "$out/cases" | wc -l) of $(ls "$all" | wc -l) cases, $(du -sh "$out" | cut -f1)"
