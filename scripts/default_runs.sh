#!/usr/bin/env bash
# The README's run command twice, back to back, on this machine, and whether
# the second run repeats the first's headline findings (docs/findings.md):
# the evidence issue 33 asks for (the time of each run, the share of ok points
# that converged, the headlines of both and what they share).
#
# Writes under $OUT (the device machine's) or results/default-runs/: for each
# run its console log, sweep.json.gz and the report's summary.md; then
# summary.txt. Extra arguments go to run.sh (and so to the sweep).
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${OUT:-results/default-runs}
mkdir -p "$dest"
tools=$(XFER_BUILD_TARGET=xferbench scripts/build.sh)  # built once, before the timed runs
{ read -r _; read -r python_bin; } <<<"$tools"

runs=()
for i in 1 2; do
  scripts/run.sh "$@" >"$dest/run-$i.log" 2>&1 || echo "run $i: run.sh exited $?" >>"$dest/run-$i.log"
  dir=$(sed -n 's/^results: \([^ ]*\).*/\1/p' "$dest/run-$i.log" | tail -n 1)
  [ -n "$dir" ] && [ -f "$dir/sweep.json" ] || { echo "run $i left no sweep.json (see $dest/run-$i.log)" >&2; exit 1; }
  gzip -c "$dir/sweep.json" >"$dest/sweep-$i.json.gz"
  cp "$dir/report/summary.md" "$dest/summary-$i.md" 2>/dev/null || true
  runs+=("$dir/sweep.json")
done

{
  for i in 1 2; do
    echo "run $i: $(grep '^results: ' "$dest/run-$i.log" | tail -n 1)"
    echo "  $(grep '^points: ' "$dest/run-$i.log" | tail -n 1)"
  done
  set +e
  PYTHONPATH="$PWD/python" "$python_bin" -m xferbench_report headlines "${runs[@]}"
  echo "headlines exit: $?"
} | tee "$dest/summary.txt"
