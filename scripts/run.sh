#!/usr/bin/env bash
# The main job: builds xferbench, sweeps every backend this machine has
# (host always; CUDA and OpenCL where present) and renders a report.
# Results land in results/<UTC timestamp>/. Extra arguments go to
# `xferbench sweep` (e.g. --quick, -b host, --max 1G).
set -euo pipefail
cd "$(dirname "$0")/.."
XFER_BUILD_TARGET=xferbench scripts/build.sh >/dev/null
# The two commands the README names (cmake/commands.cmake); the report one runs under setup's python.
bin=build/bin/xferbench
out="results/$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$out"
export POCL_CACHE_DIR="${POCL_CACHE_DIR:-$PWD/build/pocl-cache}"
mkdir -p "$POCL_CACHE_DIR"

"$bin" info | tee "$out/info.txt"
echo
# The sweep's own defaults are the overview (core/plan.hpp, core/runner.hpp):
# eight sizes, h2d and d2h, each backend's plain and own fast kinds, on a
# whole-run budget of 75 s that goes to the points that need it. --full,
# --dense, --sizes or --min/--max measure more.
t0=$(date +%s.%N)
set +e
# Straight to the terminal, not through tee: the progress line (stderr) and
# the tables (stdout) then reach it in the order they were written.
# --brief: a line per backend and device on the console; the report has every curve.
"$bin" sweep --brief "$@" --json "$out/sweep.json" --csv "$out/sweep.csv"
rc=$?
set -e
if [ -f "$out/sweep.json" ]; then
  if build/bin/xferbench-report render "$out/sweep.json" -o "$out/report"; then
    echo "report: $out/report/index.html"
  fi
fi
took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')
echo "results: $out (sweep and report: $took s)"
echo "commands: build/bin/xferbench and build/bin/xferbench-report (export PATH=\"$PWD/build/bin:\$PATH\"; docs/usage.md)"
exit "$rc"
