#!/usr/bin/env bash
# The main job: builds xferbench, sweeps every backend this machine has
# (host always; CUDA and OpenCL where present) and renders a report.
# Results land in results/<UTC timestamp>/. Extra arguments go to
# `xferbench sweep` (e.g. --quick, -b host, --max 1G).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh >/dev/null
bin=build/apps/xferbench/xferbench
out="results/$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$out"
export POCL_CACHE_DIR="${POCL_CACHE_DIR:-$PWD/build/pocl-cache}"
mkdir -p "$POCL_CACHE_DIR"

"$bin" info | tee "$out/info.txt"
echo
# Defaults sized so the whole run stays within a few minutes on a small
# machine; pass --max/--max-time to go further.
set +e
"$bin" sweep --max 64M --max-time 0.1 "$@" --json "$out/sweep.json" --csv "$out/sweep.csv" | tee "$out/sweep.txt"
rc=${PIPESTATUS[0]}
set -e
if [ -f "$out/sweep.json" ]; then
  if PYTHONPATH="$PWD/python" python3 -m xferbench_report render "$out/sweep.json" -o "$out/report"; then
    echo "report: $out/report/index.html"
  fi
fi
echo "results: $out"
exit "$rc"
