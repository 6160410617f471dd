#!/usr/bin/env bash
# Configures and builds xferbench into build/ (every backend the machine can
# compile: CUDA where nvcc is, OpenCL where its headers are).
# Usage: scripts/build.sh [extra cmake -D options]
# Prints setup.sh's two lines on stdout (the cmake, then the python to use).
set -euo pipefail
cd "$(dirname "$0")/.."
tools=$(scripts/setup.sh)
{ read -r cmake_bin; read -r _; } <<<"$tools"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if [ ! -f build/CMakeCache.txt ]; then
  "$cmake_bin" -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "$@" >&2
elif [ $# -gt 0 ]; then
  "$cmake_bin" -S . -B build "$@" >&2
fi
# XFER_BUILD_TARGET: build only that target (run.sh needs only the tool).
"$cmake_bin" --build build -j "$(nproc)" ${XFER_BUILD_TARGET:+--target "$XFER_BUILD_TARGET"} >&2
printf '%s\n' "$tools"
