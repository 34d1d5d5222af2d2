#!/usr/bin/env bash
# The GPU checklist, on a machine with a GPU, its driver and python3 with
# numpy and torch (no LLVM/MLIR, no kvir build): run from a bundle that
# bench/gpu/bundle.sh wrote. Writes everything into $OUT (default ./out):
#   log.txt        all output;
#   replay.json    each test case replayed on the GPU against the emulator's
#                  results and the float64 reference (replay_cases.py);
#   timing.json    decode/prefill timings, numerics at those shapes, roofs
#                  and torch SDPA on the same shapes (time_attention.py);
#   sanitizer.txt  compute-sanitizer memcheck and racecheck of a decode and
#                  a prefill case;  ncu.txt: one decode kernel under ncu.
#   python.txt     examples/python/batch_decode.py on torch CUDA tensors,
#                  its kernels from the bundle's kernel cache (python step).
#   tma_swizzle.txt where TMA's swizzles put a tile's elements
#                  (tma_swizzle_probe.cu, built there with nvcc; probe step,
#                  sm_90 only), read by test/Unit/TileLayoutTest.cpp.
# KVIR_GPU_STEPS picks steps (default: device python replay timing sanitizer
# ncu; probe on request),
# KVIR_GPU_SELECT the timed modules (a regex; default all).
#   run_device.sh [bundle dir]
set -uo pipefail
B="$(cd "${1:-$(dirname "${BASH_SOURCE[0]}")}" && pwd)"
OUT="${OUT:-$PWD/out}"
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
PY=python3
export PATH="$PATH:/usr/local/cuda/bin"
STEPS=" ${KVIR_GPU_STEPS:-device python replay timing sanitizer ncu} "
step() { echo; echo "== $* ($(date +%T))"; }
want() { [[ "$STEPS" == *" $1 "* ]]; }

if want device; then
step "device"
nvidia-smi -L
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem \
  --format=csv
$PY -c 'import torch, numpy; print("torch", torch.__version__, "cuda", torch.version.cuda, "numpy", numpy.__version__)'
fi

if want probe; then
step "TMA swizzle probe"
if nvcc -O2 -arch=sm_90a -o "$OUT/tma_swizzle_probe" "$B/tma_swizzle_probe.cu" -lcuda; then
  # swizzle rows cols box_cols offset: the aligned tiles first, then the
  # same boxes started past the swizzle's 1024-byte boundary.
  for c in "128 16 128 64 0" "64 16 64 32 0" "32 16 32 16 0" "0 16 64 64 0" \
           "128 8 256 64 0" "128 16 64 64 128" "128 16 64 64 512" \
           "64 16 32 32 256"; do
    timeout 30 "$OUT/tma_swizzle_probe" $c >> "$OUT/tma_swizzle.txt" 2>&1 ||
      echo "probe $c: exit $?" >> "$OUT/tma_swizzle.txt"
  done
  rm -f "$OUT/tma_swizzle_probe"
  cut -c1-100 "$OUT/tma_swizzle.txt"
fi
fi

if want python; then
step "the Python package on the GPU (examples/python/batch_decode.py)"
KVIR_CACHE_DIR="$B/kvir-cache" KVIR_RUNTIME_LIBRARY="$B/lib/libkvir_runtime.so" \
  timeout 120 $PY "$B/batch_decode.py" 2>&1 | tee "$OUT/python.txt"
fi

if want replay; then
step "replay of the emulated test cases"
timeout "${KVIR_REPLAY_TIMEOUT:-120}" $PY "$B/replay_cases.py" --json "$OUT/replay.json" "$B"/cases/*/
fi

if want timing; then
step "timing"
timeout 180 $PY "$B/time_attention.py" --runtime "$B/lib/libkvir_runtime.so" \
  --modules "$B/modules" --select "${KVIR_GPU_SELECT:-.*}" \
  --json "$OUT/timing.json"
fi

if want sanitizer; then
step "compute-sanitizer"
dec="$(ls -d "$B"/cases/*GpuDecode.MatchesReference_NhdSplitCsrP5D64G2BF16.0 | head -1)"
pre="$(ls -d "$B"/cases/*GpuPrefill.MatchesReference_TwoRowTilesPerWarpCausal* | head -1)"
for tool in memcheck racecheck; do
  timeout 60 compute-sanitizer --tool "$tool" $PY "$B/replay_cases.py" \
    "$dec" "$pre" 2>&1 | tail -8 | tee -a "$OUT/sanitizer.txt"
done
fi

if want ncu; then
step "ncu"
# One decode (split) and one prefill kernel, their first (checked) launch.
for job in decode_f16_g4:16x8192:decode_ prefill_f16_causal:1x8192:prefill_; do
  timeout 60 ncu --clock-control none -k "regex:${job##*:}" -c 1 \
    --section SpeedOfLight --section Occupancy --section WarpStateStats \
    --section MemoryWorkloadAnalysis --section LaunchStats \
    $PY "$B/time_attention.py" --runtime "$B/lib/libkvir_runtime.so" \
    --modules "$B/modules" --only "${job%:*}" --iters 1 --warmup 0 \
    >> "$OUT/ncu.txt" 2>&1
done
grep -E "Profiling|Duration|Throughput|Occupancy|Registers|Stall|Issued" "$OUT/ncu.txt"
fi
step "done"
