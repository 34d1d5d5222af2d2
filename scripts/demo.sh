#!/usr/bin/env bash
# The main job, end to end: compile a FlashInfer-shaped batch decode
# (examples/decode.mlir) to PTX with its launch manifests, check the PTX with
# ptxas where CUDA's ptxas exists, then run the same module's GPU kernels in
# kvir's emulator and compare them with an independent float64 reference.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${KVIR_BUILD_DIR:-$ROOT/build}"
LIBS="/usr/lib/llvm-22/lib/libmlir_runner_utils.so,/usr/lib/llvm-22/lib/libmlir_c_runner_utils.so"
CHIP="${KVIR_CHIP:-sm_90a}"
OUT="$BUILD/demo"
cd "$ROOT"

scripts/setup.sh
scripts/build.sh kvir-opt kvir-translate kvir-runner

echo
echo "== 1. Compile examples/decode.mlir to PTX for $CHIP"
echo "\$ kvir-opt examples/decode.mlir --kv-to-ptx=\"chip=$CHIP\" | kvir-translate -o $OUT"
rm -rf "$OUT"
"$BUILD/bin/kvir-opt" examples/decode.mlir --kv-to-ptx="chip=$CHIP" |
  "$BUILD/bin/kvir-translate" -o "$OUT"
ls -1 "$OUT"
direct=$(ls "$OUT"/decode_*.json | grep -v _split_ | head -1)
echo "-- launch manifest of the direct decode kernel ($(basename "$direct")):"
/usr/bin/python3 - "$direct" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
plan = m["plan"]
print(f"  kernel {m['kernel']}  grid {m['grid']}  block {m['block']}  "
      f"static smem {m['static_shared_bytes']} B  params {m['num_params']}")
print("  args: " + ", ".join(f"{a['name']}:{a['dtype']}{a['shape']}" for a in m["params"]))
sizes = {d["name"]: d for d in plan["sizes"]}
print(f"  split-KV partitions: {sizes[plan['partitions']]['value']}")
print(f"  workspace bytes: {plan['workspace_bytes']}")
print("  kernels: " + ", ".join(f"{k['kernel']} ({k['role']}, {k['when']})" for k in plan["kernels"]))
PY

echo
echo "== 2. ptxas resource use"
PTXAS="$(command -v ptxas || true)"
[ -z "$PTXAS" ] && [ -x /usr/local/cuda/bin/ptxas ] && PTXAS=/usr/local/cuda/bin/ptxas
if [ -n "$PTXAS" ]; then
  "$PTXAS" -arch="$CHIP" -v "$OUT/kv_kernels.ptx" -o "$OUT/kv_kernels.cubin" 2>&1 |
    grep -E "Compiling entry|Used|spill" | sed 's/^ptxas info *: //'
else
  echo "ptxas not found (it ships with CUDA, not Debian): skipped"
fi

echo
echo "== 3. Run the GPU kernels in kvir's emulator and compare with float64 numpy"
echo "\$ kvir-runner examples/decode.mlir -e main --entry-point-result=void --emu-stats ..."
result="$(mktemp)"
stats="$(mktemp)"
trap 'rm -f "$result" "$stats"' EXIT
"$BUILD/bin/kvir-runner" examples/decode.mlir -e main --entry-point-result=void \
  --shared-libs="$LIBS" --chip="$CHIP" --emu-stats > "$result" 2> "$stats"
/usr/bin/python3 - "$stats" <<'PY'
import json, sys
for s in json.load(open(sys.argv[1])):
    print(f"  {s['kernel'][:60]:60s} grid {s['grid']} block {s['block']}: "
          f"{s['global_bytes_loaded']} B loaded, sector efficiency "
          f"{s['sector_efficiency']:.1%}, {s['barriers']} barriers, "
          f"{s['seconds']*1e3:.1f} ms emulated")
PY
echo "-- out[0..3, 0, 0:8]:"
grep -m4 "^ *\[\[\|^\[\[\[" "$result" | head -4 || true
/usr/bin/python3 examples/decode_reference.py < "$result"
