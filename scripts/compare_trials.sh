#!/usr/bin/env bash
# Runs the compare trials of docs/compare.md: N pairs of one sweep command run
# back to back (A then B, the same command), each file kept as it was written
# in WORK, then reduced into OUT for committing (scripts/compare_trials.py
# reduce: only the fields compare reads, samples to 6 significant digits).
# Usage: scripts/compare_trials.sh [N] [WORK] [OUT] [-- sweep options]
# Default sweep: the host backend on the default grid (what fits the 2-core CI
# machine's time; every route, memory kind and direction it has).
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-20}
work=${2:-/tmp/compare-trials}
out=${3:-results/compare-trials}
shift $(( $# < 3 ? $# : 3 ))
[ "${1:-}" = "--" ] && shift
opts=("$@")
[ ${#opts[@]} -eq 0 ] && opts=(-b host)
mkdir -p "$work" "$out"
printf '%s\n' "build/apps/xferbench/xferbench sweep ${opts[*]} -q --json FILE" > "$work/command.txt"
for i in $(seq -w 1 "$n"); do
  # Resumable by pair: a finished pair is kept, a half-finished one rerun whole (its two sweeps back to back).
  [ -s "$work/trial-$i-a.json" ] && [ -s "$work/trial-$i-b.json" ] && continue
  for side in a b; do
    f="$work/trial-$i-$side.json"
    start=$(date -u +%FT%TZ)
    build/apps/xferbench/xferbench sweep "${opts[@]}" -q --json "$f.part" > "$work/trial-$i-$side.txt"
    mv "$f.part" "$f"
    echo "$start $(date -u +%FT%TZ) trial-$i-$side uptime: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$work/log.txt"
  done
done
python3 scripts/compare_trials.py reduce "$work" "$out"
cp "$work/command.txt" "$work/log.txt" "$out/"
