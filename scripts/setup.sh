#!/usr/bin/env bash
# Installs everything kvir needs from Debian's packages. Idempotent: when all
# packages are present it only checks and returns.
set -euo pipefail

PACKAGES=(
  cmake ninja-build ccache git
  clang-22 llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  libgtest-dev libboost-context-dev libclang-rt-22-dev libllvmlibc-22-dev
  python3 python3-numpy python3-pytest python3-torch
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi
echo "setup: installing ${missing[*]}"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "setup: done"
