#!/usr/bin/env bash
# Configures and builds xferbench into build/ (every backend the machine can
# compile: CUDA where nvcc is, OpenCL where its headers are), and puts the
# commands xferbench and xferbench-report in build/bin/.
# Usage: scripts/build.sh [extra cmake -D options]
# Prints setup.sh's two lines on stdout (the cmake, then the python to use).
# On stderr, one line per step with its wall time; CMake's and the compiler's
# own output go to build/configure.log and build/build.log (the compiler's
# warnings counted and the first one shown; a failure shows its errors).
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$(date +%s.%N)
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }'; }
tools=$(scripts/setup.sh)
{ read -r cmake_bin; read -r python_bin; } <<<"$tools"
mkdir -p build

# logged WHAT LOG CMD...: runs CMD into LOG; on failure its first errors and the log's path.
logged() {
  local what=$1 log=$2
  shift 2
  if "$@" >"$log" 2>&1; then return 0; fi
  grep -n -m 20 -A 3 -E 'error|Error|FAILED' "$log" >&2 || tail -n 30 "$log" >&2
  echo "build.sh: $what FAILED (all of it: $log)" >&2
  exit 1
}

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
# The Python module is built for setup.sh's python (the one with nanobind and
# the one test.sh runs pytest with), not whichever python3 CMake finds first.
python_def=()
grep -q '^Python_EXECUTABLE:' build/CMakeCache.txt 2>/dev/null || python_def=(-DPython_EXECUTABLE="$python_bin")
# A unity build (CMake joins a target's sources a few at a time): the headers
# each file includes are compiled once a batch, and a fresh build on CI's two
# cores takes about half the time. A change to
# one file recompiles its batch; -DCMAKE_UNITY_BUILD=OFF turns it off.
unity=(-DCMAKE_UNITY_BUILD=ON)
configured=1
if [ ! -f build/CMakeCache.txt ]; then
  logged "configuring" build/configure.log "$cmake_bin" -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    "${unity[@]}" "${python_def[@]}" "$@"
elif [ $# -gt 0 ] || [ ${#python_def[@]} -gt 0 ]; then
  logged "configuring" build/configure.log "$cmake_bin" -S . -B build "${python_def[@]}" "$@"
else
  configured=0
fi
[ "$configured" = 1 ] && echo "build.sh: setup and configuring: $(elapsed "$t0") s (log: build/configure.log)" >&2
t0=$(date +%s.%N)
# XFER_BUILD_TARGET: build only that target (run.sh needs only the tool and its commands).
logged "building" build/build.log "$cmake_bin" --build build -j "$(nproc)" ${XFER_BUILD_TARGET:+--target $XFER_BUILD_TARGET}
if grep -q 'ninja: no work to do\|Nothing to be done' build/build.log; then
  echo "build.sh: up to date ($(elapsed "$t0") s)" >&2
else
  warnings=$(grep -c 'warning:' build/build.log || true)
  echo "build.sh: built in $(elapsed "$t0") s, $warnings compiler warning(s) (log: build/build.log)" >&2
  [ "$warnings" -gt 0 ] && echo "  the first: $(grep -m 1 'warning:' build/build.log)" >&2
fi
printf '%s\n' "$tools"
