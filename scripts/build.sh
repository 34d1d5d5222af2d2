#!/usr/bin/env bash
# Configures (once) and builds kvir into build/ with clang-22, ninja and ccache.
# Usage: scripts/build.sh [ninja targets...]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${KVIR_BUILD_DIR:-$ROOT/build}"

if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -G Ninja -S "$ROOT" -B "$BUILD" \
    -DCMAKE_BUILD_TYPE=Release -DKVIR_ENABLE_ASSERTIONS=ON \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    -DCMAKE_INSTALL_PREFIX="$BUILD/install"
fi
ninja -C "$BUILD" "$@"
