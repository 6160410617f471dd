#!/usr/bin/env bash
# Configures and builds xferbench into build/ (every backend the machine can
# compile: CUDA where nvcc is, OpenCL where its headers are).
# Usage: scripts/build.sh [extra cmake -D options]
# Prints setup.sh's two lines on stdout (the cmake, then the python to use).
set -euo pipefail
cd "$(dirname "$0")/.."
# Each step's wall seconds go to stderr (scripts/test.sh's log shows them;
# stdout is only the two lines below).
t0=$(date +%s.%N)
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }'; }
tools=$(scripts/setup.sh)
echo "build.sh: setup.sh took $(elapsed "$t0") s" >&2
t0=$(date +%s.%N)
{ read -r cmake_bin; read -r python_bin; } <<<"$tools"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
# The Python module is built for setup.sh's python (the one with nanobind and
# the one test.sh runs pytest with), not whichever python3 CMake finds first.
python_def=()
grep -q '^Python_EXECUTABLE:' build/CMakeCache.txt 2>/dev/null || python_def=(-DPython_EXECUTABLE="$python_bin")
if [ ! -f build/CMakeCache.txt ]; then
  "$cmake_bin" -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "${python_def[@]}" "$@" >&2
elif [ $# -gt 0 ] || [ ${#python_def[@]} -gt 0 ]; then
  "$cmake_bin" -S . -B build "${python_def[@]}" "$@" >&2
fi
echo "build.sh: configuring took $(elapsed "$t0") s" >&2
t0=$(date +%s.%N)
# XFER_BUILD_TARGET: build only that target (run.sh needs only the tool).
"$cmake_bin" --build build -j "$(nproc)" ${XFER_BUILD_TARGET:+--target "$XFER_BUILD_TARGET"} >&2
echo "build.sh: building took $(elapsed "$t0") s" >&2
printf '%s\n' "$tools"
