#!/usr/bin/env bash
# Builds everything and runs every test: the C++ suites through CTest (GPU
# tests skip with a reason where no GPU is present) and the report tool's
# pytest suite. Exits non-zero if anything fails.
set -uo pipefail
cd "$(dirname "$0")/.."
tools=$(scripts/build.sh) || exit 1
{ read -r cmake_bin; read -r python_bin; } <<<"$tools"  # setup.sh's picks: a .venv's python where it made one
ctest_bin="$(dirname "$cmake_bin")/ctest"
[ -x "$ctest_bin" ] || ctest_bin=ctest
export POCL_CACHE_DIR="${POCL_CACHE_DIR:-$PWD/build/pocl-cache}"
mkdir -p "$POCL_CACHE_DIR"

status=0
echo "== C++ tests (ctest) =="
(cd build && "$ctest_bin" --output-on-failure -j "$(nproc)" -LE gpu) || status=1
# GPU tests one at a time: several processes spinning gates on one GPU would
# time-slice it. Where there is no GPU they skip, each saying why.
echo "== C++ GPU tests (ctest -L gpu, one at a time) =="
(cd build && "$ctest_bin" --output-on-failure -L gpu) || status=1

if [ -d python/tests ]; then
  echo "== report tool tests (pytest) =="
  # Run from the source tree (no install needed, which also works offline).
  PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" XFERBENCH_BIN="$PWD/build/apps/xferbench/xferbench" \
    "$python_bin" -m pytest -q python/tests || status=1
fi
exit $status
