#!/usr/bin/env bash
# Configures build-sanitize/ (KVIR_SANITIZE_BUILD) -- ASan + UBSan and
# libFuzzer coverage on kvir's code, assertions on, clang-22, ccache -- and
# builds the given ninja targets. scripts/sanitize.sh and scripts/fuzz.sh
# build through it.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${KVIR_SANITIZE_BUILD:-$ROOT/build-sanitize}"
log=/tmp/kvir-sanitize-cmake.log
cmake -G Ninja -S "$ROOT" -B "$BUILD" \
  -DCMAKE_BUILD_TYPE=Release -DKVIR_ENABLE_ASSERTIONS=ON \
  -DKVIR_ENABLE_SANITIZERS=ON -DKVIR_ENABLE_FUZZER=ON \
  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
  -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
  > "$log" 2>&1 || { tail -n 30 "$log"; exit 1; }
ninja -C "$BUILD" "$@"
