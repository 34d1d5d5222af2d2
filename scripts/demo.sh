#!/usr/bin/env bash
# The main job, end to end, for two FlashInfer-shaped modules:
#   examples/decode.mlir   batch decode over a paged KV cache;
#   examples/prefill.mlir  a serving step: append the new tokens' K/V, then
#                          a causal batch prefill on tensor cores.
# Each is compiled to PTX with its launch manifests, the PTX is checked with
# ptxas where CUDA's ptxas exists, then the same module's GPU kernels run in
# kvir's emulator and are compared with an independent float64 reference.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${KVIR_BUILD_DIR:-$ROOT/build}"
LIBS="/usr/lib/llvm-22/lib/libmlir_runner_utils.so,/usr/lib/llvm-22/lib/libmlir_c_runner_utils.so"
CHIP="${KVIR_CHIP:-sm_90a}"
cd "$ROOT"

scripts/setup.sh
scripts/build.sh kvir-opt kvir-translate kvir-runner

PTXAS="$(command -v ptxas || true)"
[ -z "$PTXAS" ] && [ -x /usr/local/cuda/bin/ptxas ] && PTXAS=/usr/local/cuda/bin/ptxas
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# demo <example> <reference script>
demo() {
  local example="$1" reference="$2" name
  name="$(basename "$example" .mlir)"
  local out="$BUILD/demo/$name"

  echo
  echo "== $name: 1. Compile $example to PTX for $CHIP"
  echo "\$ kvir-opt $example --kv-to-ptx=\"chip=$CHIP\" | kvir-translate -o $out"
  rm -rf "$out"
  "$BUILD/bin/kvir-opt" "$example" --kv-to-ptx="chip=$CHIP" |
    "$BUILD/bin/kvir-translate" -o "$out"
  ls -1 "$out"
  echo "-- the launch plans (from the manifests):"
  /usr/bin/python3 - "$out" <<'PY'
import glob, json, sys
seen = set()
for path in sorted(glob.glob(sys.argv[1] + "/*.json")):
    m = json.load(open(path))
    if "plan" not in m:  # a host function's chain of plans
        continue
    plan = m["plan"]
    if plan["name"] in seen:
        continue
    seen.add(plan["name"])
    sizes = {d["name"]: d for d in plan["sizes"]}
    print(f"  {plan['op']}: {len(plan['args'])} arguments")
    for k in plan["kernels"]:
        km = json.load(open(f"{sys.argv[1]}/{k['kernel']}.json"))
        print(f"    {k['role']:6s} ({k['when']}) {k['kernel'][:58]}  grid {km['grid']}"
              f"  block {km['block']}  shared {km['static_shared_bytes'] + km['dynamic_shared_bytes']} B")
    if "partitions" in plan:
        print(f"    split-KV partitions: {sizes[plan['partitions']]['value']}")
PY

  echo
  echo "== $name: 2. ptxas resource use"
  if [ -n "$PTXAS" ]; then
    "$PTXAS" -arch="$CHIP" -v "$out/kv_kernels.ptx" -o "$tmp/kernels.cubin" 2>&1 |
      grep -E "Compiling entry|Used|spill" | sed 's/^ptxas info *: //'
  else
    echo "ptxas not found (it ships with CUDA, not Debian): skipped"
  fi

  echo
  echo "== $name: 3. Run the GPU kernels in kvir's emulator and compare with float64 numpy"
  echo "\$ kvir-runner $example -e main --entry-point-result=void --emu-stats ..."
  "$BUILD/bin/kvir-runner" "$example" -e main --entry-point-result=void \
    --shared-libs="$LIBS" --chip="$CHIP" --emu-stats > "$tmp/result" 2> "$tmp/stats"
  /usr/bin/python3 - "$tmp/stats" <<'PY'
import json, sys
for s in json.load(open(sys.argv[1])):
    print(f"  {s['kernel'][:60]:60s} grid {s['grid']} block {s['block']}: "
          f"{s['global_bytes_loaded']} B loaded, sector efficiency "
          f"{s['sector_efficiency']:.1%}, {s['mma_ops']} mma.sync, "
          f"{s['bank_conflicts']} bank conflicts, {s['seconds']*1e3:.1f} ms emulated")
PY
  /usr/bin/python3 "$reference" < "$tmp/result"
}

demo examples/decode.mlir examples/decode_reference.py
demo examples/prefill.mlir examples/prefill_reference.py
